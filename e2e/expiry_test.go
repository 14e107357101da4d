package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/directaid/directaid/internal/testserver"
	"github.com/directaid/directaid/schema"
)

// lifetime is expiresAt − createdAt of a publication's answer (expiresAt − updatedAt of an action's).
func lifetime(t *testing.T, out map[string]any, from string) time.Duration {
	t.Helper()
	start, err1 := time.Parse(time.RFC3339Nano, out[from].(string))
	exp, ok := out["expiresAt"].(string)
	end, err2 := time.Parse(time.RFC3339Nano, exp)
	if !ok || err1 != nil || err2 != nil {
		t.Fatalf("no %s/expiresAt in %v", from, out)
	}
	return end.Sub(start)
}

// TestExpiryTTLChangedByReload: request_ttl and offer_ttl of an emergency block set the expiresAt of what
// is published; a reload changes them for what is published or renewed after it, and an open record keeps
// the date its publisher was told. Every answer is checked against the served OpenAPI document.
func TestExpiryTTLChangedByReload(t *testing.T) {
	t.Parallel()
	s := testserver.Start(t, testserver.Options{})
	first := validRequest()
	resp, a := publish(t, s, first)
	_, offer := publish(t, s, validOffer())
	if resp.StatusCode != 201 || a["status"] != "open" {
		t.Fatalf("publish: %d %v", resp.StatusCode, a)
	}
	if d := lifetime(t, a, "createdAt"); d != 14*24*time.Hour {
		t.Errorf("request with the default request_ttl: lives %v, want 14 days", d)
	}
	if d := lifetime(t, offer, "createdAt"); d != 30*24*time.Hour {
		t.Errorf("offer with the default offer_ttl: lives %v, want 30 days", d)
	}

	reloadWith(t, s, "request_ttl 2d", "offer_ttl 36h")

	_, b := publish(t, s, validRequest())
	_, offer2 := publish(t, s, validOffer())
	if d := lifetime(t, b, "createdAt"); d != 48*time.Hour {
		t.Errorf("request after the reload: lives %v, want 48h (request_ttl 2d)", d)
	}
	if d := lifetime(t, offer2, "createdAt"); d != 36*time.Hour {
		t.Errorf("offer after the reload: lives %v, want 36h (offer_ttl 36h)", d)
	}
	// The other emergency keeps the defaults.
	_, c := publish(t, s, with(validRequest(), "emergencySlug", "inundaciones-la-mojana"))
	if d := lifetime(t, c, "createdAt"); d != 14*24*time.Hour {
		t.Errorf("request of an emergency without request_ttl: lives %v, want 14 days", d)
	}
	// The record published before the reload keeps its date (a retry of it answers the stored record).
	id := a["id"].(string)
	if _, retry := publish(t, s, first); retry["id"] != id || retry["expiresAt"] != a["expiresAt"] {
		t.Errorf("after the reload the earlier record's expiresAt is %v, was %v", retry["expiresAt"], a["expiresAt"])
	}
	// Renewing it after the reload gives it the new lifetime, from now.
	resp, r := call(t, s, "POST", schema.ActionsPath(id), []byte(`{"action":"renew"}`),
		"Content-Type", "application/json", "Authorization", "Bearer "+a["manageToken"].(string))
	if resp.StatusCode != 200 || r["status"] != "open" || r["changed"] != true {
		t.Fatalf("renew: %d %v", resp.StatusCode, r)
	}
	if d := lifetime(t, r, "updatedAt"); d < 48*time.Hour-time.Second || d > 48*time.Hour {
		t.Errorf("renewed after the reload: lives %v from its update, want 48h", d)
	}
}

// reloadWith adds lines to the first emergency of the server's Caddyfile and reloads it.
func reloadWith(t *testing.T, s *testserver.Server, lines ...string) {
	t.Helper()
	cf, err := readFile(s.CaddyfilePath())
	if err != nil {
		t.Fatal(err)
	}
	const at = "occurred 2026-08-11\n"
	if !strings.Contains(cf, at) {
		t.Fatalf("the test Caddyfile changed: no %q in\n%s", at, cf)
	}
	add := ""
	for _, l := range lines {
		add += "\t\t\t" + l + "\n"
	}
	s.WriteCaddyfile(strings.Replace(cf, at, at+add, 1))
	s.Reload()
}
