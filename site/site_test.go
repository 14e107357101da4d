package site

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/directaid/directaid/schema"
	"github.com/directaid/directaid/site/sitetest"
)

const testBase = "http://ayuda.test"

var (
	eje = schema.EmergencyInfo{Slug: "eje-cafetero", Title: "Terremoto en el Eje Cafetero", Location: "Eje Cafetero (Quindío, Risaralda, Caldas)",
		Summary: "Sismo de magnitud 6,4 con daños en Armenia, Pereira y municipios vecinos.", OccurredOn: "2026-08-11"}
	mojana = schema.EmergencyInfo{Slug: "inundaciones-la-mojana", Title: "Inundaciones en La Mojana", OccurredOn: "2026-10-02"}
)

func newSite(t testing.TB, o Options) *http.Client {
	t.Helper()
	h, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	return sitetest.HandlerClient(h)
}

func emergencies(e ...schema.EmergencyInfo) func() []schema.EmergencyInfo {
	return func() []schema.EmergencyInfo { return e }
}

// The whole site, crawled from its sitemap, with two, one and no active emergencies.
func TestCrawl(t *testing.T) {
	for name, ems := range map[string][]schema.EmergencyInfo{"two": {eje, mojana}, "one": {eje}, "none": nil} {
		t.Run(name, func(t *testing.T) {
			c := newSite(t, Options{Emergencies: emergencies(ems...), RateLimitEvents: 60, RateLimitWindow: time.Minute})
			res := sitetest.Check(t, c, testBase)
			wantPages := []string{testBase + "/", testBase + "/gestionar", testBase + "/integraciones", testBase + "/ofrecer", testBase + "/pedir", testBase + "/privacidad"}
			for _, e := range ems {
				wantPages = append(wantPages, testBase+"/emergencias/"+e.Slug, testBase+"/emergencias/"+e.Slug+"/mapa")
			}
			slices.Sort(wantPages)
			if got := slices.Sorted(slices.Values(res.Pages)); !slices.Equal(got, wantPages) {
				t.Errorf("sitemap lists\n%v\nwant\n%v", got, wantPages)
			}
			// The links the pages hand to the API and MCP (the end-to-end crawl fetches them), and no
			// link out: no record, so no WhatsApp chat or map.
			api := testBase + "/api/public/v1/help"
			wantExternal := []string{testBase + "/api/public/openapi.json", api, api + "/events", api + "?view=list"}
			for _, e := range ems { // each emergency's page links its Atom feed from its head
				wantExternal = append(wantExternal, api+"?view=list&format=atom&emergencySlug="+e.Slug)
			}
			wantExternal = append(wantExternal, api+"?view=list&format=csv", api+"?view=list&format=geojson", api+"?view=panorama", testBase+"/api/public/v1/places?q=el+caimo", testBase+"/mcp")
			if !slices.Equal(res.External, wantExternal) {
				t.Errorf("links to the API and MCP:\n%v\nwant\n%v", res.External, wantExternal)
			}
			if len(res.Outside) != 0 {
				t.Errorf("links out of the site without records: %v", res.Outside)
			}
		})
	}
}

// With PublicURL set, every link uses it, whatever Host the request carried.
func TestPublicURL(t *testing.T) {
	c := newSite(t, Options{Emergencies: emergencies(eje), PublicURL: "https://ayuda.example.org/"})
	sitetest.Check(t, c, "https://ayuda.example.org")
	_, body := sitetest.Get(t, c, "http://otro.test/integraciones.md")
	if strings.Contains(string(body), "otro.test") || !strings.Contains(string(body), "curl -s 'https://ayuda.example.org/api/public/v1/help'") {
		t.Errorf("integration guide does not use PublicURL:\n%s", body)
	}
	for _, bad := range []string{"ayuda.example.org", "ftp://x.org", "https://x.org/sub", "https://x.org?q=1", "https://a'b.org", "https://u@x.org"} {
		if _, err := New(Options{PublicURL: bad}); err == nil {
			t.Errorf("New accepted PublicURL %q", bad)
		}
	}
}

// Without PublicURL, links are built from Host: one that could break out of a URL or an example is refused.
func TestBadHost(t *testing.T) {
	h, _ := New(Options{})
	req := httptest.NewRequest(http.MethodGet, "/", nil)
	req.Host = "evil'host`"
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusBadRequest {
		t.Errorf("Host %q: %d, want 400", req.Host, rec.Code)
	}
}

func TestNotFound(t *testing.T) {
	c := newSite(t, Options{Emergencies: emergencies(eje)})
	for _, tc := range []struct {
		path, accept, contentType string
	}{
		{"/nope", "", "text/html; charset=utf-8"},
		{"/nope.md", "", "text/markdown; charset=utf-8"},
		{"/nope", "text/markdown", "text/markdown; charset=utf-8"},
		{"/emergencias/inundaciones-la-mojana", "", "text/html; charset=utf-8"}, // not active
		{"/emergencias/inundaciones-la-mojana.md", "", "text/markdown; charset=utf-8"},
		{"/.md", "", "text/markdown; charset=utf-8"},
		{"/pedir/", "", "text/html; charset=utf-8"},
		{"/assets/site.css", "", "text/html; charset=utf-8"}, // only the hashed name exists
	} {
		res, body := sitetest.Get(t, c, testBase+tc.path, "Accept: "+tc.accept)
		if res.StatusCode != http.StatusNotFound || res.Header.Get("Content-Type") != tc.contentType {
			t.Errorf("GET %s (Accept %q): %d %s, want 404 %s", tc.path, tc.accept, res.StatusCode, res.Header.Get("Content-Type"), tc.contentType)
		}
		if !strings.Contains(string(body), "Página no encontrada") {
			t.Errorf("GET %s: not the 404 page:\n%s", tc.path, body)
		}
		if strings.HasPrefix(tc.contentType, "text/html") {
			sitetest.CheckStructure(t, tc.path, sitetest.ParseHTML(t, body))
		} else if !strings.HasPrefix(string(body), "# Página no encontrada\n\n> ") {
			t.Errorf("GET %s: the Markdown 404 does not start with its title and summary:\n%s", tc.path, body)
		}
	}
}

func TestCachingAndHEAD(t *testing.T) {
	h, err := New(Options{Emergencies: emergencies(eje)})
	if err != nil {
		t.Fatal(err)
	}
	c := sitetest.HandlerClient(h)
	site := h.(*handler)
	for _, tc := range []struct{ path, cache string }{
		{"/", pageCache}, {"/index.md", pageCache}, {"/integraciones", pageCache}, {"/pedir.md", pageCache},
		{"/llms.txt", pageCache}, {"/sitemap.xml", pageCache}, {"/robots.txt", pageCache},
		{site.css, assetCache}, {site.js, assetCache},
	} {
		res, body := sitetest.Get(t, c, testBase+tc.path)
		etag := res.Header.Get("ETag")
		if res.StatusCode != http.StatusOK || !strings.HasPrefix(etag, `"`) || res.Header.Get("Cache-Control") != tc.cache {
			t.Errorf("GET %s: %d ETag %q Cache-Control %q", tc.path, res.StatusCode, etag, res.Header.Get("Cache-Control"))
			continue
		}
		res, again := sitetest.Get(t, c, testBase+tc.path, "If-None-Match: W/\"x\", "+etag)
		if res.StatusCode != http.StatusNotModified || len(again) != 0 {
			t.Errorf("GET %s If-None-Match: %d with %d bytes, want 304 without body", tc.path, res.StatusCode, len(again))
		}
		res, head := sitetest.Do(t, c, http.MethodHead, testBase+tc.path, nil)
		if res.StatusCode != http.StatusOK || len(head) != 0 || res.Header.Get("ETag") != etag ||
			res.Header.Get("Content-Length") != strconv.Itoa(len(body)) {
			t.Errorf("HEAD %s: %d, %d bytes, ETag %q, Content-Length %s (GET: %d bytes)", tc.path, res.StatusCode,
				len(head), res.Header.Get("ETag"), res.Header.Get("Content-Length"), len(body))
		}
	}
	// A page and its twin differ, so their validators do too.
	r1, _ := sitetest.Get(t, c, testBase+"/")
	r2, _ := sitetest.Get(t, c, testBase+"/", "Accept: text/markdown")
	if r1.Header.Get("ETag") == r2.Header.Get("ETag") {
		t.Error("HTML and Markdown of / share an ETag")
	}
	// A form page carries a one-time externalId: never stored by a cache.
	res, _ := sitetest.Get(t, c, testBase+"/pedir")
	if res.Header.Get("Cache-Control") != formCache {
		t.Errorf("GET /pedir: Cache-Control %q, want %q", res.Header.Get("Cache-Control"), formCache)
	}
}

func TestSecurityHeaders(t *testing.T) {
	h, _ := New(Options{Emergencies: emergencies(eje)})
	c := sitetest.HandlerClient(h)
	for _, p := range []string{"/", "/index.md", "/pedir", "/nope", "/llms.txt", h.(*handler).js} {
		res, _ := sitetest.Get(t, c, testBase+p)
		hd := res.Header
		policy := hd.Get("Content-Security-Policy")
		if !strings.Contains(policy, "script-src 'self'") || strings.Contains(policy, "unsafe") ||
			!strings.Contains(policy, "default-src 'none'") || !strings.Contains(policy, "frame-ancestors 'none'") {
			t.Errorf("GET %s: Content-Security-Policy %q", p, policy)
		}
		if hd.Get("X-Content-Type-Options") != "nosniff" || hd.Get("Referrer-Policy") != "strict-origin-when-cross-origin" {
			t.Errorf("GET %s: X-Content-Type-Options %q, Referrer-Policy %q", p, hd.Get("X-Content-Type-Options"), hd.Get("Referrer-Policy"))
		}
	}
	// No inline script anywhere: every <script> is an external file, no element has an event handler.
	_, page := sitetest.Get(t, c, testBase+"/pedir")
	if inlineScript.Match(page) {
		t.Errorf("/pedir has inline script: %s", inlineScript.Find(page))
	}
}

var inlineScript = regexp.MustCompile(`<script(>|[^>]*[^"]>[^<])|\son[a-z]+=`)

func TestMethods(t *testing.T) {
	publish := func(context.Context, []byte) (int, []byte) { return 500, nil }
	c := newSite(t, Options{Emergencies: emergencies(eje), Service: &funcs{publish: publish}})
	for _, tc := range []struct{ method, path, allow string }{
		{http.MethodPost, "/", "GET, HEAD"},
		{http.MethodPut, "/integraciones", "GET, HEAD"},
		{http.MethodDelete, "/pedir", "GET, HEAD, POST"},
		{http.MethodPost, "/pedir.md", "GET, HEAD"},
		{http.MethodPost, "/llms.txt", "GET, HEAD"},
		{http.MethodOptions, "/ofrecer", "GET, HEAD, POST"},
	} {
		res, _ := sitetest.Do(t, c, tc.method, testBase+tc.path, nil)
		if res.StatusCode != http.StatusMethodNotAllowed || res.Header.Get("Allow") != tc.allow {
			t.Errorf("%s %s: %d Allow %q, want 405 Allow %q", tc.method, tc.path, res.StatusCode, res.Header.Get("Allow"), tc.allow)
		}
	}
	// Without Publish, the forms are GET only.
	c = newSite(t, Options{Emergencies: emergencies(eje)})
	res, _ := sitetest.Do(t, c, http.MethodPost, testBase+"/pedir", strings.NewReader("title=x"), "Content-Type: application/x-www-form-urlencoded")
	if res.StatusCode != http.StatusMethodNotAllowed || res.Header.Get("Allow") != "GET, HEAD" {
		t.Errorf("POST /pedir without Publish: %d Allow %q", res.StatusCode, res.Header.Get("Allow"))
	}
}

func TestAcceptNegotiation(t *testing.T) {
	c := newSite(t, Options{})
	for accept, markdown := range map[string]bool{
		"":                                    false,
		"text/html,application/xhtml+xml,*/*": false,
		"text/markdown":                       true,
		"text/markdown, text/html;q=0.9":      true,
		"text/html, text/markdown;q=0.5":      false,
		"text/markdown;q=0, text/html":        false,
		"*/*":                                 false,
	} {
		res, _ := sitetest.Get(t, c, testBase+"/integraciones", "Accept: "+accept)
		if got := strings.HasPrefix(res.Header.Get("Content-Type"), "text/markdown"); got != markdown {
			t.Errorf("Accept %q: Content-Type %q", accept, res.Header.Get("Content-Type"))
		}
	}
}

// Configuration text is text: an emergency's title cannot inject markup into any page.
func TestEscaping(t *testing.T) {
	evil := schema.EmergencyInfo{Slug: "evil", Title: `<script>alert(1)</script> & [x](javascript:alert(2)) *b* "q"`,
		Summary: "<img src=x onerror=alert(3)>\n# no heading\n- no list", Location: "1. `code` | pipe", OccurredOn: "2026-01-02"}
	c := newSite(t, Options{Emergencies: emergencies(evil, eje)})
	for _, p := range []string{"/", "/emergencias/evil", "/pedir", "/ofrecer", "/integraciones", "/sitemap.xml"} {
		_, body := sitetest.Get(t, c, testBase+p)
		s := string(body)
		for _, bad := range []string{"<script>alert", `href="javascript:`, "<img", "onerror=alert(3)>", "<em>b</em>"} {
			if strings.Contains(s, bad) {
				t.Errorf("GET %s contains %q", p, bad)
			}
		}
	}
	_, body := sitetest.Get(t, c, testBase+"/emergencias/evil")
	doc := sitetest.ParseHTML(t, body)
	h1 := sitetest.Text(sitetest.ByID(doc, "contenido").FirstChild.NextSibling)
	if h1 != `<script>alert(1)</script> & [x](javascript:alert(2)) *b* "q"` {
		t.Errorf("the title does not read as written: %q", h1)
	}
	if !strings.Contains(string(body), "<title>&lt;script&gt;alert(1)&lt;/script&gt;") {
		t.Errorf("the <title> is not escaped:\n%s", body)
	}
	_, twin := sitetest.Get(t, c, testBase+"/emergencias/evil.md")
	sitetest.CheckTwinHeader(t, "evil.md", twin, testBase+"/emergencias/evil")
	if !strings.Contains(sitetest.MarkdownText(twin), "<img src=x onerror=alert(3)> # no heading - no list") {
		t.Errorf("the summary does not read as written in the twin:\n%s", twin)
	}
}

// mdText keeps any text literal through goldmark.
func TestMarkdownText(t *testing.T) {
	md := newMarkdown()
	for _, s := range []string{"a *b* _c_ `d` [e](f) <g> &amp; h|i \\j", "- x", "+ x", "= x", "12. x", "3) x", "# x",
		"> x", "***", "a  \nb", "\\", "![i](x)", "<!-- c -->", "~~s~~"} {
		d, err := renderMarkdown(md, []byte("# "+mdText(s)+"\n"))
		if err != nil {
			t.Fatal(err)
		}
		want := strings.Join(strings.Fields(s), " ")
		if d.title != want {
			t.Errorf("mdText(%q) as a title reads %q", s, d.title)
		}
		if got := sitetest.MarkdownText([]byte(mdText(s))); strings.Join(strings.Fields(got), " ") != want {
			t.Errorf("mdText(%q) as a paragraph reads %q", s, got)
		}
	}
	for _, s := range []string{"a", "a`b", "``x", "a ``` b"} {
		got := sitetest.MarkdownText([]byte(mdCode(s)))
		if strings.TrimSpace(got) != s {
			t.Errorf("mdCode(%q) reads %q", s, got)
		}
	}
}

// The field tables, the forms and the examples come from the schemas.
func TestFromSchema(t *testing.T) {
	for _, name := range []string{"HelpRequest", "HelpOffer"} {
		fields, err := schemaFields(name)
		if err != nil {
			t.Fatal(err)
		}
		table, err := fieldTable(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range fields {
			if !strings.Contains(table, "| `"+f.Name+"` |") {
				t.Errorf("%s table lacks %s", name, f.Name)
			}
			if labels[f.Name] == "" && !slices.Contains([]string{"type", "source", "externalId"}, f.Name) {
				t.Errorf("field %s of %s has no Spanish label", f.Name, name)
			}
			for _, e := range f.Enum {
				if enumLabels[e] == "" {
					t.Errorf("value %q of %s has no Spanish label", e, f.Name)
				}
			}
		}
	}
	for _, typ := range []string{schema.TypeRequest, schema.TypeOffer} {
		for _, slug := range []string{"", "eje-cafetero"} {
			body, err := exampleBody(typ, slug)
			if err != nil {
				t.Fatal(err)
			}
			pub, eb := schema.Decode([]byte(body), "")
			if eb != nil {
				t.Errorf("example %s is refused: %+v\n%s", typ, eb, body)
			} else if pub.EmergencySlug != slug || pub.Type != typ {
				t.Errorf("example %s: slug %q type %q", typ, pub.EmergencySlug, pub.Type)
			}
		}
	}
}

// The integration guide's POST examples are valid bodies for the emergency the page shows.
func TestIntegrationExamples(t *testing.T) {
	c := newSite(t, Options{Emergencies: emergencies(mojana, eje)})
	for _, p := range []string{"/integraciones.md", "/emergencias/eje-cafetero.md", "/pedir.md", "/ofrecer.md"} {
		_, md := sitetest.Get(t, c, testBase+p)
		bodies := dataBinary(string(md))
		if len(bodies) == 0 {
			t.Errorf("%s has no curl POST example", p)
		}
		for _, b := range bodies {
			if !strings.Contains(b, `"type"`) {
				continue // an MCP message
			}
			pub, eb := schema.Decode([]byte(b), "")
			if eb != nil {
				t.Errorf("%s: example refused: %+v", p, eb)
				continue
			}
			want := "inundaciones-la-mojana"
			if strings.HasPrefix(p, "/emergencias/") {
				want = "eje-cafetero"
			}
			if pub.EmergencySlug != want {
				t.Errorf("%s: example publishes to %q, want %q", p, pub.EmergencySlug, want)
			}
		}
	}
}

// dataBinary extracts the single-quoted --data-binary arguments of the curl examples.
func dataBinary(md string) []string {
	var out []string
	for _, part := range strings.Split(md, "--data-binary '")[1:] {
		end := strings.Index(part, "'\n")
		out = append(out, strings.ReplaceAll(part[:end], `'\''`, "'"))
	}
	return out
}

// The home page, with everything it loads, stays well under 50 KB.
func TestHomeWeight(t *testing.T) {
	h, _ := New(Options{Emergencies: emergencies(eje, mojana)})
	c := sitetest.HandlerClient(h)
	_, page := sitetest.Get(t, c, testBase+"/")
	total := len(page)
	for _, l := range sitetest.HTMLLinks(sitetest.ParseHTML(t, page)) {
		if strings.HasPrefix(l, "/assets/") {
			_, b := sitetest.Get(t, c, testBase+l)
			total += len(b)
		}
	}
	if total > 50<<10 {
		t.Errorf("home page weighs %d bytes with its assets", total)
	}
	t.Logf("home page: %d bytes with its assets", total)
}

func TestAssets(t *testing.T) {
	h, _ := New(Options{})
	site := h.(*handler)
	c := sitetest.HandlerClient(h)
	for p, ct := range map[string]string{site.css: "text/css; charset=utf-8", site.js: "text/javascript; charset=utf-8",
		site.siteJS: "text/javascript; charset=utf-8"} {
		res, body := sitetest.Get(t, c, testBase+p)
		if res.StatusCode != http.StatusOK || res.Header.Get("Content-Type") != ct || len(body) == 0 {
			t.Errorf("GET %s: %d %q", p, res.StatusCode, res.Header.Get("Content-Type"))
		}
	}
	_, form := sitetest.Get(t, c, testBase+"/pedir")
	_, home := sitetest.Get(t, c, testBase+"/")
	if !strings.Contains(string(form), `<script src="`+site.js+`" defer></script>`) || strings.Contains(string(home), site.js) {
		t.Error("the form script must load on form pages only")
	}
	if !strings.Contains(string(home), `<script src="`+site.siteJS+`" defer></script>`) {
		t.Error("the script of every page (service worker, outbox) is not on the home page")
	}
}

func TestRateLimitText(t *testing.T) {
	for _, tc := range []struct {
		n    int
		w    time.Duration
		want string
	}{
		{60, time.Minute, "60 publicaciones por minuto"}, {1, time.Second, "1 publicación por segundo"},
		{100, time.Hour, "100 publicaciones por hora"}, {5, 10 * time.Minute, "5 publicaciones cada 10 minutos"},
		{5, 90 * time.Second, "5 publicaciones cada 90 segundos"}, {0, time.Minute, ""}, {5, 0, ""},
	} {
		if got := rateLimitText(tc.n, tc.w); got != tc.want {
			t.Errorf("rateLimitText(%d, %v) = %q, want %q", tc.n, tc.w, got, tc.want)
		}
	}
	c := newSite(t, Options{RateLimitEvents: 30, RateLimitWindow: time.Minute})
	if _, md := sitetest.Get(t, c, testBase+"/integraciones.md"); !strings.Contains(string(md), "hasta 30 publicaciones por minuto") {
		t.Error("the integration guide does not publish the rate limit")
	}
	c = newSite(t, Options{})
	if _, md := sitetest.Get(t, c, testBase+"/integraciones.md"); !strings.Contains(string(md), "no tiene configurado un límite") {
		t.Error("the integration guide does not say that no limit is configured")
	}
}

// postForm posts vals to a form page, as a browser without JavaScript does.
func postForm(t *testing.T, c *http.Client, path string, vals url.Values) (*http.Response, []byte) {
	t.Helper()
	return sitetest.Do(t, c, http.MethodPost, testBase+path, strings.NewReader(vals.Encode()),
		"Content-Type: application/x-www-form-urlencoded")
}
