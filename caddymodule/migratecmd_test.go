package caddymodule

import (
	"bytes"
	"context"
	"io"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/directaid/directaid/backend/badgerstore"
	"github.com/directaid/directaid/backend/pgstore"
	"github.com/directaid/directaid/backend/store"
	"github.com/directaid/directaid/backend/store/storetest"
	"github.com/directaid/directaid/internal/pgtest"
)

type writerFunc func(p []byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// newMigration is `directaid migrate --from badger <dir> --to postgres <dsn> --batch <batch>`, reporting to out.
func newMigration(t *testing.T, dir, dsn string, batch int, out io.Writer) *migration {
	t.Helper()
	m, err := parseMigration("badger", "postgres", []string{dir, dsn}, batch)
	if err != nil {
		t.Fatal(err)
	}
	m.opts.Out = out
	return m
}

// TestMigrateInterruptedResumes: a migrate interrupted mid-way, once by its context while a batch is in
// PostgreSQL and once by a batch that fails, leaves whole batches only; run again it copies the rest, and
// the target then holds what one uninterrupted migrate makes of the same source: records, personal
// fields, every counter, reports, responses, audit trail and secrets.
func TestMigrateInterruptedResumes(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "data")
	src, err := badgerstore.Open(badgerstore.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	const n, batch = 3000, 200
	recs := storetest.Seed(t, src, n, time.Now().Add(-time.Hour), time.Second)
	for i, r := range recs[:300] {
		status := []string{store.StatusResolved, store.StatusWithdrawn, store.StatusHidden}[i%3]
		if _, err := src.Update(ctx, r.ID, func(rec *store.Record) error {
			if rec.Status = status; status == store.StatusWithdrawn {
				rec.ErasePersonal()
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := src.Secret(ctx, "manage-token"); err != nil {
		t.Fatal(err)
	}
	if _, err := src.AddReport(ctx, store.Report{RecordID: recs[7].ID, Reporter: "h1", Reason: store.ReasonNotMyNumber, At: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if err := src.AppendAudit(ctx, store.AuditEntry{Action: "hide", RecordID: recs[7].ID, Actor: store.ActorOperator}); err != nil {
		t.Fatal(err)
	}
	at := time.Now().UTC().Truncate(time.Millisecond)
	if err := src.CreateResponse(ctx, &store.Response{RecordID: recs[9].ID, ID: "r1", CreatedAt: at, UpdatedAt: at, ExpiresAt: at.Add(48 * time.Hour),
		Status: store.ResponseActive, Message: "Tengo agua", ContactName: "Ana", ContactWhatsapp: "300 123 4567", ContactE164: "+573001234567"}); err != nil {
		t.Fatal(err)
	}
	if err := src.Close(); err != nil {
		t.Fatal(err)
	}
	ids := make([]string, n) // in the order migrate reads them
	for i, r := range recs {
		ids[i] = r.ID
	}
	slices.Sort(ids)

	cluster := pgtest.Shared(t)
	dsn := cluster.NewDatabase(t)
	db, err := pgstore.Open(dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Ready(ctx); err != nil { // the schema, for the triggers below
		t.Fatal(err)
	}
	run := func(ctx context.Context, hook func(line string)) (string, error) {
		var out bytes.Buffer
		w := writerFunc(func(p []byte) (int, error) {
			if hook != nil {
				hook(string(p))
			}
			return out.Write(p)
		})
		m := newMigration(t, dir, dsn, batch, w) // progress after every batch
		err := m.run(ctx)
		return out.String(), err
	}
	exec := func(sql string) {
		t.Helper()
		if _, err := db.Pool.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	holds := func() int {
		t.Helper()
		var got int
		if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM directaid_records`).Scan(&got); err != nil {
			t.Fatal(err)
		}
		return got
	}

	// 1. The sixth batch stalls in PostgreSQL (a row of it sleeps) and the context ends meanwhile.
	exec(`CREATE FUNCTION test_stall() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_sleep(60); RETURN NEW; END $$;
		CREATE TRIGGER test_stall BEFORE INSERT ON directaid_records FOR EACH ROW WHEN (NEW.id = '` + ids[5*batch+50] + `') EXECUTE FUNCTION test_stall()`)
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	out, err := run(cctx, func(line string) {
		if strings.HasPrefix(line, "… 1000 records read") {
			time.AfterFunc(200*time.Millisecond, cancel)
		}
	})
	if err == nil || !strings.Contains(err.Error(), "after 1000 records") || !strings.Contains(err.Error(), "context canceled") {
		t.Fatalf("a migrate cancelled in its sixth batch: %v\n%s", err, out)
	}
	if got := holds(); got != 1000 {
		t.Fatalf("after a migrate cancelled in its sixth batch PostgreSQL holds %d records, want the five batches before it (1000)", got)
	}

	// 2. Run again, its twelfth batch fails: the five batches are there already, six more are copied.
	exec(`DROP TRIGGER test_stall ON directaid_records;
		CREATE FUNCTION test_fail() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'test: this batch fails'; END $$;
		CREATE TRIGGER test_fail BEFORE INSERT ON directaid_records FOR EACH ROW WHEN (NEW.id = '` + ids[11*batch+145] + `') EXECUTE FUNCTION test_fail()`)
	out, err = run(ctx, nil)
	if err == nil || !strings.Contains(err.Error(), "after 2200 records") || !strings.Contains(err.Error(), "test: this batch fails") ||
		!strings.Contains(out, "… 2200 records read: 1200 created, 1000 already there") {
		t.Fatalf("a migrate whose twelfth batch fails: %v\n%s", err, out)
	}
	if got := holds(); got != 2200 {
		t.Fatalf("after a failed batch PostgreSQL holds %d records, want the eleven batches before it (2200)", got)
	}
	// Manual ANALYZEs and VACUUMs of the records (the schema's creation made an ANALYZE), and their pages
	// marked all-visible.
	maintained := func() (analyzes, vacuums int64, allVisible bool) {
		t.Helper()
		if err := db.Pool.QueryRow(ctx, `SELECT s.analyze_count, s.vacuum_count, c.relallvisible = c.relpages AND c.relpages > 0
			FROM pg_stat_user_tables s JOIN pg_class c ON c.oid = s.relid WHERE s.relname = 'directaid_records'`).Scan(&analyzes, &vacuums, &allVisible); err != nil {
			t.Fatal(err)
		}
		return analyzes, vacuums, allVisible
	}
	before, vacuums, _ := maintained()

	// 3. Run again: the rest.
	exec(`DROP TRIGGER test_fail ON directaid_records`)
	out, err = run(ctx, nil)
	for _, want := range []string{"read 3000 records from badger", ": 800 created, 2200 already there, 0 conflicts", "PostgreSQL now holds 3000 records",
		"community reports: 1 read, 1 created", "responses: 1 read, 1 created, 0 already there, 0 conflicts", "audit trail: 1 entries read, 1 appended", "server secrets: 0 copied, 1 already the same",
		"tables vacuumed and planner statistics refreshed (VACUUM (ANALYZE))"} {
		if err != nil || !strings.Contains(out, want) {
			t.Fatalf("the migrate after the interruptions: %v; its report should say %q:\n%s", err, want, out)
		}
	}
	// Index-only scans (the radius walk, the counters) read no heap page at once, not after autovacuum.
	if analyzes, vacuumed, allVisible := maintained(); analyzes == before || vacuumed == vacuums || !allVisible {
		t.Fatalf("directaid_records after the migrate that finished: analyzed %v, vacuumed %v, every page all-visible %v",
			analyzes > before, vacuumed > vacuums, allVisible)
	}

	// The same as one migrate without interruption into another database.
	dsn, ref := cluster.NewDatabase(t), dsn
	if out, err := run(ctx, nil); err != nil || !strings.Contains(out, ": 3000 created, 0 already there, 0 conflicts") {
		t.Fatalf("an uninterrupted migrate: %v\n%s", err, out)
	}
	a, b := tableDigests(t, ref), tableDigests(t, dsn)
	for _, table := range slices.Sorted(maps.Keys(b)) {
		if a[table] != b[table] {
			t.Errorf("%s after the interrupted migrates: %s\nafter one migrate: %s", table, a[table], b[table])
		}
	}
}

// tableDigests sums up what a PostgreSQL store holds, table by table, leaving out what differs between
// two stores holding the same: which connection's counter row (shard) holds a count, the audit's seq.
func tableDigests(t *testing.T, dsn string) map[string]string {
	t.Helper()
	db, err := pgstore.Open(dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	digest := `count(*) || ' rows, md5 ' || md5(coalesce(string_agg(k, ',' ORDER BY k), ''))`
	queries := map[string]string{
		"records":   `SELECT ` + digest + ` FROM (SELECT to_jsonb(r)::text k FROM directaid_records r) x`,
		"personal":  `SELECT ` + digest + ` FROM (SELECT to_jsonb(p)::text k FROM directaid_personal p) x`,
		"reports":   `SELECT ` + digest + ` FROM (SELECT to_jsonb(r)::text k FROM directaid_reports r) x`,
		"secrets":   `SELECT ` + digest + ` FROM (SELECT to_jsonb(s)::text k FROM directaid_secrets s) x`,
		"audit":     `SELECT ` + digest + ` FROM (SELECT doc::text k FROM directaid_audit) x`,
		"responses": `SELECT ` + digest + ` FROM (SELECT to_jsonb(r)::text k FROM directaid_responses r) x`,
		// Counter rows summed over their shards, whatever columns they are kept by.
		"counts": `SELECT ` + digest + ` FROM (SELECT concat_ws('|', to_jsonb(c) - 'shard' - 'n' - 'people' - 'newest', sum(n), sum(people), max(newest)) k
			FROM directaid_counts c GROUP BY to_jsonb(c) - 'shard' - 'n' - 'people' - 'newest' HAVING sum(n) <> 0) x`,
		"cells": `SELECT ` + digest + ` FROM (SELECT concat_ws('|', to_jsonb(c) - 'shard' - 'n', sum(n)) k
			FROM directaid_cells c GROUP BY to_jsonb(c) - 'shard' - 'n' HAVING sum(n) <> 0) x`,
		"words": `SELECT ` + digest + ` FROM (SELECT concat_ws('|', to_jsonb(c) - 'shard' - 'n', sum(n)) k
			FROM directaid_words c GROUP BY to_jsonb(c) - 'shard' - 'n' HAVING sum(n) <> 0) x`,
	}
	out := map[string]string{}
	for table, q := range queries {
		var d string
		if err := db.Pool.QueryRow(context.Background(), q).Scan(&d); err != nil {
			t.Fatalf("%s: %v", table, err)
		}
		out[table] = d
	}
	return out
}

// TestMigrateWaitsForTheSchema: migrate into a database whose schema another node is migrating waits for
// it, past the bound on reaching PostgreSQL (an index built over millions of records outlasts any fixed
// wait, and a build cut short would be built again, and cut, on every run), and says what it waits for.
func TestMigrateWaitsForTheSchema(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "data")
	src, err := badgerstore.Open(badgerstore.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	storetest.Seed(t, src, 20, time.Now().Add(-time.Hour), time.Second)
	if err := src.Close(); err != nil {
		t.Fatal(err)
	}
	dsn := pgtest.Shared(t).NewDatabase(t)
	holder, err := pgstore.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	conn, err := holder.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1)`, pgstore.MigrationLock); err != nil {
		t.Fatal(err)
	}
	defer func(w time.Duration) { pgstore.ConnectWait = w }(pgstore.ConnectWait)
	pgstore.ConnectWait = 200 * time.Millisecond

	var mu sync.Mutex
	var out bytes.Buffer
	w := writerFunc(func(p []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		return out.Write(p)
	})
	done := make(chan error, 1)
	m := newMigration(t, dir, dsn, 100, w)
	go func() { done <- m.run(ctx) }()
	time.Sleep(4 * pgstore.ConnectWait) // the other node's migration outlasts the bound on connecting
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_unlock($1)`, pgstore.MigrationLock); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		mu.Lock()
		defer mu.Unlock()
		for _, want := range []string{"schema: waiting for another node's schema migration to end\n",
			"schema: applying 0017_loc_municipio.sql (indexes built concurrently: the other nodes go on publishing)…\n",
			"PostgreSQL now holds 20 records"} {
			if err != nil || !strings.Contains(out.String(), want) {
				t.Fatalf("migrate: %v; its report should say %q:\n%s", err, want, out.String())
			}
		}
	case <-time.After(time.Minute):
		t.Fatal("migrate did not end after the other node's migration")
	}
}

// TestParseMigration: the flags name registered stores and where they are; anything else is the usage or
// an error that says what is wrong, before anything is opened.
func TestParseMigration(t *testing.T) {
	t.Setenv("DIRECTAID_DATABASE_URL", "")
	for _, c := range []struct {
		from, to string
		args     []string
		batch    int
		want     string
	}{
		{"", "postgres", []string{"/d"}, 500, "usage:"},
		{"badger", "postgres", nil, 500, "usage:"},
		{"badger", "postgres", []string{"/d", "dsn", "more"}, 500, "usage:"},
		{"badger", "postgres", []string{"/d", "dsn"}, 0, "usage:"},
		{"mysql", "postgres", []string{"/d", "dsn"}, 500, `--from: unknown database "mysql" (supported: badger, postgres)`},
		{"badger", "sqlite", []string{"/d", "x"}, 500, `--to: unknown database "sqlite"`},
		{"postgres", "badger", []string{"dsn"}, 500, "--to badger needs where its database is"},
		{"badger", "postgres", []string{"/d"}, 500, "is empty once its placeholders are replaced (give it after --to postgres"},
	} {
		if _, err := parseMigration(c.from, c.to, c.args, c.batch); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s → %s %q: %v; want %q", c.from, c.to, c.args, err, c.want)
		}
	}
	t.Setenv("DIRECTAID_DATABASE_URL", "postgres://u:secret@db.internal/directaid")
	m, err := parseMigration("badger", "postgres", []string{"/var/lib/directaid"}, 500)
	if err != nil || m.where != "postgres://u:secret@db.internal/directaid" || m.fromWhere != "/var/lib/directaid" || m.opts.Batch != 500 {
		t.Fatalf("%+v, %v", m, err)
	}
	if desc, err := m.to.Describe(m.where); err != nil || strings.Contains(desc, "secret") {
		t.Fatalf("the target is described as %q (%v): never with its password", desc, err)
	}
}

// TestMigrateThereAndBack: migrate copies Badger into PostgreSQL and PostgreSQL back into a new Badger
// directory, and the second directory then holds what the first held: records, reports, responses,
// audit trail and secrets.
func TestMigrateThereAndBack(t *testing.T) {
	ctx := context.Background()
	dir, back := filepath.Join(t.TempDir(), "data"), filepath.Join(t.TempDir(), "back")
	src, err := badgerstore.Open(badgerstore.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	storetest.Fill(t, src, 50)
	want := storetest.ReadContents(t, src)
	if err := src.Close(); err != nil {
		t.Fatal(err)
	}
	dsn := pgtest.Shared(t).NewDatabase(t)
	var out bytes.Buffer
	if err := newMigration(t, dir, dsn, 20, &out).run(ctx); err != nil {
		t.Fatalf("badger → postgres: %v\n%s", err, out.String())
	}
	m, err := parseMigration("postgres", "badger", []string{dsn, back}, 20)
	if err != nil {
		t.Fatal(err)
	}
	out.Reset()
	m.opts.Out = &out
	if err := m.run(ctx); err != nil || !strings.Contains(out.String(), "read 50 records from postgres") || !strings.Contains(out.String(), "Badger now holds 50 records") {
		t.Fatalf("postgres → badger: %v\n%s", err, out.String())
	}
	got, err := badgerstore.Open(badgerstore.Options{Dir: back})
	if err != nil {
		t.Fatal(err)
	}
	defer got.Close()
	storetest.SameContents(t, "after badger → postgres → badger", want, storetest.ReadContents(t, got))
}
