package badgerstore

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/directaid/directaid/backend/store"
	"github.com/directaid/directaid/backend/store/storetest"
	"github.com/directaid/directaid/schema"
)

// Radius search against brute force, bit for bit: the same ids in the same order with the same float64
// distances (both come from store.HaversineKm), page after page across the cursor. Records cluster around
// a few spots (so cells hold many and distances tie) and spread over the whole Colombia box, its corners
// included; the query points sit on records, on cell corners, at the corners of the box and far away.
func TestRadiusMatchesBruteForce(t *testing.T) {
	s := open(t, Options{Dir: t.TempDir()})
	defer s.Close()
	rng := rand.New(rand.NewPCG(16, 1))
	start := time.Date(2026, 8, 11, 10, 0, 0, 0, time.UTC)
	const n = 3000
	corners := [][2]float64{{-4.3, -79.1}, {-4.3, -66.8}, {13.6, -79.1}, {13.6, -66.8}}
	spots := [][2]float64{{4.5339, -75.6811}, {4.8133, -75.6961}, {8.75, -75.88}}
	recs := make([]*store.Record, n)
	for i := range recs {
		rec := storetest.SynthRecord(rng, start.Add(time.Duration(i)*37*time.Second), i)
		var lat, lon float64
		switch r := rng.IntN(10); {
		case r < 5:
			c := spots[rng.IntN(len(spots))]
			lat, lon = c[0]+rng.NormFloat64()*0.05, c[1]+rng.NormFloat64()*0.05
		case r < 6:
			c := corners[rng.IntN(len(corners))]
			lat, lon = c[0]+(rng.Float64()-0.5)*0.2, c[1]+(rng.Float64()-0.5)*0.2
			lat, lon = min(max(lat, -4.3), 13.6), min(max(lon, -79.1), -66.8)
		case r < 7:
			// Places shared by several records (a shelter): equal distances, ordered newest first.
			c := spots[rng.IntN(len(spots))]
			lat, lon = math.Round(c[0]*100)/100, math.Round(c[1]*100)/100
		default:
			lat, lon = -4.3+rng.Float64()*17.9, -79.1+rng.Float64()*12.3
		}
		if rec.Latitude != nil || rng.IntN(4) == 0 {
			rec.Latitude, rec.Longitude = &lat, &lon
		}
		recs[i] = rec
	}
	for _, r := range createAll(t, s, recs, nil) {
		if r.err != nil {
			t.Error(r.err)
		}
	}
	if t.Failed() {
		return
	}
	var points [][2]float64
	points = append(points, corners...)
	points = append(points, spots...)
	points = append(points, [2]float64{4.53, -75.68}, [2]float64{0, -72}, [2]float64{12.5, -70})
	for range 12 {
		r := recs[rng.IntN(n)]
		if r.Latitude != nil {
			points = append(points, [2]float64{*r.Latitude, *r.Longitude})
		}
	}
	// A corner of a geohash cell of the index, where four cells meet.
	h, w := geohashCellSize(geoPrecision)
	points = append(points, [2]float64{math.Floor((4.6+90)/h)*h - 90, math.Floor((-75.7+180)/w)*w - 180})
	checks := 0
	for _, p := range points {
		for _, radius := range []float64{0.05, 1, 5, 13, 100} {
			specs := []store.ListSpec{
				{Near: true, Lat: p[0], Lon: p[1], RadiusKm: radius},
				{Near: true, Lat: p[0], Lon: p[1], RadiusKm: radius, Type: schema.TypeRequest, Urgency: "urgent", EmergencySlug: "eje-cafetero"},
				{Near: true, Lat: p[0], Lon: p[1], RadiusKm: radius, Category: "salud", Status: store.StatusOpen},
				{Near: true, Lat: p[0], Lon: p[1], RadiusKm: radius, Words: []string{"agua"}},
			}
			// The radius through a record: it sits exactly on the edge, and is in (distance ≤ radius).
			if edge := storetest.Reference(recs, &store.ListSpec{Near: true, Lat: p[0], Lon: p[1], RadiusKm: radius}); len(edge) > 2 {
				specs = append(specs, store.ListSpec{Near: true, Lat: p[0], Lon: p[1], RadiusKm: edge[len(edge)/2].Dist})
			}
			for _, spec := range specs {
				for _, limit := range []int{1, 20, 100} {
					spec.Limit = limit
					if limit == 1 && len(storetest.Reference(recs, &spec)) > 60 {
						continue // one by one through many: the paging is covered by the other limits
					}
					checkExact(t, s, recs, spec, "", false)
					checks++
				}
			}
		}
	}
	t.Logf("%d lists compared", checks)
}

// TestMunicipioWalkSkipsCells: a radius list scoped to a municipio reads no entry of the cells where the
// municipio has no record, and no municipio of the entries of the cells where it has all of them (its cell
// counters say which): the geographic index lacks the municipio, and each entry cost a point read of the
// municipio's index (at 1M records 5 km of municipio 66001, ~21 ms of CPU a list). Allocations count the
// point reads (each allocates): outside the municipio ~13,300 a list before, ~310 now; a page inside it
// ~2,580 before the whole cells were spared their reads, ~580 now.
func TestMunicipioWalkSkipsCells(t *testing.T) {
	s := open(t, Options{Dir: t.TempDir()})
	defer s.Close()
	createDense(t, s, 1, func(_ int, r *store.Record) {
		r.MunicipioCode = map[bool]string{true: "63001", false: "63130"}[*r.Longitude < -75.69] // a western strip, the rest
	})
	spec := store.ListSpec{Near: true, Lat: 4.527, Lon: -75.6475, RadiusKm: 2.5, Limit: 20, Municipio: "63001", NoTotal: true}
	outside := listAllocs(t, s, spec, 0)
	spec.Municipio = "63130"
	inside := listAllocs(t, s, spec, 20)
	t.Logf("allocations a list: outside its municipio %.0f, inside %.0f", outside, inside)
	if outside > 2000 || inside > 1500 {
		t.Errorf("a list outside its municipio allocated %.0f times, a page inside it %.0f: point reads of entries", outside, inside)
	}
}

// TestEmergencyWalkSkipsCells: a radius list scoped to an emergency with no records in the circle, which is
// full of another's, reads none of the circle's entries: the emergency's cell counters rule the cells out,
// as a municipio's do (TestMunicipioWalkSkipsCells). Allocations count the entries' reads (the iterator's
// blocks): outside ~840 a list before, ~310 now; a page inside ~520-580.
func TestEmergencyWalkSkipsCells(t *testing.T) {
	s := open(t, Options{Dir: t.TempDir()})
	defer s.Close()
	createDense(t, s, 2, func(i int, r *store.Record) {
		r.EmergencySlug = "eje-cafetero"
		if *r.Longitude < -75.69 && i%25 == 0 { // a few in a western strip
			r.EmergencySlug = "la-mojana"
		}
	})
	spec := store.ListSpec{Near: true, Lat: 4.527, Lon: -75.6475, RadiusKm: 2.5, Limit: 20, EmergencySlug: "la-mojana", NoTotal: true}
	outside := listAllocs(t, s, spec, 0)
	spec.EmergencySlug = "eje-cafetero"
	inside := listAllocs(t, s, spec, 20)
	t.Logf("allocations a list: outside its emergency %.0f, inside %.0f", outside, inside)
	if outside >= inside {
		t.Errorf("a list outside its emergency allocated %.0f times, a page inside it %.0f: it read the circle's entries", outside, inside)
	}
}

// listAllocs returns the allocations of a list of spec, which must give want records.
func listAllocs(t *testing.T, s *Store, spec store.ListSpec, want int) float64 {
	t.Helper()
	return testing.AllocsPerRun(3, func() {
		res, err := s.List(context.Background(), &spec)
		if err != nil || len(res.Records) != want {
			t.Fatalf("%+v: %d records, %v; want %d", spec, len(res.Records), err, want)
		}
	})
}

// createDense creates 6,000 records in a 6 km square (the density of 1M over the Eje Cafetero), the i-th
// changed by set before.
func createDense(t *testing.T, s *Store, seed uint64, set func(i int, r *store.Record)) {
	t.Helper()
	rng := rand.New(rand.NewPCG(17, seed))
	start := time.Date(2026, 8, 11, 10, 0, 0, 0, time.UTC)
	recs := make([]*store.Record, 6000)
	for i := range recs {
		recs[i] = storetest.SynthRecord(rng, start.Add(time.Duration(i)*time.Second), i)
		lat, lon := 4.5+rng.Float64()*0.054, -75.7+rng.Float64()*0.054
		recs[i].Latitude, recs[i].Longitude = &lat, &lon
		set(i, recs[i])
	}
	storetest.CreateAll(t, s, recs)
}
