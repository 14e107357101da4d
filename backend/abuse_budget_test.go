package backend

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/directaid/directaid/backend/store"
)

// TestHideBudgetForgets: reporters whose hour has passed leave the budget, so it does not grow with every
// address that ever hid a phone.
func TestHideBudgetForgets(t *testing.T) {
	b := newHideBudget()
	at := time.Now()
	for i := range 3 * pruneAt { // one new reporter every 10 s for 8.5 hours: 360 within any hour
		b.reserve(at.Add(time.Duration(i)*10*time.Second), fmt.Sprintf("r%d", i), "+573001234567", "e", 1_000_000, true, false)
	}
	if n := len(b.reporter); n > pruneAt {
		t.Fatalf("%d reporters kept of %d, 360 of them within the hour", n, 3*pruneAt)
	}
}

// TestQueueReporter: a reporter is named by its whole hash or by a start of at least 8 characters (what
// /moderacion shows) that no other hash shares, in any case.
func TestQueueReporter(t *testing.T) {
	items := []QueueItem{
		{Reports: []store.Report{{Reporter: "abcd1111aaaa"}, {Reporter: "abcd1111bbbb"}}},
		{HiddenResponses: []*store.Response{{Reporters: []string{"ef0033334444", "abcd1111aaaa"}}}},
	}
	for in, want := range map[string]string{"abcd1111aaaa": "abcd1111aaaa", "ABCD1111B": "abcd1111bbbb", " ef003333 ": "ef0033334444"} {
		if got, err := queueReporter(items, in); err != nil || got != want {
			t.Errorf("%q: %q %v, want %q", in, got, err, want)
		}
	}
	if _, err := queueReporter(items, "abcd1111"); !errors.Is(err, ErrAmbiguousReporter) {
		t.Errorf("a start two hashes share: %v", err)
	}
	for _, in := range []string{"99999999", "ef", "e"} { // none, or shorter than what the page shows
		if _, err := queueReporter(items, in); !errors.Is(err, ErrUnknownReporter) {
			t.Errorf("%q: %v", in, err)
		}
	}
}

// TestHideBudgetByNumber: one reporter takes one number off 10 of the 12 records it was spread over, and
// that spends one of the emergency's phone hides, not ten (no address pauses the breaker with one number);
// five reporters together hide one number on 10 records, not 50; a reporter's third number is its own
// budget's refusal.
func TestHideBudgetByNumber(t *testing.T) {
	at := time.Date(2026, 8, 11, 10, 0, 0, 0, time.UTC)
	b := newHideBudget()
	hidden := 0
	for i := range 12 {
		if got, _, full, _ := b.reserve(at.Add(time.Duration(i)*time.Second), "victim", "+573001112233", "e", 5, true, false); got {
			hidden++
		} else if full {
			t.Fatalf("record %d: refused as the reporter's budget", i+1)
		}
	}
	if hidden != recordsPerNumber {
		t.Fatalf("one number hidden on %d of 12 records, want %d", hidden, recordsPerNumber)
	}
	if phones, _ := b.open(at.Add(time.Minute), "e", 5); phones {
		t.Fatal("one reporter's one number opened the emergency's phone breaker")
	}
	b = newHideBudget()
	hidden = 0
	for i := range 30 {
		if got, _, _, _ := b.reserve(at.Add(time.Duration(i)*time.Second), fmt.Sprintf("r%d", i%5), "+576012345678", "e", 10000, true, false); got {
			hidden++
		}
	}
	if hidden != recordsPerNumber {
		t.Fatalf("five reporters hid one line on %d of its 30 records, want %d", hidden, recordsPerNumber)
	}
	for i, number := range []string{"+573001110001", "+573001110002", "+573001110003"} {
		got, _, full, _ := b.reserve(at.Add(time.Hour/2), "r9", number, "e", 10000, true, false)
		if got != (i < reporterHidesPerHour) || full != (i >= reporterHidesPerHour) {
			t.Errorf("number %d of one reporter: hidden %v, reporter's budget full %v", i+1, got, full)
		}
	}
}
