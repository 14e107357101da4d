package store

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// feedWalk walks times (ascending, Unix ms) as a store walks its change index (see FeedWalk): match
// says which pass the filters.
func feedWalk(times []int64, match []bool, bound int, reverse bool) (w FeedWalk) {
	for i := range times {
		j := i
		if reverse {
			j = len(times) - 1 - i
		}
		if i == MaxFeedRead {
			return w
		}
		if w.Last = times[j]; match[j] {
			if w.Matches++; w.Matches > bound {
				return w
			}
		}
	}
	w.Done = true
	return w
}

// TestFeedTotal checks store.FeedTotal against feeds built change by change, filtered to a share of
// them from all to one in a thousand: exact when either walk read its whole side of since; else within
// the bounds both walks prove, and exact when every change matches at a steady pace.
func TestFeedTotal(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 2))
	for range 500 {
		n := 1 + rng.IntN(50_000)
		steady := rng.IntN(3) == 0
		share := []float64{1, 1, 0.3, 0.01, 0.001}[rng.IntN(5)]
		times := make([]int64, n) // ascending, Unix ms
		match := make([]bool, n)
		all := 0
		for i := range times {
			step := int64(1000)
			if !steady {
				step = 1 + rng.Int64N(5000)
			}
			times[i] = step
			if i > 0 {
				times[i] += times[i-1]
			}
			if match[i] = rng.Float64() < share; match[i] {
				all++
			}
		}
		before := rng.IntN(n) // changes at or before since
		since := times[0] - 1
		if before > 0 {
			since = times[before-1]
		}
		want := 0
		for _, m := range match[before:] {
			if m {
				want++
			}
		}
		a, b := feedWalk(times[before:], match[before:], MaxFeedCount, false), feedWalk(times[:before], match[:before], MaxFeedCount, false)
		newest := feedWalk(times, match, 0, true)
		total, exact := FeedTotal(all, a, b, since, newest.Last)
		what := func() string {
			return fmt.Sprintf("%d changes (%.3f matching), %d before since: total %d (exact %v), want %d", n, share, before, total, exact, want)
		}
		switch {
		case a.Done || b.Done:
			if !exact || total != want {
				t.Fatal(what())
			}
		case exact:
			t.Fatalf("%s: exact, want an estimate", what())
		case total < a.Matches || total > all-b.Matches:
			t.Fatalf("%s: outside [%d, %d]", what(), a.Matches, all-b.Matches)
		case steady && share == 1 && total != want:
			t.Fatalf("%s: at a steady pace", what())
		}
	}
}
