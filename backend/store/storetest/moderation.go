package storetest

import (
	"bytes"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/directaid/directaid/backend/store"
)

// moderation is s: Moderation is part of store.Store.
func moderation(_ *testing.T, s store.Store) store.Moderation { return s }

// Reports: a reporter counts once however often it reports; reviewed reports stop counting, and so does a
// reviewed reporter's next report; an unknown record cannot be reported; dropping notes erases them.
func testReports(t *testing.T, s store.Store) {
	m := moderation(t, s)
	a, b := Record("app", "a"), Record("app", "b")
	for _, r := range []*store.Record{a, b} {
		if _, _, err := s.Create(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	add := func(id, who, reason string) int {
		t.Helper()
		n, err := m.AddReport(ctx, store.Report{RecordID: id, Reporter: who, Reason: reason, Note: "nota de " + who})
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := add(a.ID, "r1", "spam"); n != 1 {
		t.Fatalf("first reporter: %d distinct", n)
	}
	if n := add(a.ID, "r1", "fraud"); n != 1 {
		t.Fatalf("the same reporter twice counts once: %d", n)
	}
	// Concurrent distinct reporters: each counted, the last to finish sees them all.
	var wg sync.WaitGroup
	for i := range 5 {
		wg.Go(func() { add(a.ID, fmt.Sprintf("c%d", i), "spam") })
	}
	wg.Wait()
	if n := add(b.ID, "r1", "offensive"); n != 1 {
		t.Fatalf("reports of another record count apart: %d", n)
	}
	reps, err := m.Reports(ctx, a.ID)
	if err != nil || len(reps) != 6 {
		t.Fatalf("reports of a: %d, %v", len(reps), err)
	}
	for _, r := range reps {
		if r.Reporter == "r1" && (r.Reason != "fraud" || r.Reviewed) {
			t.Fatalf("a report again replaces the earlier one: %+v", r)
		}
	}
	ids, err := m.Reported(ctx)
	if err != nil || len(ids) != 2 {
		t.Fatalf("reported: %v %v", ids, err)
	}
	if _, err := m.AddReport(ctx, store.Report{RecordID: store.NewID(a.CreatedAt), Reporter: "r1", Reason: "spam"}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("report of an unknown record: %v", err)
	}
	// One reporter's reports alone: the others stay unreviewed.
	if err := m.ReviewReports(ctx, a.ID, "c0", false); err != nil {
		t.Fatal(err)
	}
	reps, _ = m.Reports(ctx, a.ID)
	for _, r := range reps {
		if r.Reviewed != (r.Reporter == "c0") || r.Note == "" {
			t.Fatalf("after reviewing c0's reports: %+v", r)
		}
	}
	if err := m.ReviewReports(ctx, a.ID, "", true); err != nil {
		t.Fatal(err)
	}
	reps, _ = m.Reports(ctx, a.ID)
	for _, r := range reps {
		if !r.Reviewed || r.Note != "" {
			t.Fatalf("reviewed with notes dropped: %+v", r)
		}
	}
	if ids, _ := m.Reported(ctx); len(ids) != 1 || ids[0] != b.ID {
		t.Fatalf("after review only b is reported: %v", ids)
	}
	if n := add(a.ID, "r9", "spam"); n != 1 {
		t.Fatalf("reviewed reports no longer count: %d", n)
	}
	// An operator's review stands against the same reporter: reporting again replaces the report (its
	// reason, note, time) but it stays reviewed, so that the reporters of a restored record cannot hide it
	// again by themselves.
	if n := add(a.ID, "r1", "offensive"); n != 1 {
		t.Fatalf("a reviewed reporter reporting again counts again: %d", n)
	}
	reps, _ = m.Reports(ctx, a.ID)
	for _, r := range reps {
		if r.Reporter == "r1" && (r.Reason != "offensive" || r.Note != "nota de r1" || !r.Reviewed) {
			t.Fatalf("a reviewed reporter's new report: %+v", r)
		}
	}
}

// AuditTrail: entries come back in order with increasing seq, paged by seq, under concurrent appends.
func testAuditTrail(t *testing.T, s store.Store) {
	m := moderation(t, s)
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			if err := m.AppendAudit(ctx, store.AuditEntry{Action: "hide", RecordID: fmt.Sprintf("%016d", i), Actor: store.ActorOperator, From: "open", To: "hidden"}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	all := trail(t, m, 7)
	if len(all) != 20 {
		t.Fatalf("%d entries, want 20", len(all))
	}
	seen := map[string]bool{}
	for i, e := range all {
		if i > 0 && e.Seq <= all[i-1].Seq {
			t.Fatalf("seq not increasing: %d then %d", all[i-1].Seq, e.Seq)
		}
		if e.At.IsZero() || e.Actor != store.ActorOperator || e.To != "hidden" {
			t.Fatalf("entry %+v", e)
		}
		seen[e.RecordID] = true
	}
	if len(seen) != 20 {
		t.Fatalf("%d distinct records in the trail", len(seen))
	}
}

// AuditWithTheUpdate: an Update under store.WithAudit appends its entries (two, in their order) with the
// change, from concurrent updates of many records each once, with seqs among the other appends'; an Update
// whose fn fails appends nothing, nor one of an unknown record.
func testAuditWithTheUpdate(t *testing.T, s store.Store) {
	m := moderation(t, s)
	recs := Seed(t, s, 24, time.Now().Add(-time.Hour).UTC().Truncate(time.Millisecond), time.Second)
	audit := store.WithAudit(ctx, func(old, rec *store.Record) []store.AuditEntry {
		return []store.AuditEntry{{Action: "resolve", RecordID: rec.ID, Actor: store.ActorPublisher, From: old.Status, To: rec.Status},
			{Action: "note", RecordID: rec.ID, Actor: store.ActorSystem}}
	})
	var wg sync.WaitGroup
	for i, r := range recs {
		wg.Go(func() {
			if i%4 == 0 { // an append of its own between the updates
				if err := m.AppendAudit(ctx, store.AuditEntry{Action: "report", RecordID: r.ID, Actor: store.ActorCommunity}); err != nil {
					t.Error(err)
				}
			}
			if _, err := s.Update(audit, r.ID, func(rec *store.Record) error { rec.Status = store.StatusResolved; return nil }); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if _, err := s.Update(audit, recs[0].ID, func(*store.Record) error { return errors.New("refused") }); err == nil {
		t.Fatal("a failing fn stored")
	}
	if _, err := s.Update(audit, "0000000000000000", func(*store.Record) error { return nil }); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("an unknown record: %v", err)
	}
	all := trail(t, m, 100)
	count, resolved := map[string]int{}, map[string]bool{}
	for i, e := range all {
		if i > 0 && e.Seq <= all[i-1].Seq {
			t.Fatalf("seq not increasing: %d then %d", all[i-1].Seq, e.Seq)
		}
		switch e.Action {
		case "resolve":
			if e.From != store.StatusOpen || e.To != store.StatusResolved || e.At.IsZero() {
				t.Fatalf("entry %d %+v: want open→resolved", i, e)
			}
			resolved[e.RecordID] = true
		case "note": // after its update's first entry (other transactions' entries may come between)
			if !resolved[e.RecordID] {
				t.Fatalf("entry %d %+v before its resolve", i, e)
			}
		}
		count[e.Action]++
	}
	if count["resolve"] != len(recs) || count["note"] != len(recs) || count["report"] != len(recs)/4 || len(all) != 2*len(recs)+len(recs)/4 {
		t.Fatalf("the trail holds %v (%d entries) for %d audited updates and %d appends", count, len(all), len(recs), len(recs)/4)
	}
}

// Secret: made once, the same on every call and under concurrency, distinct per name.
func testSecret(t *testing.T, s store.Store) {
	m := moderation(t, s)
	got := make([][]byte, 8)
	var wg sync.WaitGroup
	for i := range got {
		wg.Go(func() {
			b, err := m.Secret(ctx, "reporters")
			if err != nil {
				t.Error(err)
			}
			got[i] = b
		})
	}
	wg.Wait()
	for _, b := range got {
		if len(b) != 32 || !bytes.Equal(b, got[0]) {
			t.Fatalf("secrets differ: %x vs %x", b, got[0])
		}
	}
	other, err := m.Secret(ctx, "manage")
	if err != nil || bytes.Equal(other, got[0]) {
		t.Fatalf("another name, another secret: %v", err)
	}
}

// Disownings: a disowned key stands, against the publisher of the disowning (or every one, for an empty
// publisher), while any record's disowning of it does; Reclaim removes a record's (only its reporter's
// when one is given) and leaves the others'; a second disowning of the same key on the same record
// replaces the first.
func testDisownings(t *testing.T, s store.Store) {
	m := moderation(t, s)
	a, b := Record("app", "disown-a"), Record("app", "disown-b")
	for _, r := range []*store.Record{a, b} {
		if _, _, err := s.Create(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	hour := time.Now().Add(-time.Hour)
	against := func(key, publisher string) bool {
		t.Helper()
		ok, err := m.Disowned(ctx, key, publisher, hour)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	disowned := func(key string) bool { return against(key, "p1") }
	disown := func(key, id, who string) {
		t.Helper()
		if err := m.Disown(ctx, store.Disowning{Key: key, RecordID: id, Reporter: who, Publisher: "p1"}); err != nil {
			t.Fatal(err)
		}
	}
	if disowned("k1") {
		t.Fatal("a key nobody disowned is disowned")
	}
	disown("k1", a.ID, "r1")
	disown("k1", a.ID, "r2") // replaces r1's on a
	disown("k1", b.ID, "r3")
	disown("k2", a.ID, "r4")
	if !disowned("k1") || !disowned("k2") || disowned("k") || disowned("k11") {
		t.Fatal("Disowned does not answer the keys disowned, and only them")
	}
	if against("k1", "p2") || against("k1", "") {
		t.Fatal("a disowning against p1 stands against another publisher")
	}
	if err := m.Reclaim(ctx, "", a.ID, "r1"); err != nil {
		t.Fatal(err)
	}
	if !disowned("k1") || !disowned("k2") {
		t.Fatal("reclaiming r1's on a (which r2's replaced) removed another reporter's")
	}
	if err := m.Reclaim(ctx, "", a.ID, ""); err != nil {
		t.Fatal(err)
	}
	if !disowned("k1") || disowned("k2") {
		t.Fatal("reclaiming a's: k1 stands by b's, k2 had only a's")
	}
	// What a copy to another store carries: every disowning, each once.
	tr := transferer(t, s)
	var scanned []store.Disowning
	if err := tr.ScanDisownings(ctx, func(d store.Disowning) error { scanned = append(scanned, d); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(scanned) != 1 || scanned[0].Key != "k1" || scanned[0].RecordID != b.ID || scanned[0].Reporter != "r3" || scanned[0].Publisher != "p1" || scanned[0].At.IsZero() {
		t.Fatalf("ScanDisownings: %+v", scanned)
	}
	if err := m.Reclaim(ctx, "", b.ID, "r3"); err != nil {
		t.Fatal(err)
	}
	if disowned("k1") {
		t.Fatal("k1 stands after every disowning of it was reclaimed")
	}
	if res, err := tr.ImportDisownings(ctx, scanned); err != nil || res.Created != 1 || res.Present != 0 {
		t.Fatalf("importing a disowning the store lacks: %+v %v", res, err)
	}
	if res, err := tr.ImportDisownings(ctx, scanned); err != nil || res.Created != 0 || res.Present != 1 || !disowned("k1") {
		t.Fatalf("importing one it holds: %+v %v", res, err)
	}
	// By key: every record's disowning of the number goes, another number's stays.
	disown("k1", a.ID, "r5")
	disown("k3", a.ID, "r5")
	if err := m.Reclaim(ctx, "k1", "", ""); err != nil {
		t.Fatal(err)
	}
	if disowned("k1") || !disowned("k3") {
		t.Fatal("reclaiming a number by its key: k1 stands, or k3 went")
	}
	if err := m.Reclaim(ctx, "", "", ""); err == nil {
		t.Fatal("a Reclaim of everything at once was taken")
	}
	// Without a publisher (stored before disownings had one): against every publisher.
	if err := m.Disown(ctx, store.Disowning{Key: "k4", RecordID: b.ID, Reporter: "r6"}); err != nil {
		t.Fatal(err)
	}
	if !against("k4", "p1") || !against("k4", "p2") || !against("k4", "") || against("k3", "p2") {
		t.Fatal("a disowning without a publisher does not stand against every publisher, or another does")
	}
	// Only the disownings made after since stand.
	if ok, err := m.Disowned(ctx, "k3", "p1", time.Now().Add(time.Minute)); err != nil || ok {
		t.Fatalf("a disowning made before since stands: %v %v", ok, err)
	}
	if err := m.Disown(ctx, store.Disowning{Key: "k5", RecordID: b.ID, Reporter: "r7", Publisher: "p1", At: time.Now().Add(-48 * time.Hour)}); err != nil {
		t.Fatal(err)
	}
	if against("k5", "p1") {
		t.Fatal("a disowning made two days ago stands since an hour ago")
	}
}

// trail reads m's whole audit trail, page pages at a time.
func trail(t *testing.T, m store.Moderation, page int) []store.AuditEntry {
	t.Helper()
	var all []store.AuditEntry
	for after := int64(0); ; {
		got, err := m.Audit(ctx, after, page)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) == 0 {
			return all
		}
		all = append(all, got...)
		after = got[len(got)-1].Seq
	}
}
