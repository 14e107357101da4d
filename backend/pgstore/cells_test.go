package pgstore_test

import (
	"context"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/directaid/directaid/backend/pgstore"
	"github.com/directaid/directaid/backend/store"
	"github.com/directaid/directaid/internal/pgtest"
)

// undoCells takes migration 0011 away, so that Migrate applies it (and its backfill) again
// (TestCountersFollowWrites takes 0012 away with 0006).
const undoCells = `DROP TRIGGER directaid_cells_insert ON directaid_records; DROP TRIGGER directaid_cells_update ON directaid_records;
	DROP TRIGGER directaid_cells_delete ON directaid_records; DROP FUNCTION directaid_cells_add();
	DROP FUNCTION directaid_cells_apply(directaid_cell_delta[]); DROP TYPE directaid_cell_delta; DROP FUNCTION directaid_geocode(float8, float8);
	DROP TABLE directaid_cells; DELETE FROM directaid_schema_migrations WHERE version = 11`

// checkCells compares the cell counters (0011, 0012, 0014), summed over shards, with the records' cells cut in
// Go (store.Geohash), as the Badger store counts them.
func checkCells(t *testing.T, db *pgstore.DB, when string) {
	t.Helper()
	ctx := context.Background()
	want := map[string]int64{}
	rows, err := db.Pool.Query(ctx, `SELECT status, type, category, urgency, emergency_slug, municipio_code, loc[1], loc[0]
		FROM directaid_records WHERE loc IS NOT NULL`)
	if err != nil {
		t.Fatal(err)
	}
	var st, typ, cat, urg, slug, muni string
	var lat, lon float64
	if _, err := pgx.ForEachRow(rows, []any{&st, &typ, &cat, &urg, &slug, &muni, &lat, &lon}, func() error {
		gh := store.Geohash(lat, lon, store.GeoPrecision)
		for p := store.CellCountMin; p <= store.GeoPrecision; p++ {
			want[fmt.Sprintf("%s/%d/%s/%s/%s/%s/%s", st, pgstore.CellKey(gh[:p]), typ, cat, urg, slug, muni)]++
			want[fmt.Sprintf("%s/%d////%s/%s", st, pgstore.CellKey(gh[:p]), slug, muni)]++ // every kind (0014)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{}
	var cell int32
	var n int64
	rows, err = db.Pool.Query(ctx, `SELECT status, cell, type, category, urgency, emergency_slug, municipio_code, sum(n)::bigint
		FROM directaid_cells GROUP BY 1, 2, 3, 4, 5, 6, 7 HAVING sum(n) <> 0`)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pgx.ForEachRow(rows, []any{&st, &cell, &typ, &cat, &urg, &slug, &muni, &n}, func() error {
		got[fmt.Sprintf("%s/%d/%s/%s/%s/%s/%s", st, cell, typ, cat, urg, slug, muni)] = n
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(want) == 0 || !maps.Equal(got, want) {
		t.Fatalf("%s: cell counters differ from the records' cells (%d and %d rows)", when, len(got), len(want))
	}
}

// TestGeocodeMatchesGeohash: the cell PostgreSQL computes for a point (directaid_geocode) is the one Go's
// store.Geohash gives, on the sides and corners of cells (where a rounding would tip it), a hair either
// side of them, at the ends of the world, and at random.
func TestGeocodeMatchesGeohash(t *testing.T) {
	ctx := context.Background()
	db, err := pgstore.Open(pgtest.Shared(t).NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	if _, err := pgstore.Migrate(ctx, db.Pool); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(11, 12))
	var lats, lons []float64
	add := func(lat, lon float64) { lats, lons = append(lats, lat), append(lons, lon) }
	h, w := store.GeohashCellSize(store.GeoPrecision)
	for range 2000 {
		lat, lon := -4.3+rng.Float64()*17.9, -79.1+rng.Float64()*12.3
		add(lat, lon)
		sLat, sLon := math.Floor((lat+90)/h)*h-90, math.Floor((lon+180)/w)*w-180 // a cell's corner
		for _, d := range []float64{-1, 0, 1} {
			add(math.Nextafter(sLat, sLat+d), math.Nextafter(sLon, sLon+d))
			add(sLat+d*1e-12, lon)
			add(lat, sLon+d*1e-12)
		}
	}
	for _, p := range [][2]float64{{90, 180}, {-90, -180}, {0, 0}, {90, -180}, {-90, 180}, {4.5339, -75.6811}} {
		add(p[0], p[1])
	}
	var codes []int32
	if err := db.Pool.QueryRow(ctx, `SELECT array(SELECT directaid_geocode(a, b) FROM unnest($1::float8[], $2::float8[]) WITH ORDINALITY AS u(a, b, i) ORDER BY i)`,
		lats, lons).Scan(&codes); err != nil {
		t.Fatal(err)
	}
	for i, code := range codes {
		gh := store.Geohash(lats[i], lons[i], store.GeoPrecision)
		if want := pgstore.CellKey(gh) &^ (1 << 30); code != want {
			t.Fatalf("%v,%v: PostgreSQL's cell %b, Go's %b (%s)", lats[i], lons[i], code, want, gh)
		}
	}
	t.Logf("%d points", len(codes))
}
