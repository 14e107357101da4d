package badgerstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/directaid/directaid/backend/store"
	"github.com/directaid/directaid/backend/store/storetest"
)

// TestSnapshotReadsConcurrent: the reads share one read-only Badger transaction (see snapshot) while
// writers create and update. Under -race (make test runs it so) it checks that sharing it races on
// nothing; and every writer reads its own write back at once, by Get and by List (the snapshot is renewed
// before a write is acknowledged).
func TestSnapshotReadsConcurrent(t *testing.T) {
	s := open(t, Options{Dir: t.TempDir()})
	ctx := context.Background()
	for _, r := range createAll(t, s, records("seed", 100), nil) {
		if r.err != nil {
			t.Fatal(r.err)
		}
	}
	specs := []store.ListSpec{
		{Limit: 20},
		{Limit: 20, Near: true, Lat: 4.53, Lon: -75.68, RadiusKm: 5},
		{Limit: 20, Words: []string{"agua"}},
		{Limit: 20, Since: time.Now().Add(-time.Hour)},
		{Limit: 20, Type: "request", Category: "alimentos", NoTotal: true},
	}
	stop := make(chan struct{})
	var readers sync.WaitGroup
	for i := range 6 {
		readers.Add(1)
		go func() {
			defer readers.Done()
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				spec := specs[(i+n)%len(specs)]
				res, err := s.List(ctx, &spec)
				if err != nil {
					t.Error(err)
					return
				}
				for _, r := range res.Records {
					if _, err := s.Get(ctx, r.ID); err != nil {
						t.Error(err)
						return
					}
				}
				if _, err := s.Aggregates(ctx, []string{"eje-cafetero"}); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	var writers sync.WaitGroup
	for w := range 4 {
		writers.Add(1)
		go func() {
			defer writers.Done()
			for j := range 25 {
				rec, _, err := s.Create(ctx, storetest.Record("app", fmt.Sprintf("w%d-%d", w, j)))
				if err != nil {
					t.Error(err)
					return
				}
				if _, err := s.Get(ctx, rec.ID); err != nil {
					t.Errorf("a created record is not read back at once: %v", err)
					return
				}
				res, err := s.List(ctx, &store.ListSpec{Limit: 1000, NoTotal: true})
				if err != nil || !slices.ContainsFunc(res.Records, func(r *store.Record) bool { return r.ID == rec.ID }) {
					t.Errorf("a created record is not listed at once (%v)", err)
					return
				}
				if j%5 == 0 {
					if _, err := s.Update(ctx, rec.ID, func(r *store.Record) error { r.Status = store.StatusResolved; return nil }); err != nil {
						t.Error(err)
						return
					}
					got, err := s.Get(ctx, rec.ID)
					if err != nil || got.Status != store.StatusResolved {
						t.Errorf("an update is not read back at once: %v", err)
						return
					}
				}
			}
		}()
	}
	writers.Wait()
	close(stop)
	readers.Wait()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.List(ctx, &store.ListSpec{Limit: 1}); !errors.Is(err, store.ErrClosed) {
		t.Fatalf("List after Close: %v, want store.ErrClosed", err)
	}
	if _, err := s.Get(ctx, "0000000000000000"); !errors.Is(err, store.ErrClosed) {
		t.Fatalf("Get after Close: %v, want store.ErrClosed", err)
	}
}
