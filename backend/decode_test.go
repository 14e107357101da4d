package backend_test

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/directaid/directaid/internal/testmcp"
	"github.com/directaid/directaid/internal/testserver"
	"github.com/directaid/directaid/schema"
)

// What the server makes of bodies and ids at the edges of JSON and UTF-8 (issue 12), asked of
// httpapi.NewHandler in process: none of it involves Caddy.

// rawWith is body as JSON with the string member key set to a JSON string literal written as is, so
// that escapes encoding/json would never produce (a lone surrogate) reach the server.
func rawWith(t *testing.T, body map[string]any, key, literal string) []byte {
	t.Helper()
	b := testserver.MustJSON(t, testserver.With(body, key, "\x00placeholder"))
	out := strings.Replace(string(b), `"\u0000placeholder"`, literal, 1)
	if out == string(b) {
		t.Fatal("placeholder not found")
	}
	return []byte(out)
}

// mcpArgs is a record as a publishing tool's arguments (the tool fixes the type).
func mcpArgs(record map[string]any) map[string]any { return testserver.With(record, "type", nil) }

// TestValidationLoneSurrogates (issue 12): escapes of lone UTF-16 surrogates were read as U+FFFD, so
// the externalIds "a\ud800", "a\udbff" and "a\ufffd" were one idempotency key and the second publication
// silently returned the first record. Now they are invalid JSON, named by field, in the API and the
// MCP tools; U+FFFD itself is an ordinary character.
func TestValidationLoneSurrogates(t *testing.T) {
	s := newContractServer(t).Server
	post := func(b []byte) (*http.Response, map[string]any) {
		return testserver.Call(t, s, "POST", "/api/public/v1/help", b, "Content-Type", "application/json")
	}
	for _, lit := range []string{`"a\ud800"`, `"a\udbff"`, `"a\uDC00"`, `"a\udbff\u0041"`} {
		resp, body := post(rawWith(t, testserver.With(testserver.ValidRequest(), "externalId", "x"), "externalId", lit))
		if resp.StatusCode != 400 || body["code"] != "invalid_json" || !slices.Contains(testserver.ErrorFields(body), "/externalId") {
			t.Errorf("externalId %s: want 400 invalid_json naming /externalId, got %d %v", lit, resp.StatusCode, body)
		}
	}
	if resp, body := post(rawWith(t, testserver.ValidRequest(), "description", `"ok \ud83d\ude00 \ud800 no"`)); resp.StatusCode != 400 ||
		body["code"] != "invalid_json" || !slices.Contains(testserver.ErrorFields(body), "/description") {
		t.Errorf("lone surrogate in description: %d %v", resp.StatusCode, body)
	}
	if resp, body := post(rawWith(t, testserver.ValidRequest(), "externalId", `"a\ufffd"`)); resp.StatusCode != 201 {
		t.Fatalf(`externalId "a\ufffd": want 201, got %d %v`, resp.StatusCode, body)
	}
	// A valid surrogate pair is one character, and a retry of it a duplicate.
	pair := rawWith(t, testserver.ValidRequest(), "externalId", `"a\ud83d\ude00"`)
	if resp, body := post(pair); resp.StatusCode != 201 {
		t.Fatalf("surrogate pair: %d %v", resp.StatusCode, body)
	}
	if resp, body := post(pair); resp.StatusCode != 200 || body["duplicate"] != true {
		t.Fatalf("surrogate pair retry: %d %v", resp.StatusCode, body)
	}

	cs := testmcp.Session(t, s, "")
	args := rawWith(t, mcpArgs(testserver.ValidRequest()), "externalId", `"mcp\ud800"`)
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: schema.ToolPublishRequest, Arguments: json.RawMessage(args)})
	if err != nil {
		t.Fatal(err)
	}
	testmcp.Error(t, res, "externalId", `\ud800`)
}

// TestValidationEmptyNonTexts (issue 12): an empty or blank string in a member that is not a free text
// (a number, an enumeration) is a 400 naming it, not "absent"; only empty texts count as absent.
func TestValidationEmptyNonTexts(t *testing.T) {
	s := newContractServer(t).Server
	with, validRequest, validOffer := testserver.With, testserver.ValidRequest, testserver.ValidOffer
	for _, c := range []struct {
		body  map[string]any
		field string
	}{
		{with(validRequest(), "latitude", ""), "/latitude"},
		{with(validRequest(), "longitude", " "), "/longitude"},
		{with(validRequest(), "neededPeople", ""), "/neededPeople"},
		{with(validRequest(), "urgency", ""), "/urgency"},
		{with(validRequest(), "category", " "), "/category"},
		{with(validOffer(), "collectionCenterStatus", ""), "/collectionCenterStatus"},
		{with(validOffer(), "latitude", "", "longitude", ""), "/latitude"},
		{with(validRequest(), "publishContact", ""), "/publishContact"},
		{with(validOffer(), "neighborhood", ""), "/neighborhood"}, // not a member of an offer, even empty
	} {
		resp, body := testserver.Publish(t, s, c.body)
		msg := ""
		ds, _ := body["details"].([]any)
		for _, d := range ds {
			if d := d.(map[string]any); d["field"] == c.field {
				msg, _ = d["message"].(string)
			}
		}
		if resp.StatusCode != 400 || !strings.Contains(msg, "«"+strings.TrimPrefix(c.field, "/")+"»") {
			t.Errorf("%s %q: want 400 naming it with a message, got %d %v", c.field, c.body[strings.TrimPrefix(c.field, "/")], resp.StatusCode, body)
		}
	}
	// Empty texts are absent, as documented.
	if resp, body := testserver.Publish(t, s, with(validRequest(), "description", "", "neighborhood", "  ")); resp.StatusCode != 201 {
		t.Errorf("empty optional texts: %d %v", resp.StatusCode, body)
	}

	// The MCP tools validate like the API: buscar_ayudas refuses limit 0 (REST limit=0 is 400) and an empty type.
	cs := testmcp.Session(t, s, "")
	testmcp.Error(t, testmcp.CallTool(t, cs, schema.ToolSearchHelp, map[string]any{"limit": 0}), "limit")
	testmcp.Error(t, testmcp.CallTool(t, cs, schema.ToolSearchHelp, map[string]any{"type": ""}), "type")
	if resp, _ := testserver.Call(t, s, "GET", "/api/public/v1/help?view=list&limit=0", nil); resp.StatusCode != 400 {
		t.Errorf("REST limit=0: %d", resp.StatusCode)
	}
	testmcp.Error(t, testmcp.CallTool(t, cs, schema.ToolPublishOffer, mcpArgs(with(validOffer(), "collectionCenterStatus", ""))), "collectionCenterStatus")
}

// TestFormRefusesInvalidUTF8 (issue 12): the site's form builds JSON itself; bytes that are not UTF-8
// must not become U+FFFD there (one idempotency key for two different texts).
func TestFormRefusesInvalidUTF8(t *testing.T) {
	s := newContractServer(t).Server
	form := "type=request&externalId=web-e2e-%ED%A0%80&emergencySlug=eje-cafetero&title=Agua&category=alimentos" +
		"&address=Cra+1&latitude=4.5&longitude=-75.6&contactName=Ana&contactWhatsapp=3001234567&publishContact=true"
	resp, body := s.Do("POST", "/pedir", []byte(form), "Content-Type", "application/x-www-form-urlencoded")
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), "UTF-8") {
		t.Fatalf("form with a surrogate in UTF-8: %d\n%s", resp.StatusCode, body)
	}
	if r, out := testserver.Publish(t, s, testserver.With(testserver.ValidRequest(), "source", "directaid-web", "externalId", "web-e2e-\ufffd")); r.StatusCode != 201 {
		t.Errorf("the U+FFFD twin was stored by the form: %d %v", r.StatusCode, out)
	}
}

// TestIDsCaseInsensitive: an id read aloud and typed in capitals (Crockford's base32 is
// case-insensitive) finds its record in the API, on the site and through MCP, which all answer with
// the id in lower case.
func TestIDsCaseInsensitive(t *testing.T) {
	s := newContractServer(t).Server
	_, res := testserver.Publish(t, s, testserver.ValidRequest())
	id := res["id"].(string)
	upper := strings.ToUpper(id)
	resp, d := testserver.Call(t, s, "GET", "/api/public/v1/help?view=detail&id="+upper, nil)
	if resp.StatusCode != 200 || d["id"] != id {
		t.Errorf("API detail of %s: %d %v", upper, resp.StatusCode, d["id"])
	}
	resp, page := s.Do("GET", "/ayudas/"+upper, nil)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(page), `<link rel="canonical" href="`+s.URL+"/ayudas/"+id+`">`) {
		t.Errorf("page /ayudas/%s: %d\n%s", upper, resp.StatusCode, page)
	}
	if resp, twin := s.Do("GET", "/ayudas/"+upper+".md", nil); resp.StatusCode != 200 || !strings.Contains(string(twin), "<"+s.URL+"/ayudas/"+id+">") {
		t.Errorf("twin /ayudas/%s.md: %d\n%s", upper, resp.StatusCode, twin)
	}
	cs := testmcp.Session(t, s, "")
	r := testmcp.CallTool(t, cs, schema.ToolViewHelp, map[string]any{"id": upper})
	if r.IsError || !strings.Contains(testmcp.Text(r), id) {
		t.Errorf("ver_ayuda %s: %s", upper, testmcp.Text(r))
	}
}
