package pgstore

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/directaid/directaid/backend/store"
)

// The cell counters of migrations 0011 and 0012 (directaid_cells), read by store.RadiusTotal as Badger's.

// cellKey is a cell's key in directaid_cells: 1 << 5·precision | the geohash's bits.
func cellKey(cell string) int32 {
	k := int32(1)
	for i := range len(cell) {
		k = k<<5 | int32(strings.IndexByte(store.GeohashAlphabet, cell[i]))
	}
	return k
}

// pgCells is store.CellCounter over the counters and records of one radius list's snapshot.
type pgCells struct {
	ctx  context.Context
	tx   pgx.Tx
	spec *store.ListSpec
}

// CellCounts implements store.CellCounter: one query per level; without a kind, emergency or municipio
// filter, one row per cell. Matching sums the rows of the spec's kind, emergency and municipio; All is the
// row of every kind (and every emergency and municipio).
func (c *pgCells) CellCounts(cells []string) ([]store.CellCount, error) {
	keys := make([]int32, len(cells))
	at := make(map[int32]int, len(cells))
	for i, cell := range cells {
		keys[i] = cellKey(cell)
		at[keys[i]] = i
	}
	args := []any{c.spec.StatusOr(), keys}
	filters := ""
	for _, f := range []struct{ col, v string }{{"type", c.spec.Type}, {"category", c.spec.Category}, {"urgency", c.spec.Urgency},
		{"emergency_slug", c.spec.EmergencySlug}, {"municipio_code", c.spec.Municipio}} {
		if f.v != "" {
			args = append(args, f.v)
			filters += fmt.Sprintf(" AND %s = $%d", f.col, len(args))
		}
	}
	query := `SELECT cell, sum(n)::bigint, sum(n)::bigint FROM directaid_cells WHERE status = $1 AND cell = ANY($2) AND type = '' GROUP BY cell`
	if filters != "" {
		query = `SELECT cell, coalesce(sum(n) FILTER (WHERE type <> ''` + filters + `), 0)::bigint, coalesce(sum(n) FILTER (WHERE type = ''), 0)::bigint
			FROM directaid_cells WHERE status = $1 AND cell = ANY($2) GROUP BY cell`
	}
	rows, err := c.tx.Query(c.ctx, query, args...)
	if err != nil {
		return nil, err
	}
	out := make([]store.CellCount, len(cells))
	var key int32
	var matching, all int
	_, err = pgx.ForEachRow(rows, []any{&key, &matching, &all}, func() error {
		out[at[key]] = store.CellCount{Matching: matching, All: all}
		return nil
	})
	return out, err
}

// CountCells implements store.CellCounter: the records in each cell's box (GiST), each counted in the
// cell its geohash puts it in (a point on a side is in two boxes) when it is within the radius.
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
	rows, err := c.tx.Query(c.ctx, fmt.Sprintf(`SELECT b.i::int, r.loc[1], r.loc[0] FROM unnest($%d::box[]) WITH ORDINALITY AS b(bx, i)
		CROSS JOIN LATERAL (SELECT loc FROM directaid_records WHERE loc <@ b.bx AND %s) r`, len(args), cond), args...)
	if err != nil {
		return 0, err
	}
	n := 0
	var i int
	var lat, lon float64
	_, err = pgx.ForEachRow(rows, []any{&i, &lat, &lon}, func() error {
		cell := cells[i-1]
		if store.Geohash(lat, lon, len(cell)) == cell && store.HaversineKm(c.spec.Lat, c.spec.Lon, lat, lon) <= c.spec.RadiusKm {
			n++
		}
		return nil
	})
	return n, err
}
