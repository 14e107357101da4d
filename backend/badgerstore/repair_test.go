package badgerstore

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"

	"github.com/directaid/directaid/backend/store"
	"github.com/directaid/directaid/backend/store/storetest"
)

var ctx = context.Background()

// shareID writes b under a's id as the writer did before it refused taken ids: the record key, b's pair
// key and index entries, its counters, without looking.
func shareID(t *testing.T, s *Store, a, b *store.Record) {
	t.Helper()
	b.ID, b.UpdatedAt = a.ID, a.UpdatedAt.Add(time.Millisecond)
	entries, err := createEntries(b)
	if err != nil {
		t.Fatal(err)
	}
	txn := s.db.NewTransaction(true)
	defer txn.Discard()
	w := newIndexWriter(s)
	if ok, err := w.put(txn, b, append(entries, changeEntries(b)...)); !ok || err != nil {
		t.Fatal(ok, err)
	}
	if _, err := w.finish(txn); err != nil {
		t.Fatal(err)
	}
	if err := txn.Commit(); err != nil {
		t.Fatal(err)
	}
}

// TestRepairSharedID: a database where a second publication overwrote the first under one id fails
// Verify, naming the id; Repair gives the overwritten publication its record back under an id of its own
// (Badger still keeps its version), rebuilds the indexes and counters, and Verify then passes; both pairs
// answer their own content, and the lists count both.
func TestRepairSharedID(t *testing.T) {
	dir := t.TempDir()
	s := open(t, Options{Dir: dir})
	a, _, err := s.Create(ctx, storetest.Record("app", "a"))
	if err != nil {
		t.Fatal(err)
	}
	b := storetest.Record("app", "b")
	b.Title = "Cobijas para la noche"
	shareID(t, s, a, b)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	v, err := Verify(dir)
	if err != nil {
		t.Fatal(err)
	}
	if v.SharedIDs != 1 || !strings.Contains(strings.Join(v.Problems, "\n"), a.ID) {
		t.Fatalf("verify of a database with a shared id: %d shared, %q", v.SharedIDs, v.Problems)
	}
	var out bytes.Buffer
	if err := Repair(dir, nil, &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "is back, under the id") {
		t.Fatalf("repair said: %s", out.String())
	}
	if v, err := Verify(dir); err != nil || len(v.Problems) > 0 || v.Records[store.StatusOpen] != 2 {
		t.Fatalf("after repair: %+v, %v", v, err)
	}
	s = open(t, Options{Dir: dir})
	defer s.Close()
	gotA, createdA, errA := s.Create(ctx, storetest.Record("app", "a"))
	gotB, createdB, errB := s.Create(ctx, storetest.Record("app", "b"))
	if errA != nil || errB != nil || createdA || createdB || gotA.ID == gotB.ID || gotA.Title != "Agua potable" || gotB.Title != b.Title {
		t.Fatalf("after repair: a %+v %v %v, b %+v %v %v", gotA, createdA, errA, gotB, createdB, errB)
	}
	res, err := s.List(ctx, &store.ListSpec{EmergencySlug: "eje-cafetero", Limit: 10})
	if err != nil || len(res.Records) != 2 || res.Total != 2 {
		t.Fatalf("list after repair: %+v, %v", res, err)
	}
}

// TestRepairSharedIDLost: where Badger no longer keeps the overwritten version, Repair frees its pair, so
// that its publisher's retry publishes it again (a 201), and the database verifies.
func TestRepairSharedIDLost(t *testing.T) {
	dir := t.TempDir()
	s := open(t, Options{Dir: dir})
	b, _, err := s.Create(ctx, storetest.Record("app", "b"))
	if err != nil {
		t.Fatal(err)
	}
	// a's pair points to b's id, and no version of a's record is kept.
	if err := s.db.Update(func(txn *badger.Txn) error { return txn.Set(pairKey("app", "a"), []byte(b.ID)) }); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if v, err := Verify(dir); err != nil || v.SharedIDs != 1 {
		t.Fatalf("verify: %+v, %v", v, err)
	}
	var out bytes.Buffer
	if err := Repair(dir, nil, &out); err != nil || !strings.Contains(out.String(), "its pair is freed") {
		t.Fatalf("repair: %v, %s", err, out.String())
	}
	if v, err := Verify(dir); err != nil || len(v.Problems) > 0 {
		t.Fatalf("after repair: %+v, %v", v, err)
	}
	s = open(t, Options{Dir: dir})
	defer s.Close()
	again, created, err := s.Create(ctx, storetest.Record("app", "a"))
	if err != nil || !created || again.ID == b.ID {
		t.Fatalf("the retry of the lost publication: %+v %v %v", again, created, err)
	}
}
