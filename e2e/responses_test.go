package e2e

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/directaid/directaid/internal/testserver"
	"github.com/directaid/directaid/schema"
)

// TestResponsesThroughTheBinary: «yo puedo ayudar» end to end — publish, respond, the count in the public
// views, the publisher's read with the manage token (the same 401/403 as …/actions otherwise), the
// author's withdrawal, a crash that loses no acknowledged response, resolve ending them, and the
// responder's number in no public answer and no log line. Every answer is checked against the served
// OpenAPI document.
func TestResponsesThroughTheBinary(t *testing.T) {
	t.Parallel()
	s := testserver.Start(t, testserver.Options{})
	_, pub := publish(t, s, validRequest())
	id, token := pub["id"].(string), pub["manageToken"].(string)
	do := func(method, path, body string, h ...string) (int, map[string]any, []byte) {
		t.Helper()
		if body != "" {
			h = append(h, "Content-Type", "application/json")
		}
		resp, raw := s.Do(method, path, []byte(body), h...)
		s.CheckOpenAPI(s.NewRequest(method, path, []byte(body), h...), resp, raw)
		var out map[string]any
		_ = json.Unmarshal(raw, &out)
		return resp.StatusCode, out, raw
	}
	const phone = "+57 311 222 3344"
	code, r1, raw := do("POST", schema.ResponsesPath(id), `{"message":"Tengo insulina, la llevo hoy","contactName":"Luis Privado","contactWhatsapp":"`+phone+`"}`)
	if code != 201 || r1["responseToken"] == nil {
		t.Fatalf("respond: %d %s", code, raw)
	}
	code, r2, _ := do("POST", schema.ResponsesPath(id), `{"message":"Puedo llevarla en moto"}`)
	if code != 201 {
		t.Fatalf("second response: %d", code)
	}
	count := func() float64 {
		t.Helper()
		_, d, raw := do("GET", schema.HelpPath+"?view=detail&id="+id, "")
		n, ok := d["responses"].(float64)
		if !ok {
			t.Fatalf("detail without responses: %s", raw)
		}
		return n
	}
	if n := count(); n != 2 {
		t.Fatalf("count: %v", n)
	}
	if _, p := s.Do("GET", schema.RecordPath(id), nil); !strings.Contains(string(p), "2 personas dicen que están ayudando") {
		t.Fatal("the record page does not say how many help")
	}
	// A crash right after: both acknowledged responses are there.
	s.Kill()
	s.Launch()
	code, list, raw := do("GET", schema.ResponsesPath(id), "", "Authorization", "Bearer "+token)
	if code != 200 || list["active"] != 2.0 || !strings.Contains(string(raw), "https://wa.me/573112223344") {
		t.Fatalf("the publisher's read after a crash: %d %s", code, raw)
	}
	// Strangers: 401 with the challenge; a wrong token or unknown id the 403 of …/actions.
	if resp, raw := s.Do("GET", schema.ResponsesPath(id), nil); resp.StatusCode != 401 || resp.Header.Get("WWW-Authenticate") != "Bearer" {
		t.Fatalf("without a token: %d %s", resp.StatusCode, raw)
	}
	_, _, want := act(t, s, id, "x", "resolve")
	for _, c := range [][2]string{{id, "x"}, {"06fz0000000000zz", token}, {id, r1["responseToken"].(string)}} {
		if code, _, raw := do("GET", schema.ResponsesPath(c[0]), "", "Authorization", "Bearer "+c[1]); code != 403 || !bytes.Equal(raw, want) {
			t.Fatalf("%v: %d %s, want %s", c, code, raw, want)
		}
	}
	// The author withdraws; the count follows.
	rid2 := r2["responseId"].(string)
	if code, out, raw := do("POST", schema.ResponsesPath(id)+"/"+rid2+"/actions", `{"action":"withdraw"}`, "Authorization", "Bearer "+r2["responseToken"].(string)); code != 200 || out["status"] != "withdrawn" {
		t.Fatalf("withdraw: %d %s", code, raw)
	}
	if n := count(); n != 1 {
		t.Fatalf("after the withdrawal: %v", n)
	}
	// attended=true lists it; attended=false does not.
	if _, _, raw := do("GET", schema.HelpPath+"?view=list&attended=false", ""); strings.Contains(string(raw), id) {
		t.Fatal("attended=false lists an answered record")
	}
	// Privacy: no public answer and no log line holds the responder's number or name.
	var public []byte
	for _, p := range []string{schema.HelpPath + "?view=detail&id=" + id, schema.HelpPath + "?view=list", schema.HelpPath + "?view=list&attended=true",
		schema.HelpPath + "?view=list&format=csv", schema.HelpPath + "?view=list&format=geojson", schema.HelpPath + "?view=list&format=csv&all=true",
		schema.HelpPath + "?view=list&since=2000-01-01T00:00:00Z", schema.RecordPath(id), schema.RecordPath(id) + ".md", "/", "/sitemap.xml"} {
		resp, raw := s.Do("GET", p, nil)
		if resp.StatusCode != 200 {
			t.Fatalf("%s: %d", p, resp.StatusCode)
		}
		public = append(public, raw...)
	}
	for _, f := range []string{"311 222 3344", "3112223344", "573112223344", "Luis Privado", "Tengo insulina, la llevo hoy"} {
		if bytes.Contains(public, []byte(f)) {
			t.Errorf("a public answer shows %q", f)
		}
		if strings.Contains(s.Log(), f) || strings.Contains(s.Output(), f) {
			t.Errorf("the log holds %q", f)
		}
	}
	// Resolving ends the responses; a resolved record takes none.
	if resp, _, raw := act(t, s, id, token, "resolve"); resp.StatusCode != 200 {
		t.Fatalf("resolve: %s", raw)
	}
	if _, list, raw := do("GET", schema.ResponsesPath(id), "", "Authorization", "Bearer "+token); list["active"] != 0.0 || !strings.Contains(string(raw), `"status":"ended"`) {
		t.Fatalf("after resolve: %s", raw)
	}
	if code, _, _ := do("POST", schema.ResponsesPath(id), `{"message":"hola"}`); code != 410 {
		t.Fatalf("a response to a resolved record: %d", code)
	}
}
