package storetest

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/directaid/directaid/backend/store"
)

// transferer is s: Transfer is part of store.Store.
func transferer(_ *testing.T, s store.Store) store.Transfer { return s }

// TransferSecrets: Secrets lists what Secret made; PutSecret fills a missing secret, keeps one that is
// there unless told to replace it, and Secret then answers what PutSecret stored.
func testTransferSecrets(t *testing.T, s store.Store) {
	m, tr := moderation(t, s), transferer(t, s)
	if got, err := tr.Secrets(ctx); err != nil || len(got) != 0 {
		t.Fatalf("a new store's secrets: %d, %v", len(got), err)
	}
	made, err := m.Secret(ctx, "manage")
	if err != nil {
		t.Fatal(err)
	}
	other := bytes.Repeat([]byte{7}, 32)
	if got, err := tr.PutSecret(ctx, "manage", other, false); err != nil || !bytes.Equal(got, made) {
		t.Fatalf("PutSecret without replace over an existing secret: %x, %v; want the existing %x", got, err, made)
	}
	if got, _ := m.Secret(ctx, "manage"); !bytes.Equal(got, made) {
		t.Fatalf("the secret changed without replace: %x", got)
	}
	if got, err := tr.PutSecret(ctx, "manage", other, true); err != nil || !bytes.Equal(got, other) {
		t.Fatalf("PutSecret with replace: %x, %v", got, err)
	}
	if got, _ := m.Secret(ctx, "manage"); !bytes.Equal(got, other) {
		t.Fatalf("Secret after a replace: %x, want %x", got, other)
	}
	fresh := bytes.Repeat([]byte{9}, 32)
	if got, err := tr.PutSecret(ctx, "reporters", fresh, false); err != nil || !bytes.Equal(got, fresh) {
		t.Fatalf("PutSecret of a missing secret: %x, %v", got, err)
	}
	if got, _ := m.Secret(ctx, "reporters"); !bytes.Equal(got, fresh) {
		t.Fatalf("Secret after PutSecret made another: %x", got)
	}
	all, err := tr.Secrets(ctx)
	if err != nil || len(all) != 2 || !bytes.Equal(all["manage"], other) || !bytes.Equal(all["reporters"], fresh) {
		t.Fatalf("Secrets: %x, %v", all, err)
	}
}

// TransferReports: ScanReports hands over every report (reviewed ones too) by record then reporter;
// ImportReports stores reports as given, counts identical ones as present, never overwrites a differing
// one, refuses reports of unknown records, and imported reviewed reports do not count towards hiding.
func testTransferReports(t *testing.T, s store.Store) {
	m, tr := moderation(t, s), transferer(t, s)
	a, b := Record("app", "a"), Record("app", "b")
	for _, r := range []*store.Record{a, b} {
		if _, _, err := s.Create(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	for _, r := range []store.Report{{RecordID: a.ID, Reporter: "r2", Reason: "spam", Note: "nota"}, {RecordID: a.ID, Reporter: "r1", Reason: "fraud"},
		{RecordID: b.ID, Reporter: "r1", Reason: "offensive", Note: "otra"}} {
		if _, err := m.AddReport(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.ReviewReports(ctx, b.ID, "", true); err != nil {
		t.Fatal(err)
	}
	var scanned []store.Report
	if err := tr.ScanReports(ctx, func(r store.Report) error { scanned = append(scanned, r); return nil }); err != nil {
		t.Fatal(err)
	}
	var want []store.Report
	for _, id := range slices.Sorted(slices.Values([]string{a.ID, b.ID})) {
		reps, err := m.Reports(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		slices.SortFunc(reps, func(x, y store.Report) int { return strings.Compare(x.Reporter, y.Reporter) })
		want = append(want, reps...)
	}
	if !sameReports(scanned, want) {
		t.Fatalf("ScanReports:\n%+v\nwant, by record then reporter:\n%+v", scanned, want)
	}
	if res, err := tr.ImportReports(ctx, scanned); err != nil || res.Created != 0 || res.Present != 3 || len(res.Conflicts) != 0 {
		t.Fatalf("importing what is there: %+v, %v", res, err)
	}
	// A reviewed report from elsewhere, with a time finer than a microsecond (Badger keeps nanoseconds).
	at := time.Date(2026, 11, 23, 10, 11, 12, 123456789, time.UTC)
	moved := store.Report{RecordID: a.ID, Reporter: "r3", Reason: "not_my_number", Note: "mío", At: at, Reviewed: true}
	stray := store.Report{RecordID: store.NewID(at), Reporter: "r1", Reason: "spam", At: at}
	differs := scanned[0]
	differs.Reason = "duplicate"
	res, err := tr.ImportReports(ctx, []store.Report{moved, differs, stray})
	if err != nil || res.Created != 1 || res.Present != 0 || !slices.Equal(res.Conflicts, []string{differs.RecordID, stray.RecordID}) {
		t.Fatalf("import of a new, a differing and a stray report: %+v, %v", res, err)
	}
	if res, err := tr.ImportReports(ctx, []store.Report{moved}); err != nil || res.Present != 1 || res.Created != 0 {
		t.Fatalf("importing it again: %+v, %v", res, err)
	}
	reps, err := m.Reports(ctx, a.ID)
	if err != nil || len(reps) != 3 {
		t.Fatalf("reports of a after the import: %+v, %v", reps, err)
	}
	for _, r := range reps {
		switch r.Reporter {
		case "r3":
			if r.Reason != moved.Reason || r.Note != moved.Note || !r.Reviewed || r.At.Sub(at).Abs() >= time.Microsecond {
				t.Fatalf("imported report read back as %+v; want %+v", r, moved)
			}
		case differs.Reporter:
			if r.Reason == "duplicate" {
				t.Fatal("a differing report overwrote the stored one")
			}
		}
	}
	if ids, _ := m.Reported(ctx); !slices.Equal(ids, []string{a.ID}) {
		t.Fatalf("reported after the import: %v (a stray report must not be stored)", ids)
	}
	// r1 and r2 are unreviewed, the imported r3 is reviewed: a new reporter makes 3.
	if n, err := m.AddReport(ctx, store.Report{RecordID: a.ID, Reporter: "r4", Reason: "spam"}); err != nil || n != 3 {
		t.Fatalf("distinct unreviewed reporters after the import: %d, %v; want 3", n, err)
	}
}

// TransferAudit: ImportAudit appends what the trail lacks, in order, keeping At and a Seq that is after
// the trail's last; entries already there (counted as a multiset) are not added again, and an append
// after an import continues after it.
func testTransferAudit(t *testing.T, s store.Store) {
	m, tr := moderation(t, s), transferer(t, s)
	at := time.Date(2026, 11, 23, 9, 0, 0, 123456789, time.UTC)
	entry := func(seq int64, action, to string) store.AuditEntry {
		return store.AuditEntry{Seq: seq, At: at.Add(time.Duration(seq) * time.Second), Action: action, RecordID: fmt.Sprintf("%016d", seq%3),
			Actor: store.ActorOperator, From: "open", To: to, Reason: "spam"}
	}
	src := []store.AuditEntry{entry(1, "report", ""), entry(2, "hide", "hidden"), entry(3, "restore", "open"), entry(4, "erase", "withdrawn")}
	twin := src[1]
	twin.Seq = 5 // the same content twice is two entries
	src = append(src, twin)
	trail := func() []store.AuditEntry {
		t.Helper()
		got, err := m.Audit(ctx, 0, 1000)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	if n, err := tr.ImportAudit(ctx, src); err != nil || n != 5 {
		t.Fatalf("import into an empty trail: %d added, %v", n, err)
	}
	if got := trail(); !sameAudit(got, src) {
		t.Fatalf("trail after the import:\n%+v\nwant (seq and at kept):\n%+v", got, src)
	}
	if n, err := tr.ImportAudit(ctx, src); err != nil || n != 0 || len(trail()) != 5 {
		t.Fatalf("importing again added %d (trail %d), %v", n, len(trail()), err)
	}
	if n, err := tr.ImportAudit(ctx, []store.AuditEntry{twin, twin, twin}); err != nil || n != 1 {
		t.Fatalf("three copies of an entry held twice: %d added, %v; want 1", n, err)
	}
	own := store.AuditEntry{Action: "resolve", RecordID: "0000000000000009", Actor: store.ActorPublisher, From: "open", To: "resolved"}
	if err := m.AppendAudit(ctx, own); err != nil {
		t.Fatal(err)
	}
	later := []store.AuditEntry{entry(6, "hide", "hidden"), entry(7, "restore", "open")}
	if n, err := tr.ImportAudit(ctx, append(slices.Clone(src), later...)); err != nil || n != 2 {
		t.Fatalf("import of the trail grown by two: %d added, %v", n, err)
	}
	if err := m.AppendAudit(ctx, own); err != nil {
		t.Fatalf("an append after an import: %v", err)
	}
	got := trail()
	if len(got) != 10 {
		t.Fatalf("trail of %d entries, want 10: %+v", len(got), got)
	}
	for i, e := range got {
		if i > 0 && e.Seq <= got[i-1].Seq {
			t.Fatalf("seq not increasing: %d then %d", got[i-1].Seq, e.Seq)
		}
	}
	// Nothing moved: the earlier entries first, the imported ones after the operator's own, in order.
	wantOrder := []string{"report", "hide", "restore", "erase", "hide", "hide", "resolve", "hide", "restore", "resolve"}
	for i, e := range got {
		if e.Action != wantOrder[i] {
			t.Fatalf("entry %d is %q; want the order %v", i, e.Action, wantOrder)
		}
	}
	if !got[7].At.Equal(later[0].At) || !got[8].At.Equal(later[1].At) {
		t.Fatalf("imported entries lost their time: %v %v", got[7].At, got[8].At)
	}
}

func sameReports(a, b []store.Report) bool {
	return slices.EqualFunc(a, b, func(x, y store.Report) bool {
		return x.RecordID == y.RecordID && x.Reporter == y.Reporter && x.Reason == y.Reason && x.Note == y.Note &&
			x.At.Equal(y.At) && x.Reviewed == y.Reviewed
	})
}

func sameAudit(a, b []store.AuditEntry) bool {
	return slices.EqualFunc(a, b, func(x, y store.AuditEntry) bool { return x.Seq == y.Seq && store.AuditKey(x) == store.AuditKey(y) })
}
