package e2e

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/directaid/directaid/internal/pgtest"
	"github.com/directaid/directaid/internal/testserver"
)

// TestMigrateKeepsRecordLives: what a Badger node's publishers, community and operator did survives
// `directaid migrate`: on a node over PostgreSQL the manage tokens given out by the Badger node still act
// (and wrong ones still get 403), the reports count the same reporters (a reporter of before is counted
// once), the hidden record and the hidden phone stay hidden, the moderation queue and the audit trail read
// the same through the admin endpoint, and a second run of migrate changes nothing.
func TestMigrateKeepsRecordLives(t *testing.T) {
	t.Parallel()
	dsn := pgtest.Shared(t).NewDatabase(t)
	b := testserver.Start(t, testserver.Options{Emergencies: migrateEmergencies})
	type pub struct{ id, token string }
	var pubs []pub
	for i := range 6 {
		resp, out := publish(t, b, with(validRequest(), "title", fmt.Sprintf("Agua potable, punto %d", i)))
		if resp.StatusCode != 201 || out["manageToken"] == nil {
			t.Fatalf("publish %d: %d %v", i, resp.StatusCode, out)
		}
		pubs = append(pubs, pub{out["id"].(string), out["manageToken"].(string)})
	}
	mustAct := func(s *testserver.Server, p pub, action string, changed bool) {
		t.Helper()
		resp, out, raw := act(t, s, p.id, p.token, action)
		if resp.StatusCode != 200 || out["changed"] != changed {
			t.Fatalf("%s of %s: %d %s", action, p.id, resp.StatusCode, raw)
		}
	}
	mustReport := func(s *testserver.Server, ip string, p pub, reason string) {
		t.Helper()
		if resp, out := report(t, s, ip, p.id, map[string]any{"reason": reason, "note": "nota de " + ip}); resp.StatusCode != 202 {
			t.Fatalf("report of %s from %s: %d %v", p.id, ip, resp.StatusCode, out)
		}
	}
	mustAct(b, pubs[0], "resolve", true)
	mustAct(b, pubs[1], "withdraw", true)
	for _, ip := range []string{"127.0.0.2", "127.0.0.3", "127.0.0.4"} { // the threshold (3): hidden
		mustReport(b, ip, pubs[2], "spam")
	}
	mustReport(b, "127.0.0.5", pubs[3], "not_my_number") // the phone hidden at once
	mustReport(b, "127.0.0.2", pubs[4], "fraud")         // one reporter of three
	moderate(t, b, "hide", pubs[5].id)

	// What a reader and the operator see on the Badger node.
	type view struct {
		details      []string
		queue, audit string
	}
	look := func(s *testserver.Server) view {
		t.Helper()
		var v view
		for _, p := range pubs {
			code, body := detailStatus(t, s, p.id)
			v.details = append(v.details, fmt.Sprintf("%d %s", code, asJSON(body)))
		}
		v.queue, v.audit = micros(moderate(t, s, "queue")), moderate(t, s, "audit")
		return v
	}
	before := look(b)
	for i, want := range []string{`^200 .*"status":"resolved"`, `^410 `, `^410 `, `^200 .*"available":false`, `^200 .*"status":"open"`, `^410 `} {
		if !regexp.MustCompile(want).MatchString(before.details[i]) {
			t.Fatalf("on Badger, record %d should match %s: %s", i, want, before.details[i])
		}
	}
	var trail []map[string]any
	if err := json.Unmarshal([]byte(before.audit), &trail); err != nil || len(trail) != 10 {
		t.Fatalf("audit trail on Badger (resolve, withdraw, 3 reports, report, hide, report, hide_phone, report, hide): %d entries, %v\n%s", len(trail), err, before.audit)
	}
	b.Stop()

	out, err := runMigrate(t, dsn, "--from", "badger", b.DataDir, "--to", "postgres")
	// Four secrets: the manage tokens', the publishers', the reporters' and the disowned numbers' (the
	// not_my_number report that hid a phone disowned its number).
	if err != nil || !strings.Contains(out, "server secrets: 4 copied") || !strings.Contains(out, "community reports: 5 read, 5 created") ||
		!strings.Contains(out, "disowned phone numbers: 1 read, 1 created") || !strings.Contains(out, "audit trail: 10 entries read, 10 appended") {
		t.Fatalf("migrate: %v\n%s", err, out)
	}
	p := testserver.Start(t, testserver.Options{Postgres: dsn, Emergencies: migrateEmergencies})
	after := look(p)
	for i := range pubs {
		if after.details[i] != before.details[i] {
			t.Fatalf("record %d on PostgreSQL:\n%s\non Badger:\n%s", i, after.details[i], before.details[i])
		}
	}
	if after.queue != before.queue {
		t.Fatalf("moderation queue on PostgreSQL:\n%s\non Badger:\n%s", after.queue, before.queue)
	}
	if after.audit != before.audit {
		t.Fatalf("audit trail on PostgreSQL:\n%s\non Badger:\n%s", after.audit, before.audit)
	}

	// Run again (the node serving meanwhile): nothing is added, nothing changes.
	out, err = runMigrate(t, dsn, "--from", "badger", b.DataDir, "--to", "postgres")
	if err != nil || !strings.Contains(out, ": 0 created, 6 already there, 0 conflicts") || !strings.Contains(out, "server secrets: 0 copied, 4 already the same") ||
		!strings.Contains(out, "community reports: 5 read, 0 created, 5 already there, 0 conflicts") || !strings.Contains(out, "disowned phone numbers: 1 read, 0 created, 1 already there") ||
		!strings.Contains(out, "audit trail: 10 entries read, 0 appended, 10 already there") {
		t.Fatalf("migrate again: %v\n%s", err, out)
	}
	if again := look(p); again.queue != after.queue || again.audit != after.audit || strings.Join(again.details, "\n") != strings.Join(after.details, "\n") {
		t.Fatalf("a second run changed what the node shows:\n%+v\nwas\n%+v", again, after)
	}

	// The Badger node's tokens act on PostgreSQL; wrong ones still get 403, none 401.
	for wrong, status := range map[string]int{"": 401, pubs[4].token: 403, pubs[0].token + "x": 403} {
		if resp, _, raw := act(t, p, pubs[0].id, wrong, "reopen"); resp.StatusCode != status {
			t.Fatalf("token %q for record 0: %d %s, want %d", wrong, resp.StatusCode, raw, status)
		}
	}
	mustAct(p, pubs[0], "reopen", true)
	mustAct(p, pubs[1], "withdraw", false)
	mustAct(p, pubs[3], "resolve", true)

	// The same reporter counts once across the move: 127.0.0.2 reported record 4 on Badger.
	mustReport(p, "127.0.0.2", pubs[4], "spam")
	mustReport(p, "127.0.0.6", pubs[4], "spam")
	if code, _ := detailStatus(t, p, pubs[4].id); code != 200 {
		t.Fatalf("two distinct reporters (one of them from before the move) hid record 4: %d", code)
	}
	mustReport(p, "127.0.0.7", pubs[4], "spam")
	if code, _ := detailStatus(t, p, pubs[4].id); code != 410 {
		t.Fatalf("the third distinct reporter should hide record 4: %d", code)
	}
	var grown []map[string]any
	if err := json.Unmarshal([]byte(moderate(t, p, "audit")), &grown); err != nil || len(grown) < len(trail)+6 {
		t.Fatalf("audit trail after acting on PostgreSQL: %d entries, want %d + reopen, resolve, 3 reports, hide; %v", len(grown), len(trail), err)
	}
	for i, e := range grown {
		if i < len(trail) && asJSON(e) != asJSON(trail[i]) || e["seq"] != float64(i+1) {
			t.Fatalf("audit entry %d: %v (the migrated trail first, then the new entries, seq continuing)", i, e)
		}
	}
}

// micros cuts the times of a JSON text to microseconds (PostgreSQL's timestamptz keeps microseconds where
// Badger kept nanoseconds: reports' times).
func micros(s string) string {
	return regexp.MustCompile(`"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(\.\d+)?Z"`).ReplaceAllStringFunc(s, func(m string) string {
		tm, err := time.Parse(time.RFC3339Nano, strings.Trim(m, `"`))
		if err != nil {
			return m
		}
		return `"` + tm.Truncate(time.Microsecond).Format(time.RFC3339Nano) + `"`
	})
}
