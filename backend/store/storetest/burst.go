package storetest

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/directaid/directaid/backend/store"
	"github.com/directaid/directaid/schema"
)

// burstSlug is the emergency of the burst's records only, so that its lists hold nothing else.
const burstSlug = "rafaga"

// testReadableOnceAcknowledged: a record is in every view the moment its Create returns, while other
// Creates go on. Publishers create records (each with a word and a point of its own, in an emergency of
// their own) and, as soon as each is acknowledged, find it by id, by pair, by its word (the only match,
// counted exactly), within 200 m of its point, and in its category's list of changes since just before
// it. Meanwhile a reader takes the set of records acknowledged so far and checks that every list of the
// emergency (unfiltered, by type and category, by municipio), its aggregate, the expiry index and the scan
// hold at least those, and only records that were submitted.
func testReadableOnceAcknowledged(t *testing.T, s store.Store) {
	Seed(t, s, 200, time.Now().Add(-time.Hour), time.Second) // other records, in other emergencies
	const publishers, each = 16, 25
	var (
		mu        sync.Mutex
		acked     = map[string]*store.Record{}
		submitted = map[string]bool{} // externalIds
	)
	base := time.Now().UTC().Truncate(time.Millisecond)
	make1 := func(i int) *store.Record {
		rec := SynthRecord(rand.New(rand.NewPCG(uint64(i), 7)), base.Add(time.Duration(i)*time.Millisecond), i)
		p := &rec.Publication
		p.Source, p.ExternalID, p.EmergencySlug = "burst", fmt.Sprintf("b-%d", i), burstSlug
		p.Title = fmt.Sprintf("Ayuda rafaga%dq", i)
		p.Type, p.Urgency, p.MunicipioCode = schema.TypeRequest, schema.Urgencies[i%3], "63001"
		n := 1 + i%7
		p.NeededPeople = &n
		lat, lon := 3.0+float64(i%40)*0.01, -74.0-float64(i/40)*0.01 // 1.1 km apart, far from the seeded records
		p.Latitude, p.Longitude, p.Address = &lat, &lon, "Calle 2"
		rec.Status, rec.ExpiresAt = store.StatusOpen, base.Add(1000*time.Hour+time.Duration(i)*time.Minute)
		rec.ID = store.NewIDNear(rec.CreatedAt, p.Latitude, p.Longitude)
		return rec
	}
	contains := func(spec store.ListSpec, id string) (bool, *store.ListResult) {
		res, err := s.List(ctx, &spec)
		if err != nil {
			t.Error(err)
			return false, nil
		}
		return slices.ContainsFunc(res.Records, func(r *store.Record) bool { return r.ID == id }), res
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for g := range publishers {
		wg.Go(func() {
			for k := range each {
				rec := make1(g*each + k)
				mu.Lock()
				submitted[rec.ExternalID] = true
				mu.Unlock()
				stored, created, err := s.Create(ctx, rec)
				if err != nil || !created {
					t.Errorf("Create %s: created %v, %v", rec.ExternalID, created, err)
					return
				}
				mu.Lock()
				acked[stored.ID] = stored
				mu.Unlock()
				id := stored.ID
				if got, err := s.Get(ctx, id); err != nil {
					t.Errorf("Get %s right after its Create: %v", id, err)
				} else {
					sameRecord(t, "Get "+id, got, stored)
				}
				if got, err := s.Lookup(ctx, rec.Source, rec.ExternalID); err != nil || got.ID != id {
					t.Errorf("Lookup %s right after its Create: %v %v", rec.ExternalID, got, err)
				}
				if ok, res := contains(store.ListSpec{Words: []string{store.FoldText(rec.Title[6:])}, Limit: 5}, id); !ok || len(res.Records) != 1 || !res.TotalExact || res.Total != 1 {
					t.Errorf("%s not alone in the list of its word right after its Create: %+v", id, res)
				}
				if ok, res := contains(store.ListSpec{Near: true, Lat: *rec.Latitude, Lon: *rec.Longitude, RadiusKm: 0.2, Limit: 5}, id); !ok || len(res.Records) != 1 || res.Total < 1 {
					t.Errorf("%s not alone within 200 m of its point right after its Create: %+v", id, res)
				}
				if ok, res := contains(store.ListSpec{EmergencySlug: burstSlug, Type: rec.Type, Category: rec.Category, Since: stored.UpdatedAt.Add(-time.Millisecond), Limit: 100}, id); !ok {
					t.Errorf("%s not in its category's changes right after its Create: %+v", id, res)
				}
			}
		})
	}
	var reads sync.WaitGroup
	rounds := 0
	reads.Go(func() {
		for {
			select {
			case <-stop:
				if rounds > 0 {
					return
				}
			default:
			}
			rounds++
			mu.Lock()
			before := make(map[string]*store.Record, len(acked))
			for id, r := range acked {
				before[id] = r
			}
			mu.Unlock()
			checkHolds(t, s, before, func(extID string) bool { mu.Lock(); defer mu.Unlock(); return submitted[extID] })
		}
	})
	wg.Wait()
	close(stop)
	reads.Wait()
	if t.Failed() {
		return
	}
	// At rest, every view holds exactly the burst's records.
	var all []*store.Record
	ackedExt := map[string]bool{}
	for _, r := range acked {
		all = append(all, r)
		ackedExt[r.ExternalID] = true
	}
	checkHolds(t, s, acked, func(extID string) bool { return ackedExt[extID] })
	for _, spec := range []store.ListSpec{{EmergencySlug: burstSlug, Limit: 37}, {EmergencySlug: burstSlug, Urgency: "urgent", Limit: 50},
		{Words: []string{"rafaga"}, Limit: 100}, {Near: true, Lat: 3.2, Lon: -74.05, RadiusKm: 30, Limit: 20}} {
		CheckList(t, s, all, spec, false)
	}
	t.Logf("%d records published, %d rounds of reads during the burst", len(acked), rounds)
}

// checkHolds checks that every view of the burst's emergency holds every record of want, and only
// records whose externalId was submitted.
func checkHolds(t *testing.T, s store.Store, want map[string]*store.Record, wasSubmitted func(string) bool) {
	t.Helper()
	wantTypeCat := map[[2]string]int{}
	for _, r := range want {
		wantTypeCat[[2]string{r.Type, r.Category}]++
	}
	seen := func(what string, got []*store.Record, total int, exact bool, filter func(*store.Record) bool) {
		t.Helper()
		ids := map[string]bool{}
		for _, r := range got {
			ids[r.ID] = true
			if !wasSubmitted(r.ExternalID) {
				t.Errorf("%s: %s was never submitted", what, r.ExternalID)
			}
		}
		n := 0
		for id, r := range want {
			if filter != nil && !filter(r) {
				continue
			}
			n++
			if !ids[id] {
				t.Errorf("%s lacks %s, acknowledged before the read began", what, id)
			}
		}
		if exact && total < n {
			t.Errorf("%s: total %d, but %d were acknowledged before the read began", what, total, n)
		}
	}
	page := func(spec store.ListSpec) ([]*store.Record, int, bool) {
		spec.Limit = 100
		var out []*store.Record
		total, exact := 0, false
		for first := true; ; first = false {
			res, err := s.List(ctx, &spec)
			if err != nil {
				t.Error(err)
				return nil, 0, false
			}
			if first {
				total, exact = res.Total, res.TotalExact
			}
			out = append(out, res.Records...)
			if res.Next == nil {
				return out, total, exact
			}
			spec.After = res.Next
		}
	}
	got, total, exact := page(store.ListSpec{EmergencySlug: burstSlug})
	seen("the emergency's list", got, total, exact, nil)
	for _, c := range schema.Categories {
		got, total, exact := page(store.ListSpec{EmergencySlug: burstSlug, Type: schema.TypeRequest, Category: c})
		seen("the list of category "+c, got, total, exact, func(r *store.Record) bool { return r.Category == c })
	}
	got, total, exact = page(store.ListSpec{EmergencySlug: burstSlug, Municipio: "63001"})
	seen("the municipio's list", got, total, exact, nil)
	got, total, exact = page(store.ListSpec{Words: []string{"rafaga"}})
	seen("the list of q=rafaga", got, total, exact, nil)
	got, total, exact = page(store.ListSpec{Near: true, Lat: 3.2, Lon: -74.05, RadiusKm: 200, EmergencySlug: burstSlug})
	seen("the 200 km list", got, total, exact, nil)
	ag, err := s.Aggregates(ctx, []string{burstSlug})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, c := range ag[burstSlug].Counts {
		n += c
	}
	if n < len(want) || ag[burstSlug].Statuses[store.StatusOpen] < len(want) {
		t.Errorf("the emergency's aggregate counts %d open records, but %d were acknowledged before the read began", n, len(want))
	}
	ids, err := s.Expiring(ctx, time.Now().Add(10000*time.Hour), 100000)
	if err != nil {
		t.Fatal(err)
	}
	for id := range want {
		if !slices.Contains(ids, id) {
			t.Errorf("the expiry index lacks %s, acknowledged before the read began", id)
		}
	}
	scanned := map[string]bool{}
	if err := s.Scan(ctx, func(r *store.Record) error { scanned[r.ID] = true; return nil }); err != nil {
		t.Fatal(err)
	}
	for id := range want {
		if !scanned[id] {
			t.Errorf("the scan lacks %s, acknowledged before the read began", id)
		}
	}
}
