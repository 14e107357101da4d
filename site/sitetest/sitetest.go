// Package sitetest checks a directaid website the way issue 4 asks: every page of the sitemap answers
// HTML, its Markdown twin answers Markdown with the same words, every link resolves, and /llms.txt lists
// every twin. It speaks to the site through an *http.Client and a base URL, so the same checks run
// in process (HandlerClient) and against the real binary.
package sitetest

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/text"
	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"

	"github.com/directaid/directaid/schema"
)

// HandlerClient is an *http.Client whose requests are served by h in process.
func HandlerClient(h http.Handler) *http.Client {
	return &http.Client{Transport: roundTripper(func(r *http.Request) (*http.Response, error) {
		if r.URL.Path == "" {
			r.URL.Path = "/" // as a real client sends it
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		return rec.Result(), nil
	}), CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// Get fetches u with the given header lines ("Name: value") and returns the response with its body read.
func Get(t testing.TB, c *http.Client, u string, header ...string) (*http.Response, []byte) {
	t.Helper()
	return Do(t, c, http.MethodGet, u, nil, header...)
}

// Do sends one request and returns the response with its body read.
func Do(t testing.TB, c *http.Client, method, u string, body io.Reader, header ...string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, u, body)
	if err != nil {
		t.Fatalf("%s %s: %v", method, u, err)
	}
	for _, h := range header {
		k, v, _ := strings.Cut(h, ":")
		req.Header.Add(strings.TrimSpace(k), strings.TrimSpace(v))
	}
	res, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, u, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("%s %s: reading body: %v", method, u, err)
	}
	return res, b
}

// Result is what Check found.
type Result struct {
	Pages []string // the page URLs of the sitemap
	// External are the links to paths that the site hands to the API (/api/..., /mcp): Check does not
	// fetch them; an end-to-end test should.
	External []string
	// Outside are the links that leave the site for the services it may link to (OutsideHosts); Check
	// does not fetch them.
	Outside []string
}

// OutsideHosts are the only places outside the site that pages may link to, each with the paths of the
// pages that may do so: a record's page links to a WhatsApp chat with its phone number and to a map of
// its coordinates. A wa.me link anywhere else would publish a phone number where it must not be.
var OutsideHosts = map[string]string{"wa.me": RecordPrefix, "www.openstreetmap.org": RecordPrefix}

var (
	telLine = regexp.MustCompile(`^\+?[0-9]{3,15}$`)
	mobile  = regexp.MustCompile(`^(\+57)?3[0-9]{9}$`)
)

// RecordPrefix starts the path of every record's page. Record pages are not listed one by one in
// /llms.txt, which describes their pattern (RecordPrefix + "{id}.md") instead.
const RecordPrefix = schema.RecordPathPrefix

// TwinURL is the URL of the Markdown twin of a page URL.
func TwinURL(page string) string {
	if strings.HasSuffix(page, "/") {
		return page + "index.md"
	}
	return page + ".md"
}

// Check crawls the site at base (no trailing slash) and reports every failure through t.
func Check(t testing.TB, c *http.Client, base string) Result {
	t.Helper()
	ck := &checker{t: t, c: c, base: base, status: map[string]int{}, external: map[string]bool{}, outside: map[string]bool{}}
	res := Result{Pages: ck.sitemap()}
	if len(res.Pages) == 0 {
		t.Fatalf("sitemap of %s lists no page", base)
	}
	for _, p := range res.Pages {
		ck.page(p)
	}
	ck.llms(res.Pages)
	res.External = slices.Sorted(maps.Keys(ck.external))
	res.Outside = slices.Sorted(maps.Keys(ck.outside))
	return res
}

type checker struct {
	t        testing.TB
	c        *http.Client
	base     string
	status   map[string]int // links already fetched
	external map[string]bool
	outside  map[string]bool
}

func (ck *checker) sitemap() []string {
	res, body := Get(ck.t, ck.c, ck.base+"/sitemap.xml")
	if res.StatusCode != http.StatusOK {
		ck.t.Fatalf("GET /sitemap.xml: %d", res.StatusCode)
	}
	var set struct {
		URLs []struct {
			Loc string `xml:"loc"`
		} `xml:"url"`
	}
	if err := xml.Unmarshal(body, &set); err != nil {
		ck.t.Fatalf("sitemap.xml: %v", err)
	}
	var out []string
	for _, u := range set.URLs {
		if !strings.HasPrefix(u.Loc, ck.base+"/") {
			ck.t.Errorf("sitemap.xml: %q is not an absolute URL under %s", u.Loc, ck.base)
		}
		out = append(out, u.Loc)
	}
	robotsRes, robots := Get(ck.t, ck.c, ck.base+"/robots.txt")
	if robotsRes.StatusCode != http.StatusOK || !strings.Contains(string(robots), "Sitemap: "+ck.base+"/sitemap.xml") {
		ck.t.Errorf("robots.txt (%d) does not point to the sitemap:\n%s", robotsRes.StatusCode, robots)
	}
	return out
}

// page checks one page and its twin.
func (ck *checker) page(u string) {
	t := ck.t
	res, page := Get(t, ck.c, u)
	if res.StatusCode != http.StatusOK || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/html") {
		t.Errorf("GET %s: %d %s, want 200 text/html", u, res.StatusCode, res.Header.Get("Content-Type"))
		return
	}
	if !slices.Contains(res.Header.Values("Vary"), "Accept") {
		t.Errorf("GET %s: no Vary: Accept", u)
	}
	twinURL := TwinURL(u)
	res, twin := Get(t, ck.c, twinURL)
	if res.StatusCode != http.StatusOK || res.Header.Get("Content-Type") != "text/markdown; charset=utf-8" {
		t.Errorf("GET %s: %d %q, want 200 text/markdown; charset=utf-8", twinURL, res.StatusCode, res.Header.Get("Content-Type"))
		return
	}
	if _, negotiated := Get(t, ck.c, u, "Accept: text/markdown"); !bytes.Equal(negotiated, twin) {
		t.Errorf("GET %s with Accept: text/markdown is not its twin", u)
	}
	CheckTwinHeader(t, twinURL, twin, u)
	doc, err := html.Parse(bytes.NewReader(page))
	if err != nil {
		t.Errorf("%s: %v", u, err)
		return
	}
	CheckStructure(t, u, doc)
	// The twin says everything the page says, in the same order; it may say more for apps and agents
	// (the page's URL, examples), which people do not need.
	if diff := ContainedWords(Words(VisibleText(doc)), Words(MarkdownText(twin))); diff != "" {
		t.Errorf("%s: the page says what its twin does not: %s", u, diff)
	}
	ids := map[string]bool{}
	walk(doc, func(n *html.Node) {
		if id := attr(n, "id"); id != "" {
			ids[id] = true
		}
	})
	for _, l := range HTMLLinks(doc) {
		if strings.HasPrefix(l, "#") {
			if !ids[l[1:]] {
				t.Errorf("%s: link %q to no element", u, l)
			}
			continue
		}
		ck.link(u, l)
	}
	for _, l := range MarkdownLinks(twin) {
		ck.link(twinURL, l)
	}
}

// CheckTwinHeader checks that a twin starts with "# Title", a "> summary" line and the page's URL.
func CheckTwinHeader(t testing.TB, twinURL string, twin []byte, pageURL string) {
	t.Helper()
	var lines []string
	for l := range strings.SplitSeq(string(twin), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
		if len(lines) == 3 {
			break
		}
	}
	if len(lines) < 3 || !strings.HasPrefix(lines[0], "# ") || !strings.HasPrefix(lines[1], "> ") ||
		strings.Trim(lines[2], "<>") != pageURL {
		t.Errorf("%s does not start with # Title, > summary and <%s>:\n%s", twinURL, pageURL, strings.Join(lines, "\n"))
	}
}

// CheckStructure checks what every page's HTML must have: lang="es-CO", a viewport, one h1 first and
// headings that never skip a level, unique ids, and a label for every form control.
func CheckStructure(t testing.TB, u string, doc *html.Node) {
	t.Helper()
	ids, labelled := map[string]int{}, map[string]bool{}
	var headings []int
	viewport, lang := false, ""
	walk(doc, func(n *html.Node) {
		switch n.DataAtom {
		case atom.Html:
			lang = attr(n, "lang")
		case atom.Meta:
			viewport = viewport || attr(n, "name") == "viewport"
		case atom.H1, atom.H2, atom.H3, atom.H4, atom.H5, atom.H6:
			headings = append(headings, int(n.Data[1]-'0'))
		case atom.Label:
			labelled[attr(n, "for")] = true
		}
		if id := attr(n, "id"); id != "" {
			ids[id]++
		}
	})
	if lang != "es-CO" || !viewport {
		t.Errorf("%s: lang=%q, viewport=%v", u, lang, viewport)
	}
	if len(headings) == 0 || headings[0] != 1 || slices.Index(headings[1:], 1) >= 0 {
		t.Errorf("%s: want one h1, first; headings %v", u, headings)
	}
	for i := 1; i < len(headings); i++ {
		if headings[i] > headings[i-1]+1 {
			t.Errorf("%s: heading h%d after h%d skips a level", u, headings[i], headings[i-1])
		}
	}
	for id, n := range ids {
		if n > 1 {
			t.Errorf("%s: id %q used %d times", u, id, n)
		}
	}
	walk(doc, func(n *html.Node) {
		control := n.DataAtom == atom.Select || n.DataAtom == atom.Textarea ||
			(n.DataAtom == atom.Input && attr(n, "type") != "hidden")
		if control && !labelled[attr(n, "id")] {
			t.Errorf("%s: control %q has no <label for>", u, attr(n, "name"))
		}
	})
}

// link fetches a link found on from, once per URL.
func (ck *checker) link(from, l string) {
	ref, err := url.Parse(l)
	if err != nil {
		ck.t.Errorf("%s: bad link %q", from, l)
		return
	}
	if ref.Scheme == "data" {
		return
	}
	baseURL, _ := url.Parse(from)
	if ref.Scheme == "tel" {
		// An emergency line (123) may be on any page; a mobile number, a person's, only on a record's.
		if !telLine.MatchString(ref.Opaque) {
			ck.t.Errorf("%s: bad phone link %q", from, l)
		} else if mobile.MatchString(ref.Opaque) && !strings.HasPrefix(baseURL.Path, RecordPrefix) {
			ck.t.Errorf("%s: link %q to a person's number from a page outside %s", from, l, RecordPrefix)
		}
		return
	}
	abs := baseURL.ResolveReference(ref)
	abs.Fragment = ""
	site, _ := url.Parse(ck.base)
	if abs.Host != site.Host || abs.Scheme != site.Scheme {
		prefix, ok := OutsideHosts[abs.Host]
		switch {
		case !ok || abs.Scheme != "https":
			ck.t.Errorf("%s: link %q leaves the site", from, l)
		case abs.Host == "wa.me" && abs.Path == "/" && abs.Query().Has("text"):
			ck.outside[abs.String()] = true // sharing a text: no number, so from any page
		case !strings.HasPrefix(baseURL.Path, prefix):
			ck.t.Errorf("%s: link %q to %s from a page outside %s", from, l, abs.Host, prefix)
		default:
			ck.outside[abs.String()] = true
		}
		return
	}
	if strings.HasPrefix(abs.Path, "/api/") || abs.Path == "/mcp" {
		ck.external[abs.String()] = true
		return
	}
	s := abs.String()
	if _, done := ck.status[s]; !done {
		res, _ := Get(ck.t, ck.c, s)
		ck.status[s] = res.StatusCode
		if res.StatusCode == http.StatusMethodNotAllowed && strings.Contains(res.Header.Get("Allow"), http.MethodPost) {
			ck.status[s] = http.StatusOK // a form's POST-only target (/reportar): there, and not a page
		}
		if loc := res.Header.Get("Location"); res.StatusCode == http.StatusSeeOther && strings.HasPrefix(loc, "/") && !strings.HasPrefix(loc, "//") {
			ck.status[s] = http.StatusOK // a search form's target (/buscar), which sends to the list it means
		}
	}
	if ck.status[s] != http.StatusOK {
		ck.t.Errorf("%s: link %q answers %d", from, l, ck.status[s])
	}
}

// llms checks /llms.txt: the llms.txt shape, every twin listed, every link resolving.
func (ck *checker) llms(pages []string) {
	u := ck.base + "/llms.txt"
	res, body := Get(ck.t, ck.c, u)
	if res.StatusCode != http.StatusOK {
		ck.t.Errorf("GET /llms.txt: %d", res.StatusCode)
		return
	}
	s := string(body)
	if !strings.HasPrefix(s, "# ") || !strings.Contains(s, "\n> ") || !strings.Contains(s, "\n## ") {
		ck.t.Errorf("llms.txt lacks the H1, the blockquote summary or a section:\n%s", s)
	}
	links := MarkdownLinks(body)
	for _, p := range pages {
		if strings.HasPrefix(p, ck.base+RecordPrefix) {
			if !strings.Contains(s, ck.base+RecordPrefix+"{id}.md") {
				ck.t.Errorf("llms.txt does not describe the pattern of the records' twins (%s is one)", TwinURL(p))
			}
			continue
		}
		if !slices.Contains(links, TwinURL(p)) {
			ck.t.Errorf("llms.txt does not list %s", TwinURL(p))
		}
	}
	for _, l := range links {
		ck.link(u, l)
	}
}

// VisibleText is the text a reader sees in the page's <main>, without its interactive parts (forms
// and what the form scripts fill: elements marked data-interactive), which the twin does not have.
func VisibleText(doc *html.Node) string {
	var b strings.Builder
	var main *html.Node
	walk(doc, func(n *html.Node) {
		if n.DataAtom == atom.Main && main == nil {
			main = n
		}
	})
	if main == nil {
		main = doc
	}
	var rec func(*html.Node)
	rec = func(n *html.Node) {
		if n.Type == html.ElementNode && (n.DataAtom == atom.Script || n.DataAtom == atom.Style ||
			n.DataAtom == atom.Form || hasAttr(n, "data-interactive") || hasAttr(n, "hidden")) {
			return
		}
		if n.Type == html.TextNode {
			b.WriteString(n.Data)
			b.WriteByte(' ')
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			rec(c)
		}
	}
	rec(main)
	return b.String()
}

// MarkdownText is the text a reader sees in a Markdown document, rendered as the site renders it.
func MarkdownText(md []byte) string {
	var b bytes.Buffer
	if err := goldmark.New(goldmark.WithExtensions(extension.Table)).Convert(md, &b); err != nil {
		return ""
	}
	doc, err := html.Parse(&b)
	if err != nil {
		return ""
	}
	return VisibleText(doc)
}

// Words splits text into words.
func Words(s string) []string { return strings.Fields(s) }

// CompareWords returns "" when a and b are the same words, else where they first differ.
func CompareWords(a, b []string) string {
	for i := 0; i < max(len(a), len(b)); i++ {
		if i >= len(a) || i >= len(b) || a[i] != b[i] {
			ctx := func(w []string) string { return strings.Join(w[max(0, i-5):min(len(w), i+6)], " ") }
			return fmt.Sprintf("at word %d: page «%s» vs twin «%s»", i, ctx(a), ctx(b))
		}
	}
	return ""
}

// ContainedWords returns "" when the words of a appear in b in the same order (b may have more
// between them), else the first word of a that b lacks. A run of a's words must appear in b as a run
// unless b's extra words are whole paragraphs: the check is word by word, greedy.
func ContainedWords(a, b []string) string {
	j := 0
	for i, w := range a {
		for j < len(b) && b[j] != w {
			j++
		}
		if j == len(b) {
			ctx := strings.Join(a[max(0, i-5):min(len(a), i+6)], " ")
			return fmt.Sprintf("at word %d «%s»: «%s»", i, w, ctx)
		}
		j++
	}
	return ""
}

// HTMLLinks lists the href, src and action attributes of a document.
func HTMLLinks(doc *html.Node) []string {
	var out []string
	walk(doc, func(n *html.Node) {
		for _, a := range n.Attr {
			if a.Key == "href" || a.Key == "src" || a.Key == "action" {
				out = append(out, a.Val)
			}
		}
	})
	return out
}

// MarkdownLinks lists the destinations of the links, autolinks and images of a Markdown document.
func MarkdownLinks(md []byte) []string {
	root := goldmark.New(goldmark.WithExtensions(extension.Table)).Parser().Parse(text.NewReader(md))
	var out []string
	_ = ast.Walk(root, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch l := n.(type) {
		case *ast.Link:
			out = append(out, string(l.Destination))
		case *ast.Image:
			out = append(out, string(l.Destination))
		case *ast.AutoLink:
			out = append(out, string(l.URL(md)))
		}
		return ast.WalkContinue, nil
	})
	return out
}

// ParseHTML parses a page, failing the test on error.
func ParseHTML(t testing.TB, b []byte) *html.Node {
	t.Helper()
	doc, err := html.Parse(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

// ByID finds the element with the given id.
func ByID(doc *html.Node, id string) *html.Node {
	var found *html.Node
	walk(doc, func(n *html.Node) {
		if found == nil && attr(n, "id") == id {
			found = n
		}
	})
	return found
}

// Text is the text content of n.
func Text(n *html.Node) string {
	var b strings.Builder
	walk(n, func(c *html.Node) {
		if c.Type == html.TextNode {
			b.WriteString(c.Data)
		}
	})
	return strings.Join(strings.Fields(b.String()), " ")
}

// Attr is the value of n's attribute key ("" when absent); HasAttr tells whether it is present.
func Attr(n *html.Node, key string) string { return attr(n, key) }

// HasAttr tells whether n has the attribute key.
func HasAttr(n *html.Node, key string) bool { return hasAttr(n, key) }

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

func hasAttr(n *html.Node, key string) bool {
	return slices.ContainsFunc(n.Attr, func(a html.Attribute) bool { return a.Key == key })
}

func walk(n *html.Node, f func(*html.Node)) {
	f(n)
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		walk(c, f)
	}
}
