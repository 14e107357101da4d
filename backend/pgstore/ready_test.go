package pgstore

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/directaid/directaid/backend/store"
	"github.com/directaid/directaid/internal/pgtest"
)

// TestReadyOutlivesItsCaller: a migration that takes longer than the request that started it (here, waiting
// for another node's migration lock) goes on after that request's deadline and completes, instead of being
// rolled back with it — and tried again, and rolled back again, by every later request.
func TestReadyOutlivesItsCaller(t *testing.T) {
	dsn := pgtest.Shared(t).NewDatabase(t)
	holder, err := Connect(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	conn, err := holder.Acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	if _, err := conn.Exec(context.Background(), `SELECT pg_advisory_lock($1)`, MigrationLock); err != nil {
		t.Fatal(err)
	}
	db, err := Open(dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var mu sync.Mutex
	var events []MigrationEvent
	db.Progress = func(ev MigrationEvent) {
		mu.Lock()
		events = append(events, ev)
		mu.Unlock()
	}
	short, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if err := db.Ready(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Ready while another node migrates: %v, want the caller's deadline", err)
	}
	if _, err := conn.Exec(context.Background(), `SELECT pg_advisory_unlock($1)`, MigrationLock); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); !db.ready.Load(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the migration ended with the request that started it")
		}
	}
	if err := db.Ready(short); err != nil { // ready: no wait, whatever the context
		t.Fatal(err)
	}
	// What the node's log says: it waited, then each migration began and ended, in order.
	all, err := migrations()
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(events) != 1+2*len(all) || events[0].Kind != "waiting" {
		t.Fatalf("%d events, first %+v; want waiting, then applying and applied for each of %d migrations", len(events), events[0], len(all))
	}
	for i, m := range all {
		a, b := events[1+2*i], events[2+2*i]
		if a.Kind != "applying" || b.Kind != "applied" || a.Version != m.version || b.Version != m.version || b.Name != m.name ||
			a.Concurrent != (m.alone != nil) || b.Err != nil {
			t.Fatalf("migration %s: events %+v, %+v", m.name, a, b)
		}
	}
}

// TestProbeWrites: a probe is a committed write (the one row of directaid_probe, moved forward by each
// probe), so a server that takes reads but refuses writes (a standby after a failover, here a session
// that is read-only) is not ready, and a server that is down is unreachable, not ready either.
func TestProbeWrites(t *testing.T) {
	cluster := pgtest.Start(t)
	dsn := cluster.NewDatabase(t)
	db, err := Open(dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	s := NewStore(db)
	ctx := context.Background()
	var first, second time.Time
	for _, at := range []*time.Time{&first, &second} {
		if err := s.Probe(ctx); err != nil {
			t.Fatal(err)
		}
		if err := db.Pool.QueryRow(ctx, `SELECT at FROM directaid_probe`).Scan(at); err != nil {
			t.Fatal(err)
		}
	}
	if !second.After(first) {
		t.Fatalf("the second probe wrote %v, the first %v", second, first)
	}

	ro, err := Open(dsn + "&default_transaction_read_only=on") // pgtest DSNs have a query
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if err := NewStore(ro).Probe(ctx); err == nil || !strings.Contains(err.Error(), "read-only") {
		t.Fatalf("Probe on a read-only session: %v, want PostgreSQL's refusal", err)
	}

	if err := cluster.Stop("fast"); err != nil {
		t.Fatal(err)
	}
	if err := s.Probe(ctx); !errors.Is(err, store.ErrUnreachable) {
		t.Fatalf("Probe with the server down: %v, want store.ErrUnreachable", err)
	}
	if err := cluster.StartAgain(); err != nil {
		t.Fatal(err)
	}
	if err := s.Probe(ctx); err != nil {
		t.Fatalf("Probe once the server is back: %v", err)
	}
}
