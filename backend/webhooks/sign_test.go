package webhooks

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"testing"
	"time"
)

// TestSign: the signature is HMAC-SHA256 of "<timestamp>.<body>" in hex, as the guide tells receivers to
// compute it; Verify accepts it and refuses a changed body, timestamp or secret, and a stale timestamp.
func TestSign(t *testing.T) {
	secret, body, ts := []byte("s3cr3t"), []byte(`{"id":"e1","type":"status"}`), int64(1_800_000_000)
	m := hmac.New(sha256.New, secret)
	m.Write([]byte("1800000000." + string(body)))
	want := "sha256=" + hex.EncodeToString(m.Sum(nil))
	if got := Sign(secret, ts, body); got != want {
		t.Fatalf("Sign = %s, want %s", got, want)
	}
	now := time.Unix(ts, 0).Add(30 * time.Second)
	if err := Verify(secret, want, "1800000000", body, now, 5*time.Minute); err != nil {
		t.Fatalf("Verify of a good delivery: %v", err)
	}
	for name, c := range map[string]struct {
		secret, body []byte
		ts           string
		now          time.Time
		want         error
	}{
		"body changed":    {secret, []byte(`{"id":"e1","type":"match"}`), "1800000000", now, ErrBadSignature},
		"other secret":    {[]byte("other"), body, "1800000000", now, ErrBadSignature},
		"timestamp lies":  {secret, body, "1800000001", now, ErrBadSignature},
		"stale":           {secret, body, "1800000000", now.Add(time.Hour), ErrStale},
		"from the future": {secret, body, "1800000000", now.Add(-time.Hour), ErrStale},
		"not a number":    {secret, body, "ayer", now, ErrStale},
	} {
		if err := Verify(c.secret, want, c.ts, c.body, c.now, 5*time.Minute); !errors.Is(err, c.want) {
			t.Errorf("%s: Verify = %v, want %v", name, err, c.want)
		}
	}
}

// TestBackoff: the waits double from a second up to an hour, jitter takes at most a quarter off, and an
// event is given up once its next attempt would be more than a day after it was due.
func TestBackoff(t *testing.T) {
	for n, want := range map[int]time.Duration{1: time.Second, 2: 2 * time.Second, 3: 4 * time.Second, 10: 512 * time.Second,
		12: 2048 * time.Second, 13: time.Hour, 40: time.Hour, 1000: time.Hour} {
		if got := Backoff(n, 0); got != want {
			t.Errorf("Backoff(%d, 0) = %v, want %v", n, got, want)
		}
		if got := Backoff(n, 0.999); got <= want*3/4 || got > want {
			t.Errorf("Backoff(%d, 0.999) = %v, want in (%v, %v]", n, got, want*3/4, want)
		}
	}
	due := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	if next, ok := nextAttempt(1, due, due); !ok || next.Before(due.Add(750*time.Millisecond)) || next.After(due.Add(time.Second)) {
		t.Errorf("after the first failure: %v %v", next, ok)
	}
	if _, ok := nextAttempt(20, due, due.Add(RetryFor-30*time.Minute)); ok {
		t.Error("an attempt past a day after due was scheduled, want given up")
	}
	if _, ok := nextAttempt(20, due, due.Add(RetryFor-2*time.Hour)); !ok {
		t.Error("given up before a day after due")
	}
	// Attempts over the day: as many as the schedule allows, not a handful.
	n, now := 0, due
	for {
		n++
		next, ok := nextAttempt(n, due, now)
		if !ok {
			break
		}
		now = next
	}
	if n < 30 || now.Before(due.Add(RetryFor-BackoffMax)) {
		t.Errorf("%d attempts, the last at %v after due; want over 30 spread over the day", n, now.Sub(due))
	}
}
