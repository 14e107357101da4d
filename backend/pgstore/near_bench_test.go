package pgstore_test

import (
	"context"
	"math/rand/v2"
	"os"
	"sync/atomic"
	"testing"

	"github.com/directaid/directaid/backend/store"
	"github.com/directaid/directaid/internal/pgtest"
)

// BenchmarkListNear is make bench's «GET list within 5 km» row on the store alone, one list at a time,
// over a database kept loaded (BENCH_PG_DSN, e.g. a copy of the bench's 1M records; BENCH_PG_DATA its data
// directory, for PostgreSQL's CPU): this process's CPU and allocations per list, with and without the total.
//
//	BENCH_PG_DSN=postgres://… go test ./backend/pgstore -run '^$' -bench ListNear -benchmem -benchtime 2000x
func BenchmarkListNear(b *testing.B) {
	dsn := os.Getenv("BENCH_PG_DSN")
	if dsn == "" {
		b.Skip("BENCH_PG_DSN not set: over a database kept loaded")
	}
	_, s := openStore(b, dsn)
	ctx := context.Background()
	run := func(b *testing.B, noTotal bool, clients int) {
		spec := func(i int) *store.ListSpec {
			r := rand.New(rand.NewPCG(uint64(i), 17)) // the bench's area (radiusQuery)
			return &store.ListSpec{Near: true, RadiusKm: 5, Limit: 20, NoTotal: noTotal,
				Lat: 4.45 + r.Float64()*0.7, Lon: -75.95 + r.Float64()*0.5}
		}
		for i := range 50 { // the pool's connections and their prepared statements
			if _, err := s.List(ctx, spec(i)); err != nil {
				b.Fatal(err)
			}
		}
		pg0, go0 := pgtest.ClusterCPU(os.Getenv("BENCH_PG_DATA")), pgtest.ProcessCPU()
		b.ResetTimer()
		var next atomic.Int64
		b.SetParallelism(clients) // GOMAXPROCS × clients goroutines
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				res, err := s.List(ctx, spec(int(next.Add(1))))
				if err != nil || len(res.Records) == 0 {
					b.Error(err)
					return
				}
			}
		})
		b.StopTimer()
		b.ReportMetric(float64((pgtest.ProcessCPU()-go0).Microseconds())/float64(b.N), "go-cpu-µs/op")
		if pg0 > 0 {
			b.ReportMetric(float64((pgtest.ClusterCPU(os.Getenv("BENCH_PG_DATA"))-pg0).Microseconds())/float64(b.N), "pg-cpu-µs/op")
		}
	}
	b.Run("cells", func(b *testing.B) { run(b, false, 1) })
	b.Run("none", func(b *testing.B) { run(b, true, 1) })
	b.Run("cells-16", func(b *testing.B) { run(b, false, 8) })
	b.Run("none-16", func(b *testing.B) { run(b, true, 8) })
}
