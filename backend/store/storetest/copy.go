package storetest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/directaid/directaid/backend/store"
)

// Contents is everything a store holds that a Copy or a backup must carry, in a form two stores of any
// kind can be compared by: each record as JSON by id, the reports, the audit trail without its seqs, the
// responses and the secrets.
type Contents struct {
	Records   map[string]string
	Reports   []store.Report
	Audit     []string
	Responses []string
	Secrets   map[string][]byte
}

// ReadContents reads everything s holds (Contents).
func ReadContents(t testing.TB, s store.Store) Contents {
	t.Helper()
	c := Contents{Records: map[string]string{}}
	if err := s.Scan(ctx, func(r *store.Record) error {
		b, err := json.Marshal(r)
		c.Records[r.ID] = string(b)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if err := s.ScanReports(ctx, func(r store.Report) error {
		r.At = r.At.UTC()
		c.Reports = append(c.Reports, r)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for after := int64(0); ; {
		page, err := s.Audit(ctx, after, 1000)
		if err != nil {
			t.Fatal(err)
		}
		if len(page) == 0 {
			break
		}
		for _, e := range page {
			c.Audit = append(c.Audit, store.AuditKey(e))
		}
		after = page[len(page)-1].Seq
	}
	if err := s.ScanResponses(ctx, func(r *store.Response) error {
		r.CreatedAt, r.UpdatedAt, r.ExpiresAt = r.CreatedAt.UTC(), r.UpdatedAt.UTC(), r.ExpiresAt.UTC()
		b, err := json.Marshal(r)
		c.Responses = append(c.Responses, string(b))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	slices.Sort(c.Responses) // stores order them by their own collation
	slices.SortFunc(c.Reports, func(a, b store.Report) int {
		return strings.Compare(a.RecordID+"\x00"+a.Reporter, b.RecordID+"\x00"+b.Reporter)
	})
	var err error
	if c.Secrets, err = s.Secrets(ctx); err != nil {
		t.Fatal(err)
	}
	delete(c.Secrets, store.CopyWatermark) // a copy's mark in its target (store.Copy), not something it carries
	return c
}

// SameContents fails t, naming the first differences, unless a and b hold the same.
func SameContents(t testing.TB, what string, a, b Contents) {
	t.Helper()
	if len(a.Records) != len(b.Records) {
		t.Errorf("%s: %d records, want %d", what, len(b.Records), len(a.Records))
	}
	shown := 0
	for _, id := range slices.Sorted(maps.Keys(a.Records)) {
		if a.Records[id] != b.Records[id] && shown < 3 {
			t.Errorf("%s: record %s\n got %s\nwant %s", what, id, b.Records[id], a.Records[id])
			shown++
		}
	}
	if !slices.Equal(a.Reports, b.Reports) {
		t.Errorf("%s: reports\n got %+v\nwant %+v", what, b.Reports, a.Reports)
	}
	if !slices.Equal(a.Audit, b.Audit) {
		t.Errorf("%s: audit trail\n got %q\nwant %q", what, b.Audit, a.Audit)
	}
	if !slices.Equal(a.Responses, b.Responses) {
		t.Errorf("%s: responses\n got %s\nwant %s", what, b.Responses, a.Responses)
	}
	if !maps.EqualFunc(a.Secrets, b.Secrets, bytes.Equal) {
		t.Errorf("%s: secrets %x, want %x", what, b.Secrets, a.Secrets)
	}
}

// Fill gives s some of everything Contents reads: n records in every status (one withdrawn, erased),
// reports (one reviewed), audit entries, responses (one updated, one with reporters) and a secret. It
// returns the records.
func Fill(t testing.TB, s store.Store, n int) []*store.Record {
	t.Helper()
	recs := Seed(t, s, n, time.Now().Add(-time.Hour).UTC().Truncate(time.Millisecond), time.Second)
	for i, r := range recs[:min(len(recs), 12)] {
		status := store.Statuses[1+i%(len(store.Statuses)-1)]
		if _, err := s.Update(ctx, r.ID, func(rec *store.Record) error {
			if rec.Status = status; status == store.StatusWithdrawn {
				rec.ErasePersonal()
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Secret(ctx, "manage-token"); err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC)
	for i, r := range recs[:min(len(recs), 5)] {
		if _, err := s.AddReport(ctx, store.Report{RecordID: r.ID, Reporter: fmt.Sprintf("h%d", i), Reason: store.ReasonNotMyNumber, Note: "no es mío", At: at}); err != nil {
			t.Fatal(err)
		}
		if err := s.AppendAudit(ctx, store.AuditEntry{At: at.Add(time.Duration(i) * time.Minute), Action: "report", RecordID: r.ID, Actor: store.ActorCommunity, Reason: store.ReasonNotMyNumber}); err != nil {
			t.Fatal(err)
		}
		resp := &store.Response{RecordID: r.ID, ID: fmt.Sprintf("resp%d", i), CreatedAt: at, UpdatedAt: at, ExpiresAt: at.Add(48 * time.Hour),
			Status: store.ResponseActive, Message: "Tengo agua", ContactName: "Ana", ContactWhatsapp: "300 123 4567", ContactE164: "+573001234567",
			Uncounted: i == 2} // one past its network's share: copied as such, and left out of the counts
		if err := s.CreateResponse(ctx, resp); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.ReviewReports(ctx, recs[0].ID, "", false); err != nil {
		t.Fatal(err)
	}
	if _, err := s.UpdateResponse(ctx, recs[1].ID, "resp1", func(r *store.Response) error {
		r.Reporters, r.Cleared = append(r.Reporters, "h9"), []string{"h8"} // an operator cleared h8's report
		r.UpdatedAt = r.UpdatedAt.Add(time.Minute)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return recs
}

// CopyBetween is the behaviour of store.Copy from a store of one kind into one of another (or the same):
// the target then holds what the source holds — records, reports, audit trail, responses, secrets — and
// serves them (a list, the aggregates, a response count); a second Copy finds everything there and adds
// nothing; a target holding another installation's record is refused unless merging; a record the
// target holds with other content is a conflict, reported in the error, left as it is.
func CopyBetween(t *testing.T, openFrom, openTo Open) {
	from, to := openFrom(t, nil), openTo(t, nil)
	t.Cleanup(func() { _ = from.Close(); _ = to.Close() })
	recs := Fill(t, from, 40)
	var out strings.Builder
	opts := store.CopyOptions{From: store.Named{Name: "a", Title: "A", Where: "a-db"}, To: store.Named{Name: "b", Title: "B", Where: "b-db"}, Batch: 7, Out: &out}
	if err := store.Copy(ctx, from, to, opts); err != nil {
		t.Fatalf("copy: %v\n%s", err, out.String())
	}
	want := ReadContents(t, from)
	SameContents(t, "after a copy", want, ReadContents(t, to))
	for _, line := range []string{"read 40 records from a", ": 40 created, 0 already there, 0 conflicts", "B now holds 40 records",
		"server secrets: 1 copied", "community reports: 5 read, 5 created", "responses: 5 read, 5 created, 0 already there, 0 conflicts",
		"audit trail: 5 entries read, 5 appended"} {
		if !strings.Contains(out.String(), line) {
			t.Errorf("the copy's report lacks %q:\n%s", line, out.String())
		}
	}
	// The target serves what it took: lists, aggregates and counts from its own indexes and counters.
	aggFrom, err := from.Aggregates(ctx, []string{"eje-cafetero"})
	if err != nil {
		t.Fatal(err)
	}
	aggTo, err := to.Aggregates(ctx, []string{"eje-cafetero"})
	if err != nil {
		t.Fatal(err)
	}
	if a, b := aggFrom["eje-cafetero"], aggTo["eje-cafetero"]; a == nil || b == nil || !maps.Equal(a.Statuses, b.Statuses) {
		t.Errorf("aggregates after a copy: %+v, want %+v", b, a)
	}
	res, err := to.List(ctx, &store.ListSpec{EmergencySlug: "eje-cafetero", Limit: 100})
	if err != nil || len(res.Records) == 0 {
		t.Fatalf("a list of the target: %+v, %v", res, err)
	}
	ids := []string{recs[0].ID, recs[1].ID, recs[2].ID} // recs[2]'s one response is uncounted
	cFrom, err1 := from.ResponseCounts(ctx, ids, time.Date(2026, 11, 2, 11, 0, 0, 0, time.UTC))
	cTo, err2 := to.ResponseCounts(ctx, ids, time.Date(2026, 11, 2, 11, 0, 0, 0, time.UTC))
	if err := errors.Join(err1, err2); err != nil || !maps.Equal(cFrom, cTo) || len(cTo) != 2 {
		t.Errorf("response counts after a copy: %v, want %v (%v)", cTo, cFrom, err)
	}

	// Again: everything is there.
	out.Reset()
	if err := store.Copy(ctx, from, to, opts); err != nil {
		t.Fatalf("a second copy: %v\n%s", err, out.String())
	}
	for _, line := range []string{": 0 created, 40 already there, 0 conflicts", "all of them from this source", "server secrets: 0 copied, 1 already the same",
		"community reports: 5 read, 0 created, 5 already there", "responses: 5 read, 0 created, 5 already there, 0 conflicts", "audit trail: 5 entries read, 0 appended"} {
		if !strings.Contains(out.String(), line) {
			t.Errorf("the second copy's report lacks %q:\n%s", line, out.String())
		}
	}
	SameContents(t, "after a second copy", want, ReadContents(t, to))

	// A record of the target that the source lacks: refused unless merging.
	foreign := Record("other", "x")
	if _, _, err := to.Create(ctx, foreign); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if err := store.Copy(ctx, from, to, opts); err == nil || !strings.Contains(err.Error(), "1 of them not in a-db") || !strings.Contains(err.Error(), "--merge") {
		t.Fatalf("a target with another installation's record: %v", err)
	}
	// What the source changed since the first copy — a record resolved, one erased with its responses, a
	// report reviewed, a response hidden — is brought up to date, as the last run of a migration from a
	// backup needs (an erased phone must not come back); what the target changed itself, or what changed
	// without a later updatedAt, stays a conflict, left as the target has it.
	resolved, err := from.Update(ctx, recs[20].ID, func(r *store.Record) error { r.Status = store.StatusResolved; return nil })
	if err != nil {
		t.Fatal(err)
	}
	erased, err := from.Update(ctx, recs[3].ID, func(r *store.Record) error { r.Status = store.StatusWithdrawn; r.ErasePersonal(); return nil })
	if err != nil {
		t.Fatal(err)
	}
	if err := from.DeleteResponses(ctx, recs[3].ID); err != nil {
		t.Fatal(err)
	}
	if err := from.ReviewReports(ctx, recs[4].ID, "h4", true); err != nil {
		t.Fatal(err)
	}
	if _, err := from.UpdateResponse(ctx, recs[4].ID, "resp4", func(r *store.Response) error {
		r.Status, r.Reporters, r.UpdatedAt = "hidden", []string{"h1", "h2", "h3"}, r.UpdatedAt.Add(time.Hour)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	ownChange, err := to.Update(ctx, recs[21].ID, func(r *store.Record) error { r.Status = store.StatusResolved; return nil })
	if err != nil {
		t.Fatal(err)
	}
	// Withdrawn in the target (its personal data erased there), then renewed in the source: the target's
	// withdrawal stands, and the phone never comes back.
	erasedThere, err := to.Update(ctx, recs[22].ID, func(r *store.Record) error { r.Status = store.StatusWithdrawn; r.ErasePersonal(); return nil })
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Millisecond)
	if _, err := from.Update(ctx, recs[22].ID, func(r *store.Record) error { r.Urgency = "urgent"; return nil }); err != nil {
		t.Fatal(err)
	}
	if _, err := from.UpdateResponse(ctx, recs[2].ID, "resp2", func(r *store.Response) error { r.Message = "Ya no"; return nil }); err != nil {
		t.Fatal(err)
	}
	opts.Merge = true
	out.Reset()
	err = store.Copy(ctx, from, to, opts)
	if err == nil || !strings.Contains(err.Error(), "2 records were not copied") || !strings.Contains(err.Error(), ownChange.ID) ||
		!strings.Contains(err.Error(), erasedThere.ID) ||
		!strings.Contains(err.Error(), "1 responses were not copied") || strings.Contains(err.Error(), "reports were not copied") {
		t.Fatalf("a copy over records changed since: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "2 brought up to date, 2 conflicts") || !strings.Contains(out.String(), "responses: 1 brought up to date") {
		t.Errorf("the copy's report lacks the records and responses brought up to date:\n%s", out.String())
	}
	if got, err := to.Get(ctx, erasedThere.ID); err != nil || got.Status != store.StatusWithdrawn || got.ContactWhatsapp != "" || got.ContactName != "" {
		t.Errorf("a record withdrawn in the target, then changed in the source: %+v, %v", got, err)
	}
	if got, err := to.Get(ctx, resolved.ID); err != nil || got.Status != store.StatusResolved {
		t.Errorf("a record resolved in the source since: %+v, %v", got, err)
	}
	if got, err := to.Get(ctx, erased.ID); err != nil || got.Status != store.StatusWithdrawn || got.ContactWhatsapp != "" || got.ContactName != "" || got.Address != "" {
		t.Errorf("a record erased in the source since: %+v, %v", got, err)
	}
	if rs, err := to.RecordResponses(ctx, erased.ID); err != nil || len(rs) != 0 {
		t.Errorf("the responses of a record erased in the source since: %+v, %v", rs, err)
	}
	if reps, err := to.Reports(ctx, recs[4].ID); err != nil || len(reps) != 1 || !reps[0].Reviewed || reps[0].Note != "" {
		t.Errorf("a report reviewed in the source since: %+v, %v", reps, err)
	}
	if rs, err := to.RecordResponses(ctx, recs[4].ID); err != nil || len(rs) != 1 || rs[0].Status != "hidden" || len(rs[0].Reporters) != 3 {
		t.Errorf("a response hidden in the source since: %+v, %v", rs, err)
	}
	if got, err := to.Get(ctx, ownChange.ID); err != nil || got.Status != store.StatusResolved {
		t.Fatalf("the target's own change was overwritten: %+v, %v", got, err)
	}
	if rs, err := to.RecordResponses(ctx, recs[2].ID); err != nil || len(rs) != 1 || rs[0].Message == "Ya no" {
		t.Errorf("a response changed without a later updatedAt was overwritten: %+v, %v", rs, err)
	}
	// Once more: what was brought up to date is there; the conflicts stay.
	out.Reset()
	err = store.Copy(ctx, from, to, opts)
	if err == nil || !strings.Contains(err.Error(), "2 records were not copied") || !strings.Contains(err.Error(), "1 responses were not copied") ||
		!strings.Contains(out.String(), "already there, 2 conflicts") {
		t.Fatalf("a copy after bringing records up to date: %v\n%s", err, out.String())
	}
}

// testTransferResponses: ScanResponses hands over every response, ImportResponses stores them as given,
// counts identical ones as present and refuses differing ones and those of unknown records.
func testTransferResponses(t *testing.T, s store.Store) {
	recs := Fill(t, s, 6)
	var got []*store.Response
	if err := s.ScanResponses(ctx, func(r *store.Response) error { got = append(got, r); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(got) != 5 {
		t.Fatalf("ScanResponses: %d responses, want 5", len(got))
	}
	res, err := s.ImportResponses(ctx, got)
	if err != nil || res.Created != 0 || res.Present != 5 || len(res.Conflicts) != 0 {
		t.Fatalf("importing what is there: %+v, %v", res, err)
	}
	other := *got[0]
	other.Message = "otro"
	fresh := *got[0]
	fresh.RecordID, fresh.ID = recs[5].ID, "nuevo"
	orphan := *got[0]
	orphan.RecordID = "0000000000000000"
	res, err = s.ImportResponses(ctx, []*store.Response{&other, &fresh, &orphan})
	if err != nil || res.Created != 1 || res.Present != 0 || !slices.Equal(res.Conflicts, []string{other.RecordID, orphan.RecordID}) {
		t.Fatalf("importing a differing, a new and an orphan response: %+v, %v", res, err)
	}
	rs, err := s.RecordResponses(ctx, recs[5].ID)
	if err != nil || len(rs) != 1 || !store.SameResponse(rs[0], &fresh) {
		t.Fatalf("the imported response reads back as %+v, %v", rs, err)
	}
	if rs, _ := s.RecordResponses(ctx, other.RecordID); len(rs) != 1 || rs[0].Message == "otro" {
		t.Fatalf("a differing response overwrote the stored one: %+v", rs)
	}
}

// testImport: Import stores records as given (status, revision, updatedAt and every field), indexed and
// counted as written ones, once: identical ones are present, one whose pair or id is taken by other
// content is a conflict, never overwritten.
func testImport(t *testing.T, s store.Store) {
	base := time.Now().Add(-48 * time.Hour).UTC().Truncate(time.Millisecond)
	var recs []*store.Record
	for i := range 5 {
		r := Record("imp", fmt.Sprintf("r%d", i))
		r.CreatedAt = base.Add(time.Duration(i) * time.Minute)
		r.ID = store.NewID(r.CreatedAt)
		r.UpdatedAt = r.CreatedAt.Add(time.Hour)
		r.Status = store.Statuses[i%len(store.Statuses)]
		r.Revision = i
		recs = append(recs, r)
	}
	res, err := s.Import(ctx, recs)
	if err != nil || res.Created != 5 || res.Present != 0 || len(res.Conflicts) != 0 {
		t.Fatalf("import: %+v, %v", res, err)
	}
	for _, r := range recs {
		got, err := s.Get(ctx, r.ID)
		if err != nil {
			t.Fatal(err)
		}
		a, _ := json.Marshal(got)
		b, _ := json.Marshal(r)
		if !bytes.Equal(a, b) {
			t.Errorf("imported record reads back as\n%s\nwant\n%s", a, b)
		}
		if byPair, err := s.Lookup(ctx, r.Source, r.ExternalID); err != nil || byPair.ID != r.ID {
			t.Errorf("Lookup of an imported pair: %+v, %v", byPair, err)
		}
	}
	if n, err := s.Count(ctx); err != nil || n != 5 {
		t.Fatalf("Count after an import: %d, %v", n, err)
	}
	aggs, err := s.Aggregates(ctx, []string{"eje-cafetero"})
	if err != nil || aggs["eje-cafetero"] == nil || aggs["eje-cafetero"].Statuses[store.StatusOpen] != 1 {
		t.Fatalf("aggregates after an import: %+v, %v", aggs["eje-cafetero"], err)
	}
	list, err := s.List(ctx, &store.ListSpec{EmergencySlug: "eje-cafetero", Status: store.StatusResolved, Limit: 10})
	if err != nil || len(list.Records) != 1 || list.Records[0].ID != recs[1].ID {
		t.Fatalf("a list by status after an import: %+v, %v", list, err)
	}
	// A publication after the import is not answered with an imported record unless it is its pair.
	if stored, created, err := s.Create(ctx, Record("imp", "r0")); err != nil || created || stored.ID != recs[0].ID {
		t.Fatalf("a Create of an imported pair: %+v %v %v", stored, created, err)
	}
	again, err := s.Import(ctx, recs)
	if err != nil || again.Created != 0 || again.Present != 5 || len(again.Conflicts) != 0 {
		t.Fatalf("importing the same again: %+v, %v", again, err)
	}
	pairTaken := *recs[2]
	pairTaken.ID = store.NewID(pairTaken.CreatedAt.Add(time.Second))
	idTaken := *recs[3]
	idTaken.ExternalID = "otro"
	changed := *recs[4]
	changed.Title = "otro título"
	res, err = s.Import(ctx, []*store.Record{&pairTaken, &idTaken, &changed})
	if err != nil || res.Created != 0 || res.Present != 0 || len(res.Conflicts) != 3 {
		t.Fatalf("importing records whose pair or id is taken: %+v, %v", res, err)
	}
	if got, _ := s.Get(ctx, changed.ID); got.Title == "otro título" {
		t.Fatal("a conflicting import overwrote a record")
	}
	if n, _ := s.Count(ctx); n != 5 {
		t.Fatalf("Count after conflicting imports: %d, want 5", n)
	}
}

// testMaintain: a maintenance cycle, run after an erasure, leaves every record, report and response
// readable as before, and the store serving writes.
func testMaintain(t *testing.T, s store.Store) {
	recs := Fill(t, s, 20)
	if _, err := s.Update(ctx, recs[15].ID, func(r *store.Record) error {
		r.Status = store.StatusWithdrawn
		r.ErasePersonal()
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteResponses(ctx, recs[3].ID); err != nil {
		t.Fatal(err)
	}
	before := ReadContents(t, s)
	for range 2 {
		if err := s.Maintain(ctx); err != nil {
			t.Fatalf("Maintain: %v", err)
		}
	}
	SameContents(t, "after Maintain", before, ReadContents(t, s))
	if _, _, err := s.Create(ctx, Record("app", "after-maintain")); err != nil {
		t.Fatalf("a Create after Maintain: %v", err)
	}
	if err := s.Probe(ctx); err != nil {
		t.Fatalf("Probe after Maintain: %v", err)
	}
	parts, _, err := s.DiskUsage()
	if err != nil || len(parts) == 0 {
		t.Fatalf("DiskUsage: %v, %v", parts, err)
	}
}

// RunDriver is the behaviour of a store's registration (store.Driver), on the databases where gives
// (a new one each call): the driver is found by name; what Open returns serves and closes; OpenTool
// opens the same database again with what it held; a store that backs itself up (store.Backupper)
// restores with the driver's Restore into the very same contents, and a damaged backup fails; Verify,
// when the driver has it, finds the closed database consistent; and an embedded store's OpenTool
// refuses a directory without a database rather than make one.
func RunDriver(t *testing.T, name string, where func(t *testing.T) string) {
	d, err := store.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(store.Names(), name) || d.Name != name || d.Title == "" {
		t.Fatalf("driver %q: %+v, names %v", name, d, store.Names())
	}
	at := where(t)
	if desc, err := d.Describe(at); err != nil || desc == "" || (strings.Contains(at, "password=") && strings.Contains(desc, "password")) {
		t.Fatalf("Describe(%q) = %q, %v", at, desc, err)
	}
	s, err := d.Open(store.Config{Where: at})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	Fill(t, s, 30)
	if err := s.Probe(ctx); err != nil {
		t.Fatalf("Probe of a store the driver opened: %v", err)
	}
	want := ReadContents(t, s)
	say := func(string) {}

	if b, ok := s.(store.Backupper); ok {
		if d.Restore == nil {
			t.Fatal("the store backs itself up, but its driver has no Restore")
		}
		var backup bytes.Buffer
		if err := b.Backup(&backup); err != nil {
			t.Fatal(err)
		}
		damaged := bytes.Clone(backup.Bytes())
		damaged[len(damaged)/2] ^= 0x40
		if _, err := d.Restore(where(t), bytes.NewReader(damaged)); err == nil {
			t.Error("a damaged backup restored without an error")
		}
		into := where(t)
		checked, err := d.Restore(into, &backup)
		if err != nil || checked == "" {
			t.Fatalf("Restore: %q, %v", checked, err)
		}
		r, err := d.OpenTool(ctx, into, false, say)
		if err != nil {
			t.Fatal(err)
		}
		SameContents(t, "restored from a backup", want, ReadContents(t, r))
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if d.Verify != nil {
		v, err := d.Verify(at)
		if err != nil || len(v.Problems) != 0 || v.Checked == 0 {
			t.Fatalf("Verify of the closed database: %+v, %v", v, err)
		}
		n := 0
		for _, c := range v.Records {
			n += c
		}
		if n != len(want.Records) {
			t.Fatalf("Verify counted %d records, want %d", n, len(want.Records))
		}
	}
	tool, err := d.OpenTool(ctx, at, false, say)
	if err != nil {
		t.Fatal(err)
	}
	SameContents(t, "opened again by OpenTool", want, ReadContents(t, tool))
	if err := tool.Close(); err != nil {
		t.Fatal(err)
	}
	if d.Embedded {
		if s, err := d.OpenTool(ctx, where(t), false, say); err == nil {
			_ = s.Close()
			t.Fatal("OpenTool without create opened a directory that held no database")
		}
	}
}
