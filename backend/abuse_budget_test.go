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

// TestQueueReporter: a reporter is named by its whole hash or by a start no other hash shares, in any case.
func TestQueueReporter(t *testing.T) {
	items := []QueueItem{
		{Reports: []store.Report{{Reporter: "abcd1111"}, {Reporter: "abcd2222"}}},
		{HiddenResponses: []*store.Response{{Reporters: []string{"ef003333", "abcd1111"}}}},
	}
	for in, want := range map[string]string{"abcd1111": "abcd1111", "ABCD2": "abcd2222", " ef ": "ef003333"} {
		if got, err := queueReporter(items, in); err != nil || got != want {
			t.Errorf("%q: %q %v, want %q", in, got, err, want)
		}
	}
	if _, err := queueReporter(items, "abcd"); !errors.Is(err, ErrAmbiguousReporter) {
		t.Errorf("a start two hashes share: %v", err)
	}
	if _, err := queueReporter(items, "99"); !errors.Is(err, ErrUnknownReporter) {
		t.Errorf("a start no hash has: %v", err)
	}
}
