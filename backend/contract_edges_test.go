package backend_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/directaid/directaid/internal/testserver"
)

// The contract as an outside integrator meets it (issue 12): what the server answers to requests at the
// edges of the documented surface, asked of httpapi.NewHandler in process (no Caddy is involved).

// doHeaders sends a request with repeated header fields (testserver.Do sets each name once).
func doHeaders(t *testing.T, s *testserver.Server, method, path string, body []byte, header http.Header) (*http.Response, []byte) {
	t.Helper()
	req := s.NewRequest(method, path, body)
	for k, vs := range header {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp, raw
}

// Item 7: two Content-Type fields are ambiguous framing; the server refuses instead of picking one.
func TestContractDuplicateContentType(t *testing.T) {
	s := newContractServer(t)
	rec := testserver.ValidRequest()
	two := http.Header{"Content-Type": {"application/json", "text/plain"}}
	resp, raw := doHeaders(t, s.Server, "POST", "/api/public/v1/help", testserver.MustJSON(t, rec), two)
	s.CheckOpenAPI(s.NewRequest("POST", "/api/public/v1/help", testserver.MustJSON(t, rec)), resp, raw)
	var e map[string]any
	_ = json.Unmarshal(raw, &e)
	if resp.StatusCode != 400 || e["code"] != "invalid_request" {
		t.Errorf("POST help with two Content-Type: %d %s, want 400 invalid_request", resp.StatusCode, raw)
	}
	if r, _ := testserver.Publish(t, s.Server, rec); r.StatusCode != 201 {
		t.Errorf("the refused body was stored: its publication answers %d", r.StatusCode)
	}
	// The reverse order too, and on /mcp.
	two = http.Header{"Content-Type": {"text/plain", "application/json"}}
	if resp, raw := doHeaders(t, s.Server, "POST", "/api/public/v1/help", testserver.MustJSON(t, testserver.ValidOffer()), two); resp.StatusCode != 400 {
		t.Errorf("text/plain then application/json: %d %s", resp.StatusCode, raw)
	}
	ping := []byte(`{"jsonrpc":"2.0","id":1,"method":"ping"}`)
	resp, raw = doHeaders(t, s.Server, "POST", "/mcp", ping, http.Header{"Content-Type": {"application/json", "text/plain"}})
	var rpc map[string]any
	_ = json.Unmarshal(raw, &rpc)
	if resp.StatusCode != 400 || rpc["jsonrpc"] != "2.0" || rpc["error"] == nil {
		t.Errorf("POST /mcp with two Content-Type: %d %s", resp.StatusCode, raw)
	}
	// The site's no-JavaScript form as well.
	form := []byte("title=x")
	if resp, _ := doHeaders(t, s.Server, "POST", "/pedir", form, http.Header{"Content-Type": {"application/x-www-form-urlencoded", "text/plain"}}); resp.StatusCode != 400 {
		t.Errorf("POST /pedir with two Content-Type: %d", resp.StatusCode)
	}
}

// Item 8: /mcp says the same methods in its preflight, in the Allow of a 405, and in what it serves.
func TestContractMCPMethodsAgree(t *testing.T) {
	s := newContractServer(t)
	const want = "POST, OPTIONS"
	resp, _ := testserver.Call(t, s.Server, "OPTIONS", "/mcp", nil, "Origin", "http://localhost:6274", "Access-Control-Request-Method", "POST")
	if resp.StatusCode != 204 || resp.Header.Get("Allow") != want || resp.Header.Get("Access-Control-Allow-Methods") != want {
		t.Errorf("preflight: %d Allow %q, Access-Control-Allow-Methods %q; want both %q", resp.StatusCode,
			resp.Header.Get("Allow"), resp.Header.Get("Access-Control-Allow-Methods"), want)
	}
	for _, m := range []string{"GET", "DELETE", "HEAD"} {
		resp, _ := testserver.Call(t, s.Server, m, "/mcp", nil)
		if resp.StatusCode != 405 || resp.Header.Get("Allow") != want {
			t.Errorf("%s /mcp: %d Allow %q, want 405 Allow %q", m, resp.StatusCode, resp.Header.Get("Allow"), want)
		}
	}
	for _, m := range []string{"PUT", "PATCH"} {
		resp, _ := s.Do(m, "/mcp", nil)
		if resp.StatusCode != 405 || resp.Header.Get("Allow") != want {
			t.Errorf("%s /mcp: %d Allow %q, want 405 Allow %q", m, resp.StatusCode, resp.Header.Get("Allow"), want)
		}
	}
	// The OpenAPI document says the same: the methods it declares, and in prose the 405 of the others.
	_, raw := s.Do("GET", "/api/public/openapi.json", nil)
	var doc struct {
		Info struct {
			Description string `json:"description"`
		} `json:"info"`
		Paths map[string]map[string]struct {
			Responses map[string]struct {
				Description string                    `json:"description"`
				Headers     map[string]map[string]any `json:"headers"`
			} `json:"responses"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	var ops []string
	for op := range doc.Paths["/mcp"] {
		ops = append(ops, op)
	}
	if slices.Sort(ops); strings.Join(ops, ", ") != "options, post" {
		t.Errorf("OpenAPI /mcp declares %v, want options and post", ops)
	}
	if !strings.Contains(doc.Info.Description, "405 con Allow: "+want) {
		t.Errorf("OpenAPI info.description does not say /mcp's 405 with Allow: %s:\n%s", want, doc.Info.Description)
	}
	pre := doc.Paths["/mcp"]["options"].Responses["204"].Headers
	for _, h := range []string{"Allow", "Access-Control-Allow-Methods"} {
		if sc, _ := pre[h]["schema"].(map[string]any); sc["const"] != want {
			t.Errorf("OpenAPI /mcp preflight %s: %v, want const %q", h, pre[h], want)
		}
	}
}

// Item 9: discovery (GET help without view) refuses parameters it does not understand, as the views do.
func TestContractDiscoveryParameters(t *testing.T) {
	s := newContractServer(t)
	for q, want := range map[string][]string{
		"format=csv":           {"/query/format"},
		"limit=0":              {"/query/limit"},
		"urgency=bogus":        {"/query/urgency"},
		"type=offer&q=agua":    {"/query/q", "/query/type"},
		"foo=1":                {"/query/foo"},
		"id=06h06nprgv8bks79":  {"/query/id"},
		"emergencySlug=x&_=12": {"/query/emergencySlug"},
	} {
		resp, e := testserver.Call(t, s.Server, "GET", "/api/public/v1/help?"+q, nil)
		if resp.StatusCode != 400 || e["code"] != "invalid_parameter" || !slices.Equal(testserver.ErrorFields(e), want) {
			t.Errorf("discovery ?%s: %d %v, want 400 invalid_parameter naming %v", q, resp.StatusCode, e, want)
			continue
		}
		if q == "format=csv" && !strings.Contains(fmt.Sprint(e["details"]), "view=list") {
			t.Errorf("discovery ?format=csv does not say that format goes with view=list: %v", e)
		}
	}
	// A cache buster is still fine, and so is HEAD.
	if resp, d := testserver.Call(t, s.Server, "GET", "/api/public/v1/help?_=1700000000", nil); resp.StatusCode != 200 || d["emergencies"] == nil {
		t.Errorf("discovery with _: %d %v", resp.StatusCode, d)
	}
	if resp, _ := testserver.Call(t, s.Server, "HEAD", "/api/public/v1/help?format=csv", nil); resp.StatusCode != 400 {
		t.Errorf("HEAD discovery ?format=csv: %d", resp.StatusCode)
	}
}

// Item 5: an error answer lists at most 20 details and counts the rest, whatever the request holds.
func TestContractDetailsCapped(t *testing.T) {
	s := newContractServer(t)
	var q strings.Builder
	q.WriteString("view=list")
	for i := range 2656 {
		fmt.Fprintf(&q, "&p%d=1", i)
	}
	resp, raw := s.Do("GET", "/api/public/v1/help?"+q.String(), nil)
	s.CheckOpenAPI(s.NewRequest("GET", "/api/public/v1/help?"+q.String(), nil), resp, raw)
	var e map[string]any
	_ = json.Unmarshal(raw, &e)
	if resp.StatusCode != 400 || len(testserver.ErrorFields(e)) != 20 || e["detailsOmitted"] != 2636.0 || len(raw) > 8<<10 {
		t.Errorf("2656 unknown parameters: %d, %d bytes, %d details, detailsOmitted %v; want 400, 20 details and 2636 omitted",
			resp.StatusCode, len(raw), len(testserver.ErrorFields(e)), e["detailsOmitted"])
	}
	// A POST body with thousands of unknown fields.
	body := testserver.ValidRequest()
	for i := range 3000 {
		body[fmt.Sprintf("x%d", i)] = 1
	}
	r, e := testserver.Publish(t, s.Server, body)
	if r.StatusCode != 400 || len(testserver.ErrorFields(e)) != 20 || e["detailsOmitted"] != 2980.0 {
		t.Errorf("3000 unknown fields: %d, %d details, detailsOmitted %v", r.StatusCode, len(testserver.ErrorFields(e)), e["detailsOmitted"])
	}
	// Below the cap nothing is omitted.
	r, e = testserver.Publish(t, s.Server, testserver.With(testserver.ValidRequest(), "lat", 4.5))
	if r.StatusCode != 400 || len(testserver.ErrorFields(e)) != 1 || e["detailsOmitted"] != nil {
		t.Errorf("one unknown field: %d %v", r.StatusCode, e)
	}
}

// Item 6: an unknown path is 404 for every method: the JSON error body under /api/, the site's 404 page
// elsewhere.
func TestContractUnknownPaths(t *testing.T) {
	s := newContractServer(t)
	for _, path := range []string{"/api/public/v1/help/", "/api/public/v1/helps", "/api/nada", "/api/public/v2/help"} {
		for _, m := range []string{"GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS"} {
			resp, raw := s.Do(m, path, []byte(`{}`), "Content-Type", "application/json")
			var e map[string]any
			_ = json.Unmarshal(raw, &e)
			if resp.StatusCode != 404 || resp.Header.Get("Content-Type") != "application/json" || (m != "HEAD" && e["code"] != "not_found") {
				t.Errorf("%s %s: %d %s %s, want 404 with the JSON error body", m, path, resp.StatusCode, resp.Header.Get("Content-Type"), raw)
			}
		}
	}
	for _, path := range []string{"/no-existe", "/no-existe.md", "/emergencias/no-existe/x"} {
		for _, m := range []string{"GET", "POST", "PUT", "DELETE", "OPTIONS"} {
			resp, raw := s.Do(m, path, []byte("a=1"), "Content-Type", "application/x-www-form-urlencoded", "Accept", "text/html")
			if resp.StatusCode != 404 || !bytes.Contains(raw, []byte("<html")) && !bytes.Contains(raw, []byte("# ")) {
				t.Errorf("%s %s: %d %s %.80q, want 404 with the site's 404 page", m, path, resp.StatusCode, resp.Header.Get("Content-Type"), raw)
			}
		}
	}
	// Known paths still refuse a method they do not take with 405.
	if resp, _ := testserver.Call(t, s.Server, "PUT", "/api/public/v1/help", nil); resp.StatusCode != 405 {
		t.Errorf("PUT help: %d", resp.StatusCode)
	}
	if resp, _ := s.Do("POST", "/privacidad", nil); resp.StatusCode != 405 {
		t.Errorf("POST /privacidad: %d", resp.StatusCode)
	}
}
