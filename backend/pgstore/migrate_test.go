package pgstore_test

import (
	"context"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/directaid/directaid/backend/pgstore"
	"github.com/directaid/directaid/internal/pgtest"
)

func connect(t testing.TB, dsn string) *pgxpool.Pool {
	t.Helper()
	pool, err := pgstore.Connect(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// TestMigrateConcurrentStarts: three nodes starting at once on an empty database, each with its own pool,
// all succeed; every migration is applied exactly once; a later start applies nothing.
func TestMigrateConcurrentStarts(t *testing.T) {
	dsn := pgtest.Shared(t).NewDatabase(t)
	ctx := context.Background()
	pools := []*pgxpool.Pool{connect(t, dsn), connect(t, dsn), connect(t, dsn)}
	applied := make([][]int, len(pools))
	errs := make([]error, len(pools))
	var start, wg sync.WaitGroup
	start.Add(1)
	for i, p := range pools {
		wg.Add(1)
		go func() {
			defer wg.Done()
			start.Wait()
			applied[i], errs[i] = pgstore.Migrate(ctx, p)
		}()
	}
	start.Done()
	wg.Wait()
	total := 0
	for i, err := range errs {
		if err != nil {
			t.Fatalf("node %d: %v", i, err)
		}
		total += len(applied[i])
	}
	var versions, distinct int
	if err := pools[0].QueryRow(ctx, `SELECT count(*), count(DISTINCT version) FROM directaid_schema_migrations`).Scan(&versions, &distinct); err != nil {
		t.Fatal(err)
	}
	if versions == 0 || versions != distinct || total != versions {
		t.Fatalf("applied %v (%d in all) but the table records %d versions (%d distinct)", applied, total, versions, distinct)
	}
	again, err := pgstore.Migrate(ctx, pools[1])
	if err != nil || len(again) != 0 {
		t.Fatalf("a second start applied %v, %v; want nothing", again, err)
	}
	if _, err := pools[2].Exec(ctx, `SELECT key, value, modified FROM directaid_certmagic_data`); err != nil {
		t.Fatalf("the storage table is missing: %v", err)
	}
}
