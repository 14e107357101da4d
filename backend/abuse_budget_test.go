package backend

import (
	"fmt"
	"testing"
	"time"
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
