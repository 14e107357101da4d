package pgstore_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
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
	db, s := openStore(t, dsn)
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

// TestMigratePersonalOut: records stored before migration 0010 held their personal text in the records
// table's doc. Applying it moves that text to directaid_personal (reads are unchanged), and rewrites the
// records table once, so that no old version there holds it: after an erasure and one cycle, which
// rewrites directaid_personal only, the phone and name are in no table file.
func TestMigratePersonalOut(t *testing.T) {
	c := pgtest.Start(t)
	dsn := c.NewDatabase(t)
	db, s := openStore(t, dsn)
	ctx := context.Background()
	recs := storetest.Seed(t, s, 50, time.Now().Add(-time.Hour), time.Second)
	digits := fmt.Sprintf("32%08d", time.Now().UnixNano()%1e8)
	rec := storetest.Record("old", "x")
	rec.ContactWhatsapp, rec.ContactE164, rec.ContactName, rec.Address = digits[:3]+" "+digits[3:], "+57"+digits, "Eduviges Piedrahíta", "Calle Erasmo 77"
	stored, _, err := s.Create(ctx, rec)
	if err != nil {
		t.Fatal(err)
	}
	recs = append(recs, stored)
	// Back to the state before 0010: every doc whole, no personal table.
	for _, r := range recs {
		old := *r
		old.UpdatedAt = time.Time{}
		doc, err := json.Marshal(&old)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.Pool.Exec(ctx, `UPDATE directaid_records SET doc = $2 WHERE id = $1`, r.ID, doc); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.Pool.Exec(ctx, `DROP TABLE directaid_personal; DROP FUNCTION directaid_personal_part(text);
		DELETE FROM directaid_schema_migrations WHERE version IN (10, 20)`); err != nil {
		t.Fatal(err)
	}
	if applied, err := pgstore.Migrate(ctx, db.Pool); err != nil || !slices.Equal(applied, []int{10, 20}) {
		t.Fatalf("migrate: %v, %v", applied, err)
	}
	readsBack(t, s, recs, "after 0010")
	var inDocs int
	if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM directaid_records WHERE position($1::bytea IN doc) > 0 OR position('Eduviges'::bytea IN doc) > 0`,
		[]byte(digits)).Scan(&inDocs); err != nil || inDocs != 0 {
		t.Fatalf("%d docs still hold the personal text (%v)", inDocs, err)
	}
	if _, err := s.Update(ctx, rec.ID, func(r *store.Record) error { r.ErasePersonal(); r.Status = store.StatusWithdrawn; return nil }); err != nil {
		t.Fatal(err)
	}
	if err := s.AppendAudit(ctx, store.AuditEntry{Action: "erase", RecordID: rec.ID, Actor: store.ActorOperator, From: "open", To: "withdrawn"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Maintain(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Pool.Exec(ctx, `CHECKPOINT`); err != nil {
		t.Fatal(err)
	}
	found, err := erasescan.Find(filepath.Join(c.Dir, "data"), []byte("+57"+digits), []byte(digits), []byte("Eduviges"), []byte("Calle Erasmo"))
	if err != nil {
		t.Fatal(err)
	}
	var tables []string
	for _, f := range found {
		if !strings.Contains(f, string(os.PathSeparator)+"pg_wal"+string(os.PathSeparator)) {
			tables = append(tables, f)
		}
	}
	if len(tables) > 0 {
		t.Fatalf("erased data still in the table files:\n%s", strings.Join(tables, "\n"))
	}
}
