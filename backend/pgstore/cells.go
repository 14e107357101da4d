package pgstore

import (
	"context"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/directaid/directaid/backend/store"
)

// The cell counters of migrations 0011, 0012 and 0014 (directaid_cells, indexed by 0016 and 0018), read by store.RadiusTotal as Badger's.

// cellKey is a cell's key in directaid_cells: 1 << 5·precision | the geohash's bits.
func cellKey(cell string) int32 {
	return int32(1<<(5*len(cell)) | store.GeohashCode(cell))
}

// pgCells is store.CellCounter over the counters and records of one radius list's snapshot.
type pgCells struct {
	ctx  context.Context
	tx   pgx.Tx
	spec *store.ListSpec
	// counts holds the counters of every cell RadiusTotal may ask for, read with the page (prefetch);
	// nil: each level is read when asked.
	counts map[int32]store.CellCount
	// with are statements that do not depend on the total (the page's records, the end of the
	// transaction), sent in the round trip of CountCells or else by flush.
	with *pgx.Batch
	// cover is the circle's cells (circle), computed once for prefetch and total.
	cover *store.Cover
}

// circle returns the circle's cover, computed on first use.
func (c *pgCells) circle() *store.Cover {
	if c.cover == nil {
		c.cover = store.NewCover(c.spec.Lat, c.spec.Lon, c.spec.RadiusKm)
	}
	return c.cover
}

// total is store.RadiusTotal over these counters, with the cover prefetch computed.
func (c *pgCells) total() (int, bool, error) { return store.RadiusTotalOf(c.spec, c, c.circle()) }

// maxPrefetchCells bounds the cells whose counters prefetch reads before knowing which are needed: all
// of a 10 km circle's (603), a 20 km circle's (2,325) are read level by level.
const maxPrefetchCells = 1024

// prefetch queues on b the query of the counters of every cell RadiusTotal may ask for, when they are
// few, so that they come in the page's round trip.
func (c *pgCells) prefetch(b *pgx.Batch) {
	cells := store.CircleCells(c.spec, c.circle(), maxPrefetchCells)
	if len(cells) == 0 {
		return
	}
	keys := make([]int32, len(cells))
	for i, cell := range cells {
		keys[i] = cellKey(cell)
	}
	counts := zeroCounts(keys)
	query, args := c.countsQuery(keys)
	b.Queue(query, args...).Query(func(rows pgx.Rows) error {
		if err := scanCounts(rows, counts); err != nil {
			return err
		}
		c.counts = counts
		return nil
	})
}

// CellCounts implements store.CellCounter: from the prefetched counters, else one query per level.
// Matching sums the rows of the spec's kind, emergency and municipio; All is the row of every kind (and
// every emergency and municipio).
func (c *pgCells) CellCounts(cells []string) ([]store.CellCount, error) {
	out := make([]store.CellCount, len(cells))
	keys := make([]int32, len(cells))
	fetched := c.counts != nil
	for i, cell := range cells {
		keys[i] = cellKey(cell)
		k, ok := c.counts[keys[i]]
		out[i], fetched = k, fetched && ok
	}
	if fetched {
		return out, nil
	}
	query, args := c.countsQuery(keys)
	rows, err := c.tx.Query(c.ctx, query, args...)
	if err != nil {
		return nil, err
	}
	counts := zeroCounts(keys)
	if err := scanCounts(rows, counts); err != nil {
		return nil, err
	}
	for i, k := range keys {
		out[i] = counts[k]
	}
	return out, nil
}

// countsQuery is the query of the counters of the cells of keys for the list's filters, a row per
// counter row (scanCounts sums them by cell). The rows of every kind (empty type) are per emergency and
// municipio (0014): an unscoped list without a kind filter sums them; one scoped to an emergency or
// municipio filters them for Matching; a kind filter reads the rows of its kind too.
//
// Without a kind filter the cells are read as ranges of keys (cellRanges), one index descent each, not
// one per cell: a 5 km circle's 103 counters at 1M records, 310 buffers → 42.
func (c *pgCells) countsQuery(keys []int32) (string, []any) {
	args := []any{c.spec.StatusOr()}
	var kind, scope string
	for _, f := range []struct {
		col, v string
		scope  bool
	}{{"type", c.spec.Type, false}, {"category", c.spec.Category, false}, {"urgency", c.spec.Urgency, false},
		{"emergency_slug", c.spec.EmergencySlug, true}, {"municipio_code", c.spec.Municipio, true}} {
		if f.v != "" {
			args = append(args, f.v)
			if f.scope {
				scope += fmt.Sprintf(" AND %s = $%d", f.col, len(args))
			} else {
				kind += fmt.Sprintf(" AND %s = $%d", f.col, len(args))
			}
		}
	}
	if kind != "" {
		// Each part from its own index alone (0016, 0018), not every row of the cells and its heap page;
		// the kind's rows by cell (a range would read every kind's).
		args = append(args, keys)
		n := len(args)
		return fmt.Sprintf(`SELECT cell, 0, n FROM directaid_cells WHERE status = $1 AND cell = ANY($%d) AND type = ''
			UNION ALL SELECT cell, n, 0 FROM directaid_cells WHERE status = $1 AND cell = ANY($%d) AND type <> ''`, n, n) + kind + scope, args
	}
	lo, hi := cellRanges(keys)
	args = append(args, lo, hi)
	matching := "n"
	if scope != "" {
		matching = "CASE WHEN TRUE" + scope + " THEN n ELSE 0 END"
	}
	return fmt.Sprintf(`SELECT c.cell, c.m, c.n FROM unnest($%d::int[], $%d::int[]) r(lo, hi)
		CROSS JOIN LATERAL (SELECT cell, %s AS m, n FROM directaid_cells WHERE status = $1 AND cell BETWEEN r.lo AND r.hi AND type = '') c`,
		len(args)-1, len(args), matching), args
}

// cellGap is how far apart two cells' keys of precision GeoPrecision may be and still be read in one
// range: the cells between (at most cellGap-1, their rows read for nothing) cost less than a descent of
// the index (~3 buffers). Coarser cells' counters are sharded (0011): only adjacent ones share a range.
const cellGap = 8

// cellRanges returns the bounds of the fewest ranges of keys that hold keys, merging neighbours (cellGap).
func cellRanges(keys []int32) (lo, hi []int32) {
	fine := int32(1) << (5 * store.GeoPrecision) // the least key of precision GeoPrecision, the finest and largest
	for _, k := range slices.Sorted(slices.Values(keys)) {
		if n := len(hi); n > 0 {
			gap := int32(1)
			if hi[n-1] >= fine {
				gap = cellGap
			}
			if k-hi[n-1] <= gap {
				hi[n-1] = k
				continue
			}
		}
		lo, hi = append(lo, k), append(hi, k)
	}
	return lo, hi
}

// zeroCounts is a map holding a zero count for each of keys: scanCounts adds to those only.
func zeroCounts(keys []int32) map[int32]store.CellCount {
	counts := make(map[int32]store.CellCount, len(keys))
	for _, k := range keys {
		counts[k] = store.CellCount{}
	}
	return counts
}

// scanCounts adds the rows of countsQuery to the counts of their cells, skipping cells not in counts (a
// range's cells between those asked for).
func scanCounts(rows pgx.Rows, counts map[int32]store.CellCount) error {
	var key int32
	var matching, all int
	_, err := pgx.ForEachRow(rows, []any{&key, &matching, &all}, func() error {
		if k, ok := counts[key]; ok {
			counts[key] = store.CellCount{Matching: k.Matching + matching, All: k.All + all}
		}
		return nil
	})
	return err
}

// send sends b, followed by the statements of with if they are still unsent: one round trip.
func (c *pgCells) send(b *pgx.Batch) error {
	if c.with != nil {
		b.QueuedQueries = append(b.QueuedQueries, c.with.QueuedQueries...)
		c.with = nil
	}
	if len(b.QueuedQueries) == 0 {
		return nil
	}
	return c.tx.SendBatch(c.ctx, b).Close()
}

// flush sends the statements of with if CountCells has not.
func (c *pgCells) flush() error { return c.send(&pgx.Batch{}) }

// CountCells implements store.CellCounter, in the round trip of with: the records in each cell's box
// (GiST), each counted in the cell its geohash puts it in (a point on a side is in two boxes) when it is
// within the radius.
func (c *pgCells) CountCells(cells []string) (int, error) {
	if len(cells) == 0 {
		return 0, nil
	}
	boxes := make([]string, len(cells))
	for i, cell := range cells {
		lat0, lat1, lon0, lon1 := store.GeohashBox(cell)
		boxes[i] = fmt.Sprintf("((%v,%v),(%v,%v))", lon0, lat0, lon1, lat1)
	}
	flat := *c.spec
	flat.Near, flat.Words = false, nil // the cells, not the circle's box
	cond, args := where(&flat)
	args = append(args, boxes)
	n := 0
	b := &pgx.Batch{}
	b.Queue(`SET LOCAL plan_cache_mode = force_custom_plan`) // the boxes: how many records each holds
	b.Queue(fmt.Sprintf(`SELECT b.i::int, r.loc[1], r.loc[0] FROM unnest($%d::box[]) WITH ORDINALITY AS b(bx, i)
		CROSS JOIN LATERAL (SELECT loc FROM directaid_records WHERE loc <@ b.bx AND %s) r`, len(args), cond), args...).Query(func(rows pgx.Rows) error {
		var i int
		var lat, lon float64
		_, err := pgx.ForEachRow(rows, []any{&i, &lat, &lon}, func() error {
			cell := cells[i-1]
			if store.Geohash(lat, lon, len(cell)) == cell && store.HaversineKm(c.spec.Lat, c.spec.Lon, lat, lon) <= c.spec.RadiusKm {
				n++
			}
			return nil
		})
		return err
	})
	b.Queue(genericPlans) // back for with's statements by id
	err := c.send(b)
	return n, err
}
