package backend_test

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/directaid/directaid/backend"
	"github.com/directaid/directaid/backend/httpapi"
	"github.com/directaid/directaid/backend/mcpserver"
	"github.com/directaid/directaid/backend/store"
	"github.com/directaid/directaid/internal/golden"
	"github.com/directaid/directaid/internal/testserver"
	"github.com/directaid/directaid/schema"
)

// twoEmergencies are those of testserver.TwoEmergencies, the binary's default in the e2e tests.
var twoEmergencies = []backend.Emergency{
	{Slug: "eje-cafetero", Title: "Terremoto en el Eje Cafetero", Summary: "Sismo con daños en Armenia y Pereira.", Location: "Eje Cafetero", OccurredOn: "2026-08-11",
		Area: []string{"63", "66", "17"}, Lines: []schema.PhoneLine{{Name: "Línea de emergencias", Number: "123"}, {Name: "Cruz Roja", Number: "132"}}},
	{Slug: "inundaciones-la-mojana", Title: "Inundaciones en La Mojana", Location: "La Mojana", OccurredOn: "2026-10-02"},
}

// contractServer serves httpapi.NewHandler over a real Badger store in a temporary directory, configured as
// the binary is in the e2e tests (the limits are those testserver puts in its Caddyfile; the emergencies
// are twoEmergencies unless given).
type contractServer struct {
	*testserver.Server
	t *testing.T
}

func newContractServer(t *testing.T, ems ...backend.Emergency) *contractServer {
	t.Helper()
	if ems == nil {
		ems = twoEmergencies
	}
	st := testserver.Badger(t)
	return newContractServerOver(t, st, ems)
}

// newContractServerOver is newContractServer over the store st.
func newContractServerOver(t *testing.T, st store.Store, ems []backend.Emergency) *contractServer {
	t.Helper()
	svc := backend.NewService(st, backend.Config{Emergencies: ems,
		RateLimits: map[string]backend.Limit{backend.ZonePublish: {100000, time.Minute}, backend.ZoneDetail: {100000, time.Minute},
			backend.ZoneReport: {100000, time.Minute}, backend.ZoneManage: {100000, time.Minute}, backend.ZoneRespond: {100000, time.Minute}}})
	h, err := httpapi.NewHandler(svc, httpapi.Options{MCP: mcpserver.New(svc)})
	if err != nil {
		t.Fatal(err)
	}
	return &contractServer{Server: testserver.Serve(t, h), t: t}
}

// TestGoldenInProcess: httpapi.NewHandler, without Caddy, gives the answers the binary gives (e2e's
// TestGolden keeps them in e2e/testdata/golden).
func TestGoldenInProcess(t *testing.T) {
	s := newContractServer(t)
	golden.Run(t, "../e2e/testdata/golden", strings.TrimPrefix(s.URL, "http://"), s.Do)
}

// call sends a request like Do, checks the answer against the served OpenAPI document, and decodes a JSON body.
func (s *contractServer) call(method, path string, body []byte, header ...string) (*http.Response, []byte, map[string]any) {
	s.t.Helper()
	resp, raw := s.Do(method, path, body, header...)
	s.CheckOpenAPI(s.NewRequest(method, path, body, header...), resp, raw)
	var out map[string]any
	if resp.Header.Get("Content-Type") == "application/json" {
		if err := json.Unmarshal(raw, &out); err != nil {
			s.t.Fatalf("%s %s: answer is not JSON: %v\n%s", method, path, err, raw)
		}
	}
	return resp, raw, out
}

func (s *contractServer) publish(body string) (*http.Response, map[string]any) {
	s.t.Helper()
	resp, _, out := s.call("POST", schema.HelpPath, []byte(body), "Content-Type", "application/json")
	return resp, out
}

// TestContractPublish: POST help answers 201 with Location, 200 to a retry (saying whether the content
// matched), and the refusals each with its status, stable code, Spanish message and the fields at fault.
func TestContractPublish(t *testing.T) {
	s := newContractServer(t)
	rec := golden.Records[0]
	resp, first := s.publish(rec)
	id, _ := first["id"].(string)
	if resp.StatusCode != 201 || first["ok"] != true || first["duplicate"] != false || !store.ValidID(id) {
		t.Fatalf("first publish: %d %v", resp.StatusCode, first)
	}
	if loc := resp.Header.Get("Location"); loc != s.URL+"/ayudas/"+id || first["publicUrl"] != loc {
		t.Errorf("Location %q, publicUrl %v", loc, first["publicUrl"])
	}
	if resp.Header.Get("Cache-Control") != "no-store" || resp.Header.Get("API-Version") == "" {
		t.Errorf("headers: %v", resp.Header)
	}
	resp, again := s.publish(rec)
	if resp.StatusCode != 200 || again["id"] != id || again["duplicate"] != true || again["contentMatches"] != true || resp.Header.Get("Location") != "" {
		t.Errorf("retry: %d %v %v", resp.StatusCode, again, resp.Header)
	}
	resp, changed := s.publish(strings.Replace(rec, "12 familias", "13 familias", 1))
	if resp.StatusCode != 200 || changed["id"] != id || changed["contentMatches"] != false {
		t.Errorf("retry with other content: %d %v", resp.StatusCode, changed)
	}
	resp, offer := s.publish(golden.Records[1])
	if resp.StatusCode != 201 || offer["type"] != "offer" || offer["emergencySlug"] != "eje-cafetero" {
		t.Errorf("offer without location: %d %v", resp.StatusCode, offer)
	}

	for _, c := range []struct {
		name, body, contentType string
		status                  int
		code                    string
		fields                  []string
	}{
		{"invalid body", `{"type":"request","source":"c","externalId":"b1","emergencySlug":"eje-cafetero","title":"","category":"nada","contactName":"Ana","contactWhatsapp":"12","publishContact":true,"address":"x","latitude":95,"longitude":-75}`,
			"application/json", 400, "invalid_body", []string{"/title", "/category", "/contactWhatsapp", "/latitude"}},
		{"unknown member", strings.Replace(golden.Records[1], `"title"`, `"lat":4,"title"`, 1), "application/json", 400, "invalid_body", []string{"/lat"}},
		{"consent", strings.Replace(golden.Records[1], `"publishContact":true`, `"publishContact":false`, 1), "application/json", 400, "consent_required", []string{"/publishContact"}},
		{"emergency required", strings.Replace(golden.Records[1], `"emergencySlug":"eje-cafetero",`, ``, 1), "application/json", 400, "emergency_required", []string{"/emergencySlug"}},
		{"emergency unknown", strings.Replace(golden.Records[1], `"eje-cafetero"`, `"no-existe"`, 1), "application/json", 400, "unknown_emergency", []string{"/emergencySlug"}},
		{"truncated", `{"type":"request"`, "application/json", 400, "invalid_json", nil},
		{"not JSON", `hola`, "application/json", 400, "invalid_json", nil},
		{"two values", `{} {}`, "application/json", 400, "invalid_json", nil},
		{"form encoded", golden.Records[1], "application/x-www-form-urlencoded", 415, "unsupported_media_type", nil},
		{"no content type", golden.Records[1], "", 415, "unsupported_media_type", nil},
		{"latin1", golden.Records[1], "application/json; charset=iso-8859-1", 415, "unsupported_media_type", nil},
		{"too large", `{"description":"` + strings.Repeat("a", 70<<10) + `"}`, "application/json", 413, "body_too_large", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			var h []string
			if c.contentType != "" {
				h = []string{"Content-Type", c.contentType}
			}
			resp, _, body := s.call("POST", schema.HelpPath, []byte(c.body), h...)
			if resp.StatusCode != c.status || body["code"] != c.code || body["error"] == "" {
				t.Fatalf("want %d %s; got %d %v", c.status, c.code, resp.StatusCode, body)
			}
			for _, f := range c.fields {
				if !slices.Contains(testserver.ErrorFields(body), f) {
					t.Errorf("details do not name %s: %v", f, body["details"])
				}
			}
			if resp.Header.Get("Cache-Control") != "no-store" {
				t.Errorf("Cache-Control %q", resp.Header.Get("Cache-Control"))
			}
		})
	}
	// Methods other than GET, HEAD, POST and OPTIONS: 405 naming them.
	for _, m := range []string{"PUT", "DELETE", "PATCH"} {
		resp, _, body := s.call(m, schema.HelpPath, nil)
		if resp.StatusCode != 405 || resp.Header.Get("Allow") != "GET, HEAD, POST, OPTIONS" || body["code"] != "method_not_allowed" {
			t.Errorf("%s: %d Allow %q %v", m, resp.StatusCode, resp.Header.Get("Allow"), body)
		}
	}
}

// TestContractRead: discovery, list (JSON, CSV, GeoJSON, filters, paging), detail and panorama over the
// records of the golden set.
func TestContractRead(t *testing.T) {
	s := newContractServer(t)
	var ids []string // in order of publication
	for _, rec := range golden.Records {
		resp, out := s.publish(rec)
		if resp.StatusCode != 201 {
			t.Fatalf("publish: %d %v", resp.StatusCode, out)
		}
		ids = append(ids, out["id"].(string))
		time.Sleep(2 * time.Millisecond) // ids sort by millisecond
	}
	newestFirst := slices.Clone(ids)
	slices.Reverse(newestFirst)

	_, _, disc := s.call("GET", schema.HelpPath, nil)
	var slugs []string
	for _, e := range disc["emergencies"].([]any) {
		slugs = append(slugs, e.(map[string]any)["slug"].(string))
	}
	if disc["name"] != "directaid" || disc["publish"] != s.URL+schema.HelpPath || !slices.Equal(slugs, []string{"eje-cafetero", "inundaciones-la-mojana"}) {
		t.Errorf("discovery: %v", disc)
	}
	if rl, _ := disc["rateLimit"].(map[string]any); rl["events"] != 100000.0 || rl["windowSeconds"] != 60.0 {
		t.Errorf("discovery rateLimit: %v", disc["rateLimit"])
	}

	listIDs := func(body map[string]any) []string {
		var out []string
		for _, it := range body["items"].([]any) {
			out = append(out, it.(map[string]any)["id"].(string))
		}
		return out
	}
	for _, c := range []struct {
		query string
		want  []string
	}{
		{"", newestFirst},
		{"&type=offer", []string{ids[3], ids[1]}},
		{"&emergencySlug=inundaciones-la-mojana", []string{ids[3], ids[2]}},
		{"&category=salud", []string{ids[2]}},
		{"&urgency=urgent", []string{ids[0]}},
		{"&q=AGUA", []string{ids[0]}},
		{"&latitude=4.53&longitude=-75.68&radiusKm=10", []string{ids[0]}},
		{"&category=rescate", nil},
	} {
		resp, _, body := s.call("GET", schema.HelpPath+"?view=list"+c.query, nil)
		if got := listIDs(body); resp.StatusCode != 200 || !slices.Equal(got, c.want) || body["total"] != float64(len(c.want)) {
			t.Errorf("list%s: %d %v total %v, want %v", c.query, resp.StatusCode, got, body["total"], c.want)
		}
	}
	// Paging: two pages of two, the Link header and nextCursor leading from one to the next.
	resp, _, page1 := s.call("GET", schema.HelpPath+"?view=list&limit=2", nil)
	cursor, _ := page1["nextCursor"].(string)
	if !slices.Equal(listIDs(page1), newestFirst[:2]) || cursor == "" || !strings.Contains(resp.Header.Get("Link"), `rel="next"`) {
		t.Fatalf("page 1: %v %v", page1, resp.Header.Get("Link"))
	}
	_, _, page2 := s.call("GET", schema.HelpPath+"?view=list&limit=2&cursor="+url.QueryEscape(cursor), nil)
	if !slices.Equal(listIDs(page2), newestFirst[2:]) || page2["nextCursor"] != nil {
		t.Errorf("page 2: %v", page2)
	}
	// A bulk list never carries a phone number.
	_, raw, _ := s.call("GET", schema.HelpPath+"?view=list", nil)
	if strings.Contains(string(raw), "3109876543") || strings.Contains(string(raw), "+57") {
		t.Errorf("the list shows a phone number: %s", raw)
	}
	resp, raw, _ = s.call("GET", schema.HelpPath+"?view=list&format=csv", nil)
	rows, err := csv.NewReader(bytes.NewReader(raw)).ReadAll()
	if err != nil || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/csv") || len(rows) != 2+len(ids) || rows[2][0] != newestFirst[0] || !strings.HasPrefix(rows[1][0], "#") {
		t.Errorf("CSV: %v %q rows %d: %s", err, resp.Header.Get("Content-Type"), len(rows), raw)
	}
	resp, raw, _ = s.call("GET", schema.HelpPath+"?view=list&format=geojson", nil)
	var fc struct {
		Type     string
		Features []struct {
			ID       string
			Geometry json.RawMessage
		}
	}
	if err := json.Unmarshal(raw, &fc); err != nil || fc.Type != "FeatureCollection" || len(fc.Features) != len(ids) || !strings.Contains(resp.Header.Get("Content-Type"), "geo+json") {
		t.Fatalf("GeoJSON: %v %q %s", err, resp.Header.Get("Content-Type"), raw)
	}
	for _, f := range fc.Features { // every record, the offer without a location with a null geometry
		if (string(f.Geometry) == "null") != (f.ID == ids[1]) {
			t.Errorf("GeoJSON feature %s: geometry %s", f.ID, f.Geometry)
		}
	}
	resp, _, body := s.call("GET", schema.HelpPath+"?view=list&limit=0", nil)
	if resp.StatusCode != 400 || body["code"] != "invalid_parameter" {
		t.Errorf("limit=0: %d %v", resp.StatusCode, body)
	}

	// Detail carries the contact; an unknown id is 404.
	resp, _, detail := s.call("GET", schema.HelpPath+"?view=detail&id="+ids[1], nil)
	contact, _ := detail["contact"].(map[string]any)
	if resp.StatusCode != 200 || detail["id"] != ids[1] || !strings.Contains(fmt.Sprint(contact), "573109876543") || detail["location"] != nil {
		t.Errorf("detail: %d %v", resp.StatusCode, detail)
	}
	if resp, _, body := s.call("GET", schema.HelpPath+"?view=detail&id=0000000000000000", nil); resp.StatusCode != 404 || body["code"] != "not_found" {
		t.Errorf("unknown id: %d %v", resp.StatusCode, body)
	}

	// The panorama counts by emergency.
	_, _, pano := s.call("GET", schema.HelpPath+"?view=panorama", nil)
	for _, e := range pano["emergencies"].([]any) {
		m := e.(map[string]any)
		if m["total"] != 2.0 || m["requests"] != 1.0 || m["offers"] != 1.0 {
			t.Errorf("panorama %v: %v", m["slug"], m)
		}
	}
	_, _, pano = s.call("GET", schema.HelpPath+"?view=panorama&emergencySlug=inundaciones-la-mojana", nil)
	if es := pano["emergencies"].([]any); len(es) != 1 || es[0].(map[string]any)["slug"] != "inundaciones-la-mojana" {
		t.Errorf("panorama of one emergency: %v", pano)
	}
}
