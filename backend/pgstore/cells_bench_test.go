package pgstore_test

import (
	"context"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/directaid/directaid/backend/pgstore"
	"github.com/directaid/directaid/backend/store"
	"github.com/directaid/directaid/internal/benchdata"
	"github.com/directaid/directaid/internal/pgtest"
	"github.com/directaid/directaid/schema"
)

// BenchmarkRadiusTotal times the first page of a 5 km radius list with its total over BENCH_PG_RADIUS
// records (default 100,000) imported uniformly into a box shrunk to the density of 1M over the Eje
// Cafetero (as badgerstore's BenchmarkUniform*): "cells" is the total from the cell counters
// (store.RadiusTotal), "emergency" the same list within the one emergency every record has, from the
// counters of that emergency (migration 0012), "none" the page alone. It reports the share of estimated
// totals and their error against the circle's count (by brute force over the loaded points).
//
// It reports the CPU per list of this process and of PostgreSQL (the cluster's processes; with
// BENCH_PG_DSN, when BENCH_PG_DATA names its data directory), steadier than time on a shared machine.
//
// "filtered" is a list of the same database without a radius (emergency, type and category, as make
// bench's), for the CPU of the plain list's path, and "q" make bench's q=insulina.
//
// The "-16" runs share b.N lists among 16 goroutines (the pool's 16 connections). BENCH_PG_DSN names a
// database to use instead of a fresh one, loaded once and kept: 1M records take a quarter of an hour.
//
//	BENCH_PG_RADIUS=100000 go test ./backend/pgstore -run '^$' -bench RadiusTotal -benchtime 200x
func BenchmarkRadiusTotal(b *testing.B) {
	db, s, n := benchStore(b, "BENCH_PG_RADIUS")
	ctx := context.Background()
	scale := math.Sqrt(float64(n) / 1e6)
	lat0, lon0, dLat, dLon := 4.4, -76.0, 0.8*scale, 0.6*scale
	start := time.Now().Add(-time.Duration(n) * time.Second)
	loaded := time.Now()
	var batch []*store.Record
	points := make([][2]float64, n)
	var have int
	if err := db.Ready(ctx); err != nil {
		b.Fatal(err)
	}
	if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM directaid_records WHERE source = 'bench'`).Scan(&have); err != nil {
		b.Fatal(err)
	}
	for i := range n {
		r := rand.New(rand.NewPCG(uint64(i), 11))
		pick := func(s []string) string { return s[r.IntN(len(s))] }
		t := start.Add(time.Duration(i) * time.Second)
		rec := &store.Record{ID: store.NewID(t), CreatedAt: t.UTC().Truncate(time.Millisecond), Status: store.StatusOpen}
		p := &rec.Publication
		p.Type, p.Urgency = schema.TypeRequest, pick(schema.Urgencies)
		if r.IntN(4) == 0 {
			p.Type, p.Urgency = schema.TypeOffer, ""
		}
		p.Source, p.ExternalID, p.EmergencySlug, p.Category = "bench", "r-"+strconv.Itoa(i), "eje-cafetero", pick(benchdata.Categories)
		p.Title, p.Description = pick(benchdata.Titles), pick(benchdata.Words)
		p.ContactName, p.ContactWhatsapp, p.ContactE164, p.PublishContact = "Ana Gómez", "+57 300 1234567", "+573001234567", true
		lat, lon := lat0+r.Float64()*dLat, lon0+r.Float64()*dLon
		p.Latitude, p.Longitude, p.Address = &lat, &lon, "Calle 1"
		points[i] = [2]float64{lat, lon}
		if batch = append(batch, rec); have != n && (len(batch) == 5000 || i == n-1) {
			if _, err := s.Import(ctx, batch); err != nil {
				b.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	if have != n {
		if _, err := db.Pool.Exec(ctx, `ANALYZE`); err != nil {
			b.Fatal(err)
		}
		b.Logf("%d records imported in %s", n, time.Since(loaded).Round(time.Second))
	}
	spec := func(i int) store.ListSpec {
		r := rand.New(rand.NewPCG(uint64(i), 13))
		return store.ListSpec{Near: true, RadiusKm: 5, Limit: 20,
			Lat: lat0 + 0.05 + r.Float64()*(dLat-0.1), Lon: lon0 + 0.05 + r.Float64()*(dLon-0.1)}
	}
	// The cluster's data directory, for its CPU: BENCH_PG_DATA with BENCH_PG_DSN.
	data := os.Getenv("BENCH_PG_DATA")
	if os.Getenv("BENCH_PG_DSN") == "" {
		data = filepath.Join(pgtest.Shared(b).Dir, "data")
	}
	run := func(b *testing.B, clients int, mod func(*store.ListSpec)) {
		pgCPU0, goCPU0 := pgtest.ClusterCPU(data), pgtest.ProcessCPU()
		var brute time.Duration // the CPU of the error's brute-force counts (one client), not the lists'
		defer func() {
			if pgCPU := pgtest.ClusterCPU(data) - pgCPU0; pgCPU0 > 0 {
				b.ReportMetric(float64(pgCPU.Microseconds())/float64(b.N), "pg-cpu-µs/op")
			}
			b.ReportMetric(float64((pgtest.ProcessCPU()-goCPU0-brute).Microseconds())/float64(b.N), "go-cpu-µs/op")
		}()
		lat := make([]time.Duration, b.N)
		var estimated atomic.Int64
		errSum := make([]float64, b.N) // each list's error against the circle's count (0: exact)
		var next atomic.Int64
		var wg sync.WaitGroup
		for range clients {
			wg.Go(func() {
				for i := int(next.Add(1) - 1); i < b.N; i = int(next.Add(1) - 1) {
					sp := spec(i)
					mod(&sp)
					t := time.Now()
					res, err := s.List(ctx, &sp)
					if err != nil {
						b.Error(err)
						return
					}
					lat[i] = time.Since(t)
					if !res.TotalExact && !sp.NoTotal && clients == 1 {
						b.StopTimer()
						c0 := pgtest.ProcessCPU()
						estimated.Add(1)
						exact := 0
						for _, p := range points {
							if store.HaversineKm(sp.Lat, sp.Lon, p[0], p[1]) <= sp.RadiusKm {
								exact++
							}
						}
						errSum[i] = math.Abs(float64(res.Total-exact)) / float64(exact)
						brute += pgtest.ProcessCPU() - c0
						b.StartTimer()
					}
				}
			})
		}
		wg.Wait()
		slices.Sort(lat)
		b.ReportMetric(float64(lat[len(lat)/2])/1e6, "p50-ms")
		b.ReportMetric(float64(lat[len(lat)*99/100])/1e6, "p99-ms")
		if clients == 1 {
			e := estimated.Load()
			b.ReportMetric(float64(e)/float64(b.N), "estimated/op")
			if e > 0 {
				sum := 0.0
				for _, v := range errSum {
					sum += v
				}
				b.ReportMetric(100*sum/float64(e), "err-%")
			}
		}
	}
	cells, emergency := func(*store.ListSpec) {}, func(sp *store.ListSpec) { sp.EmergencySlug = "eje-cafetero" }
	none := func(sp *store.ListSpec) { sp.NoTotal = true }
	q := func(sp *store.ListSpec) { *sp = store.ListSpec{Words: []string{"insulina"}, Limit: 20} } // make bench's q=insulina
	var nth atomic.Int64
	filtered := func(sp *store.ListSpec) { // make bench's «emergency+type+category» list, no radius
		*sp = store.ListSpec{EmergencySlug: "eje-cafetero", Type: schema.TypeRequest, Limit: 20,
			Category: benchdata.Categories[int(nth.Add(1))%len(benchdata.Categories)]}
	}
	b.Run("cells", func(b *testing.B) { run(b, 1, cells) })
	b.Run("emergency", func(b *testing.B) { run(b, 1, emergency) })
	b.Run("none", func(b *testing.B) { run(b, 1, none) })
	b.Run("cells-16", func(b *testing.B) { run(b, 16, cells) })
	b.Run("none-16", func(b *testing.B) { run(b, 16, none) })
	b.Run("filtered", func(b *testing.B) { run(b, 1, filtered) })
	b.Run("filtered-16", func(b *testing.B) { run(b, 16, filtered) })
	b.Run("q", func(b *testing.B) { run(b, 1, q) })
	b.Run("q-16", func(b *testing.B) { run(b, 16, q) })
}

// benchStore is a store on a fresh database of the shared cluster, and the number of records a benchmark
// loads into it: the environment variable env when it is a positive integer, else 100,000.
func benchStore(b *testing.B, env string) (*pgstore.DB, *pgstore.Store, int) {
	n := 100_000
	if v, err := strconv.Atoi(os.Getenv(env)); err == nil && v > 0 {
		n = v
	}
	if dsn := os.Getenv("BENCH_PG_DSN"); dsn != "" {
		db, s := openStore(b, dsn)
		return db, s, n
	}
	db, s := openStore(b, pgtest.Shared(b).NewDatabase(b))
	return db, s, n
}

// openStore opens a store on dsn, closed (the store, then its pool) when the test ends.
func openStore(t testing.TB, dsn string) (*pgstore.DB, *pgstore.Store) {
	t.Helper()
	db, err := pgstore.Open(dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	s := pgstore.NewStore(db)
	t.Cleanup(func() { _ = s.Close() })
	return db, s
}
