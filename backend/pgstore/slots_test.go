package pgstore

import (
	"context"
	"errors"
	"runtime"
	"testing"
	"time"

	"github.com/directaid/directaid/backend/store"
	"github.com/directaid/directaid/internal/pgtest"
)

// TestListSlots: no more lists than listSlots run in PostgreSQL at once, whatever the pool allows; the
// others wait in the node, until their deadline at most.
func TestListSlots(t *testing.T) {
	if got, want := listSlots(16), max(2, min(16, 2*runtime.GOMAXPROCS(0))); got != want {
		t.Fatalf("listSlots(16) = %d, want %d", got, want)
	}
	ctx := context.Background()
	f := &roundTrips{}
	s := tracedStore(t, pgtest.Shared(t).NewDatabase(t), f, 32)
	if err := s.ready(ctx); err != nil {
		t.Fatal(err)
	}
	f.most.Store(0) // the migration's statements
	slots := cap(s.lists)
	// A list whose slots are all taken waits, and gives up at its deadline without reaching PostgreSQL.
	for range slots {
		s.lists <- struct{}{}
	}
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	if _, err := s.List(short, &store.ListSpec{Limit: 5}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a list with every slot taken: %v, want its deadline", err)
	}
	if f.most.Load() != 0 {
		t.Fatalf("%d statements reached PostgreSQL", f.most.Load())
	}
	for range slots {
		<-s.lists
	}
	// Many lists at once: each is a pipeline of statements on its connection, so at most one statement
	// of each list is in flight.
	errs := make(chan error, 8*slots)
	for range 8 * slots {
		go func() {
			_, err := s.List(ctx, &store.ListSpec{Near: true, Lat: 4.5, Lon: -75.6, RadiusKm: 5, Limit: 5})
			errs <- err
		}()
	}
	for range 8 * slots {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if m := f.most.Load(); m > int64(slots) || m < 2 {
		t.Fatalf("%d statements at once, with %d slots", m, slots)
	}
}
