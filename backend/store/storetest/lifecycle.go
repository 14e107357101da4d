package storetest

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/directaid/directaid/backend/store"
	"github.com/directaid/directaid/schema"
)

// The behaviours of a record's life: Update, statuses in lists and aggregates, the change feed.

// setStatus is the fn of an Update to st (withdrawn and hidden as the service does them: a withdrawal
// erases what is personal).
func setStatus(st string) func(*store.Record) error {
	return func(r *store.Record) error {
		r.Status = st
		if st == store.StatusWithdrawn {
			r.ErasePersonal()
		}
		return nil
	}
}

func update(t *testing.T, s store.Store, id string, fn func(*store.Record) error) *store.Record {
	t.Helper()
	rec, err := s.Update(ctx, id, fn)
	if err != nil {
		t.Fatalf("Update %s: %v", id, err)
	}
	return rec
}

// current reads every record of ids as stored now.
func current(t *testing.T, s store.Store, ids []string) []*store.Record {
	t.Helper()
	out := make([]*store.Record, len(ids))
	for i, id := range ids {
		r, err := s.Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		out[i] = r
	}
	return out
}

func idsOf(recs []*store.Record) []string {
	out := make([]string, len(recs))
	for i, r := range recs {
		out[i] = r.ID
	}
	return out
}

// Every transition shows in Get, in the lists of each status (time, kind and radius indexes), in a
// retry's answer and in the aggregates; a withdrawal leaves nothing personal in the stored record.
func testUpdateTransitions(t *testing.T, s store.Store) {
	recs := Seed(t, s, 120, time.Now().Add(-2*time.Hour), time.Minute)
	ids := idsOf(recs)
	check := func() {
		t.Helper()
		cur := current(t, s, ids)
		CheckAggregates(t, s, cur)
		for _, st := range store.Statuses {
			for _, spec := range []store.ListSpec{{Status: st, Limit: 9}, {Status: st, Limit: 9, Category: "salud", EmergencySlug: "eje-cafetero"},
				{Status: st, Limit: 9, Near: true, Lat: 4.53, Lon: -75.68, RadiusKm: 12}, {Status: st, Limit: 9, Words: []string{"agua"}},
				// The counters by municipio and by (emergency, municipio) follow the transitions too.
				{Status: st, Limit: 9, Municipio: "63001"}, {Status: st, Limit: 9, Municipio: "63130", EmergencySlug: "eje-cafetero"},
				{Status: st, Limit: 9, Near: true, Lat: 4.53, Lon: -75.68, RadiusKm: 12, Municipio: "63001", EmergencySlug: "la-mojana"}} {
				CheckList(t, s, cur, spec, false)
			}
		}
		CheckList(t, s, cur, store.ListSpec{Limit: 9}, false) // "" is open
	}
	check()
	a := recs[3]
	prev := a.UpdatedAt
	got := update(t, s, a.ID, setStatus(store.StatusResolved))
	if got.Status != store.StatusResolved || !got.UpdatedAt.After(prev) || got.ContactE164 != a.ContactE164 {
		t.Fatalf("resolved: %+v (updatedAt before %v)", got, prev)
	}
	if g, _ := s.Get(ctx, a.ID); g.Status != store.StatusResolved || !g.UpdatedAt.Equal(got.UpdatedAt) {
		t.Fatalf("Get after Update: %+v", g)
	}
	update(t, s, recs[4].ID, setStatus(store.StatusHidden))
	update(t, s, recs[5].ID, setStatus(store.StatusExpired))
	update(t, s, recs[6].ID, setStatus(store.StatusResolved))
	// Withdraw a request with a place: the contact and the place are gone from the stored record.
	w := recs[slices.IndexFunc(recs, func(r *store.Record) bool { return r.Type == schema.TypeRequest && r.Latitude != nil })]
	wd := update(t, s, w.ID, setStatus(store.StatusWithdrawn))
	for _, r := range []*store.Record{wd, current(t, s, []string{w.ID})[0]} {
		if r.ContactName != "" || r.ContactWhatsapp != "" || r.ContactE164 != "" || r.Address != "" || r.Latitude != nil || r.Longitude != nil ||
			r.Status != store.StatusWithdrawn || r.Title != w.Title {
			t.Fatalf("withdrawn record keeps personal data or lost its title: %+v", r)
		}
	}
	// A retry of a withdrawn publication answers the withdrawn record; nothing is created again.
	retry := Record(w.Source, w.ExternalID)
	stored, created, err := s.Create(ctx, retry)
	if err != nil || created || stored.ID != w.ID || stored.Status != store.StatusWithdrawn || stored.ContactE164 != "" {
		t.Fatalf("retry after withdrawal: created %v, %+v, %v", created, stored, err)
	}
	check()
	// Reopen: back in the open lists.
	if r := update(t, s, a.ID, setStatus(store.StatusOpen)); r.Status != store.StatusOpen {
		t.Fatal(r.Status)
	}
	// fn may set UpdatedAt (a service clock ahead of the store's): the store keeps at least that.
	later := time.Now().Add(time.Hour).UTC().Truncate(time.Millisecond)
	if r := update(t, s, recs[7].ID, func(r *store.Record) error { r.UpdatedAt = later; return nil }); r.UpdatedAt.Before(later) {
		t.Fatalf("updatedAt %v before the %v fn set", r.UpdatedAt, later)
	}
	check()
}

// Update refuses an unknown id, fn's error and a change of what identifies a record, storing nothing.
func testUpdateRefusals(t *testing.T, s store.Store) {
	rec := Record("app", "refusals")
	stored, _, err := s.Create(ctx, rec)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Update(ctx, store.NewID(time.Now()), setStatus(store.StatusResolved)); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Update of an unknown id: %v, want ErrNotFound", err)
	}
	boom := errors.New("boom")
	cases := map[string]func(*store.Record) error{
		"fn error":      func(r *store.Record) error { r.Status = store.StatusResolved; return boom },
		"id":            func(r *store.Record) error { r.ID = store.NewID(time.Now()); return nil },
		"createdAt":     func(r *store.Record) error { r.CreatedAt = r.CreatedAt.Add(time.Second); return nil },
		"source":        func(r *store.Record) error { r.Source = "other"; return nil },
		"externalId":    func(r *store.Record) error { r.ExternalID = "other"; return nil },
		"emergencySlug": func(r *store.Record) error { r.EmergencySlug = "la-mojana"; return nil },
		"type":          func(r *store.Record) error { r.Type = schema.TypeOffer; return nil },
		"unknown status": func(r *store.Record) error {
			r.Status = "deleted"
			return nil
		},
	}
	for name, fn := range cases {
		_, err := s.Update(ctx, stored.ID, fn)
		switch {
		case err == nil:
			t.Fatalf("%s: Update accepted", name)
		case name == "fn error" && !errors.Is(err, boom):
			t.Fatalf("fn error: %v, want fn's own", err)
		case name != "fn error" && name != "unknown status" && !errors.Is(err, store.ErrImmutable):
			t.Fatalf("%s: %v, want ErrImmutable", name, err)
		}
		got, err := s.Get(ctx, stored.ID)
		if err != nil {
			t.Fatal(err)
		}
		sameRecord(t, name+": record after a refused Update", got, stored)
	}
}

// The change feed (Since): every status, oldest change first, tombstones included, filters applied.
func testChangeFeed(t *testing.T, s store.Store) {
	recs := Seed(t, s, 60, time.Now().Add(-time.Hour), time.Second)
	var since time.Time
	for _, r := range recs {
		if r.UpdatedAt.After(since) {
			since = r.UpdatedAt
		}
	}
	// Nothing changed after the newest write.
	if res, err := s.List(ctx, &store.ListSpec{Since: since, Limit: 10}); err != nil || len(res.Records) != 0 || res.Total != 0 || res.Next != nil {
		t.Fatalf("feed after the last change: %+v, %v", res, err)
	}
	order := []string{recs[10].ID, recs[3].ID, recs[40].ID, recs[22].ID, recs[10].ID, recs[51].ID}
	sts := []string{store.StatusResolved, store.StatusWithdrawn, store.StatusHidden, store.StatusExpired, store.StatusOpen, store.StatusResolved}
	for i, id := range order {
		update(t, s, id, setStatus(sts[i]))
	}
	want := []string{recs[3].ID, recs[40].ID, recs[22].ID, recs[10].ID, recs[51].ID} // recs[10] moved to its last change
	for _, limit := range []int{1, 2, 100} {
		got, pages := PageAll(t, s, store.ListSpec{Since: since, Limit: limit})
		if !slices.Equal(got, want) || pages[0].Total != len(want) || !pages[0].TotalExact {
			t.Fatalf("limit %d: feed %v (total %d), want %v", limit, got, pages[0].Total, want)
		}
		var last time.Time
		for _, p := range pages {
			for _, r := range p.Records {
				if r.UpdatedAt.Before(last) {
					t.Fatalf("feed out of order at %s", r.ID)
				}
				last = r.UpdatedAt
			}
		}
	}
	cur := current(t, s, idsOf(recs))
	for _, spec := range []store.ListSpec{
		{Since: since, Status: store.StatusHidden}, {Since: since, EmergencySlug: "eje-cafetero"}, {Since: since, Type: schema.TypeOffer},
		{Since: time.UnixMilli(1)}, {Since: time.UnixMilli(1), Category: "salud", Status: store.StatusOpen},
	} {
		for _, limit := range []int{3, 100} {
			spec.Limit = limit
			t.Run(fmt.Sprintf("%+v", spec), func(t *testing.T) { CheckList(t, s, cur, spec, false) })
		}
	}
	// What the API refuses with since the stores refuse too, alike.
	for _, spec := range []store.ListSpec{
		{Since: since, Words: []string{"agua"}}, {Since: since, Near: true, Lat: 4.53, Lon: -75.68, RadiusKm: 5}, {Since: since, Municipio: "63001"},
	} {
		spec.Limit = 5
		if res, err := s.List(ctx, &spec); !errors.Is(err, store.ErrSinceCombined) {
			t.Fatalf("%+v: %+v, %v; want ErrSinceCombined", spec, res, err)
		}
	}
	// A feed cursor is tied to the feed's filters, and a list's cursor is not a feed's.
	spec := store.ListSpec{Since: time.UnixMilli(1), Limit: 5}
	res, err := s.List(ctx, &spec)
	if err != nil || res.Next == nil {
		t.Fatal(res, err)
	}
	if _, err := (&store.ListSpec{Limit: 5}).DecodeCursor(spec.EncodeCursor(res.Next)); !errors.Is(err, store.ErrCursorMismatch) {
		t.Fatalf("feed cursor in a list: %v", err)
	}
}

// A mirror replays the feed while records are created and change status; once the writes stop and it
// catches up from the newest updatedAt it saw, it holds exactly what the store holds, and it never saw
// a record go back to an older version.
func testChangeFeedUnderConcurrentUpdates(t *testing.T, s store.Store) {
	recs := Seed(t, s, 200, time.Now().Add(-time.Hour), time.Second)
	var mu sync.Mutex
	ids := idsOf(recs)
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		rng := rand.New(rand.NewPCG(7, 8))
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if i%3 == 0 {
				stored, _, err := s.Create(ctx, SynthRecord(rng, time.Now(), 200000+i))
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				ids = append(ids, stored.ID)
				mu.Unlock()
				continue
			}
			mu.Lock()
			id := ids[rng.IntN(len(ids))]
			mu.Unlock()
			if _, err := s.Update(ctx, id, setStatus(store.Statuses[rng.IntN(len(store.Statuses))])); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	mirror := map[string]*store.Record{}
	var seen time.Time
	replay := func(since time.Time) {
		spec := store.ListSpec{Since: since, Limit: 7}
		for range 100000 {
			res, err := s.List(ctx, &spec)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range res.Records {
				if old := mirror[r.ID]; old != nil && !r.UpdatedAt.After(old.UpdatedAt) && !r.UpdatedAt.Equal(old.UpdatedAt) {
					t.Fatalf("%s went back from %v to %v", r.ID, old.UpdatedAt, r.UpdatedAt)
				}
				mirror[r.ID] = r
				if r.UpdatedAt.After(seen) {
					seen = r.UpdatedAt
				}
			}
			if res.Next == nil {
				return
			}
			spec.After = res.Next
		}
		t.Fatal("feed did not end")
	}
	replay(time.UnixMilli(1))
	close(stop)
	<-done
	replay(seen)
	want := current(t, s, ids)
	if len(mirror) != len(want) {
		t.Fatalf("mirror holds %d records, the store %d", len(mirror), len(want))
	}
	for _, w := range want {
		m := mirror[w.ID]
		if m == nil || m.Status != w.Status || !m.UpdatedAt.Equal(w.UpdatedAt) || m.ContactE164 != w.ContactE164 {
			t.Fatalf("mirror has %+v, the store %+v", m, w)
		}
	}
}

// Updates of one record from many goroutines are applied one after another: none is lost.
func testConcurrentUpdates(t *testing.T, s store.Store) {
	rec, _, err := s.Create(ctx, Record("app", "counter"))
	if err != nil {
		t.Fatal(err)
	}
	const n = 50
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := s.Update(ctx, rec.ID, func(r *store.Record) error { *r.NeededPeople++; return nil }); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	got, err := s.Get(ctx, rec.ID)
	if err != nil || *got.NeededPeople != *rec.NeededPeople+n {
		t.Fatalf("after %d increments: %v, %v (was %d)", n, *got.NeededPeople, err, *rec.NeededPeople)
	}
	CheckAggregates(t, s, []*store.Record{got})
}
