package site

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"html"
	htmltemplate "html/template"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/directaid/directaid/schema"
)

// page is one page of the site.
type page struct {
	Path      string // canonical path
	tmpl      string // its Markdown template under content/
	form      string // the record type its form publishes; "" when it has no form
	emergency *schema.EmergencyInfo
	recordID  string // on a record's page: the id in its path
	withheld  string // on a record's page over the detail limit: why its phone is not shown (load drops it)
	// Read from the store per request (see load): the page then depends on data, not only on its view.
	record  *detailView
	matches *matchesView // on an open record's page
	list    *listView
	filter  *filterView
	err     *errorInfo // on an error page
	manage  bool       // the publisher's manage page
	mv      *manageView
	report  *reportView  // a record's «Reportar» form, or the outcome of its POST
	respond *respondView // an open record's «Yo puedo ayudar» form, or the outcome of its POST
	mod     *moderationView
	onMap   bool     // the map of the emergency's records (mapa.go)
	mapv    *mapView // its data, once its list is read
}

// dynamic tells whether the page shows data read from the store, which the render cache must not keep.
func (p page) dynamic() bool {
	return p.record != nil || p.list != nil || p.err != nil || p.report != nil || p.respond != nil || p.mod != nil
}

// staticPages are the pages that do not depend on the configuration, in sitemap order (the emergency
// pages follow the home page).
var staticPages = []page{
	{Path: "/pedir", tmpl: "pedir.md", form: schema.TypeRequest},
	{Path: "/ofrecer", tmpl: "ofrecer.md", form: schema.TypeOffer},
	{Path: "/integraciones", tmpl: "integraciones.md"},
	{Path: "/privacidad", tmpl: "privacidad.md"},
	{Path: managePath, tmpl: "gestionar.md", manage: true},
}

var (
	homePage     = page{Path: "/", tmpl: "index.md"}
	notFoundPage = page{tmpl: "404.md"}
)

// twinPath is the path of a page's Markdown twin.
func twinPath(p string) string {
	if p == "/" {
		return "/index.md"
	}
	return p + ".md"
}

// view is the site as one request sees it: its base URL and the emergencies active at that moment.
type view struct {
	h    *handler
	base string
	ems  []schema.EmergencyInfo
	key  string // base and emergencies: what a rendered page depends on besides itself
}

func newView(h *handler, base string) *view {
	v := &view{h: h, base: base, ems: h.o.Emergencies()}
	ems, _ := json.Marshal(v.ems)
	v.key = base + "\x00" + string(ems)
	return v
}

// rendered is a page's Markdown twin and its HTML rendering. The HTML is rendered from the same
// template without what only apps and agents need (pageData.ForApps): the twin says all the page says.
type rendered struct {
	md  []byte
	doc *doc
}

// renderCache keeps rendered pages: a page depends only on its view's key, and rendering the
// integration guide costs about a millisecond. It is bounded because the key holds the Host header.
type renderCache struct {
	mu sync.Mutex
	m  map[string]*rendered
}

const renderCacheSize = 256

// render returns the page rendered for this view, from the cache when it can.
func (v *view) render(p page) (*rendered, error) {
	c := &v.h.cache
	key := v.key + "\x00" + p.tmpl + "\x00" + p.Path
	if !p.dynamic() {
		c.mu.Lock()
		r, ok := c.m[key]
		c.mu.Unlock()
		if ok {
			return r, nil
		}
	}
	md, err := v.markdown(p, true)
	if err != nil {
		return nil, err
	}
	forPeople, err := v.markdown(p, false)
	if err != nil {
		return nil, err
	}
	d, err := renderMarkdown(v.h.md, forPeople)
	if err != nil {
		return nil, err
	}
	r := &rendered{md: md, doc: d}
	if p.dynamic() {
		return r, nil
	}
	c.mu.Lock()
	if c.m == nil || len(c.m) >= renderCacheSize {
		c.m = map[string]*rendered{}
	}
	c.m[key] = r
	c.mu.Unlock()
	return r, nil
}

// pages lists every page, in sitemap order.
func (v *view) pages() []page {
	out := []page{homePage}
	for i := range v.ems {
		out = append(out, page{Path: schema.EmergencyPath(v.ems[i].Slug), tmpl: "emergencia.md", emergency: &v.ems[i]})
		out = append(out, page{Path: mapPath(v.ems[i].Slug), tmpl: "emergencia.md", emergency: &v.ems[i], onMap: true})
	}
	return append(out, staticPages...)
}

// lookup finds the page at path (without .md). A record's page is found by the shape of its path: whether
// the record exists is known only when load reads it.
func (v *view) lookup(path string) (page, bool) {
	if id, ok := strings.CutPrefix(path, schema.RecordPathPrefix); ok && v.h.o.Service != nil {
		return page{Path: path, tmpl: "ayuda.md", recordID: id}, id != "" && !strings.Contains(id, "/")
	}
	for _, p := range v.pages() {
		if p.Path == path {
			return p, true
		}
	}
	return page{}, false
}

// pageData is what a page's Markdown template sees.
type pageData struct {
	Base        string
	Tools       []schema.MCPTool // the MCP tools (Options.Tools)
	URL         string           // the page's canonical URL; empty on the 404 page
	Emergencies []schema.EmergencyInfo
	Emergency   *schema.EmergencyInfo // on an emergency's page
	Form        string                // the record type of the page's form
	// ExampleSlug is the emergency that the examples publish to: the page's own, else the first active.
	ExampleSlug string
	RateLimit   string // "60 publicaciones por minuto", or "" when not configured
	Contact     string
	Record      *detailView  // on a record's page
	Matches     *matchesView // on an open record's page: the records of the other type that can answer it
	List        *listView    // on an emergency's page, when the site can read records
	Error       *errorInfo   // on an error page
	Report      *reportView  // on a record's page and on the outcome of its «Reportar» form
	Respond     *respondView // on an open record's page and on the outcome of its «Yo puedo ayudar» form
	// OnMap is true on an emergency's map: the same page as its list, titled as a map.
	OnMap bool
	// ForApps is true in the Markdown twin, false in the HTML page: the page's URL, the examples and
	// the identifiers for apps are in the twin only.
	ForApps bool
}

// Link is the absolute URL of a path on this site.
func (d pageData) Link(path string) string { return d.Base + path }

// Lines are the phone lines of an emergency (schema.DefaultLines when its operator listed none).
func (d pageData) Lines(e schema.EmergencyInfo) []schema.PhoneLine { return emergencyLines(e) }

// EmergencyURL is the absolute URL of an emergency's page.
func (d pageData) EmergencyURL(e schema.EmergencyInfo) string {
	return d.Base + schema.EmergencyPath(e.Slug)
}

// MapURL is the absolute URL of an emergency's map: the home page links to it rather than loading it.
func (d pageData) MapURL(e schema.EmergencyInfo) string {
	return d.Base + mapPath(e.Slug)
}

// markdown executes a page's template: the text of its twin.
func (v *view) markdown(p page, forApps bool) ([]byte, error) {
	d := pageData{ForApps: forApps, Base: v.base, Tools: v.h.o.Tools, Emergencies: v.ems, Emergency: p.emergency, Form: p.form, Contact: v.h.o.Contact,
		RateLimit: rateLimitText(v.h.o.RateLimitEvents, v.h.o.RateLimitWindow), Record: p.record, Matches: p.matches, List: p.list, Error: p.err, Report: p.report, Respond: p.respond}
	if p.Path != "" {
		d.URL = v.base + p.Path
	}
	d.OnMap = p.onMap
	if p.emergency != nil {
		d.ExampleSlug = p.emergency.Slug
	} else if len(v.ems) > 0 {
		d.ExampleSlug = v.ems[0].Slug
	}
	var b bytes.Buffer
	if err := v.h.pages.ExecuteTemplate(&b, p.tmpl, d); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// navItem is a link of the site's menu.
type navItem struct{ Path, Label string }

// The integration guide is for developers: the home page and the footer of the guide link to it.
var nav = []navItem{{"/", "Inicio"}, {"/pedir", "Pedir ayuda"}, {"/ofrecer", "Ofrecer ayuda"}, {"/privacidad", "Privacidad"}}

// layoutData is what the HTML layout sees.
type layoutData struct {
	Nav            []navItem
	Path           string // the page's path, to mark it in the menu
	Title, Summary string
	Canonical      string // absolute URL; empty on the 404 page
	Twin           string // path of the Markdown twin
	Atom           string // an emergency's Atom feed (its newest records), for feed readers
	// The page's HTML, split where the form goes: a publish form before the first second-level heading,
	// the filter form of a list right after the list's heading.
	Before, After htmltemplate.HTML
	Form          *formView
	Filter        *filterView
	Manage        *manageView
	Report        *reportView // the «Reportar» form, at the end of the page
	Respond       *respondView
	Moderation    *moderationView
	Search        *searchView // the home page's «¿Qué necesita? ¿Dónde?»
	ManageJS      string
	CSS, JS       string
	SiteJS        string // the script of every page
	PlacesJS      string
	// Map is the map of an emergency's records, with its script and stylesheet (Leaflet's included).
	Map           *mapView
	MapJS, MapCSS string
	Contact       string // how to reach the operator (Options.Contact), in the footer
}

// servePage serves a page, its twin, the 404 page, or a form's POST.
func (h *handler) servePage(w http.ResponseWriter, r *http.Request, v *view) {
	p, twin := strings.CutSuffix(r.URL.Path, ".md")
	if twin && p == "/index" {
		p = "/"
	} else if twin && p == "/" {
		p = "" // "/.md" is no page
	}
	if !twin {
		w.Header().Add("Vary", "Accept")
	}
	asMarkdown := twin || wantsMarkdown(r)
	if r.Method == http.MethodPost && p != moderationPath && crossSite(r, v.base, false) { // moderation says it on its page
		// Another site's page posting here would make each of its visitors a reporter, a responder or a
		// publisher of its choosing, each from a network of their own: the bounds per network would not hold.
		w.Header().Set("Cache-Control", "no-store")
		http.Error(w, "Se rechazó el envío: el formulario no se envió desde este sitio. Abra "+v.base+" y envíelo desde allí.", http.StatusForbidden)
		return
	}
	if p == reportPath && !twin {
		h.serveReport(w, r, v)
		return
	}
	if p == schema.RespondFormPath && !twin {
		h.serveRespond(w, r, v)
		return
	}
	if p == schema.ResponseFormPath && !twin {
		h.serveResponseAction(w, r, v)
		return
	}
	if p == searchPath && !twin {
		h.serveSearch(w, r, v)
		return
	}
	if p == moderationPath && !twin {
		h.serveModeration(w, r, v)
		return
	}
	pg, found := v.lookup(p)
	if !found {
		pg = notFoundPage // 404 for every method: 405 would say the path exists
	} else if !allowMethods(w, r, !twin && (h.o.Service != nil && (pg.form != "" || pg.manage))) {
		return
	}
	if pg.manage && !asMarkdown {
		var status int
		pg.mv, status = h.manage(r)
		h.writePage(w, r, v, pg, status, formCache, false)
		return
	}
	status, cache := http.StatusNotFound, pageCache
	if found {
		var err error
		if status, cache, err = v.load(r, &pg); err != nil {
			h.serverError(w, r, err)
			return
		}
		if pg.onMap {
			w.Header().Set("Content-Security-Policy", h.mapCSP)
		}
		if pg.record != nil {
			// A record's page is in the sitemap, so that people find it, and carries a phone number: search
			// engines are asked to keep no copy of it and to show no extract, so that neither outlives its
			// withdrawal (then 410) nor shows the number outside the page.
			w.Header().Set("X-Robots-Tag", recordRobots)
		}
	}
	if pg.form == "" || (asMarkdown && r.Method != http.MethodPost) {
		h.writePage(w, r, v, pg, status, cache, asMarkdown)
		return
	}
	h.renderPage(w, r, v, pg, h.publishFunc(), "")
}

// crossSite reports whether the browser says a POST does not come from the site's own page: a
// Sec-Fetch-Site other than same-origin (or none, the person's own navigation, unless strict), or an
// Origin other than the site's. A request that says neither (a client that is no browser) is not.
func crossSite(r *http.Request, base string, strict bool) bool {
	if s := r.Header.Get("Sec-Fetch-Site"); s != "" && s != "same-origin" && (strict || s != "none") {
		return true
	}
	o := r.Header.Get("Origin")
	return o != "" && !strings.EqualFold(o, base)
}

// writePage renders a page without a form, as HTML or as its Markdown twin.
func (h *handler) writePage(w http.ResponseWriter, r *http.Request, v *view, pg page, status int, cache string, asMarkdown bool) {
	rd, err := v.render(pg)
	if err != nil {
		h.serverError(w, r, err)
		return
	}
	if asMarkdown {
		serve(w, r, status, rd.md, markdownType, cache)
		return
	}
	body, err := h.htmlPage(rd.doc, pg, v, nil)
	if err != nil {
		h.serverError(w, r, err)
		return
	}
	serve(w, r, status, body, htmlType, cache)
}

// renderPage renders a page with its form, which a POST publishes through publish; summary, when not
// empty, replaces the form's message.
func (h *handler) renderPage(w http.ResponseWriter, r *http.Request, v *view, pg page,
	publish func(context.Context, []byte) (int, []byte), summary string) {
	rd, err := v.render(pg)
	if err != nil {
		h.serverError(w, r, err)
		return
	}
	form, status := h.forms[pg.form].handle(w, r, v, pg.Path, publish)
	if summary != "" {
		form.Summary = summary
	}
	body, err := h.htmlPage(rd.doc, pg, v, form)
	if err != nil {
		h.serverError(w, r, err)
		return
	}
	serve(w, r, status, body, htmlType, formCache)
}

// load reads what a found page shows from the store, and returns the page's status and Cache-Control: a
// record's page gets its record (or becomes the 404 page), an emergency's page its list.
func (v *view) load(r *http.Request, pg *page) (int, string, error) {
	o := v.h.o
	switch {
	case pg.recordID != "":
		d, err := o.Service.Detail(r.Context(), v.base, pg.recordID)
		if errors.Is(err, ErrNotFound) {
			*pg = notFoundPage
			return http.StatusNotFound, pageCache, nil
		}
		if errors.Is(err, ErrGone) { // withdrawn or hidden: no content, no form
			*pg = page{tmpl: "error.md", err: &errorInfo{Status: http.StatusGone}}
			return http.StatusGone, "no-store", nil
		}
		if err != nil {
			return 0, "", err
		}
		if pg.withheld != "" && d.Contact.Whatsapp == "" {
			pg.withheld = "" // no phone to withhold (expired, or reported): the page says why, as always
		}
		if pg.withheld != "" { // never read past here: the phone is not in the page at all
			d.Contact.Whatsapp, d.Contact.WhatsappURL = "", ""
		}
		pg.record = newDetailView(v, d)
		if pg.withheld != "" {
			pg.record.Withheld, pg.record.PhoneReported = pg.withheld, false
		}
		if d.Status == "open" { // a resolved or expired record looks for no one
			approx := d.Location != nil && d.Location.Precision == schema.PrecisionPlace
			if pg.matches, err = v.matches(r.Context(), d.ID, d.Type, d.Emergency.Slug, approx); err != nil {
				return 0, "", err
			}
		}
		if o.Service != nil {
			pg.report = newReportView(v.base, d.ID)
			if d.Status == schema.StatusOpen {
				pg.respond = newRespondView(v.base, d.ID, d.Type == schema.TypeOffer)
			}
		}
		// /ayudas/06H0ESGYP8JKSWEC is the record 06h0esgyp8jkswec: its links name it as stored.
		pg.Path = schema.RecordPath(d.ID)
		return http.StatusOK, recordCache, nil
	case pg.emergency != nil && o.Service != nil:
		var status int
		var err error
		pg.list, pg.filter, status, err = v.list(r.Context(), pg.emergency, r.URL.Query())
		v.mapLinks(pg)
		return status, listCache, err
	}
	return http.StatusOK, pageCache, nil
}

// htmlPage renders a page's Markdown inside the layout, with its form when it has one.
func (h *handler) htmlPage(d *doc, pg page, v *view, form *formView) ([]byte, error) {
	before, after := d.html, []byte(nil)
	var search *searchView
	if pg.Path == homePage.Path && len(v.ems) > 0 {
		search = newSearchView(v.ems)
	}
	if i := bytes.Index(d.html, []byte("<h2")); i >= 0 && (form != nil || pg.mv != nil) {
		before, after = d.html[:i], d.html[i:]
	}
	// The home page's search goes after its first section (the emergencies), which stays on the first screen.
	if i := bytes.Index(d.html, []byte("<h2")); i >= 0 && search != nil {
		if j := bytes.Index(d.html[i+3:], []byte("<h2")); j >= 0 {
			before, after = d.html[:i+3+j], d.html[i+3+j:]
		}
	}
	// An open record's «Yo puedo ayudar» form goes after its section's first paragraph.
	if pg.respond != nil && pg.respond.Done == "" && !pg.respond.Closed {
		if i := bytes.Index(d.html, []byte("<h2>"+html.EscapeString(pg.respond.Heading)+"</h2>\n")); i >= 0 {
			if j := bytes.Index(d.html[i:], []byte("</p>\n")); j >= 0 {
				before, after = d.html[:i+j+5], d.html[i+j+5:]
			}
		}
	}
	heading := []byte("<h2>" + html.EscapeString(listHeading) + "</h2>\n")
	if i := bytes.Index(d.html, heading); i >= 0 && pg.filter != nil {
		before, after = d.html[:i+len(heading)], d.html[i+len(heading):]
	}
	ld := layoutData{Nav: nav, Path: pg.Path, Title: d.title, Summary: d.summary, Form: form, Filter: pg.filter, Manage: pg.mv, Report: pg.report, Respond: pg.respond, Moderation: pg.mod, Search: search, ManageJS: h.manageJS, CSS: h.css, JS: h.js, SiteJS: h.siteJS, PlacesJS: h.placesJS, Contact: h.o.Contact,
		Before: htmltemplate.HTML(before), After: htmltemplate.HTML(after)} // goldmark escaped both; raw HTML is off
	if pg.mapv != nil {
		ld.Map, ld.MapJS, ld.MapCSS = pg.mapv, h.mapJS, h.mapCSS
	}
	if pg.Path != "" {
		ld.Canonical, ld.Twin = v.base+pg.Path, twinPath(pg.Path)
	}
	if pg.emergency != nil {
		ld.Atom = schema.HelpPath + "?view=list&format=atom&emergencySlug=" + url.QueryEscape(pg.emergency.Slug)
	}
	var b bytes.Buffer
	if err := h.layout.ExecuteTemplate(&b, "layout.html", ld); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// sitemap lists every page with its absolute URL, and the pages of the newest records (see
// maxSitemapRecords) with their creation time: a record never changes.
func (v *view) sitemap(ctx context.Context) ([]byte, error) {
	type loc struct {
		Loc     string `xml:"loc"`
		Lastmod string `xml:"lastmod,omitempty"`
	}
	set := struct {
		XMLName xml.Name `xml:"http://www.sitemaps.org/schemas/sitemap/0.9 urlset"`
		URLs    []loc    `xml:"url"`
	}{}
	for _, p := range v.pages() {
		set.URLs = append(set.URLs, loc{Loc: v.base + p.Path})
	}
	recs, err := v.recentRecords(ctx)
	if err != nil {
		return nil, err
	}
	for _, r := range recs {
		set.URLs = append(set.URLs, loc{Loc: v.base + schema.RecordPath(r.ID), Lastmod: r.CreatedAt.Format(time.RFC3339)})
	}
	b, err := xml.MarshalIndent(set, "", "  ")
	if err != nil {
		return nil, err
	}
	return append([]byte(xml.Header), append(b, '\n')...), nil
}

// llmsEntry is one page in llms.txt: its title and summary as Markdown text, and its twin.
type llmsEntry struct{ Title, Summary, URL string }

// llms renders /llms.txt; each page's note is the summary line of its own twin.
func (v *view) llms() ([]byte, error) {
	var entries []llmsEntry
	for _, p := range v.pages() {
		r, err := v.render(p)
		if err != nil {
			return nil, err
		}
		entries = append(entries, llmsEntry{Title: mdText(r.doc.title), Summary: mdText(r.doc.summary), URL: v.base + twinPath(p.Path)})
	}
	var b bytes.Buffer
	err := v.h.pages.ExecuteTemplate(&b, "llms.txt", struct {
		pageData
		Pages []llmsEntry
	}{pageData{Base: v.base, Tools: v.h.o.Tools}, entries})
	return b.Bytes(), err
}
