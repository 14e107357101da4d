package pgstore_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/directaid/directaid/backend/store"
	"github.com/directaid/directaid/backend/store/storetest"
)

// BenchmarkMaintainStall measures what an erasure's maintenance cycle costs readers and writers over
// BENCH_PG_ERASE records (default 100,000): the cycle's time, and the longest a Get and a Create running
// meanwhile waited, one after another, from two goroutines.
//
//	BENCH_PG_ERASE=100000 go test ./backend/pgstore -run '^$' -bench MaintainStall -benchtime 3x
func BenchmarkMaintainStall(b *testing.B) {
	_, s, n := benchStore(b, "BENCH_PG_ERASE")
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(7, 7))
	start := time.Now().Add(-time.Duration(n) * time.Second)
	var batch []*store.Record
	var ids []string
	for i := range n {
		rec := storetest.SynthRecord(rng, start.Add(time.Duration(i)*time.Second), i)
		rec.Status, rec.UpdatedAt = store.StatusOpen, rec.CreatedAt
		ids = append(ids, rec.ID)
		if batch = append(batch, rec); len(batch) == 5000 || i == n-1 {
			if _, err := s.Import(ctx, batch); err != nil {
				b.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	var cycles, worstGet, worstCreate time.Duration
	for i := 0; b.Loop(); i++ {
		b.StopTimer()
		id := ids[rng.IntN(len(ids))]
		if _, err := s.Update(ctx, id, func(r *store.Record) error { r.ErasePersonal(); r.Status = store.StatusWithdrawn; return nil }); err != nil {
			b.Fatal(err)
		}
		if err := s.AppendAudit(ctx, store.AuditEntry{Action: "erase", RecordID: id, Actor: store.ActorOperator, At: time.Now()}); err != nil {
			b.Fatal(err)
		}
		stop := make(chan struct{})
		var wg sync.WaitGroup
		worst := func(op func(int) error, into *time.Duration) {
			defer wg.Done()
			for j := 0; ; j++ {
				select {
				case <-stop:
					return
				default:
				}
				t0 := time.Now()
				if err := op(j); err != nil {
					b.Error(err)
					return
				}
				*into = max(*into, time.Since(t0))
			}
		}
		wg.Add(2)
		b.StartTimer()
		t0 := time.Now()
		go worst(func(int) error { _, err := s.Get(ctx, ids[rand.IntN(len(ids))]); return err }, &worstGet)
		go worst(func(j int) error {
			_, _, err := s.Create(ctx, storetest.Record("stall", fmt.Sprintf("%d-%d", i, j)))
			return err
		}, &worstCreate)
		if err := s.Maintain(ctx); err != nil {
			b.Fatal(err)
		}
		cycles += time.Since(t0)
		close(stop)
		wg.Wait()
	}
	b.Logf("%d records: %d cycles, %v each on average; longest Get %v, longest Create %v meanwhile", n, b.N, cycles/time.Duration(b.N), worstGet, worstCreate)
}
