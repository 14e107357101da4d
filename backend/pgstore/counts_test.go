package pgstore_test

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/directaid/directaid/backend/pgstore"
	"github.com/directaid/directaid/backend/store"
	"github.com/directaid/directaid/backend/store/storetest"
	"github.com/directaid/directaid/internal/pgtest"
)

// countsByRecords and countsByCounters read the same figures two ways: by counting the records (of every
// municipio, and of each), and from the counters that migration 0006's and 0012's triggers keep (summed
// over shards, zero rows left out).
const countsByRecords = `SELECT emergency_slug, m.code, status, type, category, urgency, count(*),
	coalesce(sum(needed_people) FILTER (WHERE type = 'request' AND needed_people > 0), 0)
	FROM directaid_records CROSS JOIN LATERAL (VALUES (''), (nullif(municipio_code, ''))) m(code) WHERE m.code IS NOT NULL
	GROUP BY 1, 2, 3, 4, 5, 6`

const countsByCounters = `SELECT emergency_slug, municipio_code, status, type, category, urgency, sum(n)::bigint, sum(people)::bigint
	FROM directaid_counts GROUP BY 1, 2, 3, 4, 5, 6 HAVING sum(n) <> 0 OR sum(people) <> 0`

func countRows(t *testing.T, db *pgstore.DB, sql string) map[string][2]int64 {
	t.Helper()
	rows, err := db.Pool.Query(context.Background(), sql)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string][2]int64{}
	for rows.Next() {
		var slug, muni, st, typ, cat, urg string
		var n, people int64
		if err := rows.Scan(&slug, &muni, &st, &typ, &cat, &urg, &n, &people); err != nil {
			t.Fatal(err)
		}
		out[fmt.Sprintf("%s/%s/%s/%s/%s/%s", slug, muni, st, typ, cat, urg)] = [2]int64{n, people}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func checkCounts(t *testing.T, db *pgstore.DB, when string) {
	t.Helper()
	want, got := countRows(t, db, countsByRecords), countRows(t, db, countsByCounters)
	if len(want) == 0 {
		t.Fatalf("%s: no records counted", when)
	}
	if !maps.Equal(got, want) {
		t.Fatalf("%s: counters differ from the records:\ncounters %v\nrecords  %v", when, got, want)
	}
	// The word counters (0007) against the tokens of every record, cut in Go.
	ctx := context.Background()
	wantWords := map[string]int64{}
	var st, text string
	rows, err := db.Pool.Query(ctx, `SELECT status, search_text FROM directaid_records`)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pgx.ForEachRow(rows, []any{&st, &text}, func() error {
		for _, tok := range store.TextTokens(text) {
			wantWords[st+"/"+tok]++
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	gotWords := map[string]int64{}
	var n int64
	rows, err = db.Pool.Query(ctx, `SELECT status, token, sum(n)::bigint FROM directaid_words GROUP BY 1, 2 HAVING sum(n) <> 0`)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pgx.ForEachRow(rows, []any{&st, &text, &n}, func() error { gotWords[st+"/"+text] = n; return nil }); err != nil {
		t.Fatal(err)
	}
	if len(wantWords) == 0 || !maps.Equal(gotWords, wantWords) {
		t.Fatalf("%s: word counters differ from the records' tokens:\ncounters %v\nrecords  %v", when, gotWords, wantWords)
	}
	checkCells(t, db, when)
}

// TestCountersFollowWrites checks the counters (0006), the word counters (0007) and the cell counters
// (0011) against the records
// after concurrent publications (64 at a time, so on several shards), an import and concurrent status changes in both directions (the trigger takes the
// rows of a move in key order; crosswise moves would otherwise deadlock), and that migration 0006's
// 0007's and 0011's backfills count the records stored before them.
func TestCountersFollowWrites(t *testing.T) {
	ctx := context.Background()
	db, s := openStore(t, pgtest.Shared(t).NewDatabase(t))
	recs := storetest.Seed(t, s, 400, time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC), time.Minute)
	checkCounts(t, db, "after publishing")
	// migrate's import, with a record already there (not counted twice).
	rng := rand.New(rand.NewPCG(3, 4))
	imported := []*store.Record{recs[0]}
	for i := range 50 {
		imported = append(imported, storetest.SynthRecord(rng, time.Date(2026, 2, 1, 0, i, 0, 0, time.UTC), 1000+i))
	}
	if res, err := s.Import(ctx, imported); err != nil || res.Created != 50 || res.Present != 1 {
		t.Fatalf("import: %+v %v", res, err)
	}
	checkCounts(t, db, "after an import")

	// Half the records go open → resolved → open → withdrawn while the other half go open → resolved.
	var wg sync.WaitGroup
	errs := make(chan error, len(recs))
	for i, r := range recs {
		wg.Go(func() {
			steps := []string{store.StatusResolved}
			if i%2 == 0 {
				steps = append(steps, store.StatusOpen, store.StatusWithdrawn)
			}
			for _, st := range steps {
				if _, err := s.Update(ctx, r.ID, func(rec *store.Record) error {
					rec.Status = st
					if st == store.StatusWithdrawn {
						rec.ErasePersonal()
					}
					return nil
				}); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	checkCounts(t, db, "after concurrent status changes")

	// Undo migrations 0006, 0007, 0009, 0011, 0012 and 0014 and apply them again over the stored records: the backfill
	// counts them, and publications after it are counted once (by 0009's statement trigger alone).
	if _, err := db.Pool.Exec(ctx, `DROP TRIGGER directaid_records_count ON directaid_records;
		DROP TRIGGER directaid_records_count_insert ON directaid_records; DROP FUNCTION directaid_records_count_inserted();
		DROP FUNCTION directaid_records_count(); DROP FUNCTION directaid_count_add(directaid_records, integer);
		DROP TABLE directaid_counts; DROP TABLE directaid_words; DELETE FROM directaid_schema_migrations WHERE version IN (6, 7, 9, 12, 14)`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Pool.Exec(ctx, undoCells); err != nil {
		t.Fatal(err)
	}
	applied, err := pgstore.Migrate(ctx, db.Pool)
	if err != nil || !slices.Equal(applied, []int{6, 7, 9, 11, 12, 14}) {
		t.Fatalf("migrate again: %v %v", applied, err)
	}
	checkCounts(t, db, "after the backfill")
	for i := range 100 {
		rec := storetest.SynthRecord(rng, time.Date(2026, 4, 1, 0, i, 0, 0, time.UTC), 2000+i)
		wg.Go(func() {
			if _, _, err := s.Create(ctx, rec); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	checkCounts(t, db, "after publishing on the migrated-again schema")
}
