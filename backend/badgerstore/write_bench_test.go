package badgerstore

import (
	"context"
	"errors"
	"expvar"
	"io/fs"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/pb"

	"github.com/directaid/directaid/backend/places"
	"github.com/directaid/directaid/backend/store"
	"github.com/directaid/directaid/backend/store/storetest"
)

// The write path of publishing: b.N generator records (uniformRecord, the distribution of make bench's
// 1M run, each with the municipio of its nearest place, and created 4,000 a second, as publishing over
// HTTP gives them) published through Create from 64 goroutines into a fresh store. Besides time and allocations
// per publish (noisy: alternate A/B runs), it reports the deterministic work of a record: live keys and
// their bytes, keys put (records, index entries and the counters each batch rewrites), user bytes
// written, and the bytes of the tables on disk after a graceful close (which flushes the memtables and
// compacts level 0).
//
//	go test ./backend/badgerstore -run '^$' -bench Publish -benchmem -benchtime 20000x -count 3
func BenchmarkPublish(b *testing.B) {
	const publishRate = 4000
	dir := b.TempDir()
	s, err := Open(Options{Dir: dir})
	if err != nil {
		b.Fatal(err)
	}
	t0 := time.Date(2026, 8, 11, 14, 0, 0, 0, time.UTC)
	n := max(b.N, 100_000) // the density of the generator's box; b.N only counts records
	recs := make([]*store.Record, b.N)
	for i := range recs {
		// created as publishing over HTTP creates them: now, at 4,000 a second
		recs[i] = storetest.UniformRecord(n, i, t0.Add(time.Duration(i)*time.Second/publishRate))
		recs[i].MunicipioCode = places.Nearest(*recs[i].Latitude, *recs[i].Longitude).MunicipioCode()
	}
	written := watchWrites(b, s.db)
	puts, userBytes, gets := expvarInt("badger_put_num_user"), expvarInt("badger_write_bytes_user"), expvarInt("badger_get_num_user")
	compacted := expvarSum("badger_write_bytes_compaction")
	cpu := cpuTime()
	var peak atomic.Uint64 // the live Go heap after the last GC, sampled every 50 ms
	stopSampling := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		live := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
		for {
			select {
			case <-stopSampling:
				return
			case <-time.After(50 * time.Millisecond):
				metrics.Read(live)
				peak.Store(max(peak.Load(), live[0].Value.Uint64()))
			}
		}
	}()
	var next atomic.Int64
	b.SetParallelism(max(1, 64/runtime.GOMAXPROCS(0))) // 64 publishing goroutines
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := int(next.Add(1) - 1)
			if _, _, err := s.Create(context.Background(), recs[i]); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.StopTimer()
	writes := written()
	close(stopSampling)
	<-sampled
	b.ReportMetric(float64(peak.Load())/(1<<20), "peaklive-MB")
	nf := float64(b.N)
	// CPU of the whole process (publishers, writer, Badger's flushes and compactions): less noisy than
	// wall time on a shared machine, which fsync latency dominates anyway.
	b.ReportMetric(float64(cpuTime()-cpu)/nf/1e3, "cpu-µs/rec")
	b.ReportMetric(float64(expvarSum("badger_write_bytes_compaction")-compacted)/nf, "compactB/rec")
	b.ReportMetric(float64(expvarInt("badger_put_num_user")-puts)/nf, "puts/rec")
	b.ReportMetric(float64(expvarInt("badger_get_num_user")-gets)/nf, "gets/rec")
	b.ReportMetric(float64(expvarInt("badger_write_bytes_user")-userBytes)/nf, "userB/rec")
	keys, kvBytes := 0, 0
	type share struct{ keys, bytes int }
	byFamily := map[string]*share{} // by key prefix, for -v
	if err := s.db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			k := it.Item().Key()
			size := len(k) + int(it.Item().ValueSize())
			keys++
			kvBytes += size
			fam := string(k[:min(len(k), 2)])
			if sh := byFamily[fam]; sh != nil {
				sh.keys, sh.bytes = sh.keys+1, sh.bytes+size
			} else {
				byFamily[fam] = &share{1, size}
			}
		}
		return nil
	}); err != nil {
		b.Fatal(err)
	}
	if b.N >= 1000 {
		for fam, sh := range byFamily {
			b.Logf("live %q: %.2f keys/rec, %.0f B/rec", fam, float64(sh.keys)/nf, float64(sh.bytes)/nf)
		}
		for fam, sh := range writes {
			b.Logf("written %q: %.2f keys/rec, %.0f B/rec", fam, float64(sh[0])/nf, float64(sh[1])/nf)
		}
	}
	b.ReportMetric(float64(keys)/nf, "keys/rec")
	b.ReportMetric(float64(kvBytes)/nf, "kvB/rec")
	if err := s.Close(); err != nil {
		b.Fatal(err)
	}
	var sst int64
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(p, ".sst") {
			if info, err := d.Info(); err == nil {
				sst += info.Size()
			}
		}
		return nil
	})
	b.ReportMetric(float64(sst)/nf, "sstB/rec")
}

// watchWrites counts what is written to db from now on by key family (a key's first two bytes): keys
// (sets and deletes, a counter each time a batch rewrites it) and their key and value bytes. The returned
// function stops counting and gives the counts.
func watchWrites(b *testing.B, db *badger.DB) func() map[string][2]int {
	var mu sync.Mutex
	counts := map[string][2]int{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		err := db.Subscribe(ctx, func(kvs *badger.KVList) error {
			mu.Lock()
			defer mu.Unlock()
			for _, kv := range kvs.Kv {
				fam := string(kv.Key[:min(len(kv.Key), 2)])
				c := counts[fam]
				counts[fam] = [2]int{c[0] + 1, c[1] + len(kv.Key) + len(kv.Value)}
			}
			return nil
		}, []pb.Match{{Prefix: []byte{}}})
		if err != nil && !errors.Is(err, context.Canceled) {
			b.Error(err)
		}
	}()
	time.Sleep(50 * time.Millisecond) // Subscribe registers asynchronously
	return func() map[string][2]int {
		time.Sleep(100 * time.Millisecond) // the last batch's notification
		cancel()
		<-done
		mu.Lock()
		defer mu.Unlock()
		return counts
	}
}

func expvarSum(name string) int64 {
	var n int64
	if m, ok := expvar.Get(name).(*expvar.Map); ok {
		m.Do(func(kv expvar.KeyValue) {
			if v, ok := kv.Value.(*expvar.Int); ok {
				n += v.Value()
			}
		})
	}
	return n
}

// cpuTime is the user and system CPU time of the process so far, in ns.
func cpuTime() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// The write path of updates: b.N generator records published as BenchmarkPublish publishes them (not
// measured), then each updated once from 64 goroutines, in the order they were published, as expiry and
// the publishers' own changes come: half resolved (every index entry moves to another status), half
// given another urgency (the same entries with another summary). It reports CPU and what Badger is
// handed per update.
//
//	go test ./backend/badgerstore -run '^$' -bench Update -benchtime 20000x
func BenchmarkUpdate(b *testing.B) {
	const publishRate = 4000
	s, err := Open(Options{Dir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	t0 := time.Date(2026, 8, 11, 14, 0, 0, 0, time.UTC)
	n := max(b.N, 100_000)
	ids := make([]string, b.N)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range 64 {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < b.N; i = int(next.Add(1) - 1) {
				rec := storetest.UniformRecord(n, i, t0.Add(time.Duration(i)*time.Second/publishRate))
				rec.MunicipioCode = places.Nearest(*rec.Latitude, *rec.Longitude).MunicipioCode()
				stored, _, err := s.Create(context.Background(), rec)
				if err != nil {
					b.Error(err)
					return
				}
				ids[i] = stored.ID
			}
		})
	}
	wg.Wait()
	puts, userBytes := expvarInt("badger_put_num_user"), expvarInt("badger_write_bytes_user")
	cpu := cpuTime()
	next.Store(0)
	b.SetParallelism(max(1, 64/runtime.GOMAXPROCS(0)))
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := int(next.Add(1) - 1)
			_, err := s.Update(context.Background(), ids[i], func(r *store.Record) error {
				switch {
				case i%2 == 0:
					r.Status = store.StatusResolved
				case r.Urgency == "urgent":
					r.Urgency = "normal"
				default:
					r.Urgency = "urgent"
				}
				return nil
			})
			if err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.StopTimer()
	nf := float64(b.N)
	b.ReportMetric(float64(cpuTime()-cpu)/nf/1e3, "cpu-µs/update")
	b.ReportMetric(float64(expvarInt("badger_put_num_user")-puts)/nf, "puts/update")
	b.ReportMetric(float64(expvarInt("badger_write_bytes_user")-userBytes)/nf, "userB/update")
}

// BenchmarkCheckpointLatency: the latency of publications while a checkpoint of the counters is written.
// 140,000 generator records from 64 goroutines, then 6,400 more during which one checkpoint falls (the
// counters of the 140,000), or none; reports the p99 and the max of those 6,400.
//
//	go test ./backend/badgerstore -run '^$' -bench CheckpointLatency -benchtime 1x
func BenchmarkCheckpointLatency(b *testing.B) {
	for _, c := range []struct {
		name       string
		checkpoint bool
	}{{"checkpoint", true}, {"none", false}} {
		b.Run(c.name, func(b *testing.B) {
			for range b.N {
				p99, top := checkpointLatency(b, c.checkpoint)
				b.ReportMetric(float64(p99.Microseconds())/1000, "p99-ms")
				b.ReportMetric(float64(top.Microseconds())/1000, "max-ms")
			}
		})
	}
}

func checkpointLatency(b *testing.B, checkpoint bool) (p99, top time.Duration) {
	s, err := Open(Options{Dir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	s.commitMu.Lock()
	s.cells.checkpointAt = 1 << 40
	s.commitMu.Unlock()
	t0 := time.Date(2026, 8, 11, 14, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	var lat []time.Duration
	publish := func(from, n int) {
		var wg sync.WaitGroup
		for g := range 64 {
			wg.Go(func() {
				for i := from + g; i < from+n; i += 64 {
					r := storetest.UniformRecord(1_000_000, i, t0.Add(time.Duration(i)*time.Second/4000))
					r.MunicipioCode = places.Nearest(*r.Latitude, *r.Longitude).MunicipioCode()
					began := time.Now()
					if _, _, err := s.Create(context.Background(), r); err != nil {
						b.Error(err)
						return
					}
					mu.Lock()
					lat = append(lat, time.Since(began))
					mu.Unlock()
				}
			})
		}
		wg.Wait()
	}
	publish(0, 140_000)
	if checkpoint {
		s.commitMu.Lock()
		s.cells.checkpointAt = s.cells.journaled // the next batch calls for one, and no later one does
		s.commitMu.Unlock()
	}
	lat = lat[:0]
	b.ResetTimer()
	publish(140_000, 6_400)
	b.StopTimer()
	slices.Sort(lat)
	return lat[len(lat)*99/100], lat[len(lat)-1]
}
