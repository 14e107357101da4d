package badgerstore

import (
	"context"
	"expvar"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"

	"github.com/directaid/directaid/backend/store"
	"github.com/directaid/directaid/backend/store/storetest"
	"github.com/directaid/directaid/internal/benchdata"
	"github.com/directaid/directaid/schema"
)

// The read paths of `make bench BENCH_1M=1`, over the distribution of its generator (internal/bench's
// publishBody("million"): one emergency, uniform over the Eje Cafetero, a quarter offers, its titles and
// words), without a 1M run: BENCH_UNIFORM records (default 250,000) seeded through Create into a box
// shrunk so that the density is that of 1M records over the whole area (a 5 km circle holds ~13k records,
// as at 1M). Besides time and allocations, each reports the work of a query: user gets, iterators and
// block-cache misses (blocks read and decompressed again).
//
//	BENCH_UNIFORM=250000 go test ./backend/badgerstore -run '^$' -bench 'Uniform' -benchmem -benchtime 200x
//
// BENCH_READONLY=1 reads the seeded directory opened read-only: no compaction beside the queries, so
// that their cost can be counted alone on a busy machine (instructions of Store.List with callgrind;
// GODEBUG=asyncpreemptoff=1 for valgrind, GOGC=off to leave the GC out).

var (
	uniOnce   sync.Once
	uniStore  *Store
	uniN      int
	uniErr    error
	uniLogged bool
)

func uniformDB(b *testing.B) (*Store, int) {
	uniOnce.Do(func() {
		uniN = 250_000
		if v, err := strconv.Atoi(os.Getenv("BENCH_UNIFORM")); err == nil && v > 0 {
			uniN = v
		}
		dir := filepath.Join(os.TempDir(), fmt.Sprintf("directaid-bench-uniform-%d", uniN)) // an older index version is rebuilt by Open
		done := filepath.Join(dir, "SEEDED")
		_, statErr := os.Stat(done)
		if statErr != nil {
			_ = os.RemoveAll(dir)
		}
		if uniStore, uniErr = Open(Options{Dir: dir}); uniErr != nil || statErr == nil {
			return
		}
		start := time.Now()
		t0 := time.Date(2026, 8, 11, 14, 0, 0, 0, time.UTC)
		step := 30 * 24 * time.Hour / time.Duration(uniN)
		const workers = 256
		var wg sync.WaitGroup
		errs := make(chan error, workers)
		for w := range workers {
			wg.Go(func() {
				for i := w; i < uniN; i += workers {
					if _, _, err := uniStore.Create(context.Background(), storetest.UniformRecord(uniN, i, t0.Add(time.Duration(i)*step))); err != nil {
						errs <- err
						return
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		if uniErr = <-errs; uniErr == nil {
			uniErr = os.WriteFile(done, []byte(time.Since(start).String()), 0o644)
		}
		fmt.Fprintf(os.Stderr, "seeded %d records in %s (%s)\n", uniN, time.Since(start).Round(time.Second), dir)
		// As `make bench` does, read from a server restarted over the records (a graceful close compacts L0).
		if uniErr = uniStore.Close(); uniErr == nil {
			uniStore, uniErr = Open(Options{Dir: dir})
		}
	})
	if uniErr == nil && os.Getenv("BENCH_READONLY") != "" && !uniStore.db.Opts().ReadOnly {
		// No compaction nor writer beside the reads: what a query costs, counted alone (callgrind).
		if uniErr = uniStore.Close(); uniErr == nil {
			uniStore, uniErr = openReadOnly(filepath.Join(os.TempDir(), fmt.Sprintf("directaid-bench-uniform-%d", uniN)))
		}
	}
	if uniErr != nil {
		b.Fatal(uniErr)
	}
	if !uniLogged {
		uniLogged = true
		perLevel := map[int]int{}
		for _, t := range uniStore.db.Tables() {
			perLevel[t.Level]++
		}
		b.Logf("tables per level: %v", perLevel)
	}
	return uniStore, uniN
}

// openReadOnly opens a store's directory read-only for reads only (List, Get): Badger runs no
// compaction, and there is no writer.
func openReadOnly(dir string) (*Store, error) {
	db, err := badger.Open(badgerOptions(Options{Dir: dir}).WithReadOnly(true))
	if err != nil {
		return nil, err
	}
	s := &Store{db: db, maxTextChecks: maxTextChecks, maxTotalTextChecks: maxTotalTextChecks, maxWordTokens: maxWordTokens, now: time.Now}
	if err := s.loadCounters(); err != nil {
		return nil, err
	}
	s.renewSnapshot()
	return s, nil
}

// processCPU is the CPU time of the process so far (user and system): on a busy machine, what the
// queries cost, less the waiting for a core that their wall time includes.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func expvarInt(name string) int64 {
	if v, ok := expvar.Get(name).(*expvar.Int); ok {
		return v.Value()
	}
	return 0
}

// runWork times q(i) for b.N iterations and reports percentiles and the store work per query.
func runWork(b *testing.B, q func(s *Store, i int) (int, error)) {
	s, _ := uniformDB(b)
	if _, err := q(s, 0); err != nil { // warm
		b.Fatal(err)
	}
	lat := make([]time.Duration, 0, b.N)
	gets, iters := expvarInt("badger_get_num_user"), expvarInt("badger_iterator_num_user")
	misses := s.db.BlockCacheMetrics().Misses()
	total := 0
	cpu0 := processCPU()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t := time.Now()
		n, err := q(s, i)
		if err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t))
		total += n
	}
	b.StopTimer()
	cpu := processCPU() - cpu0
	slices.Sort(lat)
	pct := func(p float64) float64 { return float64(lat[min(len(lat)-1, int(p*float64(len(lat))))]) / 1e6 }
	nf := float64(b.N)
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
	b.ReportMetric(float64(total)/nf, "total/op")
	b.ReportMetric(float64(cpu.Microseconds())/nf, "cpu-µs/op")
	b.ReportMetric(float64(expvarInt("badger_get_num_user")-gets)/nf, "gets/op")
	b.ReportMetric(float64(expvarInt("badger_iterator_num_user")-iters)/nf, "iters/op")
	b.ReportMetric(float64(s.db.BlockCacheMetrics().Misses()-misses)/nf, "blockmiss/op")
}

func listWork(spec func(n, i int) *store.ListSpec) func(*Store, int) (int, error) {
	return func(s *Store, i int) (int, error) {
		res, err := s.List(context.Background(), spec(uniN, i))
		if err != nil {
			return 0, err
		}
		return res.Total, nil
	}
}

// uniformPoint is the i-th query point: inside the box with the generator's margin (0.05°).
func uniformPoint(n, i int) (lat, lon float64) {
	r := rand.New(rand.NewPCG(uint64(i), 13))
	lat0, lon0, dLat, dLon := storetest.UniformBox(n)
	return lat0 + 0.05 + r.Float64()*(dLat-0.1), lon0 + 0.05 + r.Float64()*(dLon-0.1)
}

func BenchmarkUniformRadius5km(b *testing.B) {
	b.Run("total", func(b *testing.B) {
		runWork(b, listWork(func(n, i int) *store.ListSpec {
			lat, lon := uniformPoint(n, i)
			return &store.ListSpec{Near: true, Lat: lat, Lon: lon, RadiusKm: 5, Limit: 20}
		}))
	})
	b.Run("none", func(b *testing.B) {
		runWork(b, listWork(func(n, i int) *store.ListSpec {
			lat, lon := uniformPoint(n, i)
			return &store.ListSpec{Near: true, Lat: lat, Lon: lon, RadiusKm: 5, Limit: 20, NoTotal: true}
		}))
	})
}

func BenchmarkUniformText(b *testing.B) {
	b.Run("insulina", func(b *testing.B) {
		runWork(b, listWork(func(int, int) *store.ListSpec { return &store.ListSpec{Words: []string{"insulina"}, Limit: 20} }))
	})
	b.Run("insul+request", func(b *testing.B) {
		runWork(b, listWork(func(int, int) *store.ListSpec {
			return &store.ListSpec{Words: []string{"insul"}, Type: schema.TypeRequest, Limit: 20}
		}))
	})
}

func BenchmarkUniformFiltered(b *testing.B) {
	b.Run("type+category", func(b *testing.B) {
		runWork(b, listWork(func(_, i int) *store.ListSpec {
			return &store.ListSpec{EmergencySlug: "eje-cafetero", Type: schema.TypeRequest, Category: benchdata.Categories[i%len(benchdata.Categories)], Limit: 20}
		}))
	})
	b.Run("+urgency", func(b *testing.B) {
		runWork(b, listWork(func(_, i int) *store.ListSpec {
			return &store.ListSpec{EmergencySlug: "eje-cafetero", Type: schema.TypeRequest, Category: benchdata.Categories[i%len(benchdata.Categories)],
				Urgency: "urgent", Limit: 20}
		}))
	})
}

func BenchmarkUniformDetail(b *testing.B) {
	var ids []string
	runWork(b, func(s *Store, i int) (int, error) {
		if ids == nil {
			res, err := s.List(context.Background(), &store.ListSpec{Limit: 1000, NoTotal: true})
			if err != nil {
				return 0, err
			}
			for _, r := range res.Records {
				ids = append(ids, r.ID)
			}
		}
		_, err := s.Get(context.Background(), ids[(i*7919)%len(ids)])
		return 1, err
	})
}
