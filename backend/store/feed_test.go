package store

import (
	"math/rand/v2"
	"testing"
)

// TestFeedTotal checks store.FeedTotal against feeds built change by change: exact with at most
// MaxFeedCount changes at or before since; else exact at a steady pace, and at any pace within the bounds
// both walks prove (more than MaxFeedCount changes on each side of since).
func TestFeedTotal(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 2))
	for range 500 {
		n := MaxFeedCount + 2 + rng.IntN(20_000)
		steady := rng.IntN(3) == 0
		times := make([]int64, n) // ascending, Unix ms
		for i := range times {
			step := int64(1000)
			if !steady {
				step = 1 + rng.Int64N(5000)
			}
			times[i] = step
			if i > 0 {
				times[i] += times[i-1]
			}
		}
		after := MaxFeedCount + 1 + rng.IntN(n-MaxFeedCount-1) // changes after since: more than counted, and one before
		before := n - after
		since := times[before-1]
		total, exact := FeedTotal(n, min(before, MaxFeedCount+1), since, times[before+MaxFeedCount], times[n-1])
		switch {
		case before <= MaxFeedCount:
			if !exact || total != after {
				t.Fatalf("%d changes, %d before since: total %d (exact %v), want %d exact", n, before, total, exact, after)
			}
		case exact:
			t.Fatalf("%d changes, %d before since: exact, want an estimate", n, before)
		case steady && total != after:
			t.Fatalf("%d changes at a steady pace, %d before since: total %d, want %d", n, before, total, after)
		case total < MaxFeedCount+1 || total > n-(MaxFeedCount+1):
			t.Fatalf("%d changes, %d before since: total %d outside [%d, %d]", n, before, total, MaxFeedCount+1, n-(MaxFeedCount+1))
		}
	}
}
