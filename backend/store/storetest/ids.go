package storetest

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/directaid/directaid/backend/store"
)

// OpenBehaviours are the behaviours that open their stores themselves, with an id source of their own.
var OpenBehaviours = []struct {
	Name string
	Test func(t *testing.T, open Open)
}{
	{"IDsNeverShared", testIDsNeverShared},
	{"CopyIntoAnother", func(t *testing.T, open Open) { CopyBetween(t, open, open) }},
}

// collidingIDs is an id source that gives id for its first n calls, then NewIDNear's: a Create whose id
// is taken, re-ided from it, meets a taken id again n times before it gets a free one.
func collidingIDs(id string, n int32) (store.IDSource, *atomic.Int32) {
	var calls atomic.Int32
	return func(t time.Time, lat, lon *float64) string {
		if calls.Add(1) <= n {
			return id
		}
		return store.NewIDNear(t, lat, lon)
	}, &calls
}

// Records of different pairs that come with one id — one after another, and many at once so that they
// meet in one batch — are all stored, each under an id of its own that no other record holds; none
// overwrites another, each answers its own retry, and each is in the lists, searches and totals.
func testIDsNeverShared(t *testing.T, open Open) {
	first := Record("app", "first")
	ids, calls := collidingIDs(first.ID, 3)
	s := open(t, ids)
	t.Cleanup(func() { _ = s.Close() })
	if _, created, err := s.Create(ctx, first); err != nil || !created {
		t.Fatal(created, err)
	}
	second := Record("app", "second")
	second.ID, second.Title = first.ID, "Cobijas para la noche"
	got, created, err := s.Create(ctx, second)
	if err != nil || !created {
		t.Fatalf("a record with a taken id: created %v, %v", created, err)
	}
	if got.ID == first.ID || !store.ValidID(got.ID) || store.IDMillis(got.ID) != second.CreatedAt.UnixMilli() {
		t.Fatalf("a record with a taken id was stored as %q (the taken one %s)", got.ID, first.ID)
	}
	if n := calls.Load(); n < 4 {
		t.Fatalf("the id source was asked %d times: the store did not take ids from it until one was free", n)
	}
	// Many at once, all with one id, in batches of their own.
	racers := make([]*store.Record, 40)
	var wg sync.WaitGroup
	errs := make([]error, len(racers))
	for i := range racers {
		racers[i] = Record("app", fmt.Sprintf("racer-%d", i))
		racers[i].ID = first.ID
		wg.Add(1)
		go func() {
			defer wg.Done()
			stored, created, err := s.Create(ctx, racers[i])
			if err == nil && !created {
				err = fmt.Errorf("not created")
			}
			if err == nil {
				racers[i] = stored
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	all := append([]*store.Record{first, got}, racers...)
	seen := map[string]string{}
	for i, rec := range all {
		if i >= 2 && errs[i-2] != nil {
			t.Fatalf("racer %d: %v", i-2, errs[i-2])
		}
		if other, ok := seen[rec.ID]; ok {
			t.Fatalf("%s and %s share the id %s", other, rec.ExternalID, rec.ID)
		}
		seen[rec.ID] = rec.ExternalID
	}
	// Each id reads back as its own record, each pair answers its own record, nothing was overwritten.
	for _, rec := range all {
		stored, err := s.Get(ctx, rec.ID)
		if err != nil || stored.ExternalID != rec.ExternalID || stored.Title != rec.Title {
			t.Fatalf("%s reads back as %+v, %v", rec.ID, stored, err)
		}
		retry := Record(rec.Source, rec.ExternalID)
		again, created, err := s.Create(ctx, retry)
		if err != nil || created || again.ID != rec.ID {
			t.Fatalf("retry of %s: %v %v %v, want %s", rec.ExternalID, again, created, err, rec.ID)
		}
	}
	// Every one is in the index entries: the emergency's list, a word search, a radius and the counts.
	for name, spec := range map[string]*store.ListSpec{
		"emergency": {EmergencySlug: "eje-cafetero"},
		"word":      {Words: []string{"agua"}},
		"category":  {Category: "alimentos", Type: "request"},
		"radius":    {Near: true, Lat: 4.53, Lon: -75.68, RadiusKm: 5},
		"since":     {Since: first.CreatedAt.Add(-time.Second)},
	} {
		spec.Limit = 100
		res, err := s.List(ctx, spec)
		if err != nil {
			t.Fatal(name, err)
		}
		want := len(all)
		if name == "word" {
			want-- // second's title is another
		}
		listed := map[string]bool{}
		for _, r := range res.Records {
			listed[r.ID] = true
		}
		if len(res.Records) != want || len(listed) != want || (res.TotalExact && res.Total != want) {
			t.Errorf("%s: %d records listed (%d ids), total %d, want %d", name, len(res.Records), len(listed), res.Total, want)
		}
	}
	agg, err := s.Aggregates(ctx, []string{"eje-cafetero"})
	if err != nil {
		t.Fatal(err)
	}
	if n := agg["eje-cafetero"].Statuses[store.StatusOpen]; n != len(all) {
		t.Errorf("aggregate counts %d open, want %d", n, len(all))
	}
}
