package badgerstore

import (
	"context"
	"fmt"
	"testing"

	"github.com/directaid/directaid/backend/store"
	"github.com/directaid/directaid/backend/store/storetest"
)

// The brute-force tests (radius, words) create their records with createAll and compare every list with
// storetest.Reference through checkExact.

// checkExact pages through spec's list across the cursor and compares it with brute force: the same ids
// in the same order, for a radius the same float64 distances, and a total equal to the reference's
// whenever it says it is exact (exactTotal: it must be). Pages are full before the last, except a radius
// filtered by words when totals may be estimates (the walk stops at its budget).
func checkExact(t *testing.T, s *Store, recs []*store.Record, spec store.ListSpec, name string, exactTotal bool) {
	t.Helper()
	want := storetest.Reference(recs, &spec)
	name = fmt.Sprintf("%s%+v", name, spec)
	i := 0
	for page := 0; ; page++ {
		res, err := s.List(context.Background(), &spec)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if (exactTotal && !res.TotalExact) || (res.TotalExact && res.Total != len(want)) {
			t.Fatalf("%s: total %d (exact %v), want %d", name, res.Total, res.TotalExact, len(want))
		}
		if page == 0 && spec.Near && len(spec.Words) == 0 {
			if n, exact := storetest.RadiusTotal(recs, &spec); res.Total != n || res.TotalExact != exact {
				t.Fatalf("%s: radius total %d (exact %v), want %d (exact %v)", name, res.Total, res.TotalExact, n, exact)
			}
		}
		if spec.Near && len(res.Distances) != len(res.Records) {
			t.Fatalf("%s: %d distances for %d records", name, len(res.Distances), len(res.Records))
		}
		if res.Next != nil && len(res.Records) != spec.Limit && (exactTotal || len(spec.Words) == 0) {
			t.Fatalf("%s: short page %d of %d before the end", name, len(res.Records), spec.Limit)
		}
		for j, r := range res.Records {
			if i >= len(want) {
				t.Fatalf("%s: page %d: more records than the %d wanted", name, page, len(want))
			}
			if r.ID != want[i].ID || (spec.Near && res.Distances[j] != want[i].Dist) {
				t.Fatalf("%s: page %d, #%d: got %s, want %s (at %v km)", name, page, i, r.ID, want[i].ID, want[i].Dist)
			}
			i++
		}
		if res.Next == nil {
			break
		}
		c, err := spec.DecodeCursor(spec.EncodeCursor(res.Next))
		if err != nil {
			t.Fatal(err)
		}
		spec.After = c
	}
	if i != len(want) {
		t.Fatalf("%s: got %d records, want %d", name, i, len(want))
	}
}
