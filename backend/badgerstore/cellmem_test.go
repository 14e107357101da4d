package badgerstore

import (
	"context"
	"encoding/binary"
	"errors"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

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

// cellRecords are n records spread over a 40 × 40 km box, a third of them in a municipio, with three
// titles that share a word.
func cellRecords(prefix string, n int, rng *rand.Rand) []*store.Record {
	recs := records(prefix, n)
	for i, r := range recs {
		r.Title = []string{"Agua potable", "Agua y mercado", "Carpa"}[i%3]
		lat, lon := 4.6+rng.Float64()*0.36, -75.9+rng.Float64()*0.36
		r.Latitude, r.Longitude = &lat, &lon
		if i%3 == 0 {
			r.MunicipioCode = "66001"
		}
	}
	return recs
}

func copyCounts(t *cellTable) map[string]cellCount { return t.all() }

// dirtyKeys are the keys of t's cell counters changed since its last checkpoint, and the stTok of its
// word counters changed since.
func dirtyKeys(t *cellTable) (cells, words []string) {
	for scope, cs := range t.scopes {
		for cell, e := range cs {
			if e.dirty {
				cells = append(cells, string(cellCountKey(scope, unpackCell(cell))))
			}
		}
	}
	for tok, e := range t.words {
		if e.dirty {
			words = append(words, tok)
		}
	}
	return cells, words
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
	defer func(n int) { cellCheckpointUpdates = n }(cellCheckpointUpdates)
	cellCheckpointUpdates = 100 // a checkpoint every few records
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
		if i == 40 {
			// No checkpoint from here on (a pending one included: the writer decides under commitMu),
			// so that the journal holds the last updates' changes and some records' at the crash.
			s.commitMu.Lock()
			s.cells.checkpointAt = 1 << 30
			s.commitMu.Unlock()
		}
		_, err := s.Update(ctx, recs[i].ID, func(r *store.Record) error {
			if i%8 == 0 {
				r.Status = store.StatusResolved
			} else {
				lat := *r.Latitude + 0.05
				r.Latitude, r.Title = &lat, "Carpa y mercado"
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, r := range cellRecords("last", 3, rng) {
		if _, _, err := s.Create(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	if s.cells.journaled == 0 || s.cells.trimmed == 0 {
		t.Fatalf("the premise: checkpoints were taken (last batch %d) and the journal holds changes since (%d)", s.cells.batch, s.cells.journaled)
	}
	want, wantWords := copyCounts(s.cells), s.cells.wordCounts()
	crashClose(t, s)
	if v, err := Verify(dir); err != nil || len(v.Problems) > 0 {
		t.Fatalf("after a crash: %v %+v", err, v)
	}
	loaded := loadDir(t, dir)
	if got := copyCounts(loaded); !maps.EqualFunc(got, want, slices.Equal) {
		t.Fatalf("a restart loads %d counters, the store had %d, not alike", len(got), len(want))
	}
	if got := loaded.wordCounts(); !maps.Equal(got, wantWords) || len(got) < 4 {
		t.Fatalf("a restart loads the word counters %v, the store had %v", got, wantWords)
	}
	dirtyCells, dirtyWords := dirtyKeys(loaded)
	if len(dirtyCells) == 0 || len(dirtyWords) == 0 {
		t.Fatalf("the premise: the journal changes counters stored before it (%d, %d; %d journaled)", len(dirtyCells), len(dirtyWords), loaded.journaled)
	}

	// Half a checkpoint: half the counters the journal changes, stored as of its last batch.
	report := plantVerify(t, dir, func(txn *badger.Txn) error {
		for i, k := range dirtyCells {
			if i%2 == 0 {
				if err := txn.Set([]byte(k), encodeCellCount(loaded.batch, want[k])); err != nil {
					return err
				}
			}
		}
		for i, tok := range dirtyWords {
			if i%2 == 0 {
				if err := txn.Set(vocabKey(tok), encodeWordCount(loaded.batch, wantWords[tok])); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if strings.Contains(report, "cell") || strings.Contains(report, "word") {
		t.Fatalf("after a checkpoint cut short:\n%s", report)
	}
	half := loadDir(t, dir)
	if got := copyCounts(half); !maps.EqualFunc(got, want, slices.Equal) {
		t.Fatal("after a checkpoint cut short, a restart loads other counters")
	}
	if got := half.wordCounts(); !maps.Equal(got, wantWords) {
		t.Fatalf("after a checkpoint cut short, a restart loads the word counters %v, the store had %v", got, wantWords)
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
	// The word counter of "mercado" (in one title of three) among open records, as the q total reads it.
	mercado := func(txn *badger.Txn) int64 {
		t.Helper()
		cells, err := s.cells.viewAt(txn)
		if err != nil {
			t.Fatal(err)
		}
		n, err := cells.wordCount(stTok(statusCode(store.StatusOpen), "mercado"))
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	bruteMercado := func(recs []*store.Record, resolved map[string]bool) (n int64) {
		for _, r := range recs {
			if !resolved[r.ID] && strings.Contains(r.Title, "mercado") {
				n++
			}
		}
		return n
	}
	muni := *spec
	muni.Municipio = "66001"
	sn := s.acquireSnapshot()
	before, beforeMuni, beforeWord := count(sn.txn, spec), count(sn.txn, &muni), mercado(sn.txn)
	if before != brute(first, nil, spec) || before == 0 || beforeMuni != brute(first, nil, &muni) || beforeWord != bruteMercado(first, nil) {
		t.Fatalf("the premise: %d, %d and %d counted, %d and %d in the circle, %d with the word", before, beforeMuni, beforeWord,
			brute(first, nil, spec), brute(first, nil, &muni), bruteMercado(first, nil))
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
	if got := mercado(sn.txn); got != beforeWord {
		t.Errorf("the old snapshot counts %d records with the word, it saw %d", got, beforeWord)
	}
	all := append(slices.Clone(first), more...)
	err := s.view(func(txn *badger.Txn) error {
		if got, want := count(txn, spec), brute(all, resolved, spec); got != want {
			t.Errorf("a new snapshot counts %d, %d in the circle", got, want)
		}
		if got, want := count(txn, &muni), brute(all, resolved, &muni); got != want {
			t.Errorf("a new snapshot counts %d in the municipio, %d in the circle", got, want)
		}
		if got, want := mercado(txn), bruteMercado(all, resolved); got != want || got == beforeWord {
			t.Errorf("a new snapshot counts %d records with the word, %d have it (%d before)", got, want, beforeWord)
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
	words := []wordOp{{"\x00agua", 3}, {"\x01insulina", -1}}
	v := encodeJournal(ops, words)
	got, gotWords, err := decodeJournal(v)
	if err != nil || !slices.Equal(got, ops) || !slices.Equal(gotWords, words) {
		t.Fatalf("%v %v %v", got, gotWords, err)
	}
	// Version 1 (index version 11) had cell changes only.
	e := encodeJournal(ops, nil) // its last byte counts no word changes
	v1 := append([]byte{1}, e[1:len(e)-1]...)
	if got, gotWords, err := decodeJournal(v1); err != nil || !slices.Equal(got, ops) || gotWords != nil {
		t.Fatalf("version 1: %v %v %v", got, gotWords, err)
	}
	wc := encodeWordCount(12, 40)
	if asOf, n, err := decodeWordCount(wc); err != nil || asOf != 12 || n != 40 {
		t.Fatalf("word counter: %d %d %v", asOf, n, err)
	}
	for i := range len(wc) {
		if _, _, err := decodeWordCount(wc[:i]); err == nil {
			t.Errorf("a word counter cut at %d decodes", i)
		}
	}
	if _, _, err := decodeWordCount(binary.AppendUvarint(nil, 4)); err == nil {
		t.Error("a word counter of index version 11 decodes")
	}
	c := cellCount{{3, 2}, {517, 40}}
	w := encodeCellCount(77, c)
	if asOf, back, err := decodeCellCount(w); err != nil || asOf != 77 || !slices.Equal(back, c) {
		t.Fatalf("%d %v %v", asOf, back, err)
	}
	for i := range len(v) {
		if _, _, err := decodeJournal(v[:i]); err == nil {
			t.Errorf("a journal entry cut at %d decodes", i)
		}
	}
	for i := range len(w) {
		if _, _, err := decodeCellCount(w[:i]); err == nil {
			t.Errorf("a counter cut at %d decodes", i)
		}
	}
	if _, _, err := decodeJournal(append(v, 0)); err == nil {
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

// FuzzDecodeJournal: any bytes decode to changes of a record's shape or to an error.
func FuzzDecodeJournal(f *testing.F) {
	f.Add(encodeJournal([]cellOp{{"eje-cafetero", "66001", "d2g6fz", 517, 1}}, []wordOp{{"\x00agua", 1}}))
	f.Add([]byte{1, 200, 1})
	f.Add([]byte{2, 0, 1, 1, 0, 2})
	f.Fuzz(func(t *testing.T, v []byte) {
		ops, words, err := decodeJournal(v)
		if err != nil {
			return
		}
		for _, op := range ops {
			if op.slug == "" || len(op.gh) < cellCountMin || len(op.gh) > geoPrecision {
				t.Fatalf("%+v", op)
			}
		}
		for _, w := range words {
			if len(w.stTok) < 2 {
				t.Fatalf("%+v", w)
			}
		}
		back, backWords, err := decodeJournal(encodeJournal(ops, words))
		if err != nil || !slices.Equal(back, ops) || len(backWords) != len(words) || (len(words) > 0 && !slices.Equal(backWords, words)) {
			t.Fatalf("%+v %+v does not round-trip: %v", ops, words, err)
		}
	})
}

// TestCheckpointBesideTheWriter: a checkpoint of the counters is written beside the writer, which goes on
// publishing while it is held up; the erasure rewrite, which blocks Badger's writes, waits for it; and
// what a restart loads after it is what the store had.
func TestCheckpointBesideTheWriter(t *testing.T) {
	defer func(n int) { cellCheckpointUpdates = n }(cellCheckpointUpdates)
	cellCheckpointUpdates = 100 // a checkpoint after a few records
	started, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	checkpointHook = func() {
		once.Do(func() { close(started); <-release })
	}
	defer func() { checkpointHook = nil }()
	ctx := context.Background()
	dir := t.TempDir()
	s := open(t, Options{Dir: dir})
	rng := rand.New(rand.NewPCG(5, 6))
publishing:
	for _, r := range cellRecords("before", 40, rng) {
		if _, _, err := s.Create(ctx, r); err != nil {
			t.Fatal(err)
		}
		select {
		case <-started:
			break publishing
		default:
		}
	}
	select {
	case <-started:
	case <-time.After(30 * time.Second):
		t.Fatal("no checkpoint after 40 records")
	}
	// The first checkpoint is held: publications and updates go on.
	done := make(chan error, 1)
	go func() {
		for _, r := range cellRecords("during", 30, rng) {
			if _, _, err := s.Create(ctx, r); err != nil {
				done <- err
				return
			}
			if _, err := s.Update(ctx, r.ID, func(r *store.Record) error { r.Status = store.StatusResolved; return nil }); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("publishing waited for the checkpoint")
	}
	// The erasure rewrite waits until the checkpoint is written.
	s.noteErasure()
	maintained := make(chan error, 1)
	go func() { maintained <- s.Maintain(ctx) }()
	select {
	case err := <-maintained:
		t.Fatalf("the erasure rewrite ran while a checkpoint was being written (%v)", err)
	case <-time.After(2 * time.Second):
	}
	close(release)
	if err := <-maintained; err != nil {
		t.Fatal(err)
	}
	if err := s.failure(); err != nil {
		t.Fatal(err)
	}
	for _, r := range cellRecords("after", 10, rng) {
		if _, _, err := s.Create(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	want, wantWords := copyCounts(s.cells), s.cells.wordCounts()
	crashClose(t, s)
	if got := loadDir(t, dir); !maps.EqualFunc(copyCounts(got), want, slices.Equal) || !maps.Equal(got.wordCounts(), wantWords) {
		t.Fatal("after checkpoints written beside the writer, a restart loads other counters")
	}
	if v, err := Verify(dir); err != nil || len(v.Problems) > 0 {
		t.Fatalf("%v %+v", err, v)
	}
}
