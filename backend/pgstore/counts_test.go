package pgstore_test

import (
	"context"
	"fmt"
	"maps"
	"sync"
	"testing"
	"time"

	"github.com/directaid/directaid/backend/pgstore"
	"github.com/directaid/directaid/backend/store"
	"github.com/directaid/directaid/backend/store/storetest"
	"github.com/directaid/directaid/internal/pgtest"
)

// countsByRecords and countsByCounters read the same figures two ways: by counting the records, and from
// the counters that migration 0006's trigger keeps (summed over shards, zero rows left out).
const countsByRecords = `SELECT emergency_slug, status, type, category, urgency, count(*),
	coalesce(sum(needed_people) FILTER (WHERE type = 'request' AND needed_people > 0), 0)
	FROM directaid_records GROUP BY 1, 2, 3, 4, 5`

const countsByCounters = `SELECT emergency_slug, status, type, category, urgency, sum(n)::bigint, sum(people)::bigint
	FROM directaid_counts GROUP BY 1, 2, 3, 4, 5 HAVING sum(n) <> 0 OR sum(people) <> 0`

func countRows(t *testing.T, db *pgstore.DB, sql string) map[string][2]int64 {
	t.Helper()
	rows, err := db.Pool.Query(context.Background(), sql)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string][2]int64{}
	for rows.Next() {
		var slug, st, typ, cat, urg string
		var n, people int64
		if err := rows.Scan(&slug, &st, &typ, &cat, &urg, &n, &people); err != nil {
			t.Fatal(err)
		}
		out[fmt.Sprintf("%s/%s/%s/%s/%s", slug, st, typ, cat, urg)] = [2]int64{n, people}
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
}

// TestCountersFollowWrites checks the counters against the records after concurrent publications (64 at
// a time, so on several shards) and concurrent status changes in both directions (the trigger takes the
// rows of a move in key order; crosswise moves would otherwise deadlock), and that migration 0006's
// backfill counts the records stored before it.
func TestCountersFollowWrites(t *testing.T) {
	ctx := context.Background()
	db, err := pgstore.Open(pgtest.Shared(t).NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	s := pgstore.NewStore(db)
	recs := storetest.Seed(t, s, 400, time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC), time.Minute)
	checkCounts(t, db, "after publishing")

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

	// Undo migration 0006 and apply it again over the stored records: the backfill counts them.
	if _, err := db.Pool.Exec(ctx, `DROP TRIGGER directaid_records_count ON directaid_records;
		DROP FUNCTION directaid_records_count(); DROP FUNCTION directaid_count_add(directaid_records, integer);
		DROP TABLE directaid_counts; DELETE FROM directaid_schema_migrations WHERE version = 6`); err != nil {
		t.Fatal(err)
	}
	applied, err := pgstore.Migrate(ctx, db.Pool)
	if err != nil || len(applied) != 1 || applied[0] != 6 {
		t.Fatalf("migrate again: %v %v", applied, err)
	}
	checkCounts(t, db, "after the backfill")
}
