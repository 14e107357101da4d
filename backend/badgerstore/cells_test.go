package badgerstore

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/dgraph-io/badger/v4"

	"github.com/directaid/directaid/backend/store"
)

// childCells appends cell and every cell under it down to geoPrecision, in key order.
func childCells(out []string, cell string) []string {
	out = append(out, cell)
	if len(cell) < geoPrecision {
		for i := range len(store.GeohashAlphabet) {
			out = childCells(out, cell+store.GeohashAlphabet[i:i+1])
		}
	}
	return out
}

// denseGap must be the distance between two counter keys where every cell has one: consecutive keys of
// a scope are 1 apart, including across a coarser cell's end, and keys it cannot place are far.
func TestDenseGap(t *testing.T) {
	var cells []string
	for _, p3 := range []string{"d2f", "d2g", "zzz"} {
		for i := range len(store.GeohashAlphabet) {
			cells = childCells(cells, p3+store.GeohashAlphabet[i:i+1])
		}
	}
	if !slices.IsSorted(cells) {
		t.Fatal("cells not in key order")
	}
	for _, scope := range []string{"", "eje-cafetero@17001"} {
		keys := make([][]byte, len(cells))
		for i, c := range cells {
			keys[i] = cellCountKey(scope, c)
		}
		for i := 1; i < len(keys); i++ {
			if i == len(keys)/3 || i == 2*len(keys)/3 { // d2f… to d2g… and d2g… to zzz…
				continue
			}
			if g := denseGap(keys[i-1], keys[i]); g != 1 {
				t.Fatalf("denseGap(%s, %s) = %d, want 1", keys[i-1], keys[i], g)
			}
		}
		rng := rand.New(rand.NewPCG(3, 4))
		for range 2000 {
			i := rng.IntN(len(keys) / 3)
			j := i + rng.IntN(len(keys)/3-i)
			if g := denseGap(keys[i], keys[j]); g != j-i {
				t.Fatalf("denseGap(%s, %s) = %d, want %d", keys[i], keys[j], g, j-i)
			}
		}
		if g := denseGap(keys[len(keys)/3-1], keys[len(keys)/3]); g != 1 {
			t.Errorf("d2fzzz to d2g0: %d, want 1", g)
		}
	}
	for _, c := range [][2][]byte{
		{cellCountKey("", "d2f12"), cellCountKey("a", "d2f13")},            // another scope
		{cellCountKey("a", "d2f12"), cellCountKey("ab", "d2f13")},          // a longer scope
		{cellCountKey("", "d2f"), cellCountKey("", "d2f13")},               // coarser than the counters
		{cellCountKey("", "d2f12"), cellCountKey("", "d2f1234")},           // finer
		{cellCountKey("", "d2f1a"), cellCountKey("", "d2f1b")},             // not geohash
		{[]byte("ie\x00"), cellCountKey("", "d2f1b")},                      // no scope
		{cellCountKey("", "d2f12"), append(cellCountKey("", "d2f1"), 'A')}, // not geohash
	} {
		if g := denseGap(c[0], c[1]); g < 1<<20 {
			t.Errorf("denseGap(%q, %q) = %d, want far", c[0], c[1], g)
		}
	}
}

// The counter cursor, stepping or seeking, must read what a Get of each key reads: counters of every
// density (a few cells, whole runs, a scope's every cell), several versions of a key across tables, and
// asked keys that have no counter.
func TestCounterCursorMatchesGet(t *testing.T) {
	s := open(t, Options{Dir: t.TempDir()})
	defer s.Close()
	var cells []string
	for _, p4 := range []string{"d2f1", "d2f2", "d2fz", "d2g0"} {
		cells = childCells(cells, p4)
	}
	scopes := []string{"", "a", "a@17001", "b"}
	rng := rand.New(rand.NewPCG(7, 8))
	for round := range 3 { // each round rewrites some counters over the older versions
		for si, scope := range scopes {
			density := []float64{1, 0.5, 0.05, 0.005}[(si+round)%4]
			wb := s.db.NewWriteBatch()
			for _, c := range cells {
				if rng.Float64() < density {
					if err := wb.Set(cellCountKey(scope, c), []byte{byte(round), byte(rng.IntN(256))}); err != nil {
						t.Fatal(err)
					}
				}
			}
			if err := wb.Flush(); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.db.Flatten(1); err != nil {
			t.Fatal(err)
		}
	}
	err := s.db.View(func(txn *badger.Txn) error {
		for range 300 {
			scope := scopes[rng.IntN(len(scopes))]
			p := []float64{0.9, 0.3, 0.02}[rng.IntN(3)]
			c := newCounterCursor(txn)
			for _, cell := range cells {
				if rng.Float64() >= p {
					continue
				}
				key := cellCountKey(scope, cell)
				var want []byte
				item, err := txn.Get(key)
				switch {
				case err == nil:
					if want, err = item.ValueCopy(nil); err != nil {
						return err
					}
				case !errors.Is(err, badger.ErrKeyNotFound):
					return err
				}
				err = c.get(key, func(v []byte) error {
					if !bytes.Equal(v, want) || (v == nil) != (want == nil) {
						t.Errorf("%q: cursor %v, Get %v", key, v, want)
					}
					return nil
				})
				if err != nil {
					return err
				}
			}
			c.close()
			if t.Failed() {
				return nil
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestCreateNeedsEmergency: a record without an emergency slug is refused with errNoEmergency and writes
// nothing; before, it was stored and counted twice in every cell counter of scope "".
func TestCreateNeedsEmergency(t *testing.T) {
	dir := t.TempDir()
	s := open(t, Options{Dir: dir})
	rec := records("sin-emergencia", 1)[0]
	rec.EmergencySlug = ""
	if _, _, err := s.Create(t.Context(), rec); !errors.Is(err, errNoEmergency) {
		t.Fatalf("Create without an emergency slug: %v, want errNoEmergency", err)
	}
	if v := closeVerify(t, s, dir); len(v.Records) > 0 || len(v.Problems) > 0 {
		t.Fatalf("the refused record left %+v", v)
	}
}
