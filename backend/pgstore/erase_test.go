package pgstore_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/directaid/directaid/backend/pgstore"
	"github.com/directaid/directaid/backend/store"
	"github.com/directaid/directaid/backend/store/storetest"
	"github.com/directaid/directaid/internal/erasescan"
	"github.com/directaid/directaid/internal/pgtest"
)

// TestErasure: after a withdrawal and one maintenance cycle (then a CHECKPOINT, which PostgreSQL runs
// by itself within checkpoint_timeout), the erased phone and name are in no file of the cluster's data
// directory but the WAL's; later cycles without a new erasure do not rewrite the tables again.
func TestErasure(t *testing.T) {
	c := pgtest.Start(t)
	dsn := c.NewDatabase(t)
	db, err := pgstore.Open(dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	s := pgstore.NewStore(db)
	ctx := context.Background()
	storetest.Seed(t, s, 200, time.Now().Add(-time.Hour), time.Second)
	digits := fmt.Sprintf("31%08d", time.Now().UnixNano()%1e8)
	rec := storetest.Record("erase", "x")
	rec.ContactWhatsapp, rec.ContactE164, rec.ContactName = digits[:3]+" "+digits[3:], "+57"+digits, "Eduviges Piedrahíta"
	if _, _, err := s.Create(ctx, rec); err != nil {
		t.Fatal(err)
	}
	storetest.Seed(t, s, 200, time.Now().Add(-time.Hour), time.Second)
	// A withdrawal as the service makes it: the record erased, then the audit entry.
	if _, err := s.Update(ctx, rec.ID, func(r *store.Record) error { r.ErasePersonal(); r.Status = store.StatusWithdrawn; return nil }); err != nil {
		t.Fatal(err)
	}
	if err := s.AppendAudit(ctx, store.AuditEntry{Action: "withdraw", RecordID: rec.ID, Actor: store.ActorPublisher, From: "open", To: "withdrawn",
		// Three minutes ago: an erasure within a minute of a rewrite's start counts as after it (the clocks
		// of other nodes), and the second cycle below would rewrite again.
		At: time.Now().Add(-3 * time.Minute)}); err != nil {
		t.Fatal(err)
	}
	needles := [][]byte{[]byte("+57" + digits), []byte(digits), []byte("Eduviges")}
	scan := func(what string) (tables, wal []string) {
		t.Helper()
		if _, err := db.Pool.Exec(ctx, `CHECKPOINT`); err != nil {
			t.Fatal(err)
		}
		found, err := erasescan.Find(filepath.Join(c.Dir, "data"), needles...)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range found {
			if strings.Contains(f, string(os.PathSeparator)+"pg_wal"+string(os.PathSeparator)) {
				wal = append(wal, f)
			} else {
				tables = append(tables, f)
			}
		}
		t.Logf("%s: %d in tables %v, %d in WAL", what, len(tables), tables, len(wal))
		return tables, wal
	}
	if tables, _ := scan("before maintain"); len(tables) == 0 {
		t.Fatal("before the cycle the old row version should still be in the table's files (else this test proves nothing)")
	}
	if err := s.Maintain(ctx); err != nil {
		t.Fatal(err)
	}
	tables, wal := scan("after maintain")
	if len(tables) > 0 {
		t.Fatalf("erased data still in the table files after Maintain:\n%s", strings.Join(tables, "\n"))
	}
	// The WAL keeps it until its segments are recycled and overwritten: not asserted, reported.
	t.Logf("the WAL still holds it in %d places (the README says so)", len(wal))
	rewrites := func() int {
		t.Helper()
		trail, err := s.Audit(ctx, 0, 1000)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, e := range trail {
			if e.Action == pgstore.ActionVacuum {
				n++
			}
		}
		return n
	}
	if n := rewrites(); n != 1 {
		t.Fatalf("%d rewrites in the audit trail, want 1", n)
	}
	// Nothing erased since: the next cycle rewrites nothing (the rewrite locks the tables: not for nothing).
	if err := s.Maintain(ctx); err != nil || rewrites() != 1 {
		t.Fatalf("a cycle with no erasure since the last rewrite: %v, %d rewrites", err, rewrites())
	}
	// An operator's erase of another record: the next cycle rewrites again.
	other := storetest.Record("erase", "y")
	if _, _, err := s.Create(ctx, other); err != nil {
		t.Fatal(err)
	}
	if err := s.AppendAudit(ctx, store.AuditEntry{Action: "erase", RecordID: other.ID, Actor: store.ActorOperator, From: "open", To: "withdrawn"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Maintain(ctx); err != nil || rewrites() != 2 {
		t.Fatalf("a cycle after an erase: %v, %d rewrites, want 2", err, rewrites())
	}
}
