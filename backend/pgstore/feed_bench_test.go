package pgstore_test

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/directaid/directaid/backend/store"
	"github.com/directaid/directaid/backend/store/storetest"
)

// BenchmarkFeedRare times a change feed's first page of 20 with its total, filtered to one emergency,
// category and urgency (2.4% of that emergency's changes), since one of ten points spread over BENCH_PG_FEED records
// (default 100,000) changed a second apart: each walk of the total reads at most store.MaxFeedRead rows.
//
//	BENCH_PG_FEED=200000 go test ./backend/pgstore -run '^$' -bench FeedRare -benchtime 100x
func BenchmarkFeedRare(b *testing.B) {
	db, s, n := benchStore(b, "BENCH_PG_FEED")
	ctx := context.Background()
	start := time.Date(2026, 8, 11, 14, 0, 0, 0, time.UTC)
	var count int
	if _, err := s.List(ctx, &store.ListSpec{Limit: 1}); err != nil { // migrates a new database
		b.Fatal(err)
	}
	if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM directaid_records`).Scan(&count); err != nil {
		b.Fatal(err)
	}
	if count == 0 {
		rng := rand.New(rand.NewPCG(3, 3))
		recs := make([]*store.Record, 0, 10_000)
		for i := range n {
			r := storetest.SynthRecord(rng, start.Add(time.Duration(i)*time.Second), i)
			r.Status, r.UpdatedAt = store.StatusOpen, r.CreatedAt
			if recs = append(recs, r); len(recs) == cap(recs) || i == n-1 {
				if _, err := s.Import(ctx, recs); err != nil {
					b.Fatal(err)
				}
				recs = recs[:0]
			}
		}
		if _, err := db.Pool.Exec(ctx, `ANALYZE`); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	total := 0
	for i := range b.N {
		since := start.Add(time.Duration(n*(2*(i%10)+1)/20) * time.Second)
		res, err := s.List(ctx, &store.ListSpec{Since: since, EmergencySlug: "la-mojana", Category: "salud", Urgency: "urgent", Limit: 20})
		if err != nil {
			b.Fatal(err)
		}
		total += res.Total
	}
	b.ReportMetric(float64(total)/float64(b.N), "total/op")
}
