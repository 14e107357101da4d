package pgstore_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/directaid/directaid/backend/pgstore"
	"github.com/directaid/directaid/backend/store/storetest"
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

// before19 is a database at schema 18 with records, as a network upgrading to 0019 (a GiST index built
// with CREATE INDEX CONCURRENTLY, two dropped with DROP INDEX CONCURRENTLY) has it, and a store on it.
func before19(t *testing.T) (string, *pgstore.Store) {
	t.Helper()
	ctx := context.Background()
	dsn := pgtest.Shared(t).NewDatabase(t)
	db, s := openStore(t, dsn)
	for _, id := range []string{"a", "b", "c"} {
		if _, _, err := s.Create(ctx, storetest.Record("cic", id)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.Pool.Exec(ctx, `DROP INDEX directaid_records_loc_scopes;
		CREATE INDEX directaid_records_loc_municipio ON directaid_records USING gist (municipio_code, loc);
		CREATE INDEX directaid_records_loc_emergency ON directaid_records USING gist (loc, emergency_slug);
		DELETE FROM directaid_schema_migrations WHERE version = 19`); err != nil {
		t.Fatal(err)
	}
	return dsn, s
}

// writing opens a transaction holding what a publication in progress holds on directaid_records (ROW
// EXCLUSIVE), so that an index build on it waits; ending it (rollback) lets the build go on.
func writing(t *testing.T, dsn string) (end func()) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	tx, err := conn.Begin(ctx)
	if err == nil {
		_, err = tx.Exec(ctx, `LOCK TABLE directaid_records IN ROW EXCLUSIVE MODE`)
	}
	if err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	end = func() {
		once.Do(func() {
			_ = tx.Rollback(ctx)
			_ = conn.Close(ctx)
		})
	}
	t.Cleanup(end)
	return end
}

// sessionWhere waits until a session of dsn's database matches cond (SQL on pg_stat_activity) and
// returns its pid.
func sessionWhere(t *testing.T, pool *pgxpool.Pool, cond string, failed func() error) int32 {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
		var pid int32
		err := pool.QueryRow(context.Background(), `SELECT pid FROM pg_stat_activity
			WHERE datname = current_database() AND pid <> pg_backend_pid() AND `+cond+` LIMIT 1`).Scan(&pid)
		if err == nil {
			return pid
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			t.Fatal(err)
		}
		if err := failed(); err != nil {
			t.Fatalf("waiting for a session where %s: %v", cond, err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("no session where %s after a minute", cond)
		}
	}
}

// migrating runs Migrate in the background; wait returns what it returned.
func migrating(ctx context.Context, pool *pgxpool.Pool) (wait func() ([]int, error), ended func() error) {
	done := make(chan struct{})
	var applied []int
	var err error
	go func() {
		defer close(done)
		applied, err = pgstore.Migrate(ctx, pool)
	}()
	wait = func() ([]int, error) { <-done; return applied, err }
	ended = func() error {
		select {
		case <-done:
			return errors.New("Migrate ended")
		default:
			return nil
		}
	}
	return wait, ended
}

const buildWaits = `query LIKE '%directaid_records_loc_scopes%' AND wait_event_type = 'Lock'`

// TestMigrateBuildsWithoutBlockingWrites: while 0019's index build waits for a publication in progress
// (as it must), another publication completes. A transactional CREATE INDEX queues a ShareLock behind the
// first, and every write of every node queues behind that: the second publication would wait for the
// first and then for the whole build (36 s at 1M records).
func TestMigrateBuildsWithoutBlockingWrites(t *testing.T) {
	ctx := context.Background()
	dsn, s := before19(t)
	pool := connect(t, dsn)
	end := writing(t, dsn)
	wait, ended := migrating(ctx, connect(t, dsn))
	builder := sessionWhere(t, pool, buildWaits, ended)

	published := make(chan error, 1)
	go func() {
		_, created, err := s.Create(ctx, storetest.Record("cic", "during the build"))
		if err == nil && !created {
			err = errors.New("not created")
		}
		published <- err
	}()
	for waiting := false; !waiting; {
		select {
		case err := <-published:
			if err != nil {
				t.Fatal(err)
			}
			waiting = true
		case <-time.After(20 * time.Millisecond):
			var blocked bool
			if err := pool.QueryRow(ctx, `SELECT EXISTS (SELECT FROM pg_stat_activity WHERE datname = current_database()
				AND pid <> $1 AND pid <> pg_backend_pid() AND wait_event_type = 'Lock')`, builder).Scan(&blocked); err != nil {
				t.Fatal(err)
			}
			if blocked {
				t.Fatal("a publication waits for the index build")
			}
		}
	}
	if err := ended(); err != nil {
		t.Fatal("the build did not wait for the publication in progress")
	}
	end()
	if applied, err := wait(); err != nil || !slices.Equal(applied, []int{19}) {
		t.Fatalf("migrate: %v, %v", applied, err)
	}
	checkValid(t, pool, "directaid_records_loc_scopes")
}

// checkValid fails unless index exists and is valid.
func checkValid(t *testing.T, pool *pgxpool.Pool, index string) {
	t.Helper()
	var valid bool
	if err := pool.QueryRow(context.Background(), `SELECT indisvalid FROM pg_index WHERE indexrelid = to_regclass($1)`, index).Scan(&valid); err != nil || !valid {
		t.Fatalf("index %s: valid %v, %v", index, valid, err)
	}
}

// TestMigrateRepairsAnInterruptedBuild: a concurrent build cancelled mid-way leaves an INVALID index;
// the next start drops it and builds it again instead of taking it for done (IF NOT EXISTS would).
func TestMigrateRepairsAnInterruptedBuild(t *testing.T) {
	dsn, _ := before19(t)
	pool := connect(t, dsn)
	end := writing(t, dsn)
	ctx, cancel := context.WithCancel(context.Background())
	wait, ended := migrating(ctx, connect(t, dsn))
	sessionWhere(t, pool, buildWaits, ended)
	cancel()
	if _, err := wait(); err == nil {
		t.Fatal("a cancelled migration succeeded")
	}
	var valid bool
	if err := pool.QueryRow(context.Background(), `SELECT indisvalid FROM pg_index WHERE indexrelid = to_regclass('directaid_records_loc_scopes')`).Scan(&valid); err != nil || valid {
		t.Fatalf("after a cancelled build: valid %v, %v; want an INVALID index", valid, err)
	}
	end()
	if applied, err := pgstore.Migrate(context.Background(), pool); err != nil || !slices.Equal(applied, []int{19}) {
		t.Fatalf("migrate again: %v, %v", applied, err)
	}
	checkValid(t, pool, "directaid_records_loc_scopes")
}

// TestMigrateWaitersDoNotBlockTheBuild: two nodes start while a third builds 0019's index concurrently.
// Such a build waits for every transaction of the database with an older snapshot; a node blocked in
// pg_advisory_lock holds one, so the build would wait for the nodes that wait for it (PostgreSQL finds
// the deadlock and fails one). Waiting nodes try the lock between pauses instead: all three succeed and
// 0019 is applied once.
func TestMigrateWaitersDoNotBlockTheBuild(t *testing.T) {
	ctx := context.Background()
	dsn, _ := before19(t)
	pool := connect(t, dsn)
	end := writing(t, dsn)
	sep := "?"
	if strings.Contains(dsn, "?") {
		sep = "&"
	}
	waitA, endedA := migrating(ctx, connect(t, dsn))
	sessionWhere(t, pool, buildWaits, endedA)
	waitB, endedB := migrating(ctx, connect(t, dsn+sep+"application_name=nodeB"))
	waitC, endedC := migrating(ctx, connect(t, dsn+sep+"application_name=nodeC"))
	for _, n := range []struct {
		name  string
		ended func() error
	}{{"nodeB", endedB}, {"nodeC", endedC}} {
		sessionWhere(t, pool, `application_name = '`+n.name+`' AND query LIKE '%advisory_lock(%'`, n.ended)
	}
	end()
	var applied []int
	for _, wait := range []func() ([]int, error){waitA, waitB, waitC} {
		a, err := wait()
		if err != nil {
			t.Fatal(err)
		}
		applied = append(applied, a...)
	}
	if !slices.Equal(applied, []int{19}) {
		t.Fatalf("applied %v, want 19 once", applied)
	}
	checkValid(t, pool, "directaid_records_loc_scopes")
}
