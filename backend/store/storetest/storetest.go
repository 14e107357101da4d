// Package storetest is the behaviour every store.Store must show, as one table that each implementation's
// tests run: storetest.Run(t, open). Its helpers (records, seeding, a brute-force reference of lists) serve
// an implementation's own tests of what only it has (batching, budgets, crash recovery).
package storetest

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/directaid/directaid/backend/store"
	"github.com/directaid/directaid/schema"
)

// Open returns a new, empty store for one test, whose Creates take fresh ids from ids when theirs is taken
// (nil: the store's default, store.NewIDNear); Run closes it (a second Close must be harmless).
type Open func(t *testing.T, ids store.IDSource) store.Store

// Behaviours is the table: one entry per behaviour of the store.Store contract. To extend the interface,
// add its behaviours here; every store then runs them.
var Behaviours = []struct {
	Name string
	Test func(t *testing.T, s store.Store)
}{
	{"CreateGet", testCreateGet},
	{"PairIsTheIdempotencyKey", testPairIdempotency},
	{"ConcurrentCreatesOfOnePair", testConcurrentCreates},
	{"ListMatchesReference", testListMatchesReference},
	{"RadiusNearestFirst", testRadiusNearestFirst},
	{"RadiusEstimatedTotal", testRadiusEstimatedTotal},
	{"NoTotal", testNoTotal},
	{"TextTotalsPastTheBound", testTextTotalsPastTheBound},
	{"PagingUnderConcurrentInserts", testPagingUnderConcurrentInserts},
	{"ReadableOnceAcknowledged", testReadableOnceAcknowledged},
	{"Aggregates", testAggregates},
	{"UpdateTransitions", testUpdateTransitions},
	{"UpdateRefusals", testUpdateRefusals},
	{"ChangeFeed", testChangeFeed},
	{"ChangeFeedUnderConcurrentUpdates", testChangeFeedUnderConcurrentUpdates},
	{"ConcurrentUpdatesOfOneRecord", testConcurrentUpdates},
	{"Expiring", testExpiring},
	{"Scan", testScan},
	{"Reports", testReports},
	{"Disownings", testDisownings},
	{"Responses", testResponses},
	{"ResponsesPerRecordBound", testResponsesPerRecordBound},
	{"Webhooks", testWebhooks},
	{"AuditTrail", testAuditTrail},
	{"AuditWithTheUpdate", testAuditWithTheUpdate},
	{"Secret", testSecret},
	{"TransferSecrets", testTransferSecrets},
	{"TransferReports", testTransferReports},
	{"TransferAudit", testTransferAudit},
	{"TransferResponses", testTransferResponses},
	{"Import", testImport},
	{"Maintain", testMaintain},
	{"Probe", testProbe},
	{"Close", testClose},
}

// Run runs every behaviour, each on a store of its own.
func Run(t *testing.T, open Open) {
	for _, b := range Behaviours {
		t.Run(b.Name, func(t *testing.T) {
			s := open(t, nil)
			t.Cleanup(func() { _ = s.Close() })
			b.Test(t, s)
		})
	}
	for _, b := range OpenBehaviours {
		t.Run(b.Name, func(t *testing.T) { b.Test(t, open) })
	}
}

var ctx = context.Background()

// Record is a valid request of emergency eje-cafetero, created now, with the pair (source, externalID).
func Record(source, externalID string) *store.Record {
	now := time.Now().UTC().Truncate(time.Millisecond)
	lat, lon, n := 4.53, -75.68, 3
	return &store.Record{ID: store.NewID(now), CreatedAt: now, Publication: schema.Publication{Type: schema.TypeRequest,
		Common: schema.Common{Source: source, ExternalID: externalID, EmergencySlug: "eje-cafetero", Content: schema.Content{Title: "Agua potable",
			Category: "alimentos"}, ContactName: "Ana", ContactWhatsapp: "3001234567", PublishContact: true},
		Place: schema.Place{Address: "Calle 1", Latitude: &lat, Longitude: &lon}, Needs: schema.Needs{Urgency: "needed", NeededPeople: &n}, ContactE164: "+573001234567"}}
}

var titles = []string{"Médico para adultos mayores", "Agua potable", "Carpa y cobijas", "Transporte a Armenia", "Niños sin útiles", "MEDICAMENTOS urgentes", "Rescate de mascotas"}

// SynthRecord makes a varied record created at t (i makes its externalId unique).
func SynthRecord(rng *rand.Rand, t time.Time, i int) *store.Record {
	rec := &store.Record{CreatedAt: t.UTC().Truncate(time.Millisecond)}
	p := &rec.Publication
	p.Source, p.ExternalID = "test", fmt.Sprintf("r-%d-%d", i, rng.Int())
	p.EmergencySlug = []string{"eje-cafetero", "la-mojana"}[rng.IntN(2)]
	p.Title = titles[rng.IntN(len(titles))]
	p.Description = []string{"", "Se necesita con urgencia en el barrio", "Atención médica básica"}[rng.IntN(3)]
	p.Category = schema.Categories[rng.IntN(len(schema.Categories))]
	p.ContactName, p.ContactWhatsapp, p.ContactE164, p.PublishContact = "Ana", "3001234567", "+573001234567", true
	lat, lon := 4.53+rng.Float64()*0.3-0.15, -75.68+rng.Float64()*0.3-0.15
	p.MunicipioCode = []string{"63001", "", "63130", "66001", "63001"}[i%5] // from i: the rng's sequence stays as it was
	if rng.IntN(2) == 0 {
		p.Type = schema.TypeRequest
		p.Urgency = schema.Urgencies[rng.IntN(3)]
		n := rng.IntN(20)
		p.NeededPeople = &n
		p.Latitude, p.Longitude, p.Address = &lat, &lon, "Calle 1"
	} else {
		p.Type = schema.TypeOffer
		if rng.IntN(3) > 0 {
			p.Latitude, p.Longitude = &lat, &lon
		}
	}
	rec.ID = store.NewIDNear(t, p.Latitude, p.Longitude) // as the service makes it
	return rec
}

// Seed creates n SynthRecords, the i-th at start + i×step, from 64 goroutines at a time, and returns
// them as stored.
func Seed(t testing.TB, s store.Store, n int, start time.Time, step time.Duration) []*store.Record {
	t.Helper()
	rng := rand.New(rand.NewPCG(1, 2))
	recs := make([]*store.Record, n)
	for i := range recs {
		recs[i] = SynthRecord(rng, start.Add(time.Duration(i)*step), i)
	}
	return CreateAll(t, s, recs)
}

// CreateAll creates recs from 64 goroutines at a time and returns them as stored.
func CreateAll(t testing.TB, s store.Store, recs []*store.Record) []*store.Record {
	t.Helper()
	n := len(recs)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	sem := make(chan struct{}, 64)
	for i, r := range recs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			stored, _, err := s.Create(ctx, r)
			if err != nil {
				errs <- err
				return
			}
			recs[i] = stored
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	return recs
}

// Match is a record in a list: its id and, in radius lists, its distance.
type Match struct {
	ID   string
	Dist float64
}

// Reference answers spec by brute force over recs (as stored: Status and UpdatedAt set), in list order
// (ignoring Limit and After).
func Reference(recs []*store.Record, spec *store.ListSpec) []Match {
	var out []Match
	byID := map[string]*store.Record{}
	for _, r := range recs {
		if st := spec.StatusOr(); (spec.EmergencySlug != "" && r.EmergencySlug != spec.EmergencySlug) || (spec.Type != "" && r.Type != spec.Type) ||
			(spec.Category != "" && r.Category != spec.Category) || (spec.Urgency != "" && r.Urgency != spec.Urgency) ||
			(spec.Municipio != "" && r.MunicipioCode != spec.Municipio) ||
			(st != "" && r.Status != st) || (!spec.Since.IsZero() && r.UpdatedAt.UnixMilli() <= spec.SinceMillis()) ||
			!store.MatchText(store.SearchText(r), spec.Words) {
			continue
		}
		byID[r.ID] = r
		m := Match{ID: r.ID}
		if spec.Near {
			if r.Latitude == nil {
				continue
			}
			if m.Dist = store.HaversineKm(spec.Lat, spec.Lon, *r.Latitude, *r.Longitude); m.Dist > spec.RadiusKm {
				continue
			}
		}
		out = append(out, m)
	}
	slices.SortFunc(out, func(a, b Match) int {
		if !spec.Since.IsZero() {
			return cmp.Or(byID[a.ID].UpdatedAt.Compare(byID[b.ID].UpdatedAt), strings.Compare(a.ID, b.ID))
		}
		if spec.Near && a.Dist != b.Dist {
			if a.Dist < b.Dist {
				return -1
			}
			return 1
		}
		return strings.Compare(b.ID, a.ID)
	})
	return out
}

// PageAll follows Next to the end, round-tripping each cursor through its string as a client would, and
// returns the ids in order and the pages.
func PageAll(t *testing.T, s store.Store, spec store.ListSpec) ([]string, []*store.ListResult) {
	t.Helper()
	var ids []string
	var pages []*store.ListResult
	for range 10000 {
		res, err := s.List(ctx, &spec)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Distances) != len(res.Records) && spec.Near {
			t.Fatalf("%d distances for %d records", len(res.Distances), len(res.Records))
		}
		pages = append(pages, res)
		for _, r := range res.Records {
			ids = append(ids, r.ID)
		}
		if res.Next == nil {
			return ids, pages
		}
		c, err := spec.DecodeCursor(spec.EncodeCursor(res.Next))
		if err != nil {
			t.Fatal(err)
		}
		spec.After = c
	}
	t.Fatal("paging did not end")
	return nil, nil
}

// CheckList pages through spec and compares with Reference: the same ids in the same order, the exact
// total (unless the store says it estimated it), the distances, and full pages before the last. A
// bounded store (one that limits what a q search reads) may end pages early and estimate totals.
func CheckList(t *testing.T, s store.Store, recs []*store.Record, spec store.ListSpec, bounded bool) {
	t.Helper()
	want := Reference(recs, &spec)
	ids, pages := PageAll(t, s, spec)
	var wantIDs []string
	for _, m := range want {
		wantIDs = append(wantIDs, m.ID)
	}
	if !slices.Equal(ids, wantIDs) {
		t.Fatalf("got %d ids, want %d\n got %v\nwant %v", len(ids), len(wantIDs), head(ids), head(wantIDs))
	}
	first := pages[0]
	if first.TotalExact && first.Total != len(want) {
		t.Errorf("total %d, want %d", first.Total, len(want))
	}
	radius := spec.Near && len(spec.Words) == 0 && !spec.NoTotal && spec.After == nil
	if radius {
		// Both stores decide it alike from their cell counters: exact, or the same estimate.
		if n, exact := RadiusTotal(recs, &spec); first.Total != n || first.TotalExact != exact {
			t.Errorf("radius total %d (exact %v), want %d (exact %v)", first.Total, first.TotalExact, n, exact)
		}
	}
	if !first.TotalExact && !radius && (!bounded || first.Total == 0) {
		t.Errorf("total %d inexact without a lowered bound", first.Total)
	}
	i := 0
	for n, p := range pages {
		if !bounded && n < len(pages)-1 && len(p.Records) != spec.Limit {
			t.Errorf("short page %d before the end", len(p.Records))
		}
		for j := range p.Records {
			if spec.Near && math.Abs(p.Distances[j]-want[i].Dist) > 1e-9 {
				t.Errorf("%s: distance %v, want %v", p.Records[j].ID, p.Distances[j], want[i].Dist)
			}
			i++
		}
	}
}

func head(ids []string) []string {
	if len(ids) > 5 {
		return ids[:5]
	}
	return ids
}

// sameRecord compares got with want; a want without Status or UpdatedAt (a record as given to Create)
// takes open and got's UpdatedAt, which must then be at or after CreatedAt.
func sameRecord(t *testing.T, what string, got, want *store.Record) {
	t.Helper()
	wc := *want
	wc.Status = cmp.Or(wc.Status, store.StatusOpen)
	if wc.UpdatedAt.IsZero() {
		if got.UpdatedAt.Before(got.CreatedAt) {
			t.Fatalf("%s: updatedAt %v before createdAt %v", what, got.UpdatedAt, got.CreatedAt)
		}
		wc.UpdatedAt = got.UpdatedAt
	}
	g, _ := json.Marshal(got)
	w, _ := json.Marshal(&wc)
	if string(g) != string(w) || !got.CreatedAt.Equal(want.CreatedAt) {
		t.Fatalf("%s:\n got %s\nwant %s", what, g, w)
	}
}

func testCreateGet(t *testing.T, s store.Store) {
	rec := Record("app", "one")
	rec.Description = "Atención médica «urgente»\nsegunda línea"
	stored, created, err := s.Create(ctx, rec)
	if err != nil || !created {
		t.Fatalf("first Create: created %v, %v", created, err)
	}
	sameRecord(t, "Create's stored record", stored, rec)
	got, err := s.Get(ctx, rec.ID)
	if err != nil {
		t.Fatal(err)
	}
	sameRecord(t, "Get", got, rec)
	// Pages hold whole records too, contact included (the PostgreSQL store keeps it in a table of its own).
	for _, spec := range []store.ListSpec{{Limit: 10}, {Limit: 10, Near: true, Lat: 4.53, Lon: -75.68, RadiusKm: 1}} {
		res, err := s.List(ctx, &spec)
		if err != nil || len(res.Records) != 1 {
			t.Fatalf("%+v: %+v, %v", spec, res, err)
		}
		sameRecord(t, fmt.Sprintf("page of %+v", spec), res.Records[0], rec)
	}
	offer := Record("app", "offer")
	offer.Type, offer.Urgency, offer.NeededPeople, offer.Latitude, offer.Longitude, offer.Address = schema.TypeOffer, "", nil, nil, nil, ""
	if _, created, err := s.Create(ctx, offer); err != nil || !created {
		t.Fatalf("offer without a place: created %v, %v", created, err)
	}
	if got, err := s.Get(ctx, offer.ID); err != nil || got.Latitude != nil || got.NeededPeople != nil {
		t.Fatalf("offer: %+v, %v", got, err)
	}
	if _, err := s.Get(ctx, store.NewID(time.Now())); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Get of an unknown id: %v, want ErrNotFound", err)
	}
}

func testPairIdempotency(t *testing.T, s store.Store) {
	first := Record("app", "x")
	if _, created, err := s.Create(ctx, first); err != nil || !created {
		t.Fatal(created, err)
	}
	// A retry, with other content and a new id, changes nothing and answers the first record.
	retry := Record("app", "x")
	retry.Title = "Otro título"
	stored, created, err := s.Create(ctx, retry)
	if err != nil || created {
		t.Fatalf("retry: created %v, %v", created, err)
	}
	sameRecord(t, "retry answers the first record", stored, first)
	if _, err := s.Get(ctx, retry.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a retry's own id was stored: %v", err)
	}
	// The pair is encoded without ambiguity: each of these is a record of its own.
	pairs := [][2]string{{"a|b", "c"}, {"a", "b|c"}, {"a\x00b", "c"}, {"a", "\x00bc"}, {"ab", "c"}, {"app", "X"}, {"other", "x"}}
	ids := map[string]bool{first.ID: true}
	for _, p := range pairs {
		rec := Record(p[0], p[1])
		stored, created, err := s.Create(ctx, rec)
		if err != nil || !created || ids[stored.ID] {
			t.Fatalf("pair %q: created %v, stored %s, %v", p, created, stored.ID, err)
		}
		ids[stored.ID] = true
	}
	for _, p := range pairs {
		stored, created, err := s.Create(ctx, Record(p[0], p[1]))
		if err != nil || created {
			t.Fatalf("retry of pair %q: created %v, %v", p, created, err)
		}
		// Lookup finds what Create answers, pair for pair.
		if got, err := s.Lookup(ctx, p[0], p[1]); err != nil || got.ID != stored.ID {
			t.Fatalf("Lookup of pair %q: %v, %v; want %s", p, got, err, stored.ID)
		}
	}
	got, err := s.Lookup(ctx, "app", "x")
	if err != nil {
		t.Fatal(err)
	}
	sameRecord(t, "Lookup answers the first record", got, first)
	for _, p := range [][2]string{{"app", "y"}, {"a", "b"}, {"a|b|c", ""}, {"", "app"}} {
		if _, err := s.Lookup(ctx, p[0], p[1]); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("Lookup of the unknown pair %q: %v", p, err)
		}
	}
}

// Many racing publications per pair, interleaved so that duplicates meet at once: exactly one created
// per pair, and every racer is answered with that record.
func testConcurrentCreates(t *testing.T, s store.Store) {
	const pairs, racers = 24, 16
	var recs []*store.Record
	for range racers {
		for i := range pairs {
			recs = append(recs, Record("race|app", fmt.Sprintf("p%d", i)))
		}
	}
	type result struct {
		stored  *store.Record
		created bool
		err     error
	}
	res := make([]result, len(recs))
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i, r := range recs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			stored, created, err := s.Create(ctx, r)
			res[i] = result{stored, created, err}
		}()
	}
	close(start)
	wg.Wait()
	winners := map[string]string{} // externalId → id of the record created
	for i, r := range res {
		if r.err != nil {
			t.Fatal(r.err)
		}
		if r.created {
			if prev, dup := winners[recs[i].ExternalID]; dup {
				t.Fatalf("pair %q created twice: %s and %s", recs[i].ExternalID, prev, r.stored.ID)
			}
			winners[recs[i].ExternalID] = r.stored.ID
		}
	}
	if len(winners) != pairs {
		t.Fatalf("%d pairs created, want %d", len(winners), pairs)
	}
	for i, r := range res {
		if r.stored == nil || r.stored.ID != winners[recs[i].ExternalID] {
			t.Fatalf("pair %q answered with %v, the created record is %s", recs[i].ExternalID, r.stored, winners[recs[i].ExternalID])
		}
	}
	for _, id := range winners {
		if _, err := s.Get(ctx, id); err != nil {
			t.Fatalf("created record %s: %v", id, err)
		}
	}
}

func testListMatchesReference(t *testing.T, s store.Store) {
	start := time.Date(2026, 8, 11, 10, 0, 0, 0, time.UTC)
	const step = 7*time.Minute + 13*time.Second
	recs := Seed(t, s, 1500, start, step)
	since := start.Add(40 * time.Hour).Add(123 * time.Millisecond)
	specs := []store.ListSpec{
		{},
		{EmergencySlug: "eje-cafetero"},
		{Type: schema.TypeOffer},
		{Category: "salud"},
		{Category: "salud", Type: schema.TypeRequest, EmergencySlug: "la-mojana"},
		{Urgency: "urgent"},
		{Urgency: "stable", Category: "refugio"},
		{Since: since},
		{Since: since, EmergencySlug: "eje-cafetero", Type: schema.TypeRequest},
		{Since: since, Category: "otro"},
		{Since: start.Add(-time.Hour)},
		{Since: recs[100].UpdatedAt}, // a record's own updatedAt: since is exclusive
		{Words: []string{"medic"}},
		{Words: []string{"medico"}, EmergencySlug: "eje-cafetero"},
		{Words: []string{"agua"}}, // one token and no other containing it: the stores' word counters give the total
		// Accent-free and case-free: what the service makes of q=«NIÑOS útiles».
		{Words: strings.Fields(store.FoldText("NIÑOS  útiles"))},
		{Near: true, Lat: 4.53, Lon: -75.68, RadiusKm: 5},
		{Near: true, Lat: 4.53, Lon: -75.68, RadiusKm: 5, Type: schema.TypeOffer},
		{Near: true, Lat: 4.60, Lon: -75.70, RadiusKm: 3, Words: []string{"medic"}, Category: "salud"},
		{Near: true, Lat: 4.60, Lon: -75.70, RadiusKm: 30, EmergencySlug: "la-mojana", Urgency: "needed"},
		{Municipio: "63001"},
		{Municipio: "63130", EmergencySlug: "la-mojana", Type: schema.TypeRequest},
		{Municipio: "66001", Category: "salud"},
		{Municipio: "63001", Words: []string{"medic"}},
		{Municipio: "63130", Near: true, Lat: 4.53, Lon: -75.68, RadiusKm: 5},
		{Municipio: "63001", EmergencySlug: "eje-cafetero", Urgency: "urgent"},
		{Municipio: "66001", EmergencySlug: "la-mojana", Near: true, Lat: 4.53, Lon: -75.68, RadiusKm: 9},
	}
	// These match nothing, on purpose; every spec above matches some records, so that comparing with
	// Reference says something.
	none := []store.ListSpec{
		{EmergencySlug: "none"},
		{Since: time.Now().Add(1000 * time.Hour)},
		{Status: store.StatusResolved},
		{Words: []string{"zzz"}},
		{Near: true, Lat: 10, Lon: -70, RadiusKm: 1},
		{Municipio: "05001"},
	}
	for i, spec := range append(specs, none...) {
		if n := len(Reference(recs, &spec)); (n == 0) != (i >= len(specs)) {
			t.Errorf("%+v matches %d of the seeded records: move it to the right list", spec, n)
		}
		for _, limit := range []int{7, 100} {
			spec.Limit = limit
			t.Run(fmt.Sprintf("%+v", spec), func(t *testing.T) { CheckList(t, s, recs, spec, false) })
		}
	}
	// A cursor made for other filters is refused.
	spec := store.ListSpec{Limit: 5, Category: "salud"}
	res, err := s.List(ctx, &spec)
	if err != nil || res.Next == nil {
		t.Fatal(res, err)
	}
	other := store.ListSpec{Limit: 5, Category: "refugio"}
	if _, err := other.DecodeCursor(spec.EncodeCursor(res.Next)); !errors.Is(err, store.ErrCursorMismatch) {
		t.Fatalf("cursor of other filters: %v", err)
	}
}

// Radius lists are nearest first, then newest first, page after page: records that share one place tie
// across page boundaries, a record exactly at the radius is in, the corners of the Colombia box work, and
// the filters combine with the distance.
func testRadiusNearestFirst(t *testing.T, s store.Store) {
	start := time.Date(2026, 8, 11, 10, 0, 0, 0, time.UTC)
	rng := rand.New(rand.NewPCG(16, 2))
	places := [][2]float64{{4.5339, -75.6811}, {4.54, -75.69}, {-4.3, -79.1}, {13.6, -66.8}, {-4.29, -79.09}}
	recs := make([]*store.Record, 0, 240)
	for i := range 240 {
		r := SynthRecord(rng, start.Add(time.Duration(i)*time.Minute), i)
		var lat, lon float64
		if i%3 == 0 { // a shared place: a shelter
			lat, lon = places[i/3%len(places)][0], places[i/3%len(places)][1]
		} else {
			p := places[rng.IntN(len(places))]
			lat, lon = min(max(p[0]+rng.NormFloat64()*0.03, -4.3), 13.6), min(max(p[1]+rng.NormFloat64()*0.03, -79.1), -66.8)
		}
		if r.Latitude != nil || i%3 == 0 {
			r.Latitude, r.Longitude = &lat, &lon
		}
		stored, _, err := s.Create(ctx, r)
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, stored)
	}
	var specs []store.ListSpec
	for _, p := range places {
		specs = append(specs,
			store.ListSpec{Near: true, Lat: p[0], Lon: p[1], RadiusKm: 100},
			store.ListSpec{Near: true, Lat: p[0], Lon: p[1], RadiusKm: 2, Type: schema.TypeRequest},
			store.ListSpec{Near: true, Lat: p[0], Lon: p[1], RadiusKm: 4, EmergencySlug: "eje-cafetero", Status: store.StatusOpen})
		// The radius through a record: it is in (distance ≤ radius), and so is every record at that distance.
		if all := Reference(recs, &store.ListSpec{Near: true, Lat: p[0], Lon: p[1], RadiusKm: 100}); len(all) > 4 {
			specs = append(specs, store.ListSpec{Near: true, Lat: p[0], Lon: p[1], RadiusKm: all[len(all)/2].Dist})
		}
	}
	for _, spec := range specs {
		for _, limit := range []int{3, 20} {
			spec.Limit = limit
			t.Run(fmt.Sprintf("%+v", spec), func(t *testing.T) { CheckList(t, s, recs, spec, false) })
		}
	}
}

// With NoTotal the pages are the same; the total is a lower bound (at least the page), exact only when
// the store says so.
func testNoTotal(t *testing.T, s store.Store) {
	recs := Seed(t, s, 300, time.Date(2026, 8, 11, 10, 0, 0, 0, time.UTC), time.Minute)
	for _, spec := range []store.ListSpec{
		{Limit: 20},
		{Limit: 7, Category: "salud"},
		{Limit: 20, Near: true, Lat: 4.53, Lon: -75.68, RadiusKm: 5},
		{Limit: 100, Near: true, Lat: 4.53, Lon: -75.68, RadiusKm: 100},
		{Limit: 5, Words: []string{"agua"}},
	} {
		want, _ := PageAll(t, s, spec)
		spec.NoTotal = true
		got, pages := PageAll(t, s, spec)
		if !slices.Equal(got, want) {
			t.Fatalf("%+v: NoTotal changes the pages:\n got %v\nwant %v", spec, head(got), head(want))
		}
		n := len(Reference(recs, &spec))
		for i, p := range pages {
			if p.Total < len(p.Records) || p.Total > n || (p.TotalExact && p.Total != n) {
				t.Errorf("%+v: page %d: total %d (exact %v) for %d records of %d", spec, i, p.Total, p.TotalExact, len(p.Records), n)
			}
		}
	}
}

// A client pages while records are published: every record that existed before it started is returned
// exactly once, and no record twice.
func testPagingUnderConcurrentInserts(t *testing.T, s store.Store) {
	start := time.Now().Add(-time.Hour)
	before := Seed(t, s, 400, start, time.Second)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		rng := rand.New(rand.NewPCG(3, 4))
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if _, _, err := s.Create(ctx, SynthRecord(rng, time.Now(), 100000+i)); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	defer func() { close(stop); <-done }()
	for _, spec := range []store.ListSpec{{Limit: 9}, {Limit: 9, Near: true, Lat: 4.53, Lon: -75.68, RadiusKm: 8}, {Limit: 5, Category: "salud"}} {
		want := Reference(before, &spec)
		ids, _ := PageAll(t, s, spec)
		seen := map[string]int{}
		for _, id := range ids {
			if seen[id]++; seen[id] > 1 {
				t.Fatalf("%+v: %s returned twice", spec, id)
			}
		}
		for _, m := range want {
			if seen[m.ID] != 1 {
				t.Fatalf("%+v: %s missed", spec, m.ID)
			}
		}
	}
}

// CheckAggregates compares s.Aggregates with sums over recs, for both seeded emergencies and one with
// no records.
func CheckAggregates(t *testing.T, s store.Store, recs []*store.Record) {
	t.Helper()
	ag, err := s.Aggregates(ctx, []string{"eje-cafetero", "la-mojana", "none"})
	if err != nil {
		t.Fatal(err)
	}
	for _, slug := range []string{"eje-cafetero", "la-mojana"} {
		counts, statuses, people := map[[3]string]int{}, map[string]int{}, 0
		var newest time.Time
		for _, r := range recs {
			if r.EmergencySlug != slug {
				continue
			}
			statuses[cmp.Or(r.Status, store.StatusOpen)]++
			if r.CreatedAt.After(newest) {
				newest = r.CreatedAt
			}
			if cmp.Or(r.Status, store.StatusOpen) != store.StatusOpen {
				continue
			}
			counts[[3]string{r.Type, r.Category, r.Urgency}]++
			if r.Type == schema.TypeRequest && r.NeededPeople != nil {
				people += *r.NeededPeople
			}
		}
		a := ag[slug]
		if a == nil || fmt.Sprint(a.Counts) != fmt.Sprint(counts) || fmt.Sprint(a.Statuses) != fmt.Sprint(statuses) ||
			a.NeededPeople != people || !a.Newest.Equal(newest) {
			t.Fatalf("%s: got %+v, want %v %v %d %v", slug, a, counts, statuses, people, newest)
		}
	}
	if a := ag["none"]; a == nil || len(a.Counts) != 0 || len(a.Statuses) != 0 || a.NeededPeople != 0 || !a.Newest.IsZero() {
		t.Fatalf("an emergency without records: %+v", a)
	}
}

func testAggregates(t *testing.T, s store.Store) {
	CheckAggregates(t, s, nil)
	recs := Seed(t, s, 300, time.Date(2026, 8, 11, 0, 0, 0, 0, time.UTC), time.Minute)
	CheckAggregates(t, s, recs)
	// A retry counts once.
	if _, created, err := s.Create(ctx, recs[0]); err != nil || created {
		t.Fatal(created, err)
	}
	CheckAggregates(t, s, recs)
}

// Probe: it succeeds, again and under concurrency, before and after records are written, leaves no record
// behind (nothing counted, nothing listed), and fails with ErrClosed once the store is closed.
func testProbe(t *testing.T, s store.Store) {
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if err := s.Probe(ctx); err != nil {
				t.Errorf("Probe: %v", err)
			}
		})
	}
	wg.Wait()
	aggs, err := s.Aggregates(ctx, []string{"eje-cafetero"})
	if err != nil {
		t.Fatal(err)
	}
	if a := aggs["eje-cafetero"]; a == nil || len(a.Statuses) != 0 || !a.Newest.IsZero() {
		t.Fatalf("probes counted as records: %+v", a)
	}
	if _, _, err := s.Create(ctx, Record("app", "after-probe")); err != nil {
		t.Fatal(err)
	}
	if err := s.Probe(ctx); err != nil {
		t.Fatalf("Probe after a write: %v", err)
	}
	res, err := s.List(ctx, &store.ListSpec{EmergencySlug: "eje-cafetero", Limit: 10})
	if err != nil || res.Total != 1 || len(res.Records) != 1 {
		t.Fatalf("a probe listed as a record: %+v %v", res, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Probe(ctx); !errors.Is(err, store.ErrClosed) {
		t.Fatalf("Probe after Close: %v, want ErrClosed", err)
	}
}

func testClose(t *testing.T, s store.Store) {
	if _, _, err := s.Create(ctx, Record("app", "before")); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Create(ctx, Record("app", "after")); !errors.Is(err, store.ErrClosed) {
		t.Fatalf("Create after Close: %v, want ErrClosed", err)
	}
	if _, _, err := s.Create(ctx, Record("app", "before")); !errors.Is(err, store.ErrClosed) {
		t.Fatalf("Create of a stored pair after Close: %v, want ErrClosed", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}
