package badgerstore

import (
	"context"
	"errors"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/dgraph-io/badger/v4"

	"github.com/directaid/directaid/backend/store"
)

// crashClose ends s as a crash does for the cell counters: the writer stops and Badger closes with what
// it has synced, and no checkpoint is taken, so the journal since the last one stays.
func crashClose(t *testing.T, s *Store) {
	t.Helper()
	close(s.quit)
	s.wg.Wait()
	s.dropSnapshot()
	s.blockSeqs.release()
	if err := s.db.Close(); err != nil {
		t.Fatal(err)
	}
}

// cellRecords are n records spread over a 40 × 40 km box, a third of them in a municipio.
func cellRecords(prefix string, n int, rng *rand.Rand) []*store.Record {
	recs := records(prefix, n)
	for i, r := range recs {
		lat, lon := 4.6+rng.Float64()*0.36, -75.9+rng.Float64()*0.36
		r.Latitude, r.Longitude = &lat, &lon
		if i%3 == 0 {
			r.MunicipioCode = "66001"
		}
	}
	return recs
}

func copyCounts(t *cellTable) map[string]cellCount { return t.all() }

// dirtyKeys are the keys of t's counters changed since its last checkpoint.
func dirtyKeys(t *cellTable) []string {
	var out []string
	for scope, cells := range t.scopes {
		for cell, e := range cells {
			if e.dirty {
				out = append(out, string(cellCountKey(scope, unpackCell(cell))))
			}
		}
	}
	return out
}

func loadDir(t *testing.T, dir string) *cellTable {
	t.Helper()
	db, err := badger.Open(badger.DefaultOptions(dir).WithLogger(nil))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var table *cellTable
	if err := db.View(func(txn *badger.Txn) (err error) { table, err = loadCells(txn); return err }); err != nil {
		t.Fatal(err)
	}
	return table
}

// TestCellCountersAfterACrash: what a restart loads (the checkpointed counters, then each journal entry
// for the counters stored as of an earlier batch) is what the records call for, after a crash with
// checkpoints taken along the way, and after a crash in the middle of a checkpoint: some counters stored
// as of its batch, the journal it covers still there. Counting those entries again would count their
// records twice.
func TestCellCountersAfterACrash(t *testing.T) {
	defer func(n int) { cellCheckpointOps = n }(cellCheckpointOps)
	cellCheckpointOps = 10
	ctx := context.Background()
	dir := t.TempDir()
	s := open(t, Options{Dir: dir})
	rng := rand.New(rand.NewPCG(3, 4))
	recs := cellRecords("crash", 61, rng)
	for _, r := range recs {
		if _, _, err := s.Create(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < len(recs); i += 4 { // a status changed, a record moved
		_, err := s.Update(ctx, recs[i].ID, func(r *store.Record) error {
			if i%8 == 0 {
				r.Status = store.StatusResolved
			} else {
				lat := *r.Latitude + 0.05
				r.Latitude = &lat
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if s.cells.journaled == 0 || s.cells.trimmed == 0 {
		t.Fatalf("the premise: checkpoints were taken (last batch %d) and the journal holds changes since (%d)", s.cells.batch, s.cells.journaled)
	}
	want := copyCounts(s.cells)
	crashClose(t, s)
	if v, err := Verify(dir); err != nil || len(v.Problems) > 0 {
		t.Fatalf("after a crash: %v %+v", err, v)
	}
	loaded := loadDir(t, dir)
	if got := copyCounts(loaded); !maps.EqualFunc(got, want, slices.Equal) {
		t.Fatalf("a restart loads %d counters, the store had %d, not alike", len(got), len(want))
	}
	if len(dirtyKeys(loaded)) == 0 {
		t.Fatal("the premise: the journal changes counters stored before it")
	}

	// Half a checkpoint: half the counters the journal changes, stored as of its last batch.
	report := plantVerify(t, dir, func(txn *badger.Txn) error {
		i := 0
		for _, k := range dirtyKeys(loaded) {
			if i++; i%2 == 0 {
				continue
			}
			if err := txn.Set([]byte(k), encodeCellCount(loaded.batch, want[k])); err != nil {
				return err
			}
		}
		return nil
	})
	if strings.Contains(report, "cell") {
		t.Fatalf("after a checkpoint cut short:\n%s", report)
	}
	if got := copyCounts(loadDir(t, dir)); !maps.EqualFunc(got, want, slices.Equal) {
		t.Fatal("after a checkpoint cut short, a restart loads other counters")
	}

	// And the store opened again goes on from there: more records, a clean close, Verify.
	s = open(t, Options{Dir: dir})
	for _, r := range cellRecords("after", 7, rng) {
		if _, _, err := s.Create(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	if v := closeVerify(t, s, dir); len(v.Problems) > 0 {
		t.Fatalf("after the restart: %+v", v)
	}
}

// TestCellReadsAsTheirSnapshot: a radius total counts as its snapshot sees the records, whatever the
// writer counted since; the table keeps the changes a live snapshot does not see, drops them once it
// ends, and a view older than what it keeps gets errCellsTooOld, not a count.
func TestCellReadsAsTheirSnapshot(t *testing.T) {
	ctx := context.Background()
	s := open(t, Options{Dir: t.TempDir()})
	defer s.Close()
	rng := rand.New(rand.NewPCG(5, 6))
	first := cellRecords("seen", 40, rng)
	for _, r := range first {
		if _, _, err := s.Create(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	spec := &store.ListSpec{Near: true, Lat: 4.78, Lon: -75.72, RadiusKm: 12, EmergencySlug: first[0].EmergencySlug, Status: store.StatusOpen, Limit: 20}
	count := func(txn *badger.Txn, spec *store.ListSpec) int {
		t.Helper()
		cells, err := s.cells.viewAt(txn)
		if err != nil {
			t.Fatal(err)
		}
		n, _, err := countRadius(cells, txn, spec, newFilter(spec), store.NewCover(spec.Lat, spec.Lon, spec.RadiusKm))
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	brute := func(recs []*store.Record, resolved map[string]bool, spec *store.ListSpec) int {
		n := 0
		for _, r := range recs {
			if !resolved[r.ID] && (spec.Municipio == "" || r.MunicipioCode == spec.Municipio) &&
				store.HaversineKm(spec.Lat, spec.Lon, *r.Latitude, *r.Longitude) <= spec.RadiusKm {
				n++
			}
		}
		return n
	}
	muni := *spec
	muni.Municipio = "66001"
	sn := s.acquireSnapshot()
	before, beforeMuni := count(sn.txn, spec), count(sn.txn, &muni)
	if before != brute(first, nil, spec) || before == 0 || beforeMuni != brute(first, nil, &muni) {
		t.Fatalf("the premise: %d and %d counted, %d and %d in the circle", before, beforeMuni, brute(first, nil, spec), brute(first, nil, &muni))
	}
	more := cellRecords("unseen", 30, rng)
	for _, r := range more {
		if _, _, err := s.Create(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	resolved := map[string]bool{}
	for _, r := range first[:10] {
		if _, err := s.Update(ctx, r.ID, func(r *store.Record) error { r.Status = store.StatusResolved; return nil }); err != nil {
			t.Fatal(err)
		}
		resolved[r.ID] = true
	}
	if got, gotMuni := count(sn.txn, spec), count(sn.txn, &muni); got != before || gotMuni != beforeMuni {
		t.Errorf("the old snapshot counts %d and %d, it saw %d and %d", got, gotMuni, before, beforeMuni)
	}
	all := append(slices.Clone(first), more...)
	err := s.view(func(txn *badger.Txn) error {
		if got, want := count(txn, spec), brute(all, resolved, spec); got != want {
			t.Errorf("a new snapshot counts %d, %d in the circle", got, want)
		}
		if got, want := count(txn, &muni), brute(all, resolved, &muni); got != want {
			t.Errorf("a new snapshot counts %d in the municipio, %d in the circle", got, want)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.cells.log) < 40 {
		t.Errorf("the table keeps %d batches for the old snapshot, not the 40 it does not see", len(s.cells.log))
	}
	sn.release()
	if _, _, err := s.Create(ctx, cellRecords("after", 1, rng)[0]); err != nil {
		t.Fatal(err)
	}
	if len(s.cells.log) > 1 {
		t.Errorf("the table keeps %d batches once no snapshot needs them", len(s.cells.log))
	}
	old := &cellView{t: s.cells}
	if err := old.read(func(cellGetter) error { return nil }); !errors.Is(err, errCellsTooOld) {
		t.Errorf("a view of batch 0 reads: %v", err)
	}
}

// TestCellEncodings: a journal entry and a stored counter decode to what was encoded; a truncated or
// extended one is an error, never a panic.
func TestCellEncodings(t *testing.T) {
	ops := []cellOp{{"eje-cafetero", "66001", "d2g6fz", 517, 1}, {"eje-cafetero", "", "d2g6", 3, -1}}
	v := encodeCellOps(ops)
	got, err := decodeCellOps(v)
	if err != nil || !slices.Equal(got, ops) {
		t.Fatalf("%v %v", got, err)
	}
	c := cellCount{{3, 2}, {517, 40}}
	w := encodeCellCount(77, c)
	if asOf, back, err := decodeCellCount(w); err != nil || asOf != 77 || !slices.Equal(back, c) {
		t.Fatalf("%d %v %v", asOf, back, err)
	}
	for i := range len(v) {
		if _, err := decodeCellOps(v[:i]); err == nil {
			t.Errorf("a journal entry cut at %d decodes", i)
		}
	}
	for i := range len(w) {
		if _, _, err := decodeCellCount(w[:i]); err == nil {
			t.Errorf("a counter cut at %d decodes", i)
		}
	}
	if _, err := decodeCellOps(append(v, 0)); err == nil {
		t.Error("a journal entry with a byte more decodes")
	}
	seen := map[uint64]string{}
	for _, cell := range []string{"0", "z", "d2g6", "d2g6f", "d2g6fz", "00000", "000000", "zzzzzz", "s0000"} {
		v, ok := packCell(cell)
		if !ok || unpackCell(v) != cell || seen[v] != "" {
			t.Errorf("%q packs to %d (%v), back to %q, as %q", cell, v, ok, unpackCell(v), seen[v])
		}
		seen[v] = cell
	}
	for _, cell := range []string{"", "a", "d2g6fzz", "d2g6fA", "d2g6\x00"} {
		if _, ok := packCell(cell); ok {
			t.Errorf("%q packs", cell)
		}
	}
}

// FuzzDecodeCellOps: any bytes decode to ops of a record's shape or to an error.
func FuzzDecodeCellOps(f *testing.F) {
	f.Add(encodeCellOps([]cellOp{{"eje-cafetero", "66001", "d2g6fz", 517, 1}}))
	f.Add([]byte{1, 200, 1})
	f.Fuzz(func(t *testing.T, v []byte) {
		ops, err := decodeCellOps(v)
		if err != nil {
			return
		}
		for _, op := range ops {
			if op.slug == "" || len(op.gh) < cellCountMin || len(op.gh) > geoPrecision {
				t.Fatalf("%+v", op)
			}
		}
		if back, err := decodeCellOps(encodeCellOps(ops)); err != nil || !slices.Equal(back, ops) {
			t.Fatalf("%+v does not round-trip: %v", ops, err)
		}
	})
}
