package badgerstore

import (
	"bytes"
	"context"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"

	"github.com/directaid/directaid/backend/store"
	"github.com/directaid/directaid/backend/store/storetest"
)

// TestCountersAcrossBatches: the writer keeps the counters it last committed in memory (counterCache)
// instead of reading them back; after many concurrent batches of publications and status changes, and
// after a restart (an empty cache over stored counters), every aggregate, cell counter and word counter
// must still equal a recount from the records (Verify), and no function word may have a counter.
func TestCountersAcrossBatches(t *testing.T) {
	dir := t.TempDir()
	t0 := time.Date(2026, 8, 11, 10, 0, 0, 0, time.UTC)
	round := func(from, n int) {
		s := open(t, Options{Dir: dir})
		defer s.Close()
		var wg sync.WaitGroup
		for w := range 16 {
			wg.Go(func() {
				for i := from + w; i < from+n; i += 16 {
					rec, _, err := s.Create(context.Background(), storetest.UniformRecord(20_000, i, t0.Add(time.Duration(i)*time.Second)))
					if err != nil {
						t.Error(err)
						return
					}
					if i%3 == 0 { // moves its postings and counts to another status, in a later batch
						st := []string{store.StatusResolved, store.StatusWithdrawn, store.StatusOpen}[i%9/3]
						if _, err := s.Update(context.Background(), rec.ID, func(r *store.Record) error { r.Status = st; return nil }); err != nil {
							t.Error(err)
							return
						}
					}
				}
			})
		}
		wg.Wait()
		if err := s.db.View(func(txn *badger.Txn) error {
			for _, fw := range []string{"de", "la", "para", "del"} { // in the generator's text
				if s.cells.words[stTok(0, fw)] != nil || countKeys(txn, vocabKey(stTok(0, fw)))+countKeys(txn, wordPrefix(0, fw)) != 0 {
					t.Errorf("the function word %q has a counter or postings", fw)
				}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	round(0, 900)
	round(900, 300) // a restart: the cache starts empty over the stored counters
	v, err := Verify(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(v.Problems) > 0 || v.Records["open"]+v.Records["resolved"]+v.Records["withdrawn"] != 1200 {
		t.Fatalf("after concurrent batches and a restart: %+v", v)
	}
}

// TestMergerMatchesDecodeMergeEncode: the write path's merge of a delta into an encoded aggregate gives
// the bytes decodeAggregate, merge and encode give, for random aggregates and deltas (negative ones,
// sums of 0, cells clamped at 0, no stored value).
func TestMergerMatchesDecodeMergeEncode(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	var m merger
	for range 2000 {
		random := func(neg bool) *aggregate {
			a := &aggregate{cells: map[uint16]int64{}, people: rng.Int64N(50), newest: rng.Int64N(1e12)}
			for range rng.IntN(12) {
				c := rng.Int64N(5)
				if neg {
					c -= 2
				}
				a.cells[uint16(rng.IntN(40))] = c
			}
			if neg {
				a.people -= 25
			}
			return a
		}
		var stored []byte
		old := &aggregate{cells: map[uint16]int64{}}
		if rng.IntN(5) > 0 {
			stored = random(true).encode() // negatives clamp to 0, as a stored value may hold
			var err error
			if old, err = decodeAggregate(stored); err != nil {
				t.Fatal(err)
			}
		}
		d := random(true)
		got, err := m.merge(stored, d)
		if err != nil {
			t.Fatal(err)
		}
		old.merge(d)
		if want := old.encode(); !bytes.Equal(got, want) {
			t.Fatalf("merge of %x and %+v: %x, want %x", stored, d, got, want)
		}
	}
}
