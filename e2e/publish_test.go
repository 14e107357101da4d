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

func TestValidationRules(t *testing.T) {
	s := testserver.Start(t, testserver.Options{})
	long := func(n int) string { return strings.Repeat("ñ", n) } // 2 bytes each: lengths count characters
	type rule struct {
		name  string
		body  map[string]any
		code  string
		field string
	}
	cases := []rule{
		{"category enum", with(validRequest(), "category", "comida"), "invalid_body", "/category"},
		{"urgency enum", with(validRequest(), "urgency", "alta"), "invalid_body", "/urgency"},
		{"collectionCenterStatus enum", with(validOffer(), "collectionCenterStatus", "cerrado"), "invalid_body", "/collectionCenterStatus"},
		{"type enum", with(validRequest(), "type", "pedido"), "invalid_body", "/type"},
		{"type missing", with(validRequest(), "type", nil), "invalid_body", "/type"},
		{"title 101", with(validRequest(), "title", long(101)), "invalid_body", "/title"},
		{"description 601", with(validRequest(), "description", long(601)), "invalid_body", "/description"},
		{"contactName 101", with(validRequest(), "contactName", long(101)), "invalid_body", "/contactName"},
		{"latitude below", with(validRequest(), "latitude", -4.31), "invalid_body", "/latitude"},
		{"latitude above", with(validRequest(), "latitude", 13.61), "invalid_body", "/latitude"},
		{"longitude below", with(validRequest(), "longitude", -79.11), "invalid_body", "/longitude"},
		{"longitude above", with(validRequest(), "longitude", -66.79), "invalid_body", "/longitude"},
		{"offer latitude above", with(validOffer(), "latitude", 14, "longitude", -75), "invalid_body", "/latitude"},
		{"neededPeople below", with(validRequest(), "neededPeople", -1), "invalid_body", "/neededPeople"},
		{"neededPeople above", with(validRequest(), "neededPeople", 10001), "invalid_body", "/neededPeople"},
		{"neededPeople fraction", with(validRequest(), "neededPeople", 1.5), "invalid_body", "/neededPeople"},
		{"latitude as string", with(validRequest(), "latitude", "4.5"), "invalid_body", "/latitude"},
		{"publishContact false", with(validRequest(), "publishContact", false), "consent_required", "/publishContact"},
		{"publishContact missing", with(validRequest(), "publishContact", nil), "consent_required", "/publishContact"},
		{"publishContact string", with(validRequest(), "publishContact", "true"), "invalid_body", "/publishContact"},
		{"unknown field", with(validRequest(), "lat", 4.5), "invalid_body", "/lat"},
		{"phone garbage", with(validRequest(), "contactWhatsapp", "llamar al vecino"), "invalid_body", "/contactWhatsapp"},
		{"phone too short", with(validRequest(), "contactWhatsapp", "12345"), "invalid_body", "/contactWhatsapp"},
		{"blank title is missing", with(validRequest(), "title", "   "), "invalid_body", "/title"},
		{"unknown emergency", with(validRequest(), "emergencySlug", "no-existe"), "unknown_emergency", "/emergencySlug"},
		{"emergency required", with(validRequest(), "emergencySlug", nil), "emergency_required", "/emergencySlug"},
	}
	requestRequired := []string{"source", "externalId", "title", "category", "contactName", "contactWhatsapp", "address", "latitude", "longitude"}
	for _, f := range requestRequired {
		cases = append(cases, rule{"request missing " + f, with(validRequest(), f, nil), "invalid_body", "/" + f})
	}
	for _, f := range []string{"source", "externalId", "title", "category", "contactName", "contactWhatsapp"} {
		cases = append(cases, rule{"offer missing " + f, with(validOffer(), f, nil), "invalid_body", "/" + f})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			resp, body := publish(t, s, c.body)
			if resp.StatusCode != http.StatusBadRequest || body["code"] != c.code || !slices.Contains(fields(body), c.field) {
				t.Fatalf("want 400 %s naming %s; got %d %v", c.code, c.field, resp.StatusCode, body)
			}
			if msg, _ := body["error"].(string); msg == "" {
				t.Errorf("no error message: %v", body)
			}
		})
	}
	// Every violation at once.
	resp, body := publish(t, s, with(validRequest(), "title", long(101), "latitude", 99, "category", "x"))
	if got := fields(body); resp.StatusCode != 400 || !slices.Equal(got, []string{"/title", "/category", "/latitude"}) {
		t.Errorf("all violations at once: %d %v", resp.StatusCode, got)
	}
	// The emergency rules too: consent and the emergency both missing, or a bad field and an unknown slug.
	resp, body = publish(t, s, with(validRequest(), "publishContact", false, "emergencySlug", nil))
	if got := fields(body); resp.StatusCode != 400 || body["code"] != "consent_required" || !slices.Equal(got, []string{"/publishContact", "/emergencySlug"}) {
		t.Errorf("consent and emergency missing: %d %v", resp.StatusCode, body)
	}
	resp, body = publish(t, s, with(validRequest(), "latitude", 99, "emergencySlug", " no-existe "))
	if got := fields(body); resp.StatusCode != 400 || body["code"] != "invalid_body" || !slices.Equal(got, []string{"/latitude", "/emergencySlug"}) {
		t.Errorf("bad latitude and unknown emergency: %d %v", resp.StatusCode, body)
	}
	// The limits themselves pass: 100 two-byte characters, the corners of Colombia, 0 and 10000 people.
	ok := []map[string]any{
		with(validRequest(), "title", long(100), "contactName", long(100), "description", long(600)),
		with(validRequest(), "latitude", -4.3, "longitude", -79.1, "neededPeople", 0),
		with(validRequest(), "latitude", 13.6, "longitude", -66.8, "neededPeople", 10000),
		with(validRequest(), "urgency", nil, "neededPeople", nil, "description", nil, "neighborhood", nil),
		with(validOffer(), "latitude", 4.5, "longitude", -75.6, "address", "Parque", "collectionCenterStatus", "needs_volunteers"),
	}
	for i, b := range ok {
		if resp, out := publish(t, s, b); resp.StatusCode != 201 {
			t.Errorf("valid body %d refused: %d %v", i, resp.StatusCode, out)
		}
	}
}

func TestMalformedBodies(t *testing.T) {
	s := testserver.Start(t, testserver.Options{})
	post := func(body []byte, ct string) (*http.Response, map[string]any) {
		return call(t, s, "POST", "/api/public/v1/help", body, "Content-Type", ct)
	}
	for _, c := range []struct {
		name   string
		body   []byte
		ct     string
		status int
		code   string
	}{
		{"not json", []byte("hola"), "application/json", 400, "invalid_json"},
		{"truncated", []byte(`{"type":"request"`), "application/json", 400, "invalid_json"},
		{"duplicate key", []byte(`{"type":"request","type":"offer"}`), "application/json", 400, "invalid_json"},
		{"array", []byte(`[1,2]`), "application/json", 400, "invalid_body"},
		{"two values", []byte(`{} {}`), "application/json", 400, "invalid_json"},
		{"form encoded", []byte("title=x"), "application/x-www-form-urlencoded", 415, "unsupported_media_type"},
		{"no content type", mustJSON(t, validRequest()), "", 415, "unsupported_media_type"},
		{"latin1 charset", mustJSON(t, validRequest()), "application/json; charset=iso-8859-1", 415, "unsupported_media_type"},
		{"too large", append(append([]byte(`{"description":"`), bytes.Repeat([]byte("a"), 70<<10)...), `"}`...), "application/json", 413, "body_too_large"},
	} {
		t.Run(c.name, func(t *testing.T) {
			resp, body := post(c.body, c.ct)
			if resp.StatusCode != c.status || body["code"] != c.code {
				t.Fatalf("want %d %s, got %d %v", c.status, c.code, resp.StatusCode, body)
			}
		})
	}
	if resp, body := post(mustJSON(t, validRequest()), "application/json; charset=UTF-8"); resp.StatusCode != 201 {
		t.Errorf("charset=UTF-8 refused: %d %v", resp.StatusCode, body)
	}
	for _, c := range []struct{ method, path, allow string }{
		{"PUT", "/api/public/v1/help", "GET, HEAD, POST, OPTIONS"},
		{"PATCH", "/api/public/v1/help", "GET, HEAD, POST, OPTIONS"},
		{"DELETE", "/api/public/v1/help", "GET, HEAD, POST, OPTIONS"},
		{"POST", "/api/public/openapi.json", "GET, HEAD, OPTIONS"},
	} {
		resp, body := call(t, s, c.method, c.path, nil)
		if resp.StatusCode != 405 || resp.Header.Get("Allow") != c.allow || body["code"] != "method_not_allowed" {
			t.Errorf("%s %s: %d %v %v", c.method, c.path, resp.StatusCode, resp.Header, body)
		}
	}
	for _, path := range []string{"/api/public/v1/help", "/api/public/openapi.json"} {
		if resp, _ := call(t, s, "HEAD", path, nil); resp.StatusCode != 200 || resp.Header.Get("ETag") == "" {
			t.Errorf("HEAD %s: %d %v", path, resp.StatusCode, resp.Header)
		}
	}
}

func TestEmergencySelection(t *testing.T) {
	one := testserver.Start(t, testserver.Options{Emergencies: testserver.OneEmergency})
	resp, body := publish(t, one, with(validRequest(), "emergencySlug", nil))
	if resp.StatusCode != 201 || body["emergencySlug"] != "eje-cafetero" {
		t.Fatalf("one active, no slug: %d %v", resp.StatusCode, body)
	}
	resp, body = publish(t, one, with(validRequest(), "emergencySlug", "sequia-guajira"))
	if resp.StatusCode != 400 || body["code"] != "unknown_emergency" {
		t.Fatalf("inactive slug: %d %v", resp.StatusCode, body)
	}
	_, disc := call(t, one, "GET", "/api/public/v1/help", nil)
	if es := disc["emergencies"].([]any); len(es) != 1 || es[0].(map[string]any)["slug"] != "eje-cafetero" {
		t.Errorf("discovery lists inactive emergencies: %v", es)
	}

	two := testserver.Start(t, testserver.Options{})
	resp, body = publish(t, two, with(validRequest(), "emergencySlug", nil))
	if resp.StatusCode != 400 || body["code"] != "emergency_required" {
		t.Fatalf("two active, no slug: %d %v", resp.StatusCode, body)
	}
	d := body["details"].([]any)[0].(map[string]any)
	if fmt.Sprint(d["allowed"]) != "[eje-cafetero inundaciones-la-mojana]" {
		t.Errorf("details should list the active slugs: %v", d)
	}
	resp, body = publish(t, two, with(validRequest(), "emergencySlug", "inundaciones-la-mojana"))
	if resp.StatusCode != 201 || body["emergencySlug"] != "inundaciones-la-mojana" {
		t.Fatalf("explicit slug: %d %v", resp.StatusCode, body)
	}

	none := testserver.Start(t, testserver.Options{Emergencies: `
		emergency pasada {
			title "Pasada"
			inactive
		}`})
	resp, body = publish(t, none, with(validRequest(), "emergencySlug", nil))
	if resp.StatusCode != 400 || body["code"] != "no_active_emergency" {
		t.Fatalf("none active: %d %v", resp.StatusCode, body)
	}
}

func TestDiscoveryOpenAPIAndCORS(t *testing.T) {
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
	if resp.Header.Get("Access-Control-Allow-Origin") != "*" || resp.Header.Get("API-Version") != "1.0.0" {
		t.Errorf("429 must carry CORS and API-Version so browsers can read it: %v", resp.Header)
	}
	// Reads are not limited.
	if r, _ := call(t, s, "GET", "/api/public/v1/help", nil); r.StatusCode != 200 {
		t.Errorf("GET after the publish limit: %d", r.StatusCode)
	}
}

func TestConcurrentFirstPublication(t *testing.T) {
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
