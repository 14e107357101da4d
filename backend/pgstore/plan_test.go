package pgstore

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/directaid/directaid/backend/store"
	"github.com/directaid/directaid/internal/pgtest"
	"github.com/directaid/directaid/schema"
)

// batchLog keeps the statements (SQL and arguments) of the last batch a pool sent that holds the radius
// walk, so that a test can replay them with EXPLAIN in front of the walk.
type batchLog struct {
	roundTrips
	mu        sync.Mutex
	cur, walk []pgx.QueuedQuery
}

func (l *batchLog) TraceBatchStart(ctx context.Context, c *pgx.Conn, d pgx.TraceBatchStartData) context.Context {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.cur = nil
	for _, q := range d.Batch.QueuedQueries {
		l.cur = append(l.cur, pgx.QueuedQuery{SQL: q.SQL, Arguments: q.Arguments})
	}
	for _, q := range l.cur {
		if strings.Contains(q.SQL, "ORDER BY loc <->") {
			l.walk = l.cur
		}
	}
	return l.roundTrips.TraceBatchStart(ctx, c, d)
}

// walkPlan replays the statements of the last walk's batch in a transaction, the walk prepared and run
// with EXPLAIN (ANALYZE) (so that the plan is the one the settings before it give: generic or custom),
// and returns the walk's plan (the tree under its Limit) as JSON.
func walkPlan(t *testing.T, s *Store, l *batchLog) string {
	t.Helper()
	return batchPlan(t, s, l, "ORDER BY loc <->")
}

// batchPlan is walkPlan for the statement of the walk's batch whose SQL contains match.
func batchPlan(t *testing.T, s *Store, l *batchLog, match string) string {
	t.Helper()
	ctx := context.Background()
	conn, err := s.db.Pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	defer func() { _, _ = conn.Exec(ctx, `ROLLBACK`) }()
	l.mu.Lock()
	stmts := l.walk
	l.mu.Unlock()
	for _, q := range stmts {
		if !strings.Contains(q.SQL, match) {
			if _, err := conn.Exec(ctx, q.SQL, q.Arguments...); err != nil {
				t.Fatalf("%s: %v", q.SQL, err)
			}
			continue
		}
		if _, err := conn.Exec(ctx, `PREPARE walk AS `+q.SQL); err != nil {
			t.Fatal(err)
		}
		// EXPLAIN EXECUTE takes no parameters: the values are written out.
		params := make([]string, len(q.Arguments))
		for i, a := range q.Arguments {
			switch v := a.(type) {
			case string:
				params[i] = "'" + strings.ReplaceAll(v, "'", "''") + "'"
			case float64, int:
				params[i] = fmt.Sprint(v)
			case []int32:
				params[i] = strings.ReplaceAll(strings.ReplaceAll(fmt.Sprint(v), " ", ","), "[", "'{")
				params[i] = strings.ReplaceAll(params[i], "]", "}'")
			default:
				t.Fatalf("batchPlan: argument %d of %q is a %T", i+1, match, a)
			}
		}
		var plan []map[string]any
		if err := conn.QueryRow(ctx, `EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) EXECUTE walk(`+strings.Join(params, ", ")+`)`).Scan(&plan); err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Exec(ctx, `DEALLOCATE walk`); err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(plan[0]["Plan"])
		return string(b)
	}
	t.Fatalf("no %q among the statements traced", match)
	return ""
}

// TestScopedWalkIsTheIndex: the radius walk of a list, scoped to an emergency or a municipio, filtered by
// kind (migration 0015) or not, is the GiST index's KNN order (no sort of the box's records), before the
// table's pages are all-visible; after VACUUM, an index-only scan that fetches no heap page, but for the
// unscoped first page, which reads its rows' docs (walkDocs): the tuples of its 25 rows only. Before
// migration 0014 and enable_sort off, a scoped walk read and sorted every record of the box (the planner
// estimates the box at 0.1%).
func TestScopedWalkIsTheIndex(t *testing.T) {
	ctx := context.Background()
	l := &batchLog{}
	s := tracedStore(t, pgtest.Shared(t).NewDatabase(t), l, 0)
	if err := s.ready(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := s.db.Pool.Exec(ctx, `ALTER TABLE directaid_records SET (autovacuum_enabled = off)`); err != nil {
		t.Fatal(err)
	}
	importDense(t, s, time.Now().Add(-time.Hour))
	// The western half in a municipio: its walk steps over the other half's entries.
	if _, err := s.db.Pool.Exec(ctx, `UPDATE directaid_records SET municipio_code = '63001' WHERE loc[0] < -75.673;
		ANALYZE directaid_records`); err != nil {
		t.Fatal(err)
	}
	specs := map[string]store.ListSpec{
		"unscoped":  {Near: true, Lat: 4.527, Lon: -75.673, RadiusKm: 2.5, Limit: 20},
		"emergency": {Near: true, Lat: 4.527, Lon: -75.673, RadiusKm: 2.5, Limit: 20, EmergencySlug: "eje-cafetero"},
		"municipio": {Near: true, Lat: 4.527, Lon: -75.673, RadiusKm: 2.5, Limit: 20, Municipio: "63001"},
		"kind": {Near: true, Lat: 4.527, Lon: -75.673, RadiusKm: 2.5, Limit: 20, Type: schema.TypeRequest, Category: "agua",
			Urgency: schema.Urgencies[0]},
	}
	for _, vacuumed := range []bool{false, true} {
		if vacuumed {
			if _, err := s.db.Pool.Exec(ctx, `VACUUM directaid_records`); err != nil {
				t.Fatal(err)
			}
		}
		for name, spec := range specs {
			res, err := s.List(ctx, &spec)
			if err != nil || len(res.Records) != 20 {
				t.Fatalf("%s: %d records, %v", name, len(res.Records), err)
			}
			plan := walkPlan(t, s, l)
			knn := strings.Contains(plan, `"Order By":`) && !strings.Contains(plan, `"Node Type":"Sort"`)
			indexOnly := strings.Contains(plan, `"Node Type":"Index Only Scan"`) && strings.Contains(plan, `"Heap Fetches":0`)
			if name == "unscoped" {
				indexOnly = strings.Contains(plan, `"Node Type":"Index Scan"`) && strings.Contains(plan, `"Actual Rows":25,`)
			}
			if !knn || vacuumed && !indexOnly {
				t.Errorf("%s (vacuumed %v): the walk is not the index's KNN order%s: %s", name, vacuumed,
					map[bool]string{true: " read from the index alone", false: ""}[vacuumed], plan)
			}
		}
	}
}

// walkBuffers lists spec, which must give want records (and a total of 0 when none), and returns the
// buffers its walk read (EXPLAIN (ANALYZE, BUFFERS)) and the walk's plan.
func walkBuffers(t *testing.T, s *Store, l *batchLog, spec store.ListSpec, want int) (int, string) {
	t.Helper()
	res, err := s.List(context.Background(), &spec)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Records) != want || want == 0 && res.Total != 0 {
		t.Fatalf("%+v: %d records, total %d; want %d", spec, len(res.Records), res.Total, want)
	}
	plan := walkPlan(t, s, l)
	var p struct {
		Hit  int `json:"Shared Hit Blocks"`
		Read int `json:"Shared Read Blocks"`
	}
	if err := json.Unmarshal([]byte(plan), &p); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s%s: %d buffers", spec.EmergencySlug, spec.Municipio, p.Hit+p.Read)
	return p.Hit + p.Read, plan
}

// TestMunicipioWalkOutside: a radius list scoped to a municipio, at a point whose circle holds none of its
// records, walks the GiST index with the municipio among its keys (migration 0019; 0017's was led by it)
// and skips the subtrees without its records (12 buffers here; 7 on 0017's); on 0015's index on loc alone
// the walk read every entry of the box and dropped them (here ~4,000 entries, 59 buffers; at 1M ~13,000).
func TestMunicipioWalkOutside(t *testing.T) {
	ctx := context.Background()
	l := &batchLog{}
	s := tracedStore(t, pgtest.Shared(t).NewDatabase(t), l, 0)
	// The western half in 63001, the eastern in 63130, as published (an index whose entries all changed
	// their municipio at once would keep them mixed); the circle's box is all in the eastern half.
	importDenseWith(t, s, time.Now().Add(-time.Hour), func(r *store.Record) {
		r.MunicipioCode = map[bool]string{true: "63001", false: "63130"}[*r.Longitude < -75.673]
	})
	if _, err := s.db.Pool.Exec(ctx, `VACUUM ANALYZE directaid_records`); err != nil {
		t.Fatal(err)
	}
	spec := store.ListSpec{Near: true, Lat: 4.527, Lon: -75.6475, RadiusKm: 2.5, Limit: 20, Municipio: "63001"}
	outside, plan := walkBuffers(t, s, l, spec, 0)
	spec.Municipio = "63130" // the same box in the municipio it is in: a page of 20
	inside, _ := walkBuffers(t, s, l, spec, 20)
	if !strings.Contains(plan, `"Index Name":"directaid_records_loc_scopes"`) || outside > 15 {
		t.Errorf("the walk outside its municipio read %d buffers (inside it %d): %s", outside, inside, plan)
	}
}

// TestEmergencyWalkOutside: a radius list scoped to an emergency, at a point whose circle holds none of its
// records, walks the GiST index with the emergency among its keys (migration 0018, 0019) and skips the leaf
// pages without its records; on 0015's index, where the emergency was only included, the walk read every
// entry of the box and dropped them (here 59 buffers, 3 now; at 1M 13,284 a list on average, README).
func TestEmergencyWalkOutside(t *testing.T) {
	ctx := context.Background()
	l := &batchLog{}
	s := tracedStore(t, pgtest.Shared(t).NewDatabase(t), l, 0)
	// A small second emergency, a record in 25 of the western half; the circle's box is all in the eastern.
	west := 0
	importDenseWith(t, s, time.Now().Add(-time.Hour), func(r *store.Record) {
		if *r.Longitude < -75.673 {
			if west++; west%25 == 0 {
				r.EmergencySlug = "la-mojana"
			}
		}
	})
	if _, err := s.db.Pool.Exec(ctx, `VACUUM ANALYZE directaid_records`); err != nil {
		t.Fatal(err)
	}
	var small int
	if err := s.db.Pool.QueryRow(ctx, `SELECT count(*) FROM directaid_records WHERE emergency_slug = 'la-mojana'`).Scan(&small); err != nil || small < 20 {
		t.Fatalf("%d records of the small emergency, %v", small, err)
	}
	spec := store.ListSpec{Near: true, Lat: 4.527, Lon: -75.6475, RadiusKm: 2.5, Limit: 20, EmergencySlug: "la-mojana"}
	outside, plan := walkBuffers(t, s, l, spec, 0)
	spec.EmergencySlug = "eje-cafetero" // the same box in the emergency it is in: a page of 20
	inside, _ := walkBuffers(t, s, l, spec, 20)
	if !strings.Contains(plan, `"Index Name":"directaid_records_loc_scopes"`) || outside > 15 {
		t.Errorf("the walk outside its emergency read %d buffers (inside it %d): %s", outside, inside, plan)
	}
}

// TestCellCountersIndexOnly: the total of a radius list without a kind filter, unscoped or scoped, reads
// the cell counters of every kind from their own index (migration 0016) alone once VACUUM has run, not
// the primary key of every row and their heap pages; with a kind filter, the rows of its kind from theirs
// (0018) too, where it read every row of its cells through the primary key (at 1M records, 5 km,
// type=request: 3,461 buffers). The rows of a kind are 96% of the table at 1M records: as many are added
// here, in cells no circle reaches, or the planner reads the small table whole.
func TestCellCountersIndexOnly(t *testing.T) {
	ctx := context.Background()
	l := &batchLog{}
	s := tracedStore(t, pgtest.Shared(t).NewDatabase(t), l, 0)
	importDense(t, s, time.Now().Add(-time.Hour))
	if _, err := s.db.Pool.Exec(ctx, `INSERT INTO directaid_cells (status, cell, type, category, urgency, shard, n)
		SELECT 'open', g, 'offer', 'agua', 'baja', 0, 1 FROM generate_series(1, 100000) g`); err != nil {
		t.Fatal(err)
	}
	if _, err := s.db.Pool.Exec(ctx, `VACUUM ANALYZE directaid_cells`); err != nil {
		t.Fatal(err)
	}
	for name, spec := range map[string]store.ListSpec{
		"unscoped":  {Near: true, Lat: 4.527, Lon: -75.673, RadiusKm: 2.5, Limit: 20},
		"emergency": {Near: true, Lat: 4.527, Lon: -75.673, RadiusKm: 2.5, Limit: 20, EmergencySlug: "eje-cafetero"},
		"type":      {Near: true, Lat: 4.527, Lon: -75.673, RadiusKm: 2.5, Limit: 20, Type: schema.TypeRequest},
		"category":  {Near: true, Lat: 4.527, Lon: -75.673, RadiusKm: 2.5, Limit: 20, Category: "agua", EmergencySlug: "eje-cafetero"},
	} {
		res, err := s.List(ctx, &spec)
		if err != nil || res.Next == nil || res.Total <= len(res.Records) {
			t.Fatalf("%s: total %d, next %v, %v: the page must not be the whole list", name, res.Total, res.Next, err)
		}
		plan := batchPlan(t, s, l, "FROM directaid_cells")
		kind := spec.Type != "" || spec.Category != ""
		if !strings.Contains(plan, `"Index Name":"directaid_cells_every_kind"`) || kind != strings.Contains(plan, `"Index Name":"directaid_cells_kind"`) ||
			strings.Count(plan, `"Heap Fetches":0`) != strings.Count(plan, `"Heap Fetches"`) {
			t.Errorf("%s: the cell counters are not read from their indexes alone: %s", name, plan)
		}
		// Without a kind, ranges of cells (cellRanges): here 6 buffers for 45 cells, where reading them cell
		// by cell descends the index for each (46).
		cells := len(store.CircleCells(&spec, store.NewCover(spec.Lat, spec.Lon, spec.RadiusKm), maxPrefetchCells))
		var root struct {
			Hits int `json:"Shared Hit Blocks"`
		}
		if err := json.Unmarshal([]byte(plan), &root); err != nil || !kind && root.Hits > cells/4 {
			t.Errorf("%s: the counters of %d cells read %d buffers (%v): cell by cell", name, cells, root.Hits, err)
		}
	}
}

// TestCellRanges: the ranges hold every key asked for, and between two keys of one range only cells of
// precision GeoPrecision at most cellGap apart (coarser ones are sharded: adjacent only).
func TestCellRanges(t *testing.T) {
	p6, p5 := int32(1)<<30, int32(1)<<25
	keys := []int32{p6 | 40, p5 | 7, p6 | 3, p6 | 1, p6 | 2, p5 | 8, p5 | 10, p6 | 3 + cellGap, p6 | 4 + 2*cellGap, p6 | 40}
	lo, hi := cellRanges(keys)
	want := [][2]int32{{p5 | 7, p5 | 8}, {p5 | 10, p5 | 10}, {p6 | 1, p6 | 3 + cellGap}, {p6 | 4 + 2*cellGap, p6 | 4 + 2*cellGap}, {p6 | 40, p6 | 40}}
	if len(lo) != len(want) || len(hi) != len(want) {
		t.Fatalf("ranges %v–%v, want %v", lo, hi, want)
	}
	for i, w := range want {
		if lo[i] != w[0] || hi[i] != w[1] {
			t.Errorf("range %d: %d–%d, want %d–%d", i, lo[i], hi[i], w[0], w[1])
		}
	}
}
