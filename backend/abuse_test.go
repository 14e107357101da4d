package backend_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/directaid/directaid/backend"
	"github.com/directaid/directaid/backend/store"
	"github.com/directaid/directaid/backend/store/storetest"
	"github.com/directaid/directaid/internal/testserver"
	"github.com/directaid/directaid/schema"
)

// TestReportsCannotBlankTheNetwork: five addresses report every record of an emergency of 400, phone and
// spam alike, over ten minutes: at most 10 phones and 3 records are hidden without a moderator, every
// report is recorded, the rest wait in the queue and say so (outcome queued). A person reporting their
// own number elsewhere still hides it at once, once the hour has passed; an address whose report an
// operator reviewed does not hide that phone again.
func TestReportsCannotBlankTheNetwork(t *testing.T) {
	clk := &fakeClock{at: time.Now().UTC()}
	s := newExpiryServer(t, clk)
	ctx := context.Background()
	var ids []string
	for i := range 400 {
		rec := storetest.Record("app", fmt.Sprintf("r-%d", i))
		rec.ContactWhatsapp = fmt.Sprintf("300%07d", i)
		rec.ContactE164 = "+57" + rec.ContactWhatsapp
		stored, _, err := s.st.Create(ctx, rec)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, stored.ID)
	}
	report := func(addr, id, reason string) schema.ReportResult {
		t.Helper()
		r := httptest.NewRequest("POST", "http://ayuda.test"+schema.HelpPath+"/"+id+schema.ReportsSuffix, strings.NewReader(`{"reason":"`+reason+`"}`))
		r.Header.Set("Content-Type", "application/json")
		r.RemoteAddr = addr + ":40000"
		w := httptest.NewRecorder()
		s.h.ServeHTTP(w, r)
		var res schema.ReportResult
		if err := json.Unmarshal(w.Body.Bytes(), &res); err != nil || w.Code != http.StatusAccepted {
			if w.Code == http.StatusGone { // hidden meanwhile: a report of it is refused, as for anyone
				return schema.ReportResult{Outcome: "gone"}
			}
			t.Fatalf("report %s by %s: %d %s", id, addr, w.Code, w.Body.String())
		}
		return res
	}
	outcomes := map[string]int{}
	start := clk.now()
	for i, id := range ids {
		clk.set(start.Add(time.Duration(i) * 1500 * time.Millisecond)) // 400 records over 10 minutes
		for a := 2; a <= 6; a++ {
			addr := fmt.Sprintf("127.0.0.%d", a)
			outcomes[report(addr, id, store.ReasonNotMyNumber).Outcome]++
			outcomes[report(addr, id, "spam").Outcome]++
		}
	}
	phones, records := 0, 0
	for _, id := range ids {
		rec, err := s.st.Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if rec.ContactHidden {
			phones++
		}
		if rec.Status == store.StatusHidden {
			records++
		}
	}
	t.Logf("hidden: %d phones, %d records; outcomes %v", phones, records, outcomes)
	if phones > 10 || records > 3 || phones == 0 || records == 0 {
		t.Fatalf("five addresses hid %d phones and %d records automatically: want 1…10 and 1…3", phones, records)
	}
	if outcomes[schema.ReportQueued] == 0 || outcomes[schema.ReportHidPhone] != phones || outcomes[schema.ReportHidRecord] != records {
		t.Fatalf("outcomes %v do not tell what happened (%d phones, %d records hidden)", outcomes, phones, records)
	}
	m, err := s.svc.StoreModeration()
	if err != nil {
		t.Fatal(err)
	}
	recorded := 0
	for _, id := range ids {
		reps, err := m.Reports(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		recorded += len(reps)
	}
	// A reporter counts once per record (its later report replaces its earlier one): 5 per record at
	// least, except where a record was hidden before every address had reported it.
	if recorded < 5*(len(ids)-records) {
		t.Fatalf("%d reports recorded for %d records", recorded, len(ids))
	}
	// An hour on, the breaker has closed: the real owner of a number hides it at once.
	clk.set(clk.now().Add(2 * time.Hour))
	fresh, _, err := s.st.Create(ctx, storetest.Record("app", "victim"))
	if err != nil {
		t.Fatal(err)
	}
	victim := fresh.ID
	if res := report("127.0.0.99", victim, store.ReasonNotMyNumber); res.Outcome != schema.ReportHidPhone {
		t.Fatalf("the owner of a number, after the hour: %+v", res)
	}
	// The operator restores it; the same address cannot hide it again by itself.
	if _, err := s.svc.Moderate(ctx, victim, backend.ActionRestore, ""); err != nil {
		t.Fatal(err)
	}
	if res := report("127.0.0.99", victim, store.ReasonNotMyNumber); res.Outcome != schema.ReportQueued || !strings.Contains(res.Message, "ya revisó un reporte suyo") {
		t.Fatalf("a report against a restored phone, by the same address: %+v", res)
	}
}

// TestRestoreByReporter: the queue tells reporters apart (a hash, never an address), and restoring by one
// reporter's hash brings back what it hid, and nothing another reporter hid.
func TestRestoreByReporter(t *testing.T) {
	s := newExpiryServer(t, &fakeClock{at: time.Now().UTC()})
	ctx := context.Background()
	var ids []string
	for i := range 3 {
		rec, _, err := s.st.Create(ctx, storetest.Record("app", fmt.Sprintf("r-%d", i)))
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, rec.ID)
	}
	for i, addr := range []string{"127.0.0.7", "127.0.0.7", "127.0.0.8"} {
		r := httptest.NewRequest("POST", "http://ayuda.test"+schema.HelpPath+"/"+ids[i]+schema.ReportsSuffix, strings.NewReader(`{"reason":"not_my_number"}`))
		r.Header.Set("Content-Type", "application/json")
		r.RemoteAddr = addr + ":40000"
		w := httptest.NewRecorder()
		s.h.ServeHTTP(w, r)
		if w.Code != http.StatusAccepted || !strings.Contains(w.Body.String(), schema.ReportHidPhone) {
			t.Fatalf("report %d: %d %s", i, w.Code, w.Body.String())
		}
	}
	q, err := s.svc.ModerationQueue(ctx)
	if err != nil || len(q) != 3 {
		t.Fatalf("queue: %v %v", q, err)
	}
	hash := map[string]string{}
	for _, it := range q {
		if len(it.Reports) != 1 || it.Reports[0].Reporter == "" || strings.Contains(it.Reports[0].Reporter, "127.0.0") ||
			!strings.HasSuffix(it.Page, schema.RecordPath(it.Record.ID)) {
			t.Fatalf("queue item %s (page %q): reports %+v", it.Record.ID, it.Page, it.Reports)
		}
		hash[it.Record.ID] = it.Reports[0].Reporter
	}
	if hash[ids[0]] != hash[ids[1]] || hash[ids[0]] == hash[ids[2]] {
		t.Fatalf("reporter hashes do not tell the two addresses apart: %v", hash)
	}
	// A hash nobody has, or none, is said to be unknown, not taken as «nothing to restore».
	for _, unknown := range []string{"deadbeef", "", "  "} {
		if restored, err := s.svc.RestoreByReporter(ctx, unknown); !errors.Is(err, backend.ErrUnknownReporter) || !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("restore by reporter %q: %v %v, want ErrUnknownReporter", unknown, restored, err)
		}
	}
	// The start of the hash, as the site shows it (8 characters), names the reporter.
	restored, err := s.svc.RestoreByReporter(ctx, strings.ToUpper(hash[ids[0]][:8]))
	if err != nil || len(restored) != 2 {
		t.Fatalf("restore by reporter: %v %v", restored, err)
	}
	for i, id := range ids {
		rec, err := s.st.Get(ctx, id)
		if err != nil || rec.ContactHidden != (i == 2) {
			t.Fatalf("record %d after the restore: hidden phone %v, %v", i, rec.ContactHidden, err)
		}
	}

	// A campaign that also reported a victim's hidden phone: undoing it leaves the victim's hiding.
	victim := ids[2]
	if res, err := s.svc.Report(ctx, victim, &schema.ReportInput{Reason: "spam"}, "127.0.0.7"); err != nil || res.Outcome != schema.ReportCounted {
		t.Fatalf("the campaign's spam report of the victim's record: %+v %v", res, err)
	}
	restored, err = s.svc.RestoreByReporter(ctx, hash[ids[0]])
	if err != nil || slices.Contains(restored, victim) {
		t.Fatalf("restore by reporter, again: %v %v", restored, err)
	}
	if rec, err := s.st.Get(ctx, victim); err != nil || !rec.ContactHidden || rec.Status != store.StatusOpen {
		t.Fatalf("the victim's record after undoing the campaign: %+v %v", rec, err)
	}
	// Nor when the campaign also hid the record: it is shown again, its phone still hidden.
	for _, addr := range []string{"127.0.0.9"} { // the third distinct reporter hides it
		if _, err := s.svc.Report(ctx, victim, &schema.ReportInput{Reason: "spam"}, addr); err != nil {
			t.Fatal(err)
		}
	}
	if rec, _ := s.st.Get(ctx, victim); rec.Status != store.StatusHidden {
		t.Fatalf("three reporters did not hide the victim's record: %s", rec.Status)
	}
	q, _ = s.svc.ModerationQueue(ctx)
	var campaign string
	for _, it := range q {
		for _, r := range it.Reports {
			if it.Record.ID == victim && r.Reason == "spam" && r.Reporter != hash[ids[0]] {
				campaign = r.Reporter
			}
		}
	}
	if restored, err := s.svc.RestoreByReporter(ctx, campaign); err != nil || !slices.Equal(restored, []string{victim}) {
		t.Fatalf("restore by the campaign's reporter: %v %v", restored, err)
	}
	if rec, err := s.st.Get(ctx, victim); err != nil || !rec.ContactHidden || rec.Status != store.StatusOpen {
		t.Fatalf("the victim's record after undoing the record's hiding: status %s, hidden phone %v, %v", rec.Status, rec.ContactHidden, err)
	}
}

// TestWithdrawnRecordsDoNotRaiseTheBreakers: the breakers' shares are of the emergency's open records.
// Records published and withdrawn at once (which nobody sees) do not raise what reports may hide: with 20
// open records beside 1,980 withdrawn ones, three reporters hide 3 records (the floor), not 10 (0.5% of
// 2,000).
func TestWithdrawnRecordsDoNotRaiseTheBreakers(t *testing.T) {
	s := newExpiryServer(t, &fakeClock{at: time.Now().UTC()})
	ctx := context.Background()
	var open []string
	for i := range 2000 {
		rec := storetest.Record("app", fmt.Sprintf("w-%d", i))
		if i >= 20 {
			rec.Status = store.StatusWithdrawn
		}
		stored, _, err := s.st.Create(ctx, rec)
		if err != nil {
			t.Fatal(err)
		}
		if i < 20 {
			open = append(open, stored.ID)
		}
	}
	hid := 0
	for _, id := range open {
		for _, addr := range []string{"198.51.100.1", "198.51.100.2", "198.51.100.3"} {
			res, err := s.svc.Report(ctx, id, &schema.ReportInput{Reason: "spam"}, addr)
			if err != nil {
				t.Fatal(err)
			}
			if res.Outcome == schema.ReportHidRecord {
				hid++
			}
		}
	}
	if hid != 3 {
		t.Fatalf("three reporters hid %d of 20 open records beside 1,980 withdrawn ones: want 3", hid)
	}
}

// An erased record (its personal data removed) cannot be shown again by an operator: restore and a listed
// status answer ErrErased and change nothing; nor hidden (it would read «under review» with no way out).
func TestErasedRecordStaysDown(t *testing.T) {
	s := newExpiryServer(t, &fakeClock{at: time.Now().UTC()})
	ctx := context.Background()
	rec, _, err := s.st.Create(ctx, storetest.Record("app", "erase-me"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.svc.Moderate(ctx, rec.ID, backend.ActionErase, ""); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ action, status string }{{backend.ActionRestore, ""}, {backend.ActionSetStatus, store.StatusOpen},
		{backend.ActionSetStatus, store.StatusResolved}, {backend.ActionSetStatus, store.StatusExpired},
		{backend.ActionSetStatus, store.StatusHidden}, {backend.ActionHide, ""}} {
		if _, err := s.svc.Moderate(ctx, rec.ID, c.action, c.status); !errors.Is(err, backend.ErrErased) {
			t.Errorf("%s %s of an erased record: %v, want ErrErased", c.action, c.status, err)
		}
	}
	if got, err := s.st.Get(ctx, rec.ID); err != nil || got.Status != store.StatusWithdrawn {
		t.Fatalf("after the refused actions: %+v %v", got, err)
	}
	if _, err := s.svc.Moderate(ctx, rec.ID, backend.ActionErase, ""); err != nil {
		t.Fatalf("erasing an erased record again: %v", err)
	}
}

// TestRestoredRecordStaysRestored: three reporters hide a record, an operator restores it, and the same
// three reporting again do not hide it again (the operator's review stands against them); a fourth
// reporter alone does not either.
func TestRestoredRecordStaysRestored(t *testing.T) {
	s := newExpiryServer(t, &fakeClock{at: time.Now().UTC()})
	ctx := context.Background()
	id := openRecords(t, s, 40)[0]
	reporters := []string{"198.51.100.1", "198.51.100.2", "198.51.100.3"}
	report := func(addr string) string {
		t.Helper()
		res, err := s.svc.Report(ctx, id, &schema.ReportInput{Reason: "spam"}, addr)
		if err != nil {
			t.Fatalf("report from %s: %v", addr, err)
		}
		return res.Outcome
	}
	for _, addr := range reporters {
		report(addr)
	}
	if rec, _ := s.st.Get(ctx, id); rec.Status != store.StatusHidden {
		t.Fatalf("three reporters did not hide the record: %s", rec.Status)
	}
	if _, err := s.svc.Moderate(ctx, id, backend.ActionRestore, ""); err != nil {
		t.Fatal(err)
	}
	for _, addr := range append(reporters, "198.51.100.4") {
		if out := report(addr); out == schema.ReportHidRecord {
			t.Fatalf("after the operator's restore, the report from %s hid the record again", addr)
		}
	}
	if rec, _ := s.st.Get(ctx, id); rec.Status != store.StatusOpen {
		t.Fatalf("the restored record: %s", rec.Status)
	}
	// Two more new reporters make three that the operator did not review: they hide it.
	for _, addr := range []string{"198.51.100.5", "198.51.100.6"} {
		report(addr)
	}
	if rec, _ := s.st.Get(ctx, id); rec.Status != store.StatusHidden {
		t.Fatalf("three new reporters did not hide the restored record: %s", rec.Status)
	}
}

// TestRestoreGivesBackTheStatus: a record its publisher resolved, then hidden by reports, comes back
// resolved from an operator's restore (with no phone shown), not open; an open one comes back open.
func TestRestoreGivesBackTheStatus(t *testing.T) {
	s := newExpiryServer(t, &fakeClock{at: time.Now().UTC()})
	ctx := context.Background()
	ids := openRecords(t, s, 40)
	resolved, open := ids[0], ids[1]
	if _, err := s.st.Update(ctx, resolved, func(r *store.Record) error { r.Status = store.StatusResolved; return nil }); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{resolved, open} {
		for _, addr := range []string{"198.51.100.1", "198.51.100.2", "198.51.100.3"} {
			if _, err := s.svc.Report(ctx, id, &schema.ReportInput{Reason: "spam"}, addr); err != nil {
				t.Fatal(err)
			}
		}
		if rec, _ := s.st.Get(ctx, id); rec.Status != store.StatusHidden {
			t.Fatalf("%s not hidden by three reports: %s", id, rec.Status)
		}
		if _, err := s.svc.Moderate(ctx, id, backend.ActionRestore, ""); err != nil {
			t.Fatal(err)
		}
	}
	if rec, _ := s.st.Get(ctx, resolved); rec.Status != store.StatusResolved || rec.HiddenFrom != "" {
		t.Errorf("the resolved record after hide and restore: %s (hiddenFrom %q)", rec.Status, rec.HiddenFrom)
	}
	if rec, _ := s.st.Get(ctx, open); rec.Status != store.StatusOpen {
		t.Errorf("the open record after hide and restore: %s", rec.Status)
	}
	// An operator's own hide keeps the status too.
	if _, err := s.svc.Moderate(ctx, resolved, backend.ActionHide, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := s.svc.Moderate(ctx, resolved, backend.ActionRestore, ""); err != nil {
		t.Fatal(err)
	}
	if rec, _ := s.st.Get(ctx, resolved); rec.Status != store.StatusResolved {
		t.Errorf("the resolved record after an operator's hide and restore: %s", rec.Status)
	}
	// A restore of a record that is not hidden (a moderator clearing its reports, or a second click)
	// keeps its status; set_status hidden keeps the one it had too.
	if _, err := s.svc.Moderate(ctx, resolved, backend.ActionRestore, ""); err != nil {
		t.Fatal(err)
	}
	if rec, _ := s.st.Get(ctx, resolved); rec.Status != store.StatusResolved {
		t.Errorf("a restore of a resolved record that was not hidden: %s", rec.Status)
	}
	if _, err := s.svc.Moderate(ctx, resolved, backend.ActionSetStatus, store.StatusHidden); err != nil {
		t.Fatal(err)
	}
	if _, err := s.svc.Moderate(ctx, resolved, backend.ActionRestore, ""); err != nil {
		t.Fatal(err)
	}
	if rec, _ := s.st.Get(ctx, resolved); rec.Status != store.StatusResolved {
		t.Errorf("the resolved record after set_status hidden and restore: %s", rec.Status)
	}
}

// openRecords stores n open records and returns their ids: an emergency with that many, so that the
// breakers' share allows the hides a test makes.
func openRecords(t *testing.T, s *expiryServer, n int) []string {
	t.Helper()
	var ids []string
	for i := range n {
		rec, _, err := s.st.Create(t.Context(), storetest.Record("app", fmt.Sprintf("open-%d", i)))
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, rec.ID)
	}
	return ids
}

// TestRestoreByReporterUndoesOnlyItsOwn: undoing one reporter's reports leaves a record an operator hid
// hidden, and reviews that reporter's reports only: the others stay in the queue and still count.
func TestRestoreByReporterUndoesOnlyItsOwn(t *testing.T) {
	s := newExpiryServer(t, &fakeClock{at: time.Now().UTC()})
	ctx := context.Background()
	ids := openRecords(t, s, 40)
	byOperator, byMany := ids[0], ids[1]
	reporterOf := func(id, addr string) string {
		t.Helper()
		if _, err := s.svc.Report(ctx, id, &schema.ReportInput{Reason: "spam"}, addr); err != nil {
			t.Fatal(err)
		}
		q, _ := s.svc.ModerationQueue(ctx)
		for _, it := range q {
			if it.Record.ID == id {
				for _, r := range it.Reports {
					if r.At.Equal(it.Reports[len(it.Reports)-1].At) {
						return r.Reporter
					}
				}
			}
		}
		t.Fatalf("no report of %s in the queue", id)
		return ""
	}
	campaign := reporterOf(byOperator, "198.51.100.7")
	if _, err := s.svc.Moderate(ctx, byOperator, backend.ActionHide, ""); err != nil {
		t.Fatal(err)
	}
	// byMany: hidden by three reporters, the campaign among them.
	for _, addr := range []string{"198.51.100.7", "198.51.100.8", "198.51.100.9"} {
		if _, err := s.svc.Report(ctx, byMany, &schema.ReportInput{Reason: "spam"}, addr); err != nil {
			t.Fatal(err)
		}
	}
	restored, err := s.svc.RestoreByReporter(ctx, campaign)
	if err != nil || !slices.Equal(restored, []string{byMany}) {
		t.Fatalf("restore by the campaign: %v %v", restored, err)
	}
	if rec, _ := s.st.Get(ctx, byOperator); rec.Status != store.StatusHidden {
		t.Errorf("the record the operator hid, after undoing a reporter: %s", rec.Status)
	}
	reps, err := s.st.Reports(ctx, byMany)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range reps {
		if r.Reviewed != (r.Reporter == campaign) {
			t.Errorf("after undoing the campaign, a report of %s reviewed %v", r.Reporter, r.Reviewed)
		}
	}
	// The two others still count: one more reporter hides it again.
	if res, err := s.svc.Report(ctx, byMany, &schema.ReportInput{Reason: "spam"}, "198.51.100.10"); err != nil || res.Outcome != schema.ReportHidRecord {
		t.Errorf("a third reporter beside the two left: %+v %v", res, err)
	}
}

// TestDisownedNumberStaysHidden: once its owner reports a number as not theirs (not_my_number hid it),
// a new publication with that number from the network that published it, however it is written, is
// shown without it and its publisher is told why (phone_disowned), while other numbers publish as ever,
// and so does the number from other networks (else anyone could block a number for its owner by
// publishing it and reporting it), and from that network too a day later (DisownedFor: the report may
// have been false). A network that reports its own publication disowns nothing. Undoing
// that reporter's campaign frees the number; so does an operator's restore of any publication of it,
// everywhere.
func TestDisownedNumberStaysHidden(t *testing.T) {
	clk := &fakeClock{at: time.Now().UTC()}
	s := newExpiryServer(t, clk)
	ctx := context.Background()
	publishFrom := func(ext, phone, addr string) *schema.PublishResult {
		t.Helper()
		body := testserver.With(testserver.ValidRequest(), "externalId", ext, "contactWhatsapp", phone)
		res, _, err := s.svc.Publish(ctx, "http://ayuda.test", testserver.MustJSON(t, body), "", addr)
		if err != nil {
			t.Fatalf("publish %s: %v", ext, err)
		}
		return res
	}
	publish := func(ext, phone string) *schema.PublishResult { return publishFrom(ext, phone, "192.0.2.1") }
	shown := func(res *schema.PublishResult) bool {
		t.Helper()
		rec, err := s.st.Get(ctx, res.ID)
		if err != nil {
			t.Fatal(err)
		}
		warned := slices.ContainsFunc(res.Warnings, func(w schema.Warning) bool {
			return w.Code == schema.CodePhoneDisowned && w.Field == "/contactWhatsapp" && strings.Contains(w.Message, "nadie podrá escribirle")
		})
		if rec.ContactHidden != warned {
			t.Fatalf("%s: phone hidden %v, warned %v: %+v", res.ID, rec.ContactHidden, warned, res.Warnings)
		}
		return !rec.ContactHidden
	}
	a := publish("a", "3001234567")
	report := func(id, addr string) {
		t.Helper()
		if res, err := s.svc.Report(ctx, id, &schema.ReportInput{Reason: "not_my_number"}, addr); err != nil || res.Outcome != schema.ReportHidPhone {
			t.Fatalf("the owner's report of %s: %+v %v", id, res, err)
		}
	}
	report(a.ID, "127.0.0.7")
	if b := publish("b", "+57 300 123 4567"); shown(b) {
		t.Fatal("the number its owner disowned is shown again on a new publication")
	}
	dryBody := testserver.MustJSON(t, testserver.With(testserver.ValidRequest(), "externalId", "dry", "contactWhatsapp", "3001234567"))
	if dry, err := s.svc.DryRun(ctx, "http://ayuda.test", dryBody, "", "192.0.2.1"); err != nil ||
		!slices.ContainsFunc(dry.Warnings, func(w schema.Warning) bool { return w.Code == schema.CodePhoneDisowned }) {
		t.Fatalf("a dry run with the disowned number is not warned: %+v %v", dry, err)
	}
	// The owner (or anyone) publishing the number from another network shows it.
	if dry, err := s.svc.DryRun(ctx, "http://ayuda.test", dryBody, "", "198.51.100.9"); err != nil ||
		slices.ContainsFunc(dry.Warnings, func(w schema.Warning) bool { return w.Code == schema.CodePhoneDisowned }) {
		t.Fatalf("a dry run from another network is warned: %+v %v", dry, err)
	}
	if other := publishFrom("owner", "3001234567", "198.51.100.9"); !shown(other) {
		t.Fatal("the number is hidden on another network's publication")
	}
	if c := publish("c", "3109876543"); !shown(c) {
		t.Fatal("another number is hidden")
	}
	if again := publish("b", "+57 300 123 4567"); !again.Duplicate || shown(again) {
		t.Fatalf("a retry, whose first answer may have been lost, is not told again: %+v", again)
	}

	// Undoing the reporter's campaign frees what it disowned.
	q, err := s.svc.ModerationQueue(ctx)
	if err != nil || len(q) != 1 || len(q[0].Reports) != 1 {
		t.Fatalf("queue: %+v %v", q, err)
	}
	if restored, err := s.svc.RestoreByReporter(ctx, q[0].Reports[0].Reporter); err != nil || !slices.Equal(restored, []string{a.ID}) {
		t.Fatalf("restore by reporter: %v %v", restored, err)
	}
	d := publish("d", "3001234567")
	if !shown(d) {
		t.Fatal("the number stays disowned after the campaign that disowned it was undone")
	}

	// Disowned again; an operator's restore of another publication of the number frees it everywhere.
	report(d.ID, "127.0.0.8")
	e := publish("e", "3001234567")
	if shown(e) {
		t.Fatal("disowned again, the number is shown")
	}
	if _, err := s.svc.Moderate(ctx, e.ID, backend.ActionRestore, ""); err != nil {
		t.Fatal(err)
	}
	if f := publish("f", "3001234567"); !shown(f) {
		t.Fatal("an operator restored the number, and a new publication still hides it")
	}

	// A disowning holds a day: the report may have been false (the owner's own publication reported).
	i := publish("i", "3001234567")
	report(i.ID, "127.0.0.9")
	if j := publish("j", "3001234567"); shown(j) {
		t.Fatal("disowned a third time, the number is shown")
	}
	clk.set(clk.now().Add(backend.DisownedFor + time.Minute))
	if k := publish("k", "3001234567"); !shown(k) {
		t.Fatal("a day after the report, the number is still hidden from the network that published it")
	}

	// A network reporting its own publication hides the phone there, and disowns nothing: it cannot
	// block the number for its owner.
	g := publishFrom("g", "3157778899", "203.0.113.5")
	report(g.ID, "203.0.113.5")
	if h := publishFrom("h", "3157778899", "203.0.113.5"); !shown(h) {
		t.Fatal("a self-report disowned the number")
	}
}

// TestContentMatchesHidesAHiddenPhone: contentMatches tells a stranger (another network) who knows the
// pair nothing of a phone the record does not show: with the hidden number or another, the same answer;
// the publisher's network is still told whether its number differs.
func TestContentMatchesHidesAHiddenPhone(t *testing.T) {
	s := newExpiryServer(t, &fakeClock{at: time.Now().UTC()})
	ctx := context.Background()
	body := func(phone string) []byte {
		return testserver.MustJSON(t, testserver.With(testserver.ValidRequest(), "externalId", "oculto", "contactWhatsapp", phone))
	}
	first, _, err := s.svc.Publish(ctx, "http://ayuda.test", body("3001234567"), "", "192.0.2.1")
	if err != nil {
		t.Fatal(err)
	}
	matches := func(phone, addr string) bool {
		t.Helper()
		res, _, err := s.svc.Publish(ctx, "http://ayuda.test", body(phone), "", addr)
		if err != nil || !res.Duplicate || res.ContentMatches == nil {
			t.Fatalf("retry with %s from %s: %+v %v", phone, addr, res, err)
		}
		dry, err := s.svc.DryRun(ctx, "http://ayuda.test", body(phone), "", addr)
		if err != nil || dry.ContentMatches == nil || *dry.ContentMatches != *res.ContentMatches {
			t.Fatalf("dry run with %s from %s: %+v %v, publish said %v", phone, addr, dry, err, *res.ContentMatches)
		}
		return *res.ContentMatches
	}
	// Shown: anyone may read the number on its page, and the comparison says whether it differs.
	if !matches("3001234567", "198.51.100.7") || matches("3109876543", "198.51.100.7") {
		t.Fatal("a shown number: the comparison does not tell the number apart")
	}
	if res, err := s.svc.Report(ctx, first.ID, &schema.ReportInput{Reason: "not_my_number"}, "203.0.113.9"); err != nil || res.Outcome != schema.ReportHidPhone {
		t.Fatalf("report: %+v %v", res, err)
	}
	// Hidden: a stranger's guess, right or wrong, gets the same answer.
	if !matches("3001234567", "198.51.100.7") || !matches("3109876543", "198.51.100.7") {
		t.Fatal("a hidden number: a stranger's guess is told apart")
	}
	if !matches("3001234567", "192.0.2.1") || matches("3109876543", "192.0.2.1") {
		t.Fatal("the publisher's network is not told whether its number differs")
	}
	// A record the reports hid whole (its detail answers 410) shows no phone either.
	if _, err := s.svc.Moderate(ctx, first.ID, backend.ActionRestore, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := s.svc.Moderate(ctx, first.ID, backend.ActionHide, ""); err != nil {
		t.Fatal(err)
	}
	if !matches("3001234567", "198.51.100.8") || !matches("3109876543", "198.51.100.8") {
		t.Fatal("a hidden record: a stranger's guess is told apart")
	}
}

// TestPairTakenIsSaid: a publication whose (source, externalId) another network took first with other
// content is answered 200, as the spec says, and told that nothing it sent was stored (pair_taken), on
// a publish and a dry run alike; a retry of the publisher's own network, or of the same content, is not.
func TestPairTakenIsSaid(t *testing.T) {
	s := newExpiryServer(t, &fakeClock{at: time.Now().UTC()})
	ctx := context.Background()
	body := func(title string) []byte {
		return testserver.MustJSON(t, testserver.With(testserver.ValidRequest(), "externalId", "caso-124", "title", title))
	}
	warned := func(ws []schema.Warning) string {
		if i := slices.IndexFunc(ws, func(w schema.Warning) bool {
			return w.Field == "/externalId" && strings.Contains(w.Message, "NO se guardó")
		}); i >= 0 {
			return ws[i].Code
		}
		return ""
	}
	if _, _, err := s.svc.Publish(ctx, "http://ayuda.test", body("Consigne a Nequi para recibir mercado"), "", "198.51.100.66"); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		title, addr string
		want        string
	}{
		{"Necesitamos leche para bebés", "192.0.2.1", schema.CodePairTaken},      // another network, other content: the bot's publication
		{"Consigne a Nequi para recibir mercado", "192.0.2.1", ""},               // the same content: a copy, nothing lost
		{"Necesitamos leche para bebés", "198.51.100.66", schema.CodePairReused}, // the publisher's network: an externalId used twice
		{"Consigne a Nequi para recibir mercado", "198.51.100.66", ""},           // the publisher's retry
	} {
		res, _, err := s.svc.Publish(ctx, "http://ayuda.test", body(tc.title), "", tc.addr)
		if err != nil || !res.Duplicate || warned(res.Warnings) != tc.want {
			t.Errorf("%q from %s: %+v %v, want the warning %q", tc.title, tc.addr, res, err, tc.want)
		}
		dry, err := s.svc.DryRun(ctx, "http://ayuda.test", body(tc.title), "", tc.addr)
		if err != nil || warned(dry.Warnings) != tc.want {
			t.Errorf("dry run %q from %s: %+v %v, want the warning %q", tc.title, tc.addr, dry, err, tc.want)
		}
	}
}

// TestReporterBudgetCountsNumbers: a person whose number was spread over four records takes it off all
// four with their reports (one number, however many records); the same address
// still hides at most two numbers an hour by itself and is told so, not that the network had many
// reports (TestHideBudgetByNumber has the bounds of one number).
func TestReporterBudgetCountsNumbers(t *testing.T) {
	s := newExpiryServer(t, &fakeClock{at: time.Now().UTC()})
	ctx := context.Background()
	publish := func(ext, e164 string) string {
		t.Helper()
		rec := storetest.Record("app", ext)
		rec.ContactWhatsapp, rec.ContactE164, rec.Publisher = e164, e164, "otra-red"
		stored, _, err := s.st.Create(ctx, rec)
		if err != nil {
			t.Fatal(err)
		}
		return stored.ID
	}
	report := func(id string) schema.ReportResult {
		t.Helper()
		res, err := s.svc.Report(ctx, id, &schema.ReportInput{Reason: store.ReasonNotMyNumber}, "127.0.0.91")
		if err != nil {
			t.Fatal(err)
		}
		return *res
	}
	for i := range 4 {
		if res := report(publish(fmt.Sprintf("h%d", i), "+573017776655")); res.Outcome != schema.ReportHidPhone {
			t.Fatalf("the owner's report of their number on record %d of 4: %+v", i+1, res)
		}
	}
	if res := report(publish("other-1", "+573017776656")); res.Outcome != schema.ReportHidPhone {
		t.Fatalf("a second number: %+v", res)
	}
	res := report(publish("other-2", "+573017776657"))
	if res.Outcome != schema.ReportQueued || !strings.Contains(res.Message, "Desde su conexión ya se ocultaron otros números") {
		t.Fatalf("a third number from one address within the hour: %+v", res)
	}
}

// TestModeratorWithdrawalErases: an operator's status withdrawn erases the personal data, as the
// publisher's withdrawal does (readers of a withdrawn record are told so), and cannot be reopened.
func TestModeratorWithdrawalErases(t *testing.T) {
	s := newExpiryServer(t, &fakeClock{at: time.Now().UTC()})
	ctx := context.Background()
	rec, _, err := s.st.Create(ctx, storetest.Record("app", "withdraw-me"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.svc.Moderate(ctx, rec.ID, backend.ActionSetStatus, store.StatusWithdrawn)
	if err != nil {
		t.Fatal(err)
	}
	stored, err := s.st.Get(ctx, rec.ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []*store.Record{got, stored} {
		if r.Status != store.StatusWithdrawn || r.ContactName != "" || r.ContactWhatsapp != "" || r.ContactE164 != "" || r.Address != "" {
			t.Fatalf("a moderator's withdrawal kept the personal data: %+v", r)
		}
	}
	if _, err := s.svc.Moderate(ctx, rec.ID, backend.ActionSetStatus, store.StatusOpen); !errors.Is(err, backend.ErrErased) {
		t.Fatalf("reopening a record a moderator withdrew: %v, want ErrErased", err)
	}
}

// TestRetryOfAHiddenNumberSaysSo: a number reported from its publisher's own network is hidden on that
// record and disowned nowhere; the publisher's retry of that publication (a bot that lost the first
// answer, or checks) is still told that its number is not shown, once.
func TestRetryOfAHiddenNumberSaysSo(t *testing.T) {
	s := newExpiryServer(t, &fakeClock{at: time.Now().UTC()})
	ctx := context.Background()
	body := testserver.MustJSON(t, testserver.With(testserver.ValidRequest(), "externalId", "self", "contactWhatsapp", "3105550000"))
	first, _, err := s.svc.Publish(ctx, "http://ayuda.test", body, "", "192.0.2.1")
	if err != nil {
		t.Fatal(err)
	}
	if res, err := s.svc.Report(ctx, first.ID, &schema.ReportInput{Reason: "not_my_number"}, "192.0.2.1"); err != nil || res.Outcome != schema.ReportHidPhone {
		t.Fatalf("the report: %+v %v", res, err)
	}
	again, _, err := s.svc.Publish(ctx, "http://ayuda.test", body, "", "192.0.2.1")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, w := range again.Warnings {
		if w.Code == schema.CodePhoneDisowned {
			n++
		}
	}
	if !again.Duplicate || n != 1 {
		t.Fatalf("the retry of a publication whose number is hidden: %d phone_disowned warnings, want 1: %+v", n, again)
	}
}

// TestModeratorHidesOnlyThePhone: a «not my number» report the bounds held for review is upheld by
// hiding the number only: the record stays open and listed, its reports are reviewed; the number is not
// disowned (the reporter may have been its owner, publishing it), so a new publication of it shows it; a
// restore shows it again.
func TestModeratorHidesOnlyThePhone(t *testing.T) {
	s := newExpiryServer(t, &fakeClock{at: time.Now().UTC()})
	ctx := context.Background()
	body := testserver.MustJSON(t, testserver.With(testserver.ValidRequest(), "externalId", "held", "contactWhatsapp", "3105551111"))
	pub, _, err := s.svc.Publish(ctx, "http://ayuda.test", body, "", "192.0.2.1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.svc.Report(ctx, pub.ID, &schema.ReportInput{Reason: "spam"}, "198.51.100.4"); err != nil {
		t.Fatal(err)
	}
	rec, err := s.svc.Moderate(ctx, pub.ID, backend.ActionHidePhone, "")
	if err != nil || !rec.ContactHidden || rec.Status != store.StatusOpen {
		t.Fatalf("hide_phone: %+v %v", rec, err)
	}
	m, _ := s.svc.StoreModeration()
	if reps, err := m.Reports(ctx, pub.ID); err != nil || len(reps) != 1 || !reps[0].Reviewed {
		t.Fatalf("the reports after hide_phone: %+v %v", reps, err)
	}
	other := testserver.MustJSON(t, testserver.With(testserver.ValidRequest(), "externalId", "held-2", "contactWhatsapp", "3105551111"))
	again, _, err := s.svc.Publish(ctx, "http://ayuda.test", other, "", "192.0.2.1")
	if err != nil || slices.ContainsFunc(again.Warnings, func(w schema.Warning) bool { return w.Code == schema.CodePhoneDisowned }) {
		t.Fatalf("the number on a new publication of the record's network: %+v %v", again, err)
	}
	if rec, err := s.svc.Moderate(ctx, pub.ID, backend.ActionRestore, ""); err != nil || rec.ContactHidden {
		t.Fatalf("restore after hide_phone: %+v %v", rec, err)
	}
}

// TestRestoreByReporterShowsOnlyItsOwnPhones: undoing one reporter's campaign shows again only the phones
// its own «not my number» hid: not one a moderator hid (hide_phone), even when the campaign also reported
// that record as spam.
func TestRestoreByReporterShowsOnlyItsOwnPhones(t *testing.T) {
	s := newExpiryServer(t, &fakeClock{at: time.Now().UTC()})
	ctx := context.Background()
	rec, _, err := s.st.Create(ctx, storetest.Record("app", "moderated-phone"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.svc.Moderate(ctx, rec.ID, backend.ActionHidePhone, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := s.svc.Report(ctx, rec.ID, &schema.ReportInput{Reason: "spam"}, "127.0.0.7"); err != nil {
		t.Fatal(err)
	}
	q, err := s.svc.ModerationQueue(ctx)
	if err != nil || len(q) != 1 || len(q[0].Reports) == 0 {
		t.Fatalf("queue: %+v %v", q, err)
	}
	var campaign string
	for _, r := range q[0].Reports {
		if !r.Reviewed {
			campaign = r.Reporter
		}
	}
	if _, err := s.svc.RestoreByReporter(ctx, campaign); err != nil {
		t.Fatal(err)
	}
	if got, err := s.st.Get(ctx, rec.ID); err != nil || !got.ContactHidden {
		t.Fatalf("undoing a spam campaign showed the phone a moderator hid: %+v %v", got, err)
	}
}
