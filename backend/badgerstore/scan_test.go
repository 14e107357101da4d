package badgerstore

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"

	"github.com/directaid/directaid/backend/store"
	"github.com/directaid/directaid/backend/store/storetest"
)

// TestReadRecords: readRecords returns what getTxn returns, id by id, for newest-first runs with gaps
// of every size (stepping and seeking), for unordered ids and short lists (point reads), and says
// store.ErrNotFound for a missing id.
func TestReadRecords(t *testing.T) {
	s := open(t, Options{Dir: t.TempDir()})
	defer s.Close()
	recs := storetest.Seed(t, s, 600, time.Date(2026, 8, 11, 10, 0, 0, 0, time.UTC), 3*time.Second)
	ids := make([]string, len(recs))
	for i, r := range recs {
		ids[i] = r.ID
	}
	slices.Sort(ids)
	slices.Reverse(ids)
	rng := rand.New(rand.NewPCG(3, 4))
	check := func(name string, sel []string) {
		t.Helper()
		err := s.db.View(func(txn *badger.Txn) error {
			got, err := readRecords(txn, sel, nil)
			if err != nil {
				return err
			}
			if len(got) != len(sel) {
				t.Fatalf("%s: %d records for %d ids", name, len(got), len(sel))
			}
			for i, id := range sel {
				want, err := getTxn(txn, id)
				if err != nil {
					return err
				}
				if !reflect.DeepEqual(got[i], want) {
					t.Fatalf("%s: record %d is %s, want %s", name, i, got[i].ID, id)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	check("all", ids)
	for _, keep := range []int{1, 3, 9, 40} { // gaps below and above orderedReadSteps
		var sel []string
		for _, id := range ids {
			if rng.IntN(keep) == 0 {
				sel = append(sel, id)
			}
		}
		check(fmt.Sprintf("one in %d", keep), sel)
	}
	shuffled := slices.Clone(ids[:200])
	rng.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	check("unordered", shuffled)
	check("short", ids[100:110])

	missing := slices.Clone(ids[:100])
	missing[50] = missing[50][:len(missing[50])-1] + "~" // an id that no record has
	slices.SortFunc(missing, func(a, b string) int { return strings.Compare(b, a) })
	err := s.db.View(func(txn *badger.Txn) error { _, err := readRecords(txn, missing, nil); return err })
	if !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a missing id: %v, want store.ErrNotFound", err)
	}
}
