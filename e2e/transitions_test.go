package e2e

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/directaid/directaid/internal/testserver"
	"github.com/directaid/directaid/schema"
)

// TestManageEveryTransition: every publisher action from every status, through the binary. Statuses a
// publisher cannot reach (expired, hidden) are set by the operator's admin route first. Allowed ones
// answer 200 (changed false when the record already is so), forbidden ones 409 invalid_transition and
// leave the status as it was; a withdrawal is possible from every status, hidden included, so that a
// person can always take the number back.
func TestManageEveryTransition(t *testing.T) {
	t.Parallel()
	s := testserver.Start(t, testserver.Options{})
	type want struct {
		code    int
		status  string
		changed bool
	}
	ok := func(status string, changed bool) want { return want{200, status, changed} }
	refused := want{409, "", false}
	table := map[string]map[string]want{
		"open": {schema.ActionResolve: ok("resolved", true), schema.ActionReopen: ok("open", false),
			schema.ActionRenew: ok("open", true), schema.ActionWithdraw: ok("withdrawn", true)},
		"resolved": {schema.ActionResolve: ok("resolved", false), schema.ActionReopen: ok("open", true),
			schema.ActionRenew: refused, schema.ActionWithdraw: ok("withdrawn", true)},
		"expired": {schema.ActionResolve: ok("resolved", true), schema.ActionReopen: ok("open", true),
			schema.ActionRenew: ok("open", true), schema.ActionWithdraw: ok("withdrawn", true)},
		"hidden": {schema.ActionResolve: refused, schema.ActionReopen: refused,
			schema.ActionRenew: refused, schema.ActionWithdraw: ok("withdrawn", true)},
		"withdrawn": {schema.ActionResolve: refused, schema.ActionReopen: refused,
			schema.ActionRenew: refused, schema.ActionWithdraw: ok("withdrawn", false)},
	}
	setStatus := func(id, status string) {
		t.Helper()
		body := []byte(fmt.Sprintf(`{"id":%q,"status":%q}`, id, status))
		resp, err := http.Post(s.AdminURL+"/directaid/moderation/status", "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("admin status %s: %d %s", status, resp.StatusCode, b)
		}
	}
	// storedStatus reads the status back from the change feed (which lists every status).
	storedStatus := func(id string) string {
		t.Helper()
		_, feed := call(t, s, "GET", schema.HelpPath+"?view=list&limit=100&since=2000-01-01T00:00:00Z", nil)
		for _, k := range []string{"items", "removed"} {
			list, _ := feed[k].([]any)
			for _, it := range list {
				if m := it.(map[string]any); m["id"] == id {
					return m["status"].(string)
				}
			}
		}
		return ""
	}
	cases := 0
	for _, from := range []string{"open", "resolved", "expired", "hidden", "withdrawn"} {
		for _, action := range schema.Actions {
			w := table[from][action]
			_, pub := publish(t, s, validRequest())
			id, token := pub["id"].(string), pub["manageToken"].(string)
			switch from {
			case "withdrawn":
				if resp, _, raw := act(t, s, id, token, schema.ActionWithdraw); resp.StatusCode != 200 {
					t.Fatalf("withdraw: %s", raw)
				}
			case "open":
			default:
				setStatus(id, from)
			}
			before := time.Now()
			resp, out, raw := act(t, s, id, token, action)
			if resp.StatusCode != w.code {
				t.Errorf("%s from %s: %d %s, want %d", action, from, resp.StatusCode, raw, w.code)
				continue
			}
			cases++
			if w.code == 409 {
				if out["code"] != schema.CodeInvalidTransition {
					t.Errorf("%s from %s: %s", action, from, raw)
				}
				if st := storedStatus(id); st != from {
					t.Errorf("%s from %s was refused but the status is now %s", action, from, st)
				}
				continue
			}
			if out["status"] != w.status || out["changed"] != w.changed {
				t.Errorf("%s from %s: %s, want status %s changed %t", action, from, raw, w.status, w.changed)
			}
			if st := storedStatus(id); st != w.status {
				t.Errorf("%s from %s: the feed says %s, want %s", action, from, st, w.status)
			}
			// Open records carry a future expiresAt; no other status has one.
			exp, hasExp := out["expiresAt"].(string)
			if w.status == "open" {
				if at, err := time.Parse(time.RFC3339Nano, exp); err != nil || !at.After(before) {
					t.Errorf("%s from %s: open without a future expiresAt: %s", action, from, raw)
				}
			} else if hasExp {
				t.Errorf("%s from %s: %s carries expiresAt: %s", action, from, w.status, raw)
			}
		}
	}
	if cases != 20 {
		t.Fatalf("%d of 20 cases checked", cases)
	}
}
