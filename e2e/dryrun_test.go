package e2e

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/directaid/directaid/backend"
	"github.com/directaid/directaid/internal/testserver"
)

// total is how many records the list view counts.
func total(t *testing.T, s *testserver.Server) float64 {
	t.Helper()
	_, l := call(t, s, "GET", "/api/public/v1/help?view=list", nil)
	n, _ := l["total"].(float64)
	return n
}

// TestPublishDryRun: ?dryRun=true validates exactly as a publication (the same 400 for a bad body),
// answers 200 with what would be stored, and stores nothing; the same through the MCP tools' dryRun
// argument; and the examples of the Markdown twins, run as written, publish nothing.
func TestPublishDryRun(t *testing.T) {
	t.Parallel()
	s := testserver.Start(t, testserver.Options{})
	body := with(validRequest(), "title", "  Agua potable  ", "urgency", nil, "neededPeople", nil)
	resp, out := call(t, s, "POST", "/api/public/v1/help?dryRun=true", mustJSON(t, body), "Content-Type", "application/json")
	rec, _ := out["record"].(map[string]any)
	if resp.StatusCode != 200 || out["ok"] != true || out["dryRun"] != true || rec["title"] != "Agua potable" ||
		rec["urgency"] != "needed" || rec["neededPeople"] != 1.0 || rec["contactE164"] != "+573001234567" || rec["emergencySlug"] != "eje-cafetero" {
		t.Fatalf("dry run: %d %v", resp.StatusCode, out)
	}
	if resp.Header.Get("Location") != "" {
		t.Errorf("a dry run has no Location: %v", resp.Header)
	}
	if n := total(t, s); n != 0 {
		t.Fatalf("a dry run stored %v records", n)
	}
	// A bad body gets exactly the answer a publication would get.
	bad := mustJSON(t, with(validRequest(), "publishContact", false, "lat", 4.5, "emergencySlug", "no-existe"))
	r1, b1 := s.Do("POST", "/api/public/v1/help?dryRun=true", bad, "Content-Type", "application/json")
	r2, b2 := s.Do("POST", "/api/public/v1/help", bad, "Content-Type", "application/json")
	if r1.StatusCode != 400 || r1.StatusCode != r2.StatusCode || string(b1) != string(b2) {
		t.Errorf("dry run %d %s\npublication %d %s", r1.StatusCode, b1, r2.StatusCode, b2)
	}
	if resp, out := call(t, s, "POST", "/api/public/v1/help?dryRun=si", mustJSON(t, validRequest()), "Content-Type", "application/json"); resp.StatusCode != 400 || out["code"] != "invalid_parameter" {
		t.Errorf("dryRun=si: %d %v", resp.StatusCode, out)
	}
	if n := total(t, s); n != 0 {
		t.Fatalf("%v records after refused calls", n)
	}
	// dryRun=false publishes.
	if resp, _ := call(t, s, "POST", "/api/public/v1/help?dryRun=false", mustJSON(t, validRequest()), "Content-Type", "application/json"); resp.StatusCode != 201 {
		t.Fatalf("dryRun=false: %d", resp.StatusCode)
	}

	// MCP: the publishing tools take dryRun too.
	cs := sdkSession(t, s, "")
	args := mcpArgs(validOffer())
	args["dryRun"] = true
	res := callTool(t, cs, backend.ToolPublishOffer, args)
	sc, _ := json.Marshal(res.StructuredContent)
	if res.IsError || !strings.Contains(string(sc), `"dryRun":true`) || !strings.Contains(toolText(res), "no se guardó nada") {
		t.Fatalf("MCP dry run: %s %s", toolText(res), sc)
	}
	args["publishContact"] = false
	toolError(t, callTool(t, cs, backend.ToolPublishOffer, args), "publishContact")
	args["dryRun"] = "sí"
	toolError(t, callTool(t, cs, backend.ToolPublishOffer, args), "dryRun")
	if n := total(t, s); n != 1 {
		t.Fatalf("%v records after MCP dry runs, want the one real publication", n)
	}

	// Each twin's example, run as written, validates and publishes nothing.
	curl := regexp.MustCompile(`(?s)curl -i -X POST '([^']+)' \\\n  -H 'Content-Type: application/json' \\\n  --data-binary '([^']+)'`)
	for _, twin := range []string{"/pedir.md", "/ofrecer.md", "/emergencias/eje-cafetero.md"} {
		_, md := s.Do("GET", twin, nil)
		m := curl.FindStringSubmatch(string(md))
		if m == nil || !strings.HasSuffix(m[1], "?dryRun=true") {
			t.Errorf("%s: no dry-run example:\n%s", twin, md)
			continue
		}
		resp, raw := s.Do("POST", strings.TrimPrefix(m[1], s.URL), []byte(m[2]), "Content-Type", "application/json")
		if resp.StatusCode != 200 || !strings.Contains(string(raw), `"dryRun":true`) {
			t.Errorf("%s's example: %d %s", twin, resp.StatusCode, raw)
		}
	}
	if n := total(t, s); n != 1 {
		t.Errorf("%v records after running the twins' examples", n)
	}
}
