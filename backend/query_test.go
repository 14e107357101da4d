package backend

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/directaid/directaid/schema"
)

func openTestStore(t testing.TB) *BadgerStore {
	t.Helper()
	s, err := OpenBadger(BadgerOptions{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

var titles = []string{"Médico para adultos mayores", "Agua potable", "Carpa y cobijas", "Transporte a Armenia", "Niños sin útiles", "MEDICAMENTOS urgentes", "Rescate de mascotas"}

// synthRecord makes a varied record created at t.
func synthRecord(rng *rand.Rand, t time.Time, i int) *Record {
	rec := &Record{ID: NewID(t), CreatedAt: t.UTC().Truncate(time.Millisecond)}
	p := &rec.Publication
	p.Source, p.ExternalID = "test", fmt.Sprintf("r-%d-%d", i, rng.Int())
	p.EmergencySlug = []string{"eje-cafetero", "la-mojana"}[rng.IntN(2)]
	p.Title = titles[rng.IntN(len(titles))]
	p.Description = []string{"", "Se necesita con urgencia en el barrio", "Atención médica básica"}[rng.IntN(3)]
	p.Category = schema.Categories[rng.IntN(len(schema.Categories))]
	p.ContactName, p.ContactWhatsapp, p.ContactE164, p.PublishContact = "Ana", "3001234567", "+573001234567", true
	lat, lon := 4.53+rng.Float64()*0.3-0.15, -75.68+rng.Float64()*0.3-0.15
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
	return rec
}

// reference answers a spec by brute force over every record.
func reference(recs []*Record, spec *ListSpec) []entry {
	var out []entry
	for _, r := range recs {
		if (spec.EmergencySlug != "" && r.EmergencySlug != spec.EmergencySlug) || (spec.Type != "" && r.Type != spec.Type) ||
			(spec.Category != "" && r.Category != spec.Category) || (spec.Urgency != "" && r.Urgency != spec.Urgency) ||
			(!spec.Since.IsZero() && !r.CreatedAt.After(spec.Since)) || !matchText(searchText(r), spec.Words) {
			continue
		}
		e := entry{id: r.ID}
		if spec.Near {
			if r.Latitude == nil {
				continue
			}
			if e.dist = HaversineKm(spec.Lat, spec.Lon, *r.Latitude, *r.Longitude); e.dist > spec.RadiusKm {
				continue
			}
		}
		out = append(out, e)
	}
	slices.SortFunc(out, func(a, b entry) int {
		if spec.Near && a.dist != b.dist {
			if a.dist < b.dist {
				return -1
			}
			return 1
		}
		return strings.Compare(b.id, a.id)
	})
	return out
}

// pageAll follows nextCursor to the end and returns the ids in order, checking totals on the way.
func pageAll(t *testing.T, s *BadgerStore, spec ListSpec) ([]string, []*ListResult) {
	t.Helper()
	var ids []string
	var pages []*ListResult
	for range 10000 {
		res, err := s.List(context.Background(), &spec)
		if err != nil {
			t.Fatal(err)
		}
		pages = append(pages, res)
		for _, r := range res.Records {
			ids = append(ids, r.ID)
		}
		if res.Next == nil {
			return ids, pages
		}
		// Round-trip the cursor as a client would.
		c, err := spec.DecodeCursor(spec.EncodeCursor(res.Next))
		if err != nil {
			t.Fatal(err)
		}
		spec.After = c
	}
	t.Fatal("paging did not end")
	return nil, nil
}

func seed(t testing.TB, s *BadgerStore, n int, start time.Time, step time.Duration) []*Record {
	t.Helper()
	rng := rand.New(rand.NewPCG(1, 2))
	recs := make([]*Record, n)
	var wg sync.WaitGroup
	for i := range recs {
		recs[i] = synthRecord(rng, start.Add(time.Duration(i)*step), i)
	}
	errs := make(chan error, n)
	sem := make(chan struct{}, 64)
	for _, r := range recs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if _, _, err := s.Create(context.Background(), r); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	return recs
}

func TestListMatchesReference(t *testing.T) {
	s := openTestStore(t)
	start := time.Date(2026, 8, 11, 10, 0, 0, 0, time.UTC)
	recs := seed(t, s, 1500, start, 7*time.Minute+13*time.Second)
	since := start.Add(40 * time.Hour).Add(123 * time.Millisecond)
	specs := []ListSpec{
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
		{Words: []string{"medic"}},
		{Words: []string{"medico"}, EmergencySlug: "eje-cafetero"},
		{Words: []string{"ninos", "utiles"}, Since: since},
		{Words: []string{"agua"}, maxTextChecks: 50, maxTotalChecks: 40},
		{Words: []string{"medic"}, EmergencySlug: "la-mojana", Type: schema.TypeRequest, maxTextChecks: 3, maxTotalChecks: 3000},
		{Near: true, Lat: 4.53, Lon: -75.68, RadiusKm: 5},
		{Near: true, Lat: 4.53, Lon: -75.68, RadiusKm: 5, Type: schema.TypeOffer, Since: since},
		{Near: true, Lat: 4.60, Lon: -75.70, RadiusKm: 3, Words: []string{"medic"}, Category: "salud"},
		{Near: true, Lat: 4.60, Lon: -75.70, RadiusKm: 30, EmergencySlug: "la-mojana", Urgency: "needed"},
	}
	for _, spec := range specs {
		for _, limit := range []int{7, 100} {
			spec.Limit = limit
			t.Run(fmt.Sprintf("%+v", spec), func(t *testing.T) {
				want := reference(recs, &spec)
				ids, pages := pageAll(t, s, spec)
				var wantIDs []string
				for _, e := range want {
					wantIDs = append(wantIDs, e.id)
				}
				if !slices.Equal(ids, wantIDs) {
					t.Fatalf("got %d ids, want %d\n got %v\nwant %v", len(ids), len(wantIDs), head(ids), head(wantIDs))
				}
				if len(want) == 0 {
					t.Log("no matches")
				}
				first := pages[0]
				if first.TotalExact && first.Total != len(want) {
					t.Errorf("total %d, want %d", first.Total, len(want))
				}
				if !first.TotalExact && (spec.maxTotalChecks == 0 || first.Total == 0) {
					t.Errorf("total %d inexact without a lowered bound", first.Total)
				}
				if spec.Near && len(first.Records) > 0 && first.Distances[0] != want[0].dist {
					t.Errorf("distance %v, want %v", first.Distances[0], want[0].dist)
				}
				for _, p := range pages[:len(pages)-1] {
					if spec.maxTextChecks == 0 && len(p.Records) != limit {
						t.Errorf("short page %d before the end", len(p.Records))
					}
				}
			})
		}
	}
}

func head(ids []string) []string {
	if len(ids) > 5 {
		return ids[:5]
	}
	return ids
}

func TestPagingUnderConcurrentInserts(t *testing.T) {
	s := openTestStore(t)
	start := time.Now().Add(-time.Hour)
	before := seed(t, s, 400, start, time.Second)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { // publish continuously while a client pages
		defer close(done)
		rng := rand.New(rand.NewPCG(3, 4))
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if _, _, err := s.Create(context.Background(), synthRecord(rng, time.Now(), 100000+i)); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	for _, spec := range []ListSpec{{Limit: 9}, {Limit: 9, Near: true, Lat: 4.53, Lon: -75.68, RadiusKm: 8}, {Limit: 5, Category: "salud"}} {
		want := reference(before, &spec)
		ids, _ := pageAll(t, s, spec)
		seen := map[string]int{}
		for _, id := range ids {
			seen[id]++
			if seen[id] > 1 {
				t.Fatalf("%+v: %s returned twice", spec, id)
			}
		}
		for _, e := range want {
			if seen[e.id] != 1 {
				t.Fatalf("%+v: %s missed", spec, e.id)
			}
		}
	}
	close(stop)
	<-done
}

func TestAggregatesAndReindex(t *testing.T) {
	dir := t.TempDir()
	s, err := OpenBadger(BadgerOptions{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	recs := seed(t, s, 300, time.Date(2026, 8, 11, 0, 0, 0, 0, time.UTC), time.Minute)
	check := func(s *BadgerStore) {
		t.Helper()
		ag, err := s.Aggregates(context.Background(), []string{"eje-cafetero", "la-mojana", "none"})
		if err != nil {
			t.Fatal(err)
		}
		for _, slug := range []string{"eje-cafetero", "la-mojana"} {
			counts, people := map[[3]string]int{}, 0
			var newest time.Time
			for _, r := range recs {
				if r.EmergencySlug != slug {
					continue
				}
				counts[[3]string{r.Type, r.Category, r.Urgency}]++
				if r.Type == schema.TypeRequest {
					people += *r.NeededPeople
				}
				if r.CreatedAt.After(newest) {
					newest = r.CreatedAt
				}
			}
			a := ag[slug]
			if fmt.Sprint(a.Counts) != fmt.Sprint(counts) || a.NeededPeople != people || !a.Newest.Equal(newest) {
				t.Fatalf("%s: got %v %d %v, want %v %d %v", slug, a.Counts, a.NeededPeople, a.Newest, counts, people, newest)
			}
		}
		if len(ag["none"].Counts) != 0 || !ag["none"].Newest.IsZero() {
			t.Fatal("unknown emergency has counts")
		}
	}
	check(s)
	// Drop the indexes as a database from before them would be, and reopen: the backfill rebuilds them.
	if err := s.db.DropPrefix(prefixTime, prefixKind, prefixGeo, prefixText, prefixAgg, prefixHour, keyIndexVersion); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = OpenBadger(BadgerOptions{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	check(s)
	ids, _ := pageAll(t, s, ListSpec{Limit: 100, Category: "acopio"})
	if want := reference(recs, &ListSpec{Category: "acopio"}); len(ids) != len(want) {
		t.Fatalf("after reindex: %d ids, want %d", len(ids), len(want))
	}
}

func TestCoverCellsContainCircle(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for range 200 {
		lat, lon := -4+rng.Float64()*17, -79+rng.Float64()*12
		r := 0.5 + rng.Float64()*99.5
		cells := coverCells(lat, lon, r)
		if len(cells) == 0 || len(cells) > maxCoverCells {
			t.Fatalf("r=%v: %d cells", r, len(cells))
		}
		for range 200 { // random points inside the circle must fall in a covering cell
			pLat, pLon := lat+(rng.Float64()*2-1)*r/111, lon+(rng.Float64()*2-1)*r/111
			if HaversineKm(lat, lon, pLat, pLon) > r {
				continue
			}
			gh := geohash(pLat, pLon, geoPrecision)
			if !slices.ContainsFunc(cells, func(c string) bool { return strings.HasPrefix(gh, c) }) {
				t.Fatalf("point %v,%v at %.3f km of %v,%v (r=%v) is in no cell of %v", pLat, pLon, HaversineKm(lat, lon, pLat, pLon), lat, lon, r, cells)
			}
		}
	}
	if got := geohash(4.5339, -75.6811, 5); got != "d2g6f" && len(got) != 5 {
		t.Fatal(got)
	}
}

func TestFoldText(t *testing.T) {
	for in, want := range map[string]string{"Médico  ÚTILES\nNiño": "medico utiles nino", " Ñandú ": "nandu"} {
		if got := foldText(in); got != want {
			t.Errorf("foldText(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestCursorEncoding(t *testing.T) {
	spec := &ListSpec{Near: true, Lat: 4.5, Lon: -75.6, RadiusKm: 5}
	c := &Cursor{ID: NewID(time.Now()), Dist: 1.2345678901, HasDist: true}
	got, err := spec.DecodeCursor(spec.EncodeCursor(c))
	if err != nil || got.ID != c.ID || got.Dist != c.Dist {
		t.Fatal(got, err)
	}
	other := &ListSpec{Near: true, Lat: 4.5, Lon: -75.6, RadiusKm: 6}
	if _, err := other.DecodeCursor(spec.EncodeCursor(c)); err != ErrCursorMismatch {
		t.Fatal(err)
	}
	for _, bad := range []string{"", "x", "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", "!!"} {
		if _, err := spec.DecodeCursor(bad); err == nil {
			t.Fatalf("%q accepted", bad)
		}
	}
	if ms := time.Now().UnixMilli(); idMillis(NewID(time.UnixMilli(ms))) != ms || idMillis(firstIDAt(ms)) != ms || firstIDAt(ms) > NewID(time.UnixMilli(ms)) {
		t.Fatal("id time encoding")
	}
}
