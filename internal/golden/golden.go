// Package golden keeps the answers, pages and documents of a fixed server with fixed records byte for byte:
// a change of any of them shows as the diff of a file. The same sequence runs through the binary (e2e's
// TestGolden) and in process over httpapi.NewHandler (backend's TestGoldenInProcess), against the same files.
// Ids, times, the port, ETags and cursors are replaced by stable placeholders. Run the tests with -update
// (or DIRECTAID_UPDATE_GOLDEN=1) to rewrite the files after a deliberate change, and commit them saying why.
package golden

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite the golden files (also DIRECTAID_UPDATE_GOLDEN=1)")

// Updating reports whether the tests rewrite golden files instead of comparing.
func Updating() bool { return *update || os.Getenv("DIRECTAID_UPDATE_GOLDEN") == "1" }

// Records are published in this order; their ids become ID1, ID2… in every golden file.
var Records = []string{
	// A request with a location and every optional field.
	`{"type":"request","source":"golden","externalId":"req-1","emergencySlug":"eje-cafetero","title":"Agua potable para 12 familias","description":"Sin agua desde el sismo.","category":"alimentos","contactName":"Ana Gómez","contactWhatsapp":"+57 300 123 4567","publishContact":true,"address":"Cra 14 # 20-31","neighborhood":"Centro","latitude":4.5339,"longitude":-75.6811,"urgency":"urgent","neededPeople":12}`,
	// An offer without a location.
	`{"type":"offer","source":"golden","externalId":"off-1","emergencySlug":"eje-cafetero","title":"Transporte en camioneta","category":"transporte","contactName":"Luis","contactWhatsapp":"3109876543","publishContact":true}`,
	// A request with only the required fields in the other emergency (a request always has a location).
	`{"type":"request","source":"golden","externalId":"req-2","emergencySlug":"inundaciones-la-mojana","title":"Medicamentos para la tensión","category":"salud","contactName":"Marta","contactWhatsapp":"3001112233","publishContact":true,"address":"Vereda El Roble","latitude":8.25,"longitude":-74.75}`,
	// An offer with a location in the other emergency.
	`{"type":"offer","source":"golden","externalId":"off-2","emergencySlug":"inundaciones-la-mojana","title":"Centro de acopio en la escuela","description":"Casa en zona seca.","category":"acopio","contactName":"Pedro","contactWhatsapp":"3204445566","publishContact":true,"address":"Calle 5 # 3-20","latitude":8.2468,"longitude":-74.7481,"collectionCenterStatus":"needs_volunteers"}`,
}

// Case is one request whose whole answer (status, headers, body) is kept in testdata/golden/Name.golden.
type Case struct {
	Name, Method, Path string
	Body               string
	Header             []string // name, value pairs
}

func jsonPost(name, body string) Case {
	return Case{Name: name, Method: "POST", Path: "/api/public/v1/help", Body: body, Header: []string{"Content-Type", "application/json"}}
}

// Cases are fetched in this order after Records are published; "{ID1}"… in a path is replaced by
// the record's id.
func Cases() []Case {
	const h = "/api/public/v1/help"
	cs := []Case{
		{Name: "api-discovery", Method: "GET", Path: h},
		jsonPost("publish-200-duplicate", Records[0]),
		jsonPost("publish-400-invalid-body", `{"type":"request","source":"golden","externalId":"bad-1","emergencySlug":"eje-cafetero","title":"","category":"nada","contactName":"Ana","contactWhatsapp":"12","publishContact":true,"latitude":95}`),
		jsonPost("publish-400-consent", strings.Replace(Records[1], `"publishContact":true`, `"publishContact":false`, 1)),
		jsonPost("publish-400-emergency-required", strings.Replace(Records[1], `"emergencySlug":"eje-cafetero",`, ``, 1)),
		jsonPost("publish-400-emergency-unknown", strings.Replace(Records[1], `"eje-cafetero"`, `"no-existe"`, 1)),
		jsonPost("publish-400-invalid-json", `{"type":"request"`),
		jsonPost("publish-400-duplicate-key", `{"type":"request","type":"offer"}`),
		{Name: "publish-415", Method: "POST", Path: h, Body: Records[1], Header: []string{"Content-Type", "application/x-www-form-urlencoded"}},
		jsonPost("publish-413", `{"description":"`+strings.Repeat("a", 70<<10)+`"}`),
		{Name: "api-405", Method: "DELETE", Path: h},
		{Name: "api-options", Method: "OPTIONS", Path: h, Header: []string{"Origin", "https://example.org", "Access-Control-Request-Method", "POST"}},
		{Name: "list-json", Method: "GET", Path: h + "?view=list"},
		{Name: "list-json-page1", Method: "GET", Path: h + "?view=list&limit=2"},
		{Name: "list-json-filtered", Method: "GET", Path: h + "?view=list&emergencySlug=eje-cafetero&type=request&category=alimentos&urgency=urgent&q=agua"},
		{Name: "list-json-near", Method: "GET", Path: h + "?view=list&latitude=4.53&longitude=-75.68&radiusKm=10"},
		{Name: "list-csv", Method: "GET", Path: h + "?view=list&format=csv"},
		{Name: "list-geojson", Method: "GET", Path: h + "?view=list&format=geojson"},
		{Name: "list-400-bad-param", Method: "GET", Path: h + "?view=list&limit=0&type=nada"},
		{Name: "detail", Method: "GET", Path: h + "?view=detail&id={ID1}"},
		{Name: "detail-offer-no-location", Method: "GET", Path: h + "?view=detail&id={ID2}"},
		{Name: "detail-404", Method: "GET", Path: h + "?view=detail&id=0000000000000000"},
		{Name: "matches", Method: "GET", Path: h + "/{ID1}/matches"},
		{Name: "matches-offer-no-location", Method: "GET", Path: h + "/{ID2}/matches"},
		{Name: "matches-400", Method: "GET", Path: h + "/{ID1}/matches?radiusKm=500&limit=0"},
		{Name: "matches-404", Method: "GET", Path: h + "/0000000000000000/matches"},
		{Name: "panorama", Method: "GET", Path: h + "?view=panorama"},
		{Name: "panorama-emergency", Method: "GET", Path: h + "?view=panorama&emergencySlug=inundaciones-la-mojana"},
		{Name: "openapi", Method: "GET", Path: "/api/public/openapi.json"},
		{Name: "llms-txt", Method: "GET", Path: "/llms.txt"},
		{Name: "robots-txt", Method: "GET", Path: "/robots.txt"},
		{Name: "sitemap-xml", Method: "GET", Path: "/sitemap.xml"},
		{Name: "page-404", Method: "GET", Path: "/no-existe"},
		{Name: "page-404-md", Method: "GET", Path: "/no-existe.md"},
		{Name: "page-record-404", Method: "GET", Path: "/ayudas/0000000000000000"},
		{Name: "page-405", Method: "DELETE", Path: "/"},
	}
	for _, p := range []struct{ name, path string }{
		{"home", "/"}, {"pedir", "/pedir"}, {"ofrecer", "/ofrecer"}, {"emergency", "/emergencias/eje-cafetero"},
		{"emergency-other", "/emergencias/inundaciones-la-mojana"}, {"map", "/emergencias/eje-cafetero/mapa"}, {"record", "/ayudas/{ID1}"}, {"record-offer", "/ayudas/{ID2}"},
		{"integraciones", "/integraciones"}, {"privacidad", "/privacidad"},
	} {
		md := p.path + ".md"
		if p.path == "/" {
			md = "/index.md"
		}
		cs = append(cs, Case{Name: "page-" + p.name, Method: "GET", Path: p.path},
			Case{Name: "page-" + p.name + "-md", Method: "GET", Path: md})
	}
	return cs
}

// MCP are JSON-RPC messages posted to /mcp (protocol 2025-11-25), after Cases.
var MCP = []struct{ Name, Body string }{
	{"mcp-initialize", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"golden","version":"1.0.0"}}}`},
	{"mcp-initialized", `{"jsonrpc":"2.0","method":"notifications/initialized"}`},
	{"mcp-tools-list", `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`},
	{"mcp-listar-emergencias", `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"listar_emergencias","arguments":{}}}`},
	{"mcp-buscar-ayudas", `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"buscar_ayudas","arguments":{"emergencySlug":"eje-cafetero"}}}`},
	{"mcp-ver-ayuda", `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"ver_ayuda","arguments":{"id":"{ID1}"}}}`},
	{"mcp-consultar-panorama", `{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"consultar_panorama","arguments":{}}}`},
	{"mcp-publicar-solicitud", `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"publicar_solicitud","arguments":{"source":"golden","externalId":"mcp-req-1","emergencySlug":"eje-cafetero","title":"Cobijas para niños","category":"refugio","contactName":"Rosa","contactWhatsapp":"3015556677","publishContact":true,"address":"Barrio La Cabaña","latitude":4.54,"longitude":-75.67,"urgency":"needed"}}}`},
	{"mcp-publicar-ofrecimiento", `{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"publicar_ofrecimiento","arguments":{"source":"golden","externalId":"mcp-off-1","emergencySlug":"eje-cafetero","title":"Cocina comunitaria","category":"alimentos","contactName":"Jorge","contactWhatsapp":"3027778899","publishContact":true,"latitude":4.45,"longitude":-75.7}}}`},
	{"mcp-publicar-solicitud-invalid", `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"publicar_solicitud","arguments":{"source":"golden","externalId":"mcp-bad","title":"x"}}}`},
	{"mcp-unknown-method", `{"jsonrpc":"2.0","id":10,"method":"no/existe"}`},
	// After publicar_ofrecimiento: its offer of alimentos is 9.5 km from the request ID1.
	{"mcp-buscar-coincidencias", `{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"name":"buscar_coincidencias","arguments":{"id":"{ID1}","limit":5}}}`},
	// Armenia (Quindío) first, then the other places of the Eje Cafetero named so (its centros poblados).
	{"mcp-buscar-lugar", `{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":"buscar_lugar","arguments":{"q":"ARMENIA","emergencySlug":"eje-cafetero"}}}`},
	{"mcp-buscar-lugar-invalid", `{"jsonrpc":"2.0","id":13,"method":"tools/call","params":{"name":"buscar_lugar","arguments":{"q":"¿?","emergencySlug":"no-existe"}}}`},
}

// Doer sends one request (a path relative to the server) and returns the answer with its body read.
type Doer func(method, path string, body []byte, header ...string) (*http.Response, []byte)

// Run publishes Records, then sends Cases and MCP through do, comparing each answer with dir/NAME.golden.
// host is the host:port the answers name (it becomes HOST). The server must have the two emergencies of
// testserver.TwoEmergencies and publish and detail limits of 100000 a minute.
func Run(t *testing.T, dir, host string, do Doer) {
	t.Helper()
	g := &golden{ids: map[string]string{}, host: host, dir: dir}
	for i, rec := range Records {
		resp, body := do("POST", "/api/public/v1/help", []byte(rec), "Content-Type", "application/json")
		var out struct{ ID string }
		if err := json.Unmarshal(body, &out); resp.StatusCode != 201 || err != nil || out.ID == "" {
			t.Fatalf("publish %d: %d %s", i+1, resp.StatusCode, body)
		}
		g.addID(out.ID)
		if i == 0 {
			g.check(t, "publish-201", "POST", "/api/public/v1/help", []byte(rec), []string{"Content-Type", "application/json"}, resp, body)
		}
		time.Sleep(3 * time.Millisecond) // ids sort by millisecond; keep the order of publication
	}
	for _, c := range Cases() {
		path := g.fill(c.Path)
		var body []byte
		if c.Body != "" {
			body = []byte(c.Body)
		}
		resp, got := do(c.Method, path, body, c.Header...)
		g.check(t, c.Name, c.Method, path, body, c.Header, resp, got)
	}
	// Revalidation with the ETag of the answer just fetched (304), and HEAD (headers only), of an API
	// answer and of a page.
	for _, c := range []struct{ name, path string }{{"api-discovery", "/api/public/v1/help"}, {"page-home", "/"}} {
		resp, _ := do("GET", c.path, nil)
		etag := resp.Header.Get("ETag")
		if etag == "" {
			t.Errorf("GET %s: no ETag", c.path)
		}
		h := []string{"If-None-Match", etag}
		resp, got := do("GET", c.path, nil, h...)
		g.check(t, c.name+"-304", "GET", c.path, nil, []string{"If-None-Match", `"{ETAG}"`}, resp, got)
		resp, got = do("HEAD", c.path, nil)
		g.check(t, c.name+"-head", "HEAD", c.path, nil, nil, resp, got)
	}
	mcpHeader := []string{"Content-Type", "application/json", "Accept", "application/json, text/event-stream", "Mcp-Protocol-Version", "2025-11-25"}
	for _, m := range MCP {
		body := []byte(g.fill(m.Body))
		resp, got := do("POST", "/mcp", body, mcpHeader...)
		var out struct {
			Result struct{ StructuredContent struct{ ID string } }
		}
		if json.Unmarshal(got, &out) == nil && len(out.Result.StructuredContent.ID) == 16 {
			g.addID(out.Result.StructuredContent.ID)
		}
		g.check(t, m.Name, "POST", "/mcp", body, mcpHeader, resp, got)
	}
	// The lists again, now with the two records published through MCP.
	resp, got := do("GET", "/api/public/v1/help?view=list&format=csv", nil)
	g.check(t, "list-csv-after-mcp", "GET", "/api/public/v1/help?view=list&format=csv", nil, nil, resp, got)
}

type golden struct {
	ids   map[string]string // id → ID<n>
	order []string
	host  string // 127.0.0.1:PORT
	dir   string
}

func (g *golden) addID(id string) {
	if _, ok := g.ids[id]; !ok {
		g.order = append(g.order, id)
		g.ids[id] = fmt.Sprintf("ID%d", len(g.order))
	}
}

// fill replaces {ID<n>} in s by the n-th id.
func (g *golden) fill(s string) string {
	for i, id := range g.order {
		s = strings.ReplaceAll(s, fmt.Sprintf("{ID%d}", i+1), id)
	}
	return s
}

var (
	timeRE   = regexp.MustCompile(`\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})`)
	cursorRE = regexp.MustCompile(`("nextCursor":\s*"|cursor=|"cursor":\s*")[A-Za-z0-9_%=-]+`)
	etagRE   = regexp.MustCompile(`^(W/)?"[^"]*"$`)
	// Publication times as the site writes them, and the form's random idempotency key.
	fechaRE   = regexp.MustCompile(`\d{1,2} de [a-z]+ de \d{4} a las \d{2}:\d{2}`)
	formKeyRE = regexp.MustCompile(`(name="externalId" value="web-)[a-z0-9]+`)
	// A publication's manage token (random server secret): in its own member and in the manage link.
	tokenRE = regexp.MustCompile(`("manageToken":\s*"|\\"manageToken\\":\\"|token=|token%3D)[A-Za-z0-9_-]{43}`)
	// The headers that vary from run to run or with the length of a placeholder, and Caddy's Server (the
	// same files serve the in-process handler).
	skipHeaders = []string{"Date", "Content-Length", "Server"}
)

// normalize replaces what varies between runs by stable placeholders.
func (g *golden) normalize(s string) string {
	for _, id := range g.order {
		s = strings.ReplaceAll(s, id, "{"+g.ids[id]+"}")
	}
	s = strings.ReplaceAll(s, g.host, "HOST")
	s = strings.ReplaceAll(s, url.QueryEscape(g.host), "HOST") // in a share link's text
	s = timeRE.ReplaceAllString(s, "{TIME}")
	s = fechaRE.ReplaceAllString(s, "{FECHA}")
	s = formKeyRE.ReplaceAllString(s, "${1}{KEY}")
	s = tokenRE.ReplaceAllString(s, "${1}{TOKEN}")
	return cursorRE.ReplaceAllString(s, "${1}{CURSOR}")
}

// render writes one exchange: the request, the status line, the headers but Date and Content-Length (sorted;
// ETag normalized) and the body. A compact JSON body is shown indented (json.Compact of it gives the
// original bytes back), so that a diff names the member that changed.
func (g *golden) render(method, path string, reqBody []byte, reqHeader []string, resp *http.Response, body []byte) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s\n", method, g.normalize(path))
	for i := 0; i+1 < len(reqHeader); i += 2 {
		fmt.Fprintf(&b, "%s: %s\n", reqHeader[i], reqHeader[i+1])
	}
	if len(reqBody) > 4096 {
		fmt.Fprintf(&b, "\n(%d bytes)\n", len(reqBody))
	} else if len(reqBody) > 0 {
		fmt.Fprintf(&b, "\n%s\n", g.normalize(string(reqBody)))
	}
	fmt.Fprintf(&b, "\n%s %s\n", resp.Proto, resp.Status)
	var names []string
	for k := range resp.Header {
		if !slices.Contains(skipHeaders, k) {
			names = append(names, k)
		}
	}
	slices.Sort(names)
	for _, k := range names {
		for _, v := range resp.Header[k] {
			if k == "Etag" {
				v = etagRE.ReplaceAllString(v, `${1}"{ETAG}"`)
			}
			fmt.Fprintf(&b, "%s: %s\n", k, g.normalize(v))
		}
	}
	b.WriteString("\n")
	var compact bytes.Buffer
	if json.Compact(&compact, body) == nil && (bytes.Equal(compact.Bytes(), body) || bytes.Equal(append(compact.Bytes(), '\n'), body)) {
		var ind bytes.Buffer
		_ = json.Indent(&ind, compact.Bytes(), "", "  ")
		nl := ""
		if body[len(body)-1] == '\n' {
			nl = " + newline"
		}
		fmt.Fprintf(&b, "[compact JSON%s, shown indented]\n%s\n", nl, g.normalize(ind.String()))
	} else {
		b.WriteString(g.normalize(string(body)))
	}
	return b.String()
}

func (g *golden) check(t *testing.T, name, method, path string, reqBody []byte, reqHeader []string, resp *http.Response, body []byte) {
	t.Helper()
	got := g.render(method, path, reqBody, reqHeader, resp, body)
	file := filepath.Join(g.dir, name+".golden")
	if Updating() {
		if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(file, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(file)
	if err != nil {
		t.Errorf("%s: %v (run with -update to record it)", name, err)
		return
	}
	if string(want) != got {
		t.Errorf("%s differs from %s (run with -update to accept, and commit saying why):\n%s", name, file, LineDiff(string(want), got))
	}
}

// LineDiff is a unified-style diff of two texts ("-" want, "+" got) with 3 lines of context.
func LineDiff(want, got string) string {
	a, b := strings.Split(want, "\n"), strings.Split(got, "\n")
	// Trim the common head and tail so the quadratic table stays small for local changes.
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	ma, mb := a[pre:len(a)-suf], b[pre:len(b)-suf]
	var ops []string // "-x", "+x", " x"
	if len(ma)*len(mb) > 4_000_000 {
		for _, l := range ma {
			ops = append(ops, "-"+l)
		}
		for _, l := range mb {
			ops = append(ops, "+"+l)
		}
	} else {
		// lcs[i][j] is the length of the longest common subsequence of ma[i:] and mb[j:].
		lcs := make([][]int, len(ma)+1)
		for i := range lcs {
			lcs[i] = make([]int, len(mb)+1)
		}
		for i := len(ma) - 1; i >= 0; i-- {
			for j := len(mb) - 1; j >= 0; j-- {
				if ma[i] == mb[j] {
					lcs[i][j] = lcs[i+1][j+1] + 1
				} else {
					lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
				}
			}
		}
		i, j := 0, 0
		for i < len(ma) || j < len(mb) {
			switch {
			case i < len(ma) && j < len(mb) && ma[i] == mb[j]:
				ops = append(ops, " "+ma[i])
				i++
				j++
			case j < len(mb) && (i == len(ma) || lcs[i][j+1] >= lcs[i+1][j]):
				ops = append(ops, "+"+mb[j])
				j++
			default:
				ops = append(ops, "-"+ma[i])
				i++
			}
		}
	}
	var out strings.Builder
	fmt.Fprintf(&out, "@@ from line %d @@\n", pre+1)
	for _, l := range a[max(0, pre-3):pre] {
		out.WriteString(" " + l + "\n")
	}
	for _, op := range ops {
		out.WriteString(op + "\n")
	}
	for _, l := range a[len(a)-suf : min(len(a), len(a)-suf+3)] {
		out.WriteString(" " + l + "\n")
	}
	return out.String()
}
