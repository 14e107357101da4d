package pgstore

import (
	"context"
	"errors"
	"testing"
	"time"

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
	if _, err := conn.Exec(context.Background(), `SELECT pg_advisory_lock($1)`, migrationLock); err != nil {
		t.Fatal(err)
	}
	db, err := Open(dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	short, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if err := db.Ready(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Ready while another node migrates: %v, want the caller's deadline", err)
	}
	if _, err := conn.Exec(context.Background(), `SELECT pg_advisory_unlock($1)`, migrationLock); err != nil {
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
}
