package badgerstore

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"

	"github.com/directaid/directaid/backend/store"
	"github.com/directaid/directaid/backend/store/storetest"
)

// TestFeedTotalReadsBounded: a change feed's total reads at most store.MaxFeedRead change entries in
// each of its walks, matching or not — a filter that nothing matches (status hidden) used to read every
// change after since — and a malformed entry is an error, never skipped (the walk back from the newest
// change used to skip it).
func TestFeedTotalReadsBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("seeds 25,000 records (more than store.MaxFeedRead): not under -short")
	}
	s := open(t, Options{Dir: t.TempDir()})
	defer s.Close()
	recs := storetest.Seed(t, s, 25_000, time.Date(2026, 8, 11, 10, 0, 0, 0, time.UTC), time.Second)
	byChange := slices.SortedFunc(slices.Values(recs), func(a, b *store.Record) int { return a.UpdatedAt.Compare(b.UpdatedAt) })
	total := func(spec *store.ListSpec) (res *store.ListResult, read int, err error) {
		res = &store.ListResult{}
		err = s.db.View(func(txn *badger.Txn) error {
			it := txn.NewIterator(badger.IteratorOptions{Prefix: partitionPrefix(prefixChange, allPartition)})
			defer it.Close()
			read, err = feedTotal(txn, it, allPartition, spec, newFilter(spec), res)
			return err
		})
		return res, read, err
	}
	for _, c := range []struct {
		rank  int
		read  func(before int) int // of the changes at or before since (a group commit stamps its records alike)
		exact bool
	}{
		{1000, func(before int) int { return store.MaxFeedRead + before }, true}, // after since: the bound; before: every change
		{12_000, func(int) int { return 2 * store.MaxFeedRead }, false},          // the bound each side, no match after since: no walk back from the newest
		{24_000, func(before int) int { return len(recs) - before }, true},       // after since: every change
	} {
		spec := &store.ListSpec{Since: byChange[c.rank].UpdatedAt, Status: store.StatusHidden, Limit: 20}
		before, _ := slices.BinarySearchFunc(byChange, spec.SinceMillis()+1, func(r *store.Record, ms int64) int { return cmp.Compare(r.UpdatedAt.UnixMilli(), ms) })
		res, read, err := total(spec)
		if want := c.read(before); err != nil || read != want || res.Total != 0 || res.TotalExact != c.exact {
			t.Errorf("since the %d-th change: total %d (exact %v), %d entries read, %v; want 0 (exact %v), %d read", c.rank, res.Total, res.TotalExact, read, err, c.exact, want)
		}
	}
	// A malformed entry as the newest change: the walk back from it reads it first.
	if err := s.db.Update(func(txn *badger.Txn) error {
		return txn.Set(changeKey(allPartition, byChange[len(byChange)-1].UpdatedAt.UnixMilli()+1, "zzzzzzzzzzzzzzzz"), []byte{1, 2, 3})
	}); err != nil {
		t.Fatal(err)
	}
	s.renewSnapshot() // a write behind the store's back: List reads the snapshot every store write renews
	spec := &store.ListSpec{Since: byChange[12_000].UpdatedAt, Limit: 20}
	if _, _, err := total(spec); !errors.Is(err, errBadChange) {
		t.Fatalf("a feed whose walk back reads a malformed entry: %v, want %v", err, errBadChange)
	}
	if _, err := s.List(context.Background(), spec); !errors.Is(err, errBadChange) {
		t.Fatalf("List: %v, want %v", err, errBadChange)
	}
}
