package pgstore

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/directaid/directaid/backend/store"
	"github.com/directaid/directaid/internal/pgtest"
	"github.com/directaid/directaid/schema"
)

// TestFeedWalkReadsBounded: each walk of a change feed's total reads at most store.MaxFeedRead+1 rows
// of the records (EXPLAIN ANALYZE: the rows its scans return and those their filters removed), however
// rare its filter — a category in one change of 500, whose matches after since the count used to look for
// through every change — and stops at the 2,001st match when they are common.
func TestFeedWalkReadsBounded(t *testing.T) {
	ctx := context.Background()
	db, err := Open(pgtest.Shared(t).NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	start := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	var recs []*store.Record
	for i := range 25_000 {
		ts := start.Add(time.Duration(i) * time.Millisecond)
		rec := &store.Record{ID: store.NewID(ts), CreatedAt: ts.UTC(), Status: store.StatusOpen}
		p := &rec.Publication
		p.Type, p.Urgency, p.Source, p.ExternalID, p.EmergencySlug = schema.TypeRequest, schema.Urgencies[0], "fw", "f-"+strconv.Itoa(i), "eje-cafetero"
		p.Category, p.Title, p.ContactName = "agua", "Agua potable", "Ana"
		if i%500 == 7 {
			p.Category = "salud"
		}
		recs = append(recs, rec)
	}
	if _, err := NewStore(db).Import(ctx, recs); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Pool.Exec(ctx, `ANALYZE directaid_records`); err != nil {
		t.Fatal(err)
	}
	since := start.Add(12_000 * time.Millisecond)
	for _, c := range []struct {
		category, op string
		newest       bool
		bound, read  int
	}{
		{"salud", ">", false, store.MaxFeedCount, store.MaxFeedRead + 1},
		{"salud", "<=", false, store.MaxFeedCount, store.MaxFeedRead + 1},
		{"salud", "", true, 0, 500},                    // back to the newest match
		{"agua", ">", false, store.MaxFeedCount, 2006}, // 2,001 matches, 4 salud among them, and the row that ends the run
		{"", "<=", false, store.MaxFeedCount, 2002},
	} {
		spec := &store.ListSpec{Since: since, Category: c.category, Limit: 20}
		q, args := feedWalkQuery(spec, c.op, c.newest, c.bound)
		var plan []struct{ Plan node }
		tx, err := db.Pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		// On a table this small reading it all and sorting may cost less than the index walk; at scale
		// (past a few times store.MaxFeedRead rows on a side) the walk takes the change index.
		if _, err := tx.Exec(ctx, `SET LOCAL enable_seqscan = off; SET LOCAL enable_bitmapscan = off`); err != nil {
			t.Fatal(err)
		}
		err = tx.QueryRow(ctx, `EXPLAIN (ANALYZE, FORMAT JSON) `+q, args...).Scan(&plan)
		_ = tx.Rollback(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if read := plan[0].Plan.read(); read > c.read {
			t.Errorf("%+v: %d rows read, want at most %d", c, read, c.read)
		}
	}
}

// node is a node of a JSON plan.
type node struct {
	Relation string  `json:"Relation Name"`
	Rows     float64 `json:"Actual Rows"`
	Loops    float64 `json:"Actual Loops"`
	Removed  float64 `json:"Rows Removed by Filter"`
	Plans    []node
}

// read is the rows the scans of directaid_records under n read.
func (n node) read() int {
	r := 0
	if n.Relation == "directaid_records" {
		r = int(n.Loops * (n.Rows + n.Removed))
	}
	for _, c := range n.Plans {
		r += c.read()
	}
	return r
}
