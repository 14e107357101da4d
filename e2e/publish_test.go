package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/directaid/directaid/internal/testserver"
)

// countRecords opens the stopped server's database and counts stored records.
func countRecords(t *testing.T, dir string) int {
	t.Helper()
	return len(storedRecords(t, dir))
}

func TestPublishThenRetry(t *testing.T) {
	t.Parallel()
	s := testserver.Start(t, testserver.Options{})
	body := validRequest()
	resp, first := publish(t, s, body)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("first publication: %d %v", resp.StatusCode, first)
	}
	if first["ok"] != true || first["duplicate"] != false || first["type"] != "request" || first["emergencySlug"] != "eje-cafetero" {
		t.Errorf("201 body: %v", first)
	}
	if loc := resp.Header.Get("Location"); loc == "" || loc != first["publicUrl"] || !strings.HasSuffix(loc, "/ayudas/"+first["id"].(string)) {
		t.Errorf("Location %q, publicUrl %v", loc, first["publicUrl"])
	}
	if resp.Header.Get("API-Version") != "1.0.0" || resp.Header.Get("Cache-Control") != "no-store" {
		t.Errorf("headers: %v", resp.Header)
	}

	resp, again := publish(t, s, body)
	if resp.StatusCode != http.StatusOK || again["duplicate"] != true || again["id"] != first["id"] || again["createdAt"] != first["createdAt"] || again["contentMatches"] != true {
		t.Fatalf("identical retry: %d %v", resp.StatusCode, again)
	}
	if resp.Header.Get("Location") != "" {
		t.Errorf("200 must not carry Location")
	}
	// A retry with other content still changes nothing, and says so.
	resp, changed := publish(t, s, with(body, "title", "Otro título"))
	if resp.StatusCode != http.StatusOK || changed["id"] != first["id"] || changed["contentMatches"] != false {
		t.Fatalf("changed retry: %d %v", resp.StatusCode, changed)
	}
	// Whitespace is trimmed before comparing: the same content with padding matches.
	_, padded := publish(t, s, with(body, "title", "  "+body["title"].(string)+"  "))
	if padded["contentMatches"] != true {
		t.Errorf("padded retry should match the stored content: %v", padded)
	}
	// An offer, and the pair key is not ambiguous: ("a|b","c") and ("a","b|c") are two records.
	if resp, b := publish(t, s, validOffer()); resp.StatusCode != 201 {
		t.Fatalf("offer: %d %v", resp.StatusCode, b)
	}
	r1, b1 := publish(t, s, with(validRequest(), "source", "a|b", "externalId", "c"))
	r2, b2 := publish(t, s, with(validRequest(), "source", "a", "externalId", "b|c"))
	if r1.StatusCode != 201 || r2.StatusCode != 201 || b1["id"] == b2["id"] {
		t.Fatalf("ambiguous pair: %d %v / %d %v", r1.StatusCode, b1, r2.StatusCode, b2)
	}
	s.Stop()
	if n := countRecords(t, s.DataDir); n != 4 {
		t.Fatalf("stored %d records, want 4 (no duplicate)", n)
	}
}

func TestDiscoveryOpenAPIAndCORS(t *testing.T) {
	t.Parallel()
	s := testserver.Start(t, testserver.Options{PublishEvents: 60})
	resp, disc := call(t, s, "GET", "/api/public/v1/help", nil)
	if resp.StatusCode != 200 || disc["version"] != "1.0.0" || disc["public"] != true || disc["authentication"] != "none" {
		t.Fatalf("discovery: %d %v", resp.StatusCode, disc)
	}
	for _, k := range []string{"documentation", "openapi", "mcp", "publish", "llms"} {
		if v, _ := disc[k].(string); !strings.HasPrefix(v, s.URL) {
			t.Errorf("discovery %s = %v, want an absolute link", k, disc[k])
		}
	}
	if rl, _ := disc["rateLimit"].(map[string]any); rl["events"] != 60.0 || rl["windowSeconds"] != 60.0 {
		t.Errorf("discovery must publish the enforced limit: %v", disc["rateLimit"])
	}
	e := disc["emergencies"].([]any)[0].(map[string]any)
	links := e["links"].(map[string]any)
	if e["slug"] != "eje-cafetero" || links["page"] != s.URL+"/emergencias/eje-cafetero" || links["markdown"] != s.URL+"/emergencias/eje-cafetero.md" {
		t.Errorf("emergency: %v", e)
	}
	// ETag revalidation.
	etag := resp.Header.Get("ETag")
	if r, _ := call(t, s, "GET", "/api/public/v1/help", nil, "If-None-Match", etag); etag == "" || r.StatusCode != 304 {
		t.Errorf("If-None-Match: %d (etag %q)", r.StatusCode, etag)
	}

	resp, raw := s.Do("GET", "/api/public/openapi.json", nil)
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil || resp.StatusCode != 200 || doc["openapi"] != "3.1.0" || doc["info"].(map[string]any)["version"] != "1.0.0" {
		t.Fatalf("openapi: %d %v", resp.StatusCode, err)
	}
	if resp.Header.Get("API-Version") != "1.0.0" {
		t.Errorf("one version everywhere: API-Version %q", resp.Header.Get("API-Version"))
	}
	if err := s.ValidateDocument(); err != nil {
		t.Fatalf("the served document is not valid OpenAPI 3.1: %v", err)
	}

	for _, path := range []string{"/api/public/v1/help", "/api/public/openapi.json"} {
		resp, _ := call(t, s, "OPTIONS", path, nil, "Origin", "https://app.example", "Access-Control-Request-Method", "POST", "Access-Control-Request-Headers", "content-type")
		h := resp.Header
		if resp.StatusCode != 204 || h.Get("Access-Control-Allow-Origin") != "*" || !strings.Contains(h.Get("Access-Control-Allow-Methods"), "GET") ||
			h.Get("Access-Control-Allow-Headers") != "Content-Type" || h.Get("Access-Control-Max-Age") != "86400" {
			t.Errorf("OPTIONS %s: %d %v", path, resp.StatusCode, h)
		}
	}
	if r, _ := publish(t, s, validRequest()); r.Header.Get("Access-Control-Allow-Origin") != "*" || !strings.Contains(r.Header.Get("Access-Control-Expose-Headers"), "Location") {
		t.Errorf("CORS on POST: %v", r.Header)
	}
}

func TestRateLimit(t *testing.T) {
	t.Parallel()
	s := testserver.Start(t, testserver.Options{PublishEvents: 3, PublishWindow: "1m"})
	for i := 0; i < 3; i++ {
		if resp, body := publish(t, s, validRequest()); resp.StatusCode != 201 {
			t.Fatalf("publication %d: %d %v", i, resp.StatusCode, body)
		}
	}
	resp, body := publish(t, s, validRequest())
	if resp.StatusCode != 429 || body["code"] != "rate_limited" || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("over the limit: %d %v %v", resp.StatusCode, resp.Header, body)
	}
	// The body says the wait too, for a client that shows it alone (an agent's tool call).
	if wait := "espere " + resp.Header.Get("Retry-After") + " segundo"; !strings.Contains(fmt.Sprint(body["error"]), wait) {
		t.Errorf("over the limit: %q does not say %q", body["error"], wait)
	}
	if resp.Header.Get("Access-Control-Allow-Origin") != "*" || resp.Header.Get("API-Version") != "1.0.0" {
		t.Errorf("429 must carry CORS and API-Version so browsers can read it: %v", resp.Header)
	}
	// Reads are not limited.
	if r, _ := call(t, s, "GET", "/api/public/v1/help", nil); r.StatusCode != 200 {
		t.Errorf("GET after the publish limit: %d", r.StatusCode)
	}
}

func TestConcurrentFirstPublication(t *testing.T) {
	t.Parallel()
	s := testserver.Start(t, testserver.Options{})
	body := mustJSON(t, validRequest())
	const n = 50
	var wg sync.WaitGroup
	statuses := make([]int, n)
	ids := make([]string, n)
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			req, _ := http.NewRequest("POST", s.URL+"/api/public/v1/help", bytes.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			defer resp.Body.Close()
			var out map[string]any
			_ = json.NewDecoder(resp.Body).Decode(&out)
			statuses[i], ids[i] = resp.StatusCode, fmt.Sprint(out["id"])
		}()
	}
	close(start)
	wg.Wait()
	created := 0
	for i, st := range statuses {
		switch st {
		case 201:
			created++
		case 200:
		default:
			t.Errorf("request %d: status %d", i, st)
		}
		if ids[i] != ids[0] {
			t.Errorf("request %d got id %s, request 0 got %s", i, ids[i], ids[0])
		}
	}
	if created != 1 {
		t.Fatalf("%d answers were 201, want exactly 1", created)
	}
	s.Stop()
	if c := countRecords(t, s.DataDir); c != 1 {
		t.Fatalf("%d records stored, want 1", c)
	}
}

func TestSurvivesRestartAndReload(t *testing.T) {
	t.Parallel()
	s := testserver.Start(t, testserver.Options{})
	body := validRequest()
	_, first := publish(t, s, body)

	s.Restart()
	resp, again := publish(t, s, body)
	if resp.StatusCode != 200 || again["id"] != first["id"] {
		t.Fatalf("after restart: %d %v (first %v)", resp.StatusCode, again, first)
	}

	s.Kill() // a crash right after an acknowledged write
	s.Launch()
	if resp, again := publish(t, s, body); resp.StatusCode != 200 || again["id"] != first["id"] {
		t.Fatalf("after kill -9: %d %v", resp.StatusCode, again)
	}

	// Reload with one emergency closed and a new one opened: the database stays open and intact.
	cf, err := readFile(s.CaddyfilePath())
	if err != nil {
		t.Fatal(err)
	}
	cf = strings.Replace(cf, `location "La Mojana"`, "location \"La Mojana\"\n\t\t\tinactive", 1)
	cf = strings.Replace(cf, "\tdirectaid {\n", "\tdirectaid {\n\t\temergency lluvias-bogota {\n\t\t\ttitle \"Lluvias en Bogotá\"\n\t\t}\n", 1)
	s.WriteCaddyfile(cf)
	s.Reload()
	_, disc := call(t, s, "GET", "/api/public/v1/help", nil)
	var slugs []string
	for _, e := range disc["emergencies"].([]any) {
		slugs = append(slugs, e.(map[string]any)["slug"].(string))
	}
	if !slices.Equal(slugs, []string{"lluvias-bogota", "eje-cafetero"}) {
		t.Errorf("after reload, active emergencies = %v", slugs)
	}
	if resp, again := publish(t, s, body); resp.StatusCode != 200 || again["id"] != first["id"] {
		t.Fatalf("after reload: %d %v", resp.StatusCode, again)
	}
	if resp, out := publish(t, s, with(validRequest(), "emergencySlug", "inundaciones-la-mojana")); resp.StatusCode != 400 || out["code"] != "unknown_emergency" {
		t.Errorf("closed emergency still accepts: %d %v", resp.StatusCode, out)
	}
}
