package bench

import (
	"context"
	"os"
	"reflect"
	"slices"
	"testing"

	"github.com/directaid/directaid/backend/badgerstore"
	"github.com/directaid/directaid/backend/pgstore"
	"github.com/directaid/directaid/backend/store"
)

// TestScopedRadiusAlike compares the two stores over the same records kept loaded (e.g. a copy of the 1M
// Badger directory and the PostgreSQL database moved from it with directaid migrate): 5 km lists, unscoped
// and scoped to municipios, at the bench's radius points, their first two pages, ids, distances, totals
// and records (an unscoped first page reads them in PostgreSQL's walk, the others by id).
//
//	BENCH_ALIKE_BADGER=<a copy of the Badger directory> BENCH_ALIKE_DSN=postgres://…
//	go test ./internal/bench -run TestScopedRadiusAlike -v
func TestScopedRadiusAlike(t *testing.T) {
	dir, dsn := os.Getenv("BENCH_ALIKE_BADGER"), os.Getenv("BENCH_ALIKE_DSN")
	if dir == "" || dsn == "" {
		t.Skip("BENCH_ALIKE_BADGER and BENCH_ALIKE_DSN not set: a check over data kept loaded")
	}
	ctx := context.Background()
	b, err := badgerstore.Open(badgerstore.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	db, err := pgstore.Open(dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Ready(ctx); err != nil {
		t.Fatal(err)
	}
	p := pgstore.NewStore(db)
	defer p.Close()
	compared, nonEmpty := 0, 0
	for n := range int64(150) {
		r := rng(uint64(n) * 0x9e3779b97f4a7c15) // radiusQuery's points
		lat, lon := 4.45+float64(r.intn(70000))/1e5, -75.95+float64(r.intn(50000))/1e5
		for _, m := range []string{"", "66001", "17001", "66170", "63001"} {
			spec := store.ListSpec{Near: true, Lat: lat, Lon: lon, RadiusKm: 5, Limit: 20, Municipio: m}
			for page := 0; page < 2; page++ {
				rb, err := b.List(ctx, &spec)
				if err != nil {
					t.Fatal(err)
				}
				rp, err := p.List(ctx, &spec)
				if err != nil {
					t.Fatal(err)
				}
				ids := func(res *store.ListResult) []string {
					var out []string
					for _, rec := range res.Records {
						out = append(out, rec.ID)
					}
					return out
				}
				if !slices.Equal(ids(rb), ids(rp)) || !slices.Equal(rb.Distances, rp.Distances) || rb.Total != rp.Total || rb.TotalExact != rp.TotalExact || len(rb.Records) > 0 && !reflect.DeepEqual(rb.Records, rp.Records) {
					t.Fatalf("%+v page %d: Badger %d records (total %d, exact %v), PostgreSQL %d (total %d, exact %v)\n%v\n%v",
						spec, page, len(rb.Records), rb.Total, rb.TotalExact, len(rp.Records), rp.Total, rp.TotalExact, ids(rb), ids(rp))
				}
				compared++
				if len(rb.Records) > 0 {
					nonEmpty++
				}
				if rb.Next == nil {
					break
				}
				spec.After = rb.Next
			}
		}
	}
	t.Logf("%d pages alike, %d of them not empty", compared, nonEmpty)
}
