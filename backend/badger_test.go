package backend

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/directaid/directaid/schema"
)

// Group-commit semantics of BadgerStore, through a real Badger in a temp dir.

func gcRecord(source, externalID string) *Record {
	now := time.Now().UTC().Truncate(time.Millisecond)
	lat, lon, n := 4.53, -75.68, 3
	return &Record{ID: NewID(now), CreatedAt: now, Publication: schema.Publication{Type: schema.TypeRequest,
		Common: schema.Common{Source: source, ExternalID: externalID, EmergencySlug: "eje-cafetero", Title: "Agua potable",
			Category: "alimentos", ContactName: "Ana", ContactWhatsapp: "3001234567", PublishContact: true},
		Address: "Calle 1", Latitude: &lat, Longitude: &lon, Urgency: "needed", NeededPeople: &n, ContactE164: "+573001234567"}}
}

func gcOpen(t testing.TB, dir string) *BadgerStore {
	t.Helper()
	s, err := OpenBadger(BadgerOptions{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func gcRecords(prefix string, n int) []*Record {
	recs := make([]*Record, n)
	for i := range recs {
		recs[i] = gcRecord("app", fmt.Sprintf("%s-%d", prefix, i))
	}
	return recs
}

// checkDurable reopens the database in dir and finds every acknowledged record.
func checkDurable(t *testing.T, dir string, acked []*Record) {
	t.Helper()
	s := gcOpen(t, dir)
	defer s.Close()
	for _, r := range acked {
		if _, err := s.Get(context.Background(), r.ID); err != nil {
			t.Fatalf("acknowledged record %s lost: %v", r.ExternalID, err)
		}
	}
}

type gcResult struct {
	rec     *Record
	stored  *Record
	created bool
	err     error
}

// createAll runs every record's Create at once and waits for all of them, failing on a hang.
func createAll(t *testing.T, s *BadgerStore, recs []*Record, during func()) []gcResult {
	t.Helper()
	out := make([]gcResult, len(recs))
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i, r := range recs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			stored, created, err := s.Create(context.Background(), r)
			out[i] = gcResult{r, stored, created, err}
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

func TestGroupCommitOneWinnerPerPair(t *testing.T) {
	s := gcOpen(t, t.TempDir())
	defer s.Close()
	// 24 pairs × 16 racing publications each, interleaved so that duplicates meet inside one batch and
	// across batches.
	const pairs, racers = 24, 16
	var recs []*Record
	for range racers {
		for i := range pairs {
			recs = append(recs, gcRecord("race|app", fmt.Sprintf("p%d", i)))
		}
	}
	res := createAll(t, s, recs, nil)
	winners := map[string]string{} // externalId → id of the record created
	for _, r := range res {
		if r.err != nil {
			t.Fatal(r.err)
		}
		if r.created {
			if prev, dup := winners[r.rec.ExternalID]; dup {
				t.Fatalf("pair %q created twice: %s and %s", r.rec.ExternalID, prev, r.stored.ID)
			}
			winners[r.rec.ExternalID] = r.stored.ID
		}
	}
	if len(winners) != pairs {
		t.Fatalf("%d pairs created, want %d", len(winners), pairs)
	}
	for _, r := range res {
		if r.stored == nil || r.stored.ID != winners[r.rec.ExternalID] {
			t.Fatalf("pair %q answered with %v, the created record is %s", r.rec.ExternalID, r.stored, winners[r.rec.ExternalID])
		}
	}
	for _, id := range winners {
		if _, err := s.Get(context.Background(), id); err != nil {
			t.Fatalf("created record %s: %v", id, err)
		}
	}
}

// A commit that Badger refuses (here: a key over Badger's 64 KB limit, which the schema's bounds keep
// from ever reaching the store) must answer every waiter of its batch with an error, never hang, never
// acknowledge what was not written, and make the store refuse further writes.
func TestGroupCommitErrorAnswersEveryWaiter(t *testing.T) {
	dir := t.TempDir()
	s := gcOpen(t, dir)
	recs := gcRecords("ok", 64)
	bad := gcRecord("app", strings.Repeat("x", 70<<10))
	recs = append(recs[:32:32], append([]*Record{bad}, recs[32:]...)...)
	res := createAll(t, s, recs, nil)
	var acked []*Record
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
	if _, _, err := s.Create(context.Background(), gcRecord("app", "after")); err == nil {
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
	s := gcOpen(t, dir)
	recs := gcRecords("c", 400)
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
	var acked []*Record
	for _, r := range res {
		switch {
		case r.err == nil && r.created:
			acked = append(acked, r.stored)
		case r.err == nil:
			t.Fatalf("%s: answered as a duplicate", r.rec.ExternalID)
		case !errors.Is(r.err, ErrClosed):
			t.Fatalf("%s: %v, want ErrClosed", r.rec.ExternalID, r.err)
		}
	}
	checkDurable(t, dir, acked)
	t.Logf("%d of %d acknowledged before Close", len(acked), len(recs))
}

// BenchmarkCreateParallel measures the store alone: 64 concurrent publishers of new records.
func BenchmarkCreateParallel(b *testing.B) {
	s := gcOpen(b, b.TempDir())
	defer s.Close()
	var seq atomic.Int64
	b.SetParallelism(max(64/runtime.GOMAXPROCS(0), 1)) // 64 goroutines
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, _, err := s.Create(context.Background(), gcRecord("bench", fmt.Sprint("b-", seq.Add(1)))); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
