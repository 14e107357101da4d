package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/directaid/directaid/internal/openapidoc"
	"github.com/directaid/directaid/internal/testserver"
	"github.com/directaid/directaid/schema"
)

// otherEmergencies are a server's emergencies, none of them the eje-cafetero of the built-in examples:
// the served document must speak of these.
const otherEmergencies = `
		emergency sequia-la-guajira {
			title "Sequía en La Guajira"
		}
		emergency inundaciones-la-mojana {
			title "Inundaciones en La Mojana"
		}`

const otherSlug = "sequia-la-guajira"

// TestOpenAPIExamplesWork sends every request example (and every query example, x-query-examples) of the
// served OpenAPI document to a server whose
// emergencies are not the built-in examples' and expects the status the example declares (x-status);
// call checks each answer against the document too. (schema's TestEveryOperationHasExamples checks that
// every operation has examples, valid against their schemas.)
func TestOpenAPIExamplesWork(t *testing.T) {
	t.Parallel()
	s := testserver.Start(t, testserver.Options{Emergencies: otherEmergencies})
	resp, raw := s.Do("GET", "/api/public/openapi.json", nil)
	if resp.StatusCode != 200 {
		t.Fatalf("openapi.json: %d", resp.StatusCode)
	}
	if bytes.Contains(raw, []byte("eje-cafetero")) {
		t.Errorf("the served document names eje-cafetero, an emergency this server does not have")
	}
	doc, err := openapidoc.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	// Paths with {id} are sent about a record of this server's own, {responseId} about a response to it.
	_, rec := publish(t, s, with(validRequest(), "emergencySlug", otherSlug))
	id, _ := rec["id"].(string)
	resp, resRaw := s.Do("POST", "/api/public/v1/help/"+id+"/responses", []byte(`{"message":"Puedo ayudar"}`), "Content-Type", "application/json")
	var respID string
	if i := strings.Index(string(resRaw), `"responseId":"`); resp.StatusCode == 201 && i >= 0 {
		respID, _, _ = strings.Cut(string(resRaw[i+len(`"responseId":"`):]), `"`)
	} else {
		t.Fatalf("a response to fill {responseId}: %d %s", resp.StatusCode, resRaw)
	}
	sent := 0
	for path, item := range doc.Paths {
		for method, op := range item {
			target := strings.ReplaceAll(strings.ReplaceAll(path, "{id}", id), "{responseId}", respID)
			if strings.Contains(target, "{") {
				t.Fatalf("%s %s: a path parameter this test cannot fill", strings.ToUpper(method), path)
			}
			for _, ex := range op.QueryExamples { // x-query-examples: query strings of a GET
				want, err := strconv.Atoi(ex.Status)
				if err != nil {
					t.Fatalf("%s %q: x-status %q", op.OperationID, ex.Name, ex.Status)
				}
				resp, body := call(t, s, strings.ToUpper(method), target+"?"+ex.Query, nil)
				if resp.StatusCode != want {
					t.Errorf("%s query example %q: %d, the document says %d\n%v", op.OperationID, ex.Name, resp.StatusCode, want, body)
				}
				sent++
			}
			if op.RequestBody == nil {
				continue
			}
			for name, ex := range op.RequestBody.Content["application/json"].Examples {
				want, err := strconv.Atoi(ex.Status)
				if err != nil {
					t.Fatalf("%s %q: x-status %q", op.OperationID, name, ex.Status)
				}
				resp, body := call(t, s, strings.ToUpper(method), target, ex.Value,
					"Content-Type", "application/json", "Accept", "application/json, text/event-stream")
				if resp.StatusCode != want {
					t.Errorf("%s example %q: %d, the document says %d\n%s\n%v", op.OperationID, name, resp.StatusCode, want, ex.Value, body)
				}
				sent++
			}
		}
	}
	if sent < 5 {
		t.Fatalf("only %d request examples in the served document", sent)
	}
	t.Logf("%d request examples sent, each answered with its documented status", sent)
}

// TestMCPRequestSchemaIsTheServers: the document's schema of the /mcp request body admits exactly the
// messages the server takes. Each message goes to the independent validator (libopenapi-validator) and to
// the server: the validator refuses it if and only if the server refuses it as a malformed message
// (-32600 or -32700, 400).
func TestMCPRequestSchemaIsTheServers(t *testing.T) {
	t.Parallel()
	s := testserver.Start(t, testserver.Options{})
	val, err := s.Validator()
	if err != nil {
		t.Fatal(err)
	}
	for _, msg := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":"a","method":"ping","params":{}}`,
		`{"jsonrpc":"2.0","id":2,"method":"ping","params":null}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":3,"result":{}}`,
		`{"jsonrpc":"2.0","id":4,"error":{"code":-32000,"message":"x"}}`,
		`{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"x"}}`,
		`{"jsonrpc":"2.0"}`,
		`{"jsonrpc":"2.0","id":5}`,
		`{"id":6,"method":"ping"}`,
		`{"jsonrpc":"1.0","id":7,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":8,"method":""}`,
		`{"jsonrpc":"2.0","id":9,"method":5}`,
		`{"jsonrpc":"2.0","id":null,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":1.5,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":{},"method":"ping"}`,
		`{"jsonrpc":"2.0","id":10,"method":"ping","params":[]}`,
		`{"jsonrpc":"2.0","id":11,"method":"ping","result":{}}`,
		`{"jsonrpc":"2.0","id":12,"result":{},"error":{"code":1,"message":"x"}}`,
		`{"jsonrpc":"2.0","id":13,"result":5}`,
		`{"jsonrpc":"2.0","id":14,"error":{"code":"x","message":"x"}}`,
		`[]`,
		`5`,
	} {
		header := []string{"Content-Type", "application/json", "Accept", "application/json, text/event-stream"}
		docErr := val.CheckRequest(s.NewRequest("POST", schema.MCPPath, []byte(msg), header...))
		resp, body := call(t, s, "POST", schema.MCPPath, []byte(msg), header...)
		e, _ := body["error"].(map[string]any)
		code, _ := e["code"].(float64)
		refused := resp.StatusCode == 400 && (code == -32600 || code == -32700)
		if refused != (docErr != nil) {
			t.Errorf("%s: the server answers %d %v; the document's schema says %v", msg, resp.StatusCode, body, docErr)
		}
	}
}

// TestOpenAPIDocumentedResponses: every response the served document declares for an operation is one
// the server gives, as documented (call checks status, headers and body against the document): each
// (operation, status) below is produced by one request, and the test fails for a documented one that no
// request produces. Only a failing store gives the few listed in needsAFailingStore.
func TestOpenAPIDocumentedResponses(t *testing.T) {
	t.Parallel()
	s := testserver.Start(t, testserver.Options{Emergencies: otherEmergencies})
	limited := testserver.Start(t, testserver.Options{Emergencies: otherEmergencies, PublishEvents: 1, DetailEvents: 1})
	_, raw := s.Do("GET", schema.OpenAPIPath, nil)
	var doc struct {
		Paths map[string]map[string]struct {
			OperationID string                     `json:"operationId"`
			Responses   map[string]json.RawMessage `json:"responses"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	// needsAFailingStore: an internal error, or a store that cannot be reached or written (its disk under
	// min_free_space, PostgreSQL down): health_test.go and postgres_test.go make those.
	needsAFailingStore := map[string]bool{}
	for _, op := range []string{"getHelp", "headHelp", "publishHelp", "actOnHelp", "reportHelp", "getHelpMatches", "headHelpMatches",
		"respondToHelp", "listHelpResponses", "actOnResponse", "reportResponse"} {
		needsAFailingStore[op+" 500"], needsAFailingStore[op+" 503"] = true, true
	}

	jsonCT := []string{"Content-Type", "application/json"}
	mcpCT := []string{"Content-Type", "application/json", "Accept", "application/json, text/event-stream"}
	const unknownMethod2026 = `{"jsonrpc":"2.0","id":1,"method":"no/such","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
	pub := func(srv *testserver.Server, ext string) map[string]any {
		t.Helper()
		resp, out := publish(t, srv, with(validRequest(), "emergencySlug", otherSlug, "externalId", ext))
		if resp.StatusCode != 201 {
			t.Fatalf("publish %s: %d %v", ext, resp.StatusCode, out)
		}
		return out
	}
	rec, gone := pub(s, "documented-1"), pub(s, "documented-2")
	id, token := rec["id"].(string), rec["manageToken"].(string)
	goneID, goneToken := gone["id"].(string), gone["manageToken"].(string)
	if resp, out := call(t, s, "POST", schema.ActionsPath(goneID), []byte(`{"action":"withdraw"}`), "Content-Type", "application/json", "Authorization", "Bearer "+goneToken); resp.StatusCode != 200 {
		t.Fatalf("withdraw: %d %v", resp.StatusCode, out)
	}
	bearer := func(tok string) []string {
		return []string{"Content-Type", "application/json", "Authorization", "Bearer " + tok}
	}
	// respond answers record on srv «yo puedo ayudar»: the response's id and token.
	responses := 0
	respond := func(srv *testserver.Server, record string) (string, string) {
		t.Helper()
		responses++ // each its own words: the same ones again would be a retry (200)
		resp, out := call(t, srv, "POST", schema.ResponsesPath(record), []byte(fmt.Sprintf(`{"message":"Puedo ayudar (%d)"}`, responses)), "Content-Type", "application/json")
		if resp.StatusCode != 201 {
			t.Fatalf("respond to %s: %d %v", record, resp.StatusCode, out)
		}
		return fmt.Sprint(out["responseId"]), fmt.Sprint(out["responseToken"])
	}
	rid, rtoken := respond(s, id)
	withdrawnRID, withdrawnToken := respond(s, id)
	responseOf := func(record, response, suffix string) string {
		return schema.ResponsesPath(record) + "/" + response + suffix
	}
	if resp, out := call(t, s, "POST", responseOf(id, withdrawnRID, schema.ActionsSuffix), []byte(`{"action":"withdraw"}`), bearer(withdrawnToken)...); resp.StatusCode != 200 {
		t.Fatalf("withdraw a response: %d %v", resp.StatusCode, out)
	}
	// etag(path) is an If-None-Match header with the ETag path has when the request is sent.
	etag := func(path string) []string { return []string{"If-None-Match", "etag-of:" + path} }
	big := bytes.Repeat([]byte(" "), 200<<10)
	unknownID := "06fz0000000000zz"
	type req struct {
		op     string
		status int
		srv    *testserver.Server
		method string
		path   string
		body   []byte
		header []string
	}
	cases := []req{
		{"getOpenAPI", 200, s, "GET", schema.OpenAPIPath, nil, nil},
		{"getOpenAPI", 304, s, "GET", schema.OpenAPIPath, nil, etag(schema.OpenAPIPath)},
		{"headOpenAPI", 200, s, "HEAD", schema.OpenAPIPath, nil, nil},
		{"headOpenAPI", 304, s, "HEAD", schema.OpenAPIPath, nil, etag(schema.OpenAPIPath)},
		{"preflightOpenAPI", 204, s, "OPTIONS", schema.OpenAPIPath, nil, nil},
		{"preflightHelp", 204, s, "OPTIONS", schema.HelpPath, nil, nil},
		{"preflightActions", 204, s, "OPTIONS", schema.ActionsPath(id), nil, nil},
		{"preflightReports", 204, s, "OPTIONS", schema.HelpPath + "/" + id + schema.ReportsSuffix, nil, nil},
		{"preflightMCP", 204, s, "OPTIONS", schema.MCPPath, nil, nil},

		{"publishHelp", 201, s, "POST", schema.HelpPath, mustJSON(t, with(validRequest(), "emergencySlug", otherSlug, "externalId", "documented-3")), jsonCT},
		{"publishHelp", 200, s, "POST", schema.HelpPath, mustJSON(t, with(validRequest(), "emergencySlug", otherSlug, "externalId", "documented-3")), jsonCT},
		// A dry run placed by its placeCode alone: its record's locationPrecision is place.
		{"publishHelp", 200, s, "POST", schema.HelpPath + "?dryRun=true", mustJSON(t, with(validRequest(), "emergencySlug", otherSlug, "externalId", "documented-4", "latitude", nil, "longitude", nil, "placeCode", "63001")), jsonCT},
		{"publishHelp", 400, s, "POST", schema.HelpPath, []byte(`{}`), jsonCT},
		{"publishHelp", 413, s, "POST", schema.HelpPath, big, jsonCT},
		{"publishHelp", 415, s, "POST", schema.HelpPath, []byte(`{}`), []string{"Content-Type", "text/plain"}},
		{"publishHelp", 201, limited, "POST", schema.HelpPath, mustJSON(t, with(validRequest(), "emergencySlug", otherSlug, "externalId", "limited-1")), jsonCT},
		{"publishHelp", 429, limited, "POST", schema.HelpPath, mustJSON(t, with(validRequest(), "emergencySlug", otherSlug, "externalId", "limited-2")), jsonCT},

		{"actOnHelp", 200, s, "POST", schema.ActionsPath(id), []byte(`{"action":"renew"}`), bearer(token)},
		{"actOnHelp", 400, s, "POST", schema.ActionsPath(id), []byte(`{"action":"nope"}`), bearer(token)},
		{"actOnHelp", 401, s, "POST", schema.ActionsPath(id), []byte(`{"action":"resolve"}`), jsonCT},
		{"actOnHelp", 403, s, "POST", schema.ActionsPath(id), []byte(`{"action":"resolve"}`), bearer("wrong")},
		{"actOnHelp", 409, s, "POST", schema.ActionsPath(goneID), []byte(`{"action":"reopen"}`), bearer(goneToken)},
		{"actOnHelp", 413, s, "POST", schema.ActionsPath(id), big, bearer(token)},
		{"actOnHelp", 415, s, "POST", schema.ActionsPath(id), []byte(`{"action":"resolve"}`), []string{"Content-Type", "text/plain", "Authorization", "Bearer " + token}},

		{"reportHelp", 202, s, "POST", schema.HelpPath + "/" + id + schema.ReportsSuffix, []byte(`{"reason":"spam"}`), jsonCT},
		{"reportHelp", 400, s, "POST", schema.HelpPath + "/" + id + schema.ReportsSuffix, []byte(`{"reason":"nope"}`), jsonCT},
		{"reportHelp", 404, s, "POST", schema.HelpPath + "/" + unknownID + schema.ReportsSuffix, []byte(`{"reason":"spam"}`), jsonCT},
		{"reportHelp", 410, s, "POST", schema.HelpPath + "/" + goneID + schema.ReportsSuffix, []byte(`{"reason":"spam"}`), jsonCT},
		{"reportHelp", 413, s, "POST", schema.HelpPath + "/" + id + schema.ReportsSuffix, big, jsonCT},
		{"reportHelp", 415, s, "POST", schema.HelpPath + "/" + id + schema.ReportsSuffix, []byte(`{"reason":"spam"}`), []string{"Content-Type", "text/plain"}},

		{"getHelp", 200, s, "GET", schema.HelpPath, nil, nil},
		{"getHelp", 304, s, "GET", schema.HelpPath + "?view=panorama", nil, etag(schema.HelpPath + "?view=panorama")},
		{"getHelp", 400, s, "GET", schema.HelpPath + "?view=nope", nil, nil},
		{"getHelp", 404, s, "GET", schema.HelpPath + "?view=detail&id=" + unknownID, nil, nil},
		{"getHelp", 410, s, "GET", schema.HelpPath + "?view=detail&id=" + goneID, nil, nil},
		{"headHelp", 200, s, "HEAD", schema.HelpPath, nil, nil},
		{"headHelp", 304, s, "HEAD", schema.HelpPath + "?view=panorama", nil, etag(schema.HelpPath + "?view=panorama")},
		{"headHelp", 400, s, "HEAD", schema.HelpPath + "?view=nope", nil, nil},
		{"headHelp", 404, s, "HEAD", schema.HelpPath + "?view=detail&id=" + unknownID, nil, nil},
		{"headHelp", 410, s, "HEAD", schema.HelpPath + "?view=detail&id=" + goneID, nil, nil},

		{"getHelpMatches", 200, s, "GET", schema.MatchesPath(id), nil, nil},
		{"getHelpMatches", 304, s, "GET", schema.MatchesPath(id), nil, etag(schema.MatchesPath(id))},
		{"getHelpMatches", 400, s, "GET", schema.MatchesPath(id) + "?radiusKm=500", nil, nil},
		{"getHelpMatches", 404, s, "GET", schema.MatchesPath(unknownID), nil, nil},
		{"getHelpMatches", 410, s, "GET", schema.MatchesPath(goneID), nil, nil},
		{"headHelpMatches", 200, s, "HEAD", schema.MatchesPath(id), nil, nil},
		{"headHelpMatches", 304, s, "HEAD", schema.MatchesPath(id), nil, etag(schema.MatchesPath(id))},
		{"headHelpMatches", 400, s, "HEAD", schema.MatchesPath(id) + "?radiusKm=500", nil, nil},
		{"headHelpMatches", 404, s, "HEAD", schema.MatchesPath(unknownID), nil, nil},
		{"headHelpMatches", 410, s, "HEAD", schema.MatchesPath(goneID), nil, nil},
		{"preflightMatches", 204, s, "OPTIONS", schema.MatchesPath(id), nil, nil},
		{"findPlaces", 200, s, "GET", schema.PlaceSearchPath + "?q=calarca", nil, nil},
		{"findPlaces", 200, s, "GET", schema.PlaceSearchPath + "?q=armenai", nil, nil}, // guesses
		{"findPlaces", 304, s, "GET", schema.PlaceSearchPath + "?q=calarca", nil, etag(schema.PlaceSearchPath + "?q=calarca")},
		{"findPlaces", 400, s, "GET", schema.PlaceSearchPath + "?q=calarca&emergencySlug=nope", nil, nil},
		{"headFindPlaces", 200, s, "HEAD", schema.PlaceSearchPath + "?q=calarca", nil, nil},
		{"headFindPlaces", 304, s, "HEAD", schema.PlaceSearchPath + "?q=calarca", nil, etag(schema.PlaceSearchPath + "?q=calarca")},
		{"headFindPlaces", 400, s, "HEAD", schema.PlaceSearchPath, nil, nil},
		{"preflightFindPlaces", 204, s, "OPTIONS", schema.PlaceSearchPath, nil, nil},

		{"respondToHelp", 201, s, "POST", schema.ResponsesPath(id), []byte(`{"message":"Llevo agua"}`), jsonCT},
		{"respondToHelp", 200, s, "POST", schema.ResponsesPath(id), []byte(`{"message":"Llevo agua"}`), jsonCT}, // its retry
		{"respondToHelp", 400, s, "POST", schema.ResponsesPath(id), []byte(`{"message":""}`), jsonCT},
		{"respondToHelp", 404, s, "POST", schema.ResponsesPath(unknownID), []byte(`{"message":"Llevo agua"}`), jsonCT},
		{"respondToHelp", 410, s, "POST", schema.ResponsesPath(goneID), []byte(`{"message":"Llevo agua"}`), jsonCT},
		{"respondToHelp", 413, s, "POST", schema.ResponsesPath(id), big, jsonCT},
		{"respondToHelp", 415, s, "POST", schema.ResponsesPath(id), []byte(`{"message":"Llevo agua"}`), []string{"Content-Type", "text/plain"}},
		{"listHelpResponses", 200, s, "GET", schema.ResponsesPath(id), nil, bearer(token)},
		{"listHelpResponses", 400, s, "GET", schema.ResponsesPath(id) + "?nope=1", nil, bearer(token)},
		{"listHelpResponses", 401, s, "GET", schema.ResponsesPath(id), nil, nil},
		{"listHelpResponses", 403, s, "GET", schema.ResponsesPath(id), nil, bearer("wrong")},
		{"actOnResponse", 200, s, "POST", responseOf(id, rid, schema.ActionsSuffix), []byte(`{"action":"renew"}`), bearer(rtoken)},
		{"actOnResponse", 400, s, "POST", responseOf(id, rid, schema.ActionsSuffix), []byte(`{"action":"nope"}`), bearer(rtoken)},
		{"actOnResponse", 401, s, "POST", responseOf(id, rid, schema.ActionsSuffix), []byte(`{"action":"renew"}`), jsonCT},
		{"actOnResponse", 403, s, "POST", responseOf(id, rid, schema.ActionsSuffix), []byte(`{"action":"renew"}`), bearer("wrong")},
		{"actOnResponse", 409, s, "POST", responseOf(id, withdrawnRID, schema.ActionsSuffix), []byte(`{"action":"renew"}`), bearer(withdrawnToken)},
		{"actOnResponse", 413, s, "POST", responseOf(id, rid, schema.ActionsSuffix), big, bearer(rtoken)},
		{"actOnResponse", 415, s, "POST", responseOf(id, rid, schema.ActionsSuffix), []byte(`{"action":"renew"}`), []string{"Content-Type", "text/plain", "Authorization", "Bearer " + rtoken}},
		{"reportResponse", 202, s, "POST", responseOf(id, rid, schema.ReportsSuffix), []byte(`{"reason":"spam"}`), jsonCT},
		{"reportResponse", 400, s, "POST", responseOf(id, rid, schema.ReportsSuffix), []byte(`{"reason":"nope"}`), jsonCT},
		{"reportResponse", 404, s, "POST", responseOf(id, "3f9a1c0b7d2e4a61", schema.ReportsSuffix), []byte(`{"reason":"spam"}`), jsonCT},
		{"reportResponse", 410, s, "POST", responseOf(id, withdrawnRID, schema.ReportsSuffix), []byte(`{"reason":"spam"}`), jsonCT},
		{"reportResponse", 413, s, "POST", responseOf(id, rid, schema.ReportsSuffix), big, jsonCT},
		{"reportResponse", 415, s, "POST", responseOf(id, rid, schema.ReportsSuffix), []byte(`{"reason":"spam"}`), []string{"Content-Type", "text/plain"}},
		{"preflightResponses", 204, s, "OPTIONS", schema.ResponsesPath(id), nil, nil},
		{"preflightResponseActions", 204, s, "OPTIONS", responseOf(id, rid, schema.ActionsSuffix), nil, nil},
		{"preflightResponseReports", 204, s, "OPTIONS", responseOf(id, rid, schema.ReportsSuffix), nil, nil},
	}
	lrec := map[string]any{}
	run := func(c req) {
		t.Helper()
		if len(c.header) == 2 && strings.HasPrefix(c.header[1], "etag-of:") {
			resp, _ := c.srv.Do("GET", strings.TrimPrefix(c.header[1], "etag-of:"), nil)
			c.header = []string{"If-None-Match", resp.Header.Get("ETag")}
		}
		resp, body := call(t, c.srv, c.method, c.path, c.body, c.header...)
		if resp.StatusCode != c.status {
			t.Errorf("%s: %s %s → %d, want %d: %v", c.op, c.method, c.path, resp.StatusCode, c.status, body)
		}
		if c.op == "publishHelp" && c.srv == limited && c.status == 201 {
			lrec = body
		}
	}
	covered := map[string]bool{}
	for _, c := range cases {
		run(c)
		covered[fmt.Sprintf("%s %d", c.op, c.status)] = true
	}
	// The limited server: one event per zone and minute, so the second of each is a 429.
	lid, ltoken := fmt.Sprint(lrec["id"]), fmt.Sprint(lrec["manageToken"])
	detail := schema.HelpPath + "?view=detail&id=" + lid
	reports := schema.HelpPath + "/" + lid + schema.ReportsSuffix
	lrid, lrtoken := respond(limited, lid) // the limited server's one response a minute
	lbearer := []string{"Content-Type", "application/json", "Authorization", "Bearer " + ltoken}
	seeTool := mustJSON(t, map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": map[string]any{"name": "ver_ayuda", "arguments": map[string]any{"id": lid}}})
	for _, c := range []req{
		{"getHelp", 200, limited, "GET", detail, nil, nil},
		{"getHelp", 429, limited, "GET", detail, nil, nil},
		{"headHelp", 429, limited, "HEAD", detail, nil, nil},
		{"mcp", 429, limited, "POST", schema.MCPPath, seeTool, mcpCT},
		{"actOnHelp", 200, limited, "POST", schema.ActionsPath(lid), []byte(`{"action":"renew"}`), lbearer},
		{"actOnHelp", 429, limited, "POST", schema.ActionsPath(lid), []byte(`{"action":"renew"}`), lbearer},
		{"reportHelp", 202, limited, "POST", reports, []byte(`{"reason":"spam"}`), jsonCT},
		{"reportHelp", 429, limited, "POST", reports, []byte(`{"reason":"spam"}`), jsonCT},
		{"respondToHelp", 429, limited, "POST", schema.ResponsesPath(lid), []byte(`{"message":"Llevo agua"}`), jsonCT},
		{"actOnResponse", 429, limited, "POST", responseOf(lid, lrid, schema.ActionsSuffix), []byte(`{"action":"renew"}`), bearer(lrtoken)},
		{"reportResponse", 429, limited, "POST", responseOf(lid, lrid, schema.ReportsSuffix), []byte(`{"reason":"spam"}`), jsonCT},

		{"mcp", 200, s, "POST", schema.MCPPath, []byte(`{"jsonrpc":"2.0","id":1,"method":"ping"}`), mcpCT},
		{"mcp", 202, s, "POST", schema.MCPPath, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`), mcpCT},
		{"mcp", 400, s, "POST", schema.MCPPath, []byte(`{"jsonrpc":"2.0"}`), mcpCT},
		{"mcp", 403, s, "POST", schema.MCPPath, []byte(`{"jsonrpc":"2.0","id":1,"method":"ping"}`), append([]string{"Origin", "http://evil.example"}, mcpCT...)},
		// An unknown method is a 404 from protocol 2026-07-28 on (a 200 before it, where clients read the error).
		{"mcp", 404, s, "POST", schema.MCPPath, []byte(unknownMethod2026), append(testserver.MCPHeaders("2026-07-28", unknownMethod2026), "Content-Type", "application/json")},
		{"mcp", 413, s, "POST", schema.MCPPath, big, mcpCT},
		{"mcp", 415, s, "POST", schema.MCPPath, []byte(`{"jsonrpc":"2.0","id":1,"method":"ping"}`), []string{"Content-Type", "text/plain"}},
	} {
		run(c)
		covered[fmt.Sprintf("%s %d", c.op, c.status)] = true
	}

	// The live feed: a stream's 200 is read to its head (its body never ends), and a client's fifth stream
	// is its 429 while four stay open.
	covered["preflightHelpEvents 204"] = true
	run(req{"preflightHelpEvents", 204, s, "OPTIONS", schema.EventsPath, nil, nil})
	run(req{"helpEvents", 400, s, "GET", schema.EventsPath + "?type=nope", nil, nil})
	covered["helpEvents 400"] = true
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for i := range 4 {
		resp, err := http.DefaultClient.Do(s.NewRequest("GET", schema.EventsPath, nil).WithContext(ctx))
		if err != nil {
			t.Fatalf("stream %d: %v", i, err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
			t.Errorf("stream %d: %d %s, want 200 text/event-stream", i, resp.StatusCode, resp.Header.Get("Content-Type"))
		}
	}
	covered["helpEvents 200"] = true
	run(req{"helpEvents", 429, s, "GET", schema.EventsPath, nil, nil})
	covered["helpEvents 429"] = true
	cancel()
	// Not made here: a cursor older than the replay's bound of 10,000 changes (its 410 is tested in process,
	// TestFeedReplayBound), a node at its bound of streams or stopping (503), a failing store (500).
	for _, key := range []string{"helpEvents 410", "helpEvents 500", "helpEvents 503"} {
		needsAFailingStore[key] = true
	}
	// Nor a record holding its 300 responses (its 409 too_many_responses is tested in process,
	// TestRespondPastTheRecordsBound, and on both stores by storetest's ResponsesPerRecordBound).
	needsAFailingStore["respondToHelp 409"] = true

	var missing []string
	for _, item := range doc.Paths {
		for _, op := range item {
			for status := range op.Responses {
				key := op.OperationID + " " + status
				if !covered[key] && !needsAFailingStore[key] {
					missing = append(missing, key)
				}
			}
		}
	}
	slices.Sort(missing)
	if len(missing) > 0 {
		t.Errorf("documented responses no request of this test produces: %s", strings.Join(missing, ", "))
	}
	t.Logf("%d documented responses produced as documented; %d need a failing store", len(covered), len(needsAFailingStore))
}
