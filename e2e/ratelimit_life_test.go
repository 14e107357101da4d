package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/directaid/directaid/internal/testserver"
	"github.com/directaid/directaid/schema"
)

// TestManageRateLimited: the manage zone meters POST help/{id}/actions and POST /gestionar together, per
// client IP. Over it the API answers the JSON error (checked against the served OpenAPI) and /gestionar a
// Spanish page; the refused action changes nothing; another address has its own budget; discovery
// publishes the zone's numbers. The report zone also meters the site's /reportar form.
func TestManageRateLimited(t *testing.T) {
	s := testserver.Start(t, testserver.Options{PublishEvents: 2})
	_, pub := publish(t, s, validRequest())
	id, token := pub["id"].(string), pub["manageToken"].(string)

	api := func(ip, action string) (*http.Response, map[string]any) {
		t.Helper()
		body := []byte(`{"action":"` + action + `"}`)
		h := []string{"Content-Type", "application/json", "Authorization", "Bearer " + token}
		resp, err := fromAddr(ip).Do(s.NewRequest("POST", schema.ActionsPath(id), body, h...))
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		s.CheckOpenAPI(s.NewRequest("POST", schema.ActionsPath(id), body, h...), resp, raw)
		var out map[string]any
		_ = json.Unmarshal(raw, &out)
		return resp, out
	}
	form := func(ip, path string, v url.Values) (*http.Response, string) {
		t.Helper()
		resp, err := fromAddr(ip).Do(s.NewRequest("POST", path, []byte(v.Encode()), "Content-Type", "application/x-www-form-urlencoded"))
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp, string(raw)
	}
	manage := func(ip, action string) (*http.Response, string) {
		return form(ip, schema.ManagePath, url.Values{"id": {id}, "token": {token}, "action": {action}})
	}
	status := func() any {
		_, d := call(t, s, "GET", schema.HelpPath+"?view=detail&id="+id, nil)
		return d["status"]
	}
	spanishPage := func(resp *http.Response, page string, words ...string) {
		t.Helper()
		if resp.StatusCode != 429 || resp.Header.Get("Retry-After") == "" || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") ||
			strings.Contains(page, `"code"`) || !strings.Contains(page, "Hay muchas consultas desde su red") {
			t.Fatalf("429 page: %d %v\n%.2000s", resp.StatusCode, resp.Header, page)
		}
		for _, w := range words {
			if !strings.Contains(page, w) {
				t.Errorf("the 429 page lacks %q:\n%.3000s", w, page)
			}
		}
	}

	// 127.0.0.11 spends its two actions through the API; the third is refused there and on /gestionar.
	for _, a := range []string{schema.ActionResolve, schema.ActionReopen} {
		if resp, out := api("127.0.0.11", a); resp.StatusCode != 200 {
			t.Fatalf("%s: %d %v", a, resp.StatusCode, out)
		}
	}
	resp, out := api("127.0.0.11", schema.ActionResolve)
	if resp.StatusCode != 429 || out["code"] != "rate_limited" || resp.Header.Get("Retry-After") == "" || !strings.Contains(out["error"].(string), "acciones") {
		t.Fatalf("third action through the API: %d %v", resp.StatusCode, out)
	}
	resp, page := manage("127.0.0.11", schema.ActionResolve)
	spanishPage(resp, page, "resolver, reabrir, renovar o retirar", "Este intento no cambió nada")
	if st := status(); st != "open" {
		t.Fatalf("a refused action changed the status to %v", st)
	}

	// 127.0.0.12 spends its budget through /gestionar; then the API refuses it too.
	for _, a := range []string{schema.ActionResolve, schema.ActionReopen} {
		if resp, page := manage("127.0.0.12", a); resp.StatusCode != 200 || !strings.Contains(page, "Listo") {
			t.Fatalf("/gestionar %s: %d\n%.2000s", a, resp.StatusCode, page)
		}
	}
	if resp, out := api("127.0.0.12", schema.ActionResolve); resp.StatusCode != 429 || out["code"] != "rate_limited" {
		t.Fatalf("the API after /gestionar spent the budget: %d %v", resp.StatusCode, out)
	}
	if st := status(); st != "open" {
		t.Fatalf("status after the refused action: %v", st)
	}
	// GET /gestionar is not metered.
	if resp, _ := fromAddr("127.0.0.12").Get(s.URL + schema.ManagePath); resp.StatusCode != 200 {
		t.Fatalf("GET /gestionar over the limit: %d", resp.StatusCode)
	}

	// The report zone: two API reports from 127.0.0.13, then the site's /reportar is refused with a page.
	for range 2 {
		if resp, body := report(t, s, "127.0.0.13", id, map[string]any{"reason": "duplicate"}); resp.StatusCode != 202 {
			t.Fatalf("report: %d %v", resp.StatusCode, body)
		}
	}
	resp, page = form("127.0.0.13", schema.ReportFormPath, url.Values{"id": {id}, "reason": {"spam"}})
	spanishPage(resp, page, "reportes", "Su reporte no se envió")

	// Discovery publishes the enforced numbers of both zones.
	_, d := call(t, s, "GET", schema.HelpPath, nil)
	for _, k := range []string{"manageRateLimit", "reportRateLimit"} {
		z, _ := d[k].(map[string]any)
		if z["events"] != float64(2) || z["windowSeconds"] != float64(60) || z["scope"] == "" {
			t.Errorf("discovery %s: %v", k, d[k])
		}
	}
}

// TestSecondRateLimitsBlockCountsNothing: a second directaid_rate_limits in the site (its zones, every one
// re-declared with the same names, which caddy-ratelimit shares) does not meter the requests again: the
// first block's publish limit of 4 lets 4 publications through, not 2, and the log says so once.
func TestSecondRateLimitsBlockCountsNothing(t *testing.T) {
	t.Parallel()
	s := testserver.Start(t, testserver.Options{PublishEvents: 4, PublishWindow: "1m", Site: "\tdirectaid_rate_limits {\n\t\treport 10 1m\n\t}"})
	for i := range 5 {
		body := validRequest()
		body["externalId"] = fmt.Sprintf("second-block-%d", i)
		r, _ := publish(t, s, body)
		if want := map[bool]int{true: http.StatusCreated, false: http.StatusTooManyRequests}[i < 4]; r.StatusCode != want {
			t.Fatalf("publication %d of 5 with a limit of 4: %d, want %d", i+1, r.StatusCode, want)
		}
	}
	if n := countLines(s.Log(), `"level":"warn"`, "a second directaid_rate_limits"); n != 1 {
		t.Errorf("%d warnings of the second block, want 1", n)
	}
}
