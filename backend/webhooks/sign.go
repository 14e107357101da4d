package webhooks

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/directaid/directaid/schema"
)

// The headers of a delivery.
const (
	HeaderSignature = schema.WebhookSignatureHeader
	HeaderTimestamp = schema.WebhookTimestampHeader
	HeaderEventID   = schema.WebhookEventIDHeader
	HeaderEventType = schema.WebhookEventTypeHeader
)

// Sign is the value of HeaderSignature for body sent at Unix second ts under secret.
func Sign(secret []byte, ts int64, body []byte) string {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(strconv.FormatInt(ts, 10)))
	m.Write([]byte{'.'})
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// Errors of Verify.
var (
	ErrBadSignature = errors.New("webhook signature does not match the body")
	ErrStale        = errors.New("webhook timestamp outside the tolerance")
)

// Verify checks a delivery as a receiver should: the signature header against the timestamp header and
// the body, in constant time, and the timestamp within tolerance of now (a replayed old delivery fails).
func Verify(secret []byte, signature, timestamp string, body []byte, now time.Time, tolerance time.Duration) error {
	ts, err := strconv.ParseInt(strings.TrimSpace(timestamp), 10, 64)
	if err != nil {
		return ErrStale
	}
	if d := now.Sub(time.Unix(ts, 0)); d > tolerance || d < -tolerance {
		return ErrStale
	}
	if !hmac.Equal([]byte(strings.TrimSpace(signature)), []byte(Sign(secret, ts, body))) {
		return ErrBadSignature
	}
	return nil
}

// The retry schedule: after the n-th failed attempt the next waits Backoff(n), from BackoffBase doubling
// up to BackoffMax, less up to a quarter at random (so that the events a receiver's outage held back do
// not all come back in the same second); an event is given up once its next attempt would start later
// than RetryFor after it was due.
const (
	BackoffBase = time.Second
	BackoffMax  = time.Hour
	RetryFor    = 24 * time.Hour
)

// Backoff is the wait after the n-th failed attempt (n ≥ 1), jitter in [0, 1) taking up to a quarter off.
func Backoff(n int, jitter float64) time.Duration {
	d := BackoffMax
	if n < 1 {
		n = 1
	}
	if n <= 32 {
		d = min(BackoffBase<<(n-1), BackoffMax)
	}
	return d - time.Duration(float64(d)/4*jitter)
}

// nextAttempt is when the attempt after the n-th failed one starts, or ok false when the event is given
// up (that would be past due+RetryFor).
func nextAttempt(n int, due, now time.Time) (time.Time, bool) {
	next := now.Add(Backoff(n, rand.Float64()))
	return next, !next.After(due.Add(RetryFor))
}
