package backend_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/directaid/directaid/backend/store"
	"github.com/directaid/directaid/schema"
)

type errorBody struct {
	Error   string `json:"error"`
	Code    string `json:"code"`
	Details []struct {
		Field, Message string
	} `json:"details"`
}

func decodeError(t *testing.T, body string) errorBody {
	t.Helper()
	var e errorBody
	if err := json.Unmarshal([]byte(body), &e); err != nil {
		t.Fatalf("not an error body: %s", body)
	}
	return e
}

// TestPathParameterPointer: an error about the {id} of …/{id}/reports names it with a JSON pointer, as
// the Error schema promises of every field: /path/id (query parameters are /query/<name>).
func TestPathParameterPointer(t *testing.T) {
	s := newExpiryServer(t, &fakeClock{at: time.Now().UTC()})
	code, body := s.do("POST", schema.HelpPath+"/abc"+schema.ReportsSuffix, []byte(`{"reason":"spam"}`))
	e := decodeError(t, body)
	if code != http.StatusBadRequest || e.Code != schema.CodeInvalidParameter || len(e.Details) != 1 || e.Details[0].Field != "/path/id" {
		t.Errorf("reports with id abc: %d %s, want 400 invalid_parameter naming /path/id", code, body)
	}
	// A query parameter's name is one pointer token: a / in it is escaped.
	code, body = s.do("GET", schema.HelpPath+"?view=list&a/b~c=1", nil)
	if e := decodeError(t, body); code != http.StatusBadRequest || len(e.Details) != 1 || e.Details[0].Field != "/query/a~1b~0c" {
		t.Errorf("unknown parameter a/b~c: %d %s, want it named /query/a~1b~0c", code, body)
	}
}

// TestErrorsClipInput: an error quotes a client's input back at most 40 characters, not 3,000.
func TestErrorsClipInput(t *testing.T) {
	s := newExpiryServer(t, &fakeClock{at: time.Now().UTC()})
	long := strings.Repeat("a", 3000)
	for name, req := range map[string][2]string{
		"detail id":          {"GET", schema.HelpPath + "?view=detail&id=" + long},
		"list emergencySlug": {"GET", schema.HelpPath + "?view=list&emergencySlug=" + long},
		"list municipio":     {"GET", schema.HelpPath + "?view=list&municipio=" + long},
		"list since":         {"GET", schema.HelpPath + "?view=list&since=" + long},
		"list latitude":      {"GET", schema.HelpPath + "?view=list&latitude=" + long + "&longitude=1"},
		"view":               {"GET", schema.HelpPath + "?view=" + long},
		"unknown parameter":  {"GET", schema.HelpPath + "?view=list&" + long + "=1"},
		"publish parameter":  {"POST", schema.HelpPath + "?" + long + "=1"},
		"reports id":         {"POST", schema.HelpPath + "/" + long + schema.ReportsSuffix},
	} {
		body := `{"reason":"spam"}`
		code, got := s.do(req[0], req[1], []byte(body))
		e := decodeError(t, got)
		if code != http.StatusBadRequest || len(e.Details) == 0 {
			t.Errorf("%s: %d %.300s", name, code, got)
			continue
		}
		for _, msg := range []string{e.Error, e.Details[0].Message} {
			if strings.Contains(msg, strings.Repeat("a", 41)) || !strings.Contains(msg, strings.Repeat("a", 40)+"…") {
				t.Errorf("%s: the message does not quote 40 characters and …: %.300s", name, msg)
			}
		}
	}
}

// TestActionsNeedBearer: POST …/{id}/actions without a Bearer token is 401 with WWW-Authenticate: Bearer
// (the OpenAPI security scheme), one body whether the id exists or not; a wrong token and an unknown id
// stay one byte-identical 403, without the challenge.
func TestActionsNeedBearer(t *testing.T) {
	s := newExpiryServer(t, &fakeClock{at: time.Now().UTC()})
	rec := s.publish(map[string]any{"type": "offer", "source": "app", "externalId": "a", "emergencySlug": "eje-cafetero",
		"title": "Transporte", "category": "transporte", "contactName": "Luis", "contactWhatsapp": "3109876543", "publishContact": true})
	post := func(id string, header ...string) (*http.Response, string) {
		r := httptest.NewRequest("POST", "http://ayuda.test"+schema.ActionsPath(id), strings.NewReader(`{"action":"resolve"}`))
		r.Header.Set("Content-Type", "application/json")
		for i := 0; i+1 < len(header); i += 2 {
			r.Header.Set(header[i], header[i+1])
		}
		w := httptest.NewRecorder()
		s.h.ServeHTTP(w, r)
		return w.Result(), w.Body.String()
	}
	var first string
	for _, c := range []struct {
		id     string
		header []string
	}{
		{rec.ID, nil}, {"06fz0000000000zz", nil}, {"nope", nil},
		{rec.ID, []string{"Authorization", "Basic " + rec.ManageToken}}, {rec.ID, []string{"Authorization", "Bearer "}},
	} {
		resp, body := post(c.id, c.header...)
		if resp.StatusCode != http.StatusUnauthorized || resp.Header.Get("WWW-Authenticate") != "Bearer" {
			t.Errorf("%s %v: %d WWW-Authenticate %q %s", c.id, c.header, resp.StatusCode, resp.Header.Get("WWW-Authenticate"), body)
		}
		// A browser reads the challenge only if CORS exposes it.
		if expose := strings.Split(resp.Header.Get("Access-Control-Expose-Headers"), ", "); !slices.Contains(expose, "WWW-Authenticate") {
			t.Errorf("%s %v: Access-Control-Expose-Headers %q does not expose WWW-Authenticate", c.id, c.header, expose)
		}
		if e := decodeError(t, body); e.Code != schema.CodeUnauthorized || len(e.Details) != 1 || e.Details[0].Field != "/header/Authorization" {
			t.Errorf("%s %v: %s", c.id, c.header, body)
		}
		if first == "" {
			first = body
		} else if body != first {
			t.Errorf("401 bodies differ: %s vs %s", body, first)
		}
	}
	first = ""
	for _, id := range []string{rec.ID, "06fz0000000000zz", "nope"} {
		resp, body := post(id, "Authorization", "Bearer wrong")
		if resp.StatusCode != http.StatusForbidden || resp.Header.Get("WWW-Authenticate") != "" || !strings.Contains(body, `"code":"forbidden"`) {
			t.Errorf("%s, wrong token: %d %v %s", id, resp.StatusCode, resp.Header, body)
		}
		if first == "" {
			first = body
		} else if body != first {
			t.Errorf("403 bodies differ: %s vs %s", body, first)
		}
	}
	if code, res := s.act(rec.ID, rec.ManageToken, "resolve"); code != http.StatusOK || !res.Changed {
		t.Errorf("the right token: %d %+v", code, res)
	}
}

// TestDryRunTellsDuplicates: ?dryRun=true (and the MCP tools' dryRun) with a (source, externalId) already
// stored says what the real call would: a duplicate, whether the content matches, the stored id; a new
// pair is no duplicate. Nothing is stored either way.
func TestDryRunTellsDuplicates(t *testing.T) {
	s := newExpiryServer(t, &fakeClock{at: time.Now().UTC()})
	offer := map[string]any{"type": "offer", "source": "app", "externalId": "a", "emergencySlug": "eje-cafetero",
		"title": "Transporte", "category": "transporte", "contactName": "Luis", "contactWhatsapp": "3109876543", "publishContact": true}
	rec := s.publish(offer)
	dry := func(pub map[string]any) schema.DryRunResult {
		t.Helper()
		b, _ := json.Marshal(pub)
		code, body := s.do("POST", schema.HelpPath+"?dryRun=true", b)
		var res schema.DryRunResult
		if err := json.Unmarshal([]byte(body), &res); err != nil || code != http.StatusOK || !res.DryRun {
			t.Fatalf("dry run: %d %s", code, body)
		}
		return res
	}
	with := func(k string, v any) map[string]any {
		out := map[string]any{}
		for key, val := range offer {
			out[key] = val
		}
		out[k] = v
		return out
	}
	if res := dry(offer); !res.Duplicate || res.ContentMatches == nil || !*res.ContentMatches || res.ID != rec.ID ||
		res.Status != "open" || res.PublicURL != rec.PublicURL {
		t.Errorf("the same publication: %+v", res)
	}
	if res := dry(with("title", "Otro título")); !res.Duplicate || res.ContentMatches == nil || *res.ContentMatches || res.ID != rec.ID {
		t.Errorf("other content, same pair: %+v", res)
	}
	if res := dry(with("externalId", "b")); res.Duplicate || res.ContentMatches != nil || res.ID != "" || res.PublicURL != "" {
		t.Errorf("a new pair: %+v", res)
	}
	// The real calls agree.
	b, _ := json.Marshal(with("title", "Otro título"))
	if code, body := s.do("POST", schema.HelpPath, b); code != http.StatusOK || !strings.Contains(body, `"contentMatches":false`) {
		t.Errorf("the real retry: %d %s", code, body)
	}
	// A withdrawn record: a duplicate whose content no longer matches (its contact was erased).
	if code, _ := s.act(rec.ID, rec.ManageToken, "withdraw"); code != http.StatusOK {
		t.Fatal(code)
	}
	if res := dry(offer); !res.Duplicate || *res.ContentMatches || res.Status != "withdrawn" {
		t.Errorf("after withdraw: %+v", res)
	}
	// MCP: the same through the publishing tool's dryRun.
	args := map[string]any{"dryRun": true}
	for k, v := range with("title", "Otro título") {
		if k != "type" {
			args[k] = v
		}
	}
	msg, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": map[string]any{"name": schema.ToolPublishOffer, "arguments": args}})
	_, body := s.mcpPost("2025-06-18", string(msg))
	var res struct {
		Result struct {
			StructuredContent schema.DryRunResult `json:"structuredContent"`
			Content           []struct{ Text string }
		}
	}
	_ = json.Unmarshal([]byte(body), &res)
	if sc := res.Result.StructuredContent; !sc.DryRun || !sc.Duplicate || sc.ID != rec.ID || sc.ContentMatches == nil || *sc.ContentMatches ||
		len(res.Result.Content) == 0 || !strings.Contains(res.Result.Content[0].Text, rec.ID) {
		t.Errorf("MCP dryRun of a stored pair: %s", body)
	}
	if got, err := s.st.Lookup(t.Context(), "app", "b"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a dry run stored the pair (app, b): %v %v", got, err)
	}
}

// TestOpenAPIRoundTwo: the served document declares the path id as the server checks it (the query id's
// pattern), lists no operation that only answers 405 (its prose says what 405 does), and links a
// publication's 201 to the actions and reports on the new record.
func TestOpenAPIRoundTwo(t *testing.T) {
	s := newExpiryServer(t, &fakeClock{at: time.Now().UTC()})
	_, raw := s.do("GET", schema.OpenAPIPath, nil)
	type param struct {
		Name, In string
		Schema   map[string]any
	}
	var doc struct {
		Info  struct{ Description string }
		Paths map[string]map[string]struct {
			OperationID string  `json:"operationId"`
			Parameters  []param `json:"parameters"`
			Responses   map[string]struct {
				Links map[string]struct {
					OperationID string            `json:"operationId"`
					Parameters  map[string]string `json:"parameters"`
				} `json:"links"`
			} `json:"responses"`
		}
	}
	if err := json.Unmarshal([]byte(raw), &doc); err != nil {
		t.Fatal(err)
	}
	var queryID map[string]any
	for _, p := range doc.Paths[schema.HelpPath]["get"].Parameters {
		if p.Name == "id" && p.In == "query" {
			queryID = p.Schema
		}
	}
	if queryID["pattern"] == nil {
		t.Fatalf("the query id has no pattern: %v", queryID)
	}
	for _, path := range []string{schema.HelpPath + "/{id}" + schema.ActionsSuffix, schema.HelpPath + "/{id}" + schema.ReportsSuffix} {
		for method, op := range doc.Paths[path] {
			if len(op.Parameters) != 1 || op.Parameters[0].In != "path" || op.Parameters[0].Schema["pattern"] != queryID["pattern"] {
				t.Errorf("%s %s: path id %+v, want the pattern %v", method, path, op.Parameters, queryID["pattern"])
			}
		}
	}
	for path, item := range doc.Paths {
		for method, op := range item {
			if _, only405 := op.Responses["405"]; only405 && len(op.Responses) == 1 {
				t.Errorf("%s %s (%s) only answers 405", method, path, op.OperationID)
			}
		}
	}
	if !strings.Contains(doc.Info.Description, "405") || !strings.Contains(doc.Info.Description, "Allow") {
		t.Errorf("info.description does not say what 405 does: %s", doc.Info.Description)
	}
	links := doc.Paths[schema.HelpPath]["post"].Responses["201"].Links
	for _, op := range []string{"actOnHelp", "reportHelp"} {
		if l, ok := links[op]; !ok || l.OperationID != op || l.Parameters["id"] != "$response.body#/id" {
			t.Errorf("publish 201 link %s: %+v", op, links)
		}
	}
}

// TestPlaceCodeEmptyRefused: placeCode "" (or " ") is refused naming /placeCode, as its pattern says: a
// code is no free text, whose empty value would count as absent.
func TestPlaceCodeEmptyRefused(t *testing.T) {
	s := newExpiryServer(t, &fakeClock{at: time.Now().UTC()})
	for _, pc := range []any{"", " "} {
		b, _ := json.Marshal(map[string]any{"type": "offer", "source": "app", "externalId": "pc", "emergencySlug": "eje-cafetero",
			"title": "Transporte", "category": "transporte", "contactName": "Luis", "contactWhatsapp": "3109876543", "publishContact": true, "placeCode": pc})
		for _, path := range []string{schema.HelpPath + "?dryRun=true", schema.HelpPath} {
			code, body := s.do("POST", path, b)
			if e := decodeError(t, body); code != http.StatusBadRequest || len(e.Details) != 1 || e.Details[0].Field != "/placeCode" {
				t.Errorf("%s placeCode %q: %d %s", path, pc, code, body)
			}
		}
	}
}

// TestHeadContentLength: HEAD answers the headers GET does, Content-Length included, on the API's reads,
// the OpenAPI document, the site's pages and an error.
func TestHeadContentLength(t *testing.T) {
	s := newExpiryServer(t, &fakeClock{at: time.Now().UTC()})
	rec := s.publish(map[string]any{"type": "offer", "source": "app", "externalId": "a", "emergencySlug": "eje-cafetero",
		"title": "Transporte", "category": "transporte", "contactName": "Luis", "contactWhatsapp": "3109876543", "publishContact": true})
	do := func(method, path string) *httptest.ResponseRecorder {
		w := httptest.NewRecorder()
		s.h.ServeHTTP(w, httptest.NewRequest(method, "http://ayuda.test"+path, nil))
		return w
	}
	for _, path := range []string{schema.HelpPath, schema.HelpPath + "?view=list", schema.HelpPath + "?view=list&format=csv",
		schema.HelpPath + "?view=list&format=geojson", schema.HelpPath + "?view=panorama", schema.HelpPath + "?view=detail&id=" + rec.ID,
		schema.OpenAPIPath, "/", schema.RecordPath(rec.ID), schema.RecordPath(rec.ID) + ".md", schema.HelpPath + "?view=nada"} {
		get, head := do("GET", path), do("HEAD", path)
		want := strconv.Itoa(get.Body.Len())
		if get.Code != head.Code || head.Header().Get("Content-Length") != want || get.Header().Get("Content-Length") != want {
			t.Errorf("%s: GET %d Content-Length %q (body %s), HEAD %d Content-Length %q", path, get.Code, get.Header().Get("Content-Length"), want,
				head.Code, head.Header().Get("Content-Length"))
		}
	}
}

// TestMCPBadDryRunWithTheOtherFaults: a publishing tool's malformed dryRun is told with every other fault
// of the arguments, not alone (an agent would otherwise fix one and meet the next).
func TestMCPBadDryRunWithTheOtherFaults(t *testing.T) {
	s := newExpiryServer(t, &fakeClock{at: time.Now().UTC()})
	text, _ := s.callTool(schema.ToolPublishRequest, `{"dryRun":"yes","source":"app","externalId":"x","title":"","category":"comida","contactName":"Ana","contactWhatsapp":"3001234567","publishContact":false}`)
	for _, want := range []string{"dryRun", "category", "publishContact", "address"} {
		if !strings.Contains(text, want) {
			t.Errorf("a malformed dryRun: the answer does not name %s:\n%s", want, text)
		}
	}
}
