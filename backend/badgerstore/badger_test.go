package badgerstore

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/directaid/directaid/backend/store"
	"github.com/directaid/directaid/backend/store/storetest"
)

// The behaviour every store shows, then what only this one has: group commit, recovery of a failed
// commit, the reindex of older databases and the bounds of q searches. All through a real Badger in a
// temp dir.

func TestStore(t *testing.T) {
	storetest.Run(t, func(t *testing.T, ids store.IDSource) store.Store {
		return open(t, Options{Dir: t.TempDir(), IDs: ids})
	})
}

// TestDriver: the "badger" registration: open, backup and restore, verify, open again.
func TestDriver(t *testing.T) {
	storetest.RunDriver(t, "badger", func(t *testing.T) string { return filepath.Join(t.TempDir(), "db") })
}

func open(t testing.TB, o Options) *Store {
	t.Helper()
	s, err := Open(o)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func records(prefix string, n int) []*store.Record {
	recs := make([]*store.Record, n)
	for i := range recs {
		recs[i] = storetest.Record("app", fmt.Sprintf("%s-%d", prefix, i))
	}
	return recs
}

// checkDurable reopens the database in dir and finds every acknowledged record.
func checkDurable(t *testing.T, dir string, acked []*store.Record) {
	t.Helper()
	s := open(t, Options{Dir: dir})
	defer s.Close()
	for _, r := range acked {
		if _, err := s.Get(context.Background(), r.ID); err != nil {
			t.Fatalf("acknowledged record %s lost: %v", r.ExternalID, err)
		}
	}
}

type result struct {
	rec     *store.Record
	stored  *store.Record
	created bool
	err     error
}

// createAll runs every record's Create at once and waits for all of them, failing on a hang.
func createAll(t *testing.T, s *Store, recs []*store.Record, during func()) []result {
	t.Helper()
	out := make([]result, len(recs))
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i, r := range recs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			stored, created, err := s.Create(context.Background(), r)
			out[i] = result{r, stored, created, err}
		}()
	}
	close(start)
	if during != nil {
		during()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("a Create never returned")
	}
	return out
}

// A commit that Badger refuses (here: a key over Badger's 64 KB limit, which the schema's bounds keep
// from ever reaching the store) must answer every waiter of its batch with an error, never hang, never
// acknowledge what was not written, and make the store refuse further writes.
func TestGroupCommitErrorAnswersEveryWaiter(t *testing.T) {
	dir := t.TempDir()
	s := open(t, Options{Dir: dir})
	recs := records("ok", 64)
	bad := storetest.Record("app", strings.Repeat("x", 70<<10))
	recs = append(recs[:32:32], append([]*store.Record{bad}, recs[32:]...)...)
	res := createAll(t, s, recs, nil)
	var acked []*store.Record
	for _, r := range res {
		switch {
		case r.rec == bad && r.err == nil:
			t.Fatal("an unwritable record was acknowledged")
		case r.err == nil && !r.created:
			t.Fatalf("%s: answered as a duplicate", r.rec.ExternalID)
		case r.err == nil:
			acked = append(acked, r.stored)
		}
	}
	if _, _, err := s.Create(context.Background(), storetest.Record("app", "after")); err == nil {
		t.Fatal("the store accepted a write after a failed commit")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	checkDurable(t, dir, acked)
}

// Close while publications are queued: every caller gets an answer, and what was acknowledged is there
// after reopening.
func TestCloseAnswersQueuedCallers(t *testing.T) {
	dir := t.TempDir()
	s := open(t, Options{Dir: dir})
	recs := records("c", 400)
	var closeErr atomic.Value
	res := createAll(t, s, recs, func() {
		time.Sleep(2 * time.Millisecond)
		if err := s.Close(); err != nil {
			closeErr.Store(err)
		}
	})
	if err, _ := closeErr.Load().(error); err != nil {
		t.Fatal(err)
	}
	var acked []*store.Record
	for _, r := range res {
		switch {
		case r.err == nil && r.created:
			acked = append(acked, r.stored)
		case r.err == nil:
			t.Fatalf("%s: answered as a duplicate", r.rec.ExternalID)
		case !errors.Is(r.err, store.ErrClosed):
			t.Fatalf("%s: %v, want ErrClosed", r.rec.ExternalID, r.err)
		}
	}
	checkDurable(t, dir, acked)
	t.Logf("%d of %d acknowledged before Close", len(acked), len(recs))
}

// A database from before the indexes (or whose indexing was interrupted) is indexed when opened.
func TestReindex(t *testing.T) {
	dir := t.TempDir()
	s := open(t, Options{Dir: dir})
	recs := storetest.Seed(t, s, 300, time.Date(2026, 8, 11, 0, 0, 0, 0, time.UTC), time.Minute)
	due := time.Date(2026, 9, 1, 0, 0, 0, 0, time.UTC)
	for i, r := range recs[:3] { // open records that expire: the expiry index (version 6) is rebuilt too
		u, err := s.Update(context.Background(), r.ID, func(r *store.Record) error { r.ExpiresAt = due.Add(time.Duration(i) * time.Hour); return nil })
		if err != nil {
			t.Fatal(err)
		}
		recs[i] = u
	}
	if err := s.db.DropPrefix(prefixTime, prefixKind, prefixGeo, prefixText, prefixAgg, prefixChange, prefixExpiry, keyIndexVersion); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = open(t, Options{Dir: dir})
	defer s.Close()
	storetest.CheckAggregates(t, s, recs)
	for _, spec := range []store.ListSpec{{Limit: 100, Category: "acopio"}, {Limit: 50, Near: true, Lat: 4.53, Lon: -75.68, RadiusKm: 10}, {Limit: 10, Words: []string{"agua"}}} {
		storetest.CheckList(t, s, recs, spec, false)
	}
	if ids, err := s.Expiring(context.Background(), due.Add(time.Hour), 10); err != nil || !slices.Equal(ids, []string{recs[0].ID, recs[1].ID}) {
		t.Errorf("Expiring after the reindex = %v, %v; want the first two records", ids, err)
	}
}

// Lowered bounds of q searches: pages end early with a cursor that goes on, totals are estimated, and
// paging still returns exactly the matches.
func TestTextSearchBounds(t *testing.T) {
	for _, b := range []struct{ page, total int }{{50, 40}, {3, 3000}} {
		s := open(t, Options{Dir: t.TempDir(), MaxTextChecks: b.page, MaxTotalTextChecks: b.total})
		s.maxWordTokens = 0 // the way of words too common for the word index, which the bounds are for
		recs := storetest.Seed(t, s, 600, time.Date(2026, 8, 11, 10, 0, 0, 0, time.UTC), 7*time.Minute)
		for _, spec := range []store.ListSpec{
			{Words: []string{"agua"}},
			{Words: []string{"medic"}, EmergencySlug: "la-mojana", Type: "request"},
			{Words: []string{"medic"}, Near: true, Lat: 4.53, Lon: -75.68, RadiusKm: 10},
		} {
			for _, limit := range []int{7, 100} {
				spec.Limit = limit
				t.Run(fmt.Sprintf("%v/%+v", b, spec), func(t *testing.T) { storetest.CheckList(t, s, recs, spec, true) })
			}
		}
		res, err := s.List(context.Background(), &store.ListSpec{Words: []string{"agua"}, Limit: 5})
		if err != nil {
			t.Fatal(err)
		}
		if b.total < 100 && res.TotalExact {
			t.Errorf("bounds %v: total of a search over more records than the bound is exact", b)
		}
		_ = s.Close()
	}
}

// BenchmarkCreateParallel measures the store alone: 64 concurrent publishers of new records.
func BenchmarkCreateParallel(b *testing.B) {
	s := open(b, Options{Dir: b.TempDir()})
	defer s.Close()
	var seq atomic.Int64
	b.SetParallelism(max(64/runtime.GOMAXPROCS(0), 1)) // 64 goroutines
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, _, err := s.Create(context.Background(), storetest.Record("bench", fmt.Sprint("b-", seq.Add(1)))); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// A store reopened after writes owes Badger no compaction: Close keeps level 0 (the memtable it flushes
// lands there) instead of compacting it into the base level, which left the base level over its target
// and a restart compacting whole tables under its first reads (README, the cold filtered row).
func TestCloseLeavesNoCompactionOwed(t *testing.T) {
	dir := t.TempDir()
	s := open(t, Options{Dir: dir})
	createAll(t, s, records("settle", 300), nil)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = open(t, Options{Dir: dir})
	defer s.Close()
	levels := s.db.Levels()
	if len(levels) == 0 || levels[0].NumTables == 0 {
		t.Fatalf("level 0 is empty after Close: compacted on close (levels %+v)", levels)
	}
	if compactionPending(s.db) {
		t.Fatalf("the reopened store has a level to compact: %+v", levels)
	}
}
