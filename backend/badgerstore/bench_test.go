package badgerstore

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"

	"github.com/directaid/directaid/backend/store"
	"github.com/directaid/directaid/backend/store/storetest"
	"github.com/directaid/directaid/schema"
)

// Read-side benchmarks over a store of BENCH_RECORDS records (default 1,000,000), seeded directly into a
// Store through Create (the real write path: group commit, indexes in the same transaction). The
// seeded database is kept in BENCH_DIR (default: the temp dir) and reused by later runs.
//
//	go test ./backend/badgerstore -run '^$' -bench 'Read' -benchtime 300x
//
// Each benchmark reports p50 and p95 latency in ms besides Go's mean ns/op.

var cities = []struct{ lat, lon float64 }{{4.5339, -75.6811}, {4.8133, -75.6961}, {5.0703, -75.5138}} // Armenia, Pereira, Manizales

// benchRecord places records as an earthquake in the Eje Cafetero would: most around three cities,
// the rest spread over the region, and a fifth in a second emergency (La Mojana).
func benchRecord(rng *rand.Rand, t time.Time, i int) *store.Record {
	rec := storetest.SynthRecord(rng, t, i)
	lat, lon := 0.0, 0.0
	switch r := rng.Float64(); {
	case r < 0.2:
		rec.EmergencySlug = "la-mojana"
		lat, lon = 8.3+rng.Float64(), -75.2+rng.Float64()
	case r < 0.68:
		c := cities[rng.IntN(len(cities))]
		lat, lon = c.lat+rng.NormFloat64()*0.072, c.lon+rng.NormFloat64()*0.072 // σ ≈ 8 km
		rec.EmergencySlug = "eje-cafetero"
	default:
		rec.EmergencySlug = "eje-cafetero"
		lat, lon = 4.0+rng.Float64()*1.5, -76.2+rng.Float64()
	}
	if rec.Latitude != nil {
		rec.Latitude, rec.Longitude = &lat, &lon
	}
	return rec
}

var (
	benchOnce  sync.Once
	benchStore *Store
	benchErr   error
)

func benchDB(b *testing.B) *Store {
	benchOnce.Do(func() {
		n := 1_000_000
		if v, err := strconv.Atoi(os.Getenv("BENCH_RECORDS")); err == nil && v > 0 {
			n = v
		}
		dir := os.Getenv("BENCH_DIR")
		if dir == "" {
			dir = filepath.Join(os.TempDir(), fmt.Sprintf("directaid-bench-read-%d-v%s", n, indexVersion))
		}
		done := filepath.Join(dir, "SEEDED")
		_, statErr := os.Stat(done)
		if statErr != nil {
			_ = os.RemoveAll(dir)
		}
		benchStore, benchErr = Open(Options{Dir: dir})
		if benchErr != nil || statErr == nil {
			return
		}
		start := time.Now()
		benchErr = seedBench(benchStore, n)
		if benchErr == nil {
			benchErr = os.WriteFile(done, []byte(time.Since(start).String()), 0o644)
		}
		fmt.Fprintf(os.Stderr, "seeded %d records in %s (%s)\n", n, time.Since(start).Round(time.Second), dir)
	})
	if benchErr != nil {
		b.Fatal(benchErr)
	}
	return benchStore
}

// seedBench creates n records spread over 30 days, from many goroutines so that group commit batches them.
func seedBench(s *Store, n int) error {
	const workers = 256
	t0 := time.Date(2026, 8, 11, 14, 0, 0, 0, time.UTC)
	step := 30 * 24 * time.Hour / time.Duration(n)
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			for i := w; i < n; i += workers {
				if _, _, err := s.Create(context.Background(), benchRecord(rng, t0.Add(time.Duration(i)*step), i)); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// runQueries times spec(i) for b.N iterations and reports percentiles.
func runQueries(b *testing.B, spec func(i int) *store.ListSpec) {
	s := benchDB(b)
	lat := make([]time.Duration, 0, b.N)
	total := 0
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t := time.Now()
		res, err := s.List(context.Background(), spec(i))
		if err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t))
		total += res.Total
	}
	b.StopTimer()
	slices.Sort(lat)
	pct := func(p float64) float64 {
		return float64(lat[int(math.Min(float64(len(lat)-1), p*float64(len(lat))))]) / 1e6
	}
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.95), "p95-ms")
	b.ReportMetric(float64(total)/float64(b.N), "matches/op")
}

// Radius 5 km around points where people are (each a seeded record's own place, so density-weighted).
func BenchmarkReadRadius5km(b *testing.B) {
	rng := rand.New(rand.NewPCG(9, 9))
	runQueries(b, func(int) *store.ListSpec {
		r := benchRecord(rng, time.Now(), 0)
		for r.Latitude == nil {
			r = benchRecord(rng, time.Now(), 0)
		}
		return &store.ListSpec{Near: true, Lat: *r.Latitude, Lon: *r.Longitude, RadiusKm: 5, Limit: 20}
	})
}

// Radius 5 km at the centre of Armenia, the densest spot of the data: the worst case.
func BenchmarkReadRadius5kmDensest(b *testing.B) {
	runQueries(b, func(int) *store.ListSpec {
		return &store.ListSpec{Near: true, Lat: cities[0].lat, Lon: cities[0].lon, RadiusKm: 5, Limit: 20}
	})
}

// The same without the total (total=none): the page alone, which the best-first walk ends early.
func BenchmarkReadRadius5kmDensestNoTotal(b *testing.B) {
	runQueries(b, func(int) *store.ListSpec {
		return &store.ListSpec{Near: true, Lat: cities[0].lat, Lon: cities[0].lon, RadiusKm: 5, Limit: 20, NoTotal: true}
	})
}

// A filtered list as the site asks for it: one emergency, type and category, newest first, with total.
func BenchmarkReadFilteredList(b *testing.B) {
	runQueries(b, func(i int) *store.ListSpec {
		return &store.ListSpec{EmergencySlug: "eje-cafetero", Type: schema.TypeRequest, Category: schema.Categories[i%len(schema.Categories)],
			Urgency: "urgent", Limit: 20}
	})
}

// Incremental sync: everything since a point in time (the total is counted from hourly aggregates).
func BenchmarkReadSince(b *testing.B) {
	t0 := time.Date(2026, 8, 11, 14, 0, 0, 0, time.UTC)
	runQueries(b, func(i int) *store.ListSpec {
		return &store.ListSpec{Since: t0.Add(time.Duration(i%(29*24)) * time.Hour).Add(17 * time.Minute), Limit: 100}
	})
}

// Text search within one emergency and category: bounded by maxTextChecks records read.
func BenchmarkReadText(b *testing.B) {
	runQueries(b, func(i int) *store.ListSpec {
		return &store.ListSpec{EmergencySlug: "eje-cafetero", Category: "salud", Words: []string{"medic"}, Limit: 20}
	})
}

// Incremental sync of a rare filter (one emergency, category and urgency: 2.4% of that emergency's changes), its first
// page of 20, since one of ten points spread over the store's changes (the store stamps them as it writes,
// so not the records' creation times): the total's walks read at most store.MaxFeedRead changes each,
// matching or not.
func BenchmarkReadSinceRare(b *testing.B) {
	s := benchDB(b)
	var first int64
	p := partitionPrefix(prefixChange, allPartition)
	if err := s.db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: p})
		defer it.Close()
		if it.Seek(p); it.ValidForPrefix(p) {
			first = int64(binary.BigEndian.Uint64(it.Item().Key()[len(p):]))
		}
		return nil
	}); err != nil {
		b.Fatal(err)
	}
	last, err := lastChange(s.db)
	if err != nil {
		b.Fatal(err)
	}
	runQueries(b, func(i int) *store.ListSpec {
		since := first + (last-first)*int64(2*(i%10)+1)/20
		return &store.ListSpec{Since: time.UnixMilli(since), EmergencySlug: "la-mojana", Category: "salud", Urgency: "urgent", Limit: 20}
	})
}
