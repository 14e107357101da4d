package pgtest

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
)

// TestCluster starts a cluster, uses two separate databases (with the contrib extension the store needs),
// restarts the server and finds the data still there.
func TestCluster(t *testing.T) {
	t.Parallel()
	c := Start(t)
	ctx := context.Background()
	a, b := c.NewDatabase(t), c.NewDatabase(t)
	if a == b {
		t.Fatalf("two databases share one DSN %q", a)
	}
	conn, err := pgx.Connect(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `CREATE EXTENSION pg_trgm; CREATE TABLE t (v text); INSERT INTO t VALUES ('uno')`); err != nil {
		t.Fatalf("postgresql-contrib missing? %v", err)
	}
	conn.Close(ctx)
	if err := c.Restart("fast"); err != nil {
		t.Fatal(err)
	}
	conn, err = pgx.Connect(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var v string
	if err := conn.QueryRow(ctx, `SELECT v FROM t`).Scan(&v); err != nil || v != "uno" {
		t.Fatalf("after restart: %q, %v", v, err)
	}
	other, err := pgx.Connect(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close(ctx)
	var n int
	if err := other.QueryRow(ctx, `SELECT count(*) FROM pg_tables WHERE tablename = 't'`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("the second database is not fresh: %d tables named t, %v", n, err)
	}
}

// TestSharedBuffers: a cluster started with Options.SharedBuffers runs with it (the bench's, sized as an
// operator would).
func TestSharedBuffers(t *testing.T) {
	t.Parallel()
	c := StartWith(t, Options{SharedBuffers: "200MB"})
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, c.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var v string
	if err := conn.QueryRow(ctx, `SHOW shared_buffers`).Scan(&v); err != nil || v != "200MB" {
		t.Fatalf("shared_buffers %q, %v; want 200MB", v, err)
	}
}
