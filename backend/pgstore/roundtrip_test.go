package pgstore

import (
	"context"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/directaid/directaid/backend/store"
	"github.com/directaid/directaid/internal/pgtest"
	"github.com/directaid/directaid/schema"
)

// roundTrips counts the statements sent alone and the pipelines (batches) a pool sends: one round trip
// each once the statements are prepared; and those sent and not yet answered, and the most at once.
type roundTrips struct{ alone, batches, statements, inFlight, most atomic.Int64 }

func (r *roundTrips) sent() {
	n := r.inFlight.Add(1)
	for m := r.most.Load(); n > m && !r.most.CompareAndSwap(m, n); m = r.most.Load() {
	}
}

func (r *roundTrips) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	r.alone.Add(1)
	r.statements.Add(1)
	r.sent()
	return ctx
}
func (r *roundTrips) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {
	r.inFlight.Add(-1)
}
func (r *roundTrips) TraceBatchStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceBatchStartData) context.Context {
	r.batches.Add(1)
	r.statements.Add(int64(d.Batch.Len()))
	r.sent()
	return ctx
}
func (r *roundTrips) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}
func (r *roundTrips) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {
	r.inFlight.Add(-1)
}

// tracedStore is a store on dsn whose pool traces its statements to tracer, with at most maxConns
// connections (0: poolConfig's default); the pool closes with the test.
func tracedStore(t *testing.T, dsn string, tracer pgx.QueryTracer, maxConns int32) *Store {
	t.Helper()
	cfg, err := poolConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	cfg.ConnConfig.Tracer = tracer
	if maxConns > 0 {
		cfg.MaxConns = maxConns
	}
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return NewStore(&DB{Pool: pool})
}

// importDense imports 6,000 records in a 6 km square (the density of 1M over the Eje Cafetero), created
// and changed a millisecond apart from start, and returns them in that order.
func importDense(t *testing.T, s *Store, start time.Time) []*store.Record {
	t.Helper()
	return importDenseWith(t, s, start, nil)
}

// importDenseWith is importDense with each record changed by set (if not nil) before the import.
func importDenseWith(t *testing.T, s *Store, start time.Time, set func(*store.Record)) []*store.Record {
	t.Helper()
	var recs []*store.Record
	for i := range 6_000 {
		r := rand.New(rand.NewPCG(uint64(i), 5))
		ts := start.Add(time.Duration(i) * time.Millisecond)
		rec := &store.Record{ID: store.NewID(ts), CreatedAt: ts.UTC().Truncate(time.Millisecond), Status: store.StatusOpen}
		p := &rec.Publication
		p.Type, p.Urgency, p.Source, p.ExternalID, p.EmergencySlug = schema.TypeRequest, schema.Urgencies[0], "rt", "r-"+strconv.Itoa(i), "eje-cafetero"
		p.Category, p.Title, p.Description, p.ContactName = "agua", "Agua potable", "Agua para 5 familias", "Ana"
		lat, lon := 4.5+r.Float64()*0.054, -75.7+r.Float64()*0.054
		p.Latitude, p.Longitude = &lat, &lon
		if set != nil {
			set(rec)
		}
		recs = append(recs, rec)
	}
	if _, err := s.Import(context.Background(), recs); err != nil {
		t.Fatal(err)
	}
	return recs
}

// TestRadiusRoundTrips checks how many round trips a radius list costs, the timing-free measure of its
// latency: 2 for a page whose total comes from the counters, estimated (the 5 km circle at 1M density),
// or counted at the edge (a sparse one), 1 more when the walk needs a second batch; 2 for a radius list
// with q and no total (3 before: its end went alone); and 2 for a list without q, radius nor since, whose
// total comes from the counters (README: 4 before). The statements include the settings: generic plans
// and enable_sort off in one statement before a walk without q (the walk, the counters, the records and
// personal rows by id; the edge's count sets custom plans, then generic ones back), custom plans before
// one with q and generic ones before its records; and one per partition of the page's personal rows. A
// first page of open records without kind nor scope reads its records in the walk (walkDocs), not by id.
func TestRadiusRoundTrips(t *testing.T) {
	ctx := context.Background()
	rt := &roundTrips{}
	s := tracedStore(t, pgtest.Shared(t).NewDatabase(t), rt, 0)
	importDense(t, s, time.Now().Add(-time.Hour))
	// The walk's first batch (84 rows for a page of 20) does not reach past the 100 records before this.
	far, err := s.List(ctx, &store.ListSpec{Near: true, Lat: 4.527, Lon: -75.673, RadiusKm: 2.5, Limit: 100, NoTotal: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name              string
		spec              store.ListSpec
		trips, statements int64
	}{
		{"estimated", store.ListSpec{Near: true, Lat: 4.527, Lon: -75.673, RadiusKm: 2.5, Limit: 20}, 2, 5},
		{"edge counted", store.ListSpec{Near: true, Lat: 4.527, Lon: -75.673, RadiusKm: 0.3, Limit: 20}, 2, 8},
		{"no total", store.ListSpec{Near: true, Lat: 4.527, Lon: -75.673, RadiusKm: 2.5, Limit: 20, NoTotal: true}, 2, 4},
		// A kind filter: the records by id.
		{"kind", store.ListSpec{Near: true, Lat: 4.527, Lon: -75.673, RadiusKm: 2.5, Limit: 20, Type: schema.TypeRequest}, 2, 6},
		{"a second batch", store.ListSpec{Near: true, Lat: 4.527, Lon: -75.673, RadiusKm: 2.5, Limit: 20, NoTotal: true, After: far.Next}, 3, 6},
		// With q: the start and the walk; the records and the end.
		{"q, no total", store.ListSpec{Near: true, Lat: 4.527, Lon: -75.673, RadiusKm: 2.5, Limit: 20, NoTotal: true, Words: []string{"agua"}}, 2, 6},
		// A list without q, radius nor since (listCounted): its start, total and page; its personal rows and end.
		{"counted", store.ListSpec{Limit: 20, Type: schema.TypeRequest}, 2, 6},
		{"counted, no total", store.ListSpec{Limit: 20, Municipio: "63001", NoTotal: true}, 2, 5},
	} {
		for run := range 2 { // the first run prepares the statements
			rt.alone.Store(0)
			rt.batches.Store(0)
			rt.statements.Store(0)
			res, err := s.List(ctx, &c.spec)
			if err != nil {
				t.Fatal(err)
			}
			// And the page's personal rows: one statement per partition that holds some.
			parts := map[int]bool{}
			for _, r := range res.Records {
				parts[personalPart(r.ID)] = true
			}
			want := c.statements + int64(len(parts))
			trips := rt.alone.Load() + rt.batches.Load()
			if run == 1 && (trips != c.trips || rt.statements.Load() != want) {
				t.Errorf("%s (total %d, exact %v): %d round trips (%d statements), want %d (%d)",
					c.name, res.Total, res.TotalExact, trips, rt.statements.Load(), c.trips, want)
			}
		}
	}
}

// lockWatch records, at the start of each statement whose SQL contains what, whether the feed lock is
// held (read through other, another pool).
type lockWatch struct {
	roundTrips
	other *pgxpool.Pool
	what  string
	held  atomic.Int64 // statements that started with the lock held
	seen  atomic.Int64
}

func (w *lockWatch) TraceQueryStart(ctx context.Context, c *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	if strings.Contains(d.SQL, w.what) {
		w.seen.Add(1)
		var n int
		if err := w.other.QueryRow(context.Background(), `SELECT count(*) FROM pg_locks
			WHERE locktype = 'advisory' AND granted AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`).Scan(&n); err == nil && n > 0 {
			w.held.Add(1)
		}
	}
	return ctx
}

// TestFeedLockOnlyForTheSnapshot: a change feed holds writes off (feedLock) while its snapshot is taken,
// not while its total is decided after it — the changes before since, the counters, the newest change.
func TestFeedLockOnlyForTheSnapshot(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.Shared(t).NewDatabase(t)
	other, err := Open(dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	w := &lockWatch{other: other.Pool, what: "updated_ms <="}
	s := tracedStore(t, dsn, w, 0)
	start := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	importDense(t, s, start)
	// ~5,000 changes after since, ~1,000 before: the total counts those before.
	res, err := s.List(ctx, &store.ListSpec{Limit: 20, Since: start.Add(1000 * time.Millisecond)})
	if err != nil || !res.TotalExact || res.Total != 4999 {
		t.Fatalf("%+v, %v; want an exact total of 4,999", res, err)
	}
	if w.seen.Load() != 1 || w.held.Load() != 0 {
		t.Fatalf("the count of the changes before since ran %d times, %d of them with the feed lock held", w.seen.Load(), w.held.Load())
	}
}
