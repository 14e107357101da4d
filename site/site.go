// Package site is the companion website of directaid: pages written in Markdown (the Markdown twins ARE
// the sources) rendered to HTML in one layout, the publish forms, llms.txt, robots.txt and sitemap.xml.
// It is a plain net/http handler; the backend mounts it for every path that is not the API or MCP.
package site

import (
	"bytes"
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	htmltemplate "html/template"
	"mime"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"
	texttemplate "text/template"
	"time"

	"github.com/yuin/goldmark"

	"github.com/directaid/directaid/backend/places"
	"github.com/directaid/directaid/internal/webutil"
	"github.com/directaid/directaid/schema"
)

// Options configures the site.
type Options struct {
	// Emergencies returns the active emergencies at request time (config reloads change them).
	Emergencies func() []schema.EmergencyInfo
	// PublicURL is the absolute base URL without trailing slash; empty derives it per request from the
	// Host header and TLS (X-Forwarded-* are not trusted).
	PublicURL string
	// Tools are the MCP server's registered tools, which llms.txt and the integration guide list.
	Tools []schema.MCPTool
	// RateLimitEvents per RateLimitWindow and per IP is the publishing limit the integration guide
	// publishes; zero means not configured.
	RateLimitEvents int
	RateLimitWindow time.Duration
	// LimitPages are the words of each rate limit's 429 page, by zone (ServeError's zone).
	LimitPages map[string]LimitPage
	// Moderation serves the volunteers' moderation page, /moderacion, to authenticated users only; nil: 404.
	Moderation *Moderation
	// Contact, optional, tells people how to reach the operator (e.g. to ask for a removal); the privacy
	// page shows it as written.
	Contact string
	// MapTiles is the background of the emergencies' maps; zero means DefaultMapTiles.
	MapTiles MapTiles
	// OnError, optional, receives the errors a page answers 500 or 503 for (status), for the log.
	OnError func(r *http.Request, status int, err error)

	// Service is the publish and read service behind the forms and the record pages; nil: the emergency
	// pages list no records, no record has a page, and the forms take no POST.
	Service Service
}

// Service is what the site asks of the publish and read service, so that a form and its API endpoint
// answer alike: each method behaves as the API endpoint named beside it.
type Service interface {
	// ParseList reads list filters from a query string exactly as view=list does (syntax only).
	ParseList(url.Values) (schema.ListQuery, []schema.FieldError)
	// List answers a list query as view=list does; filters it refuses come back as a *QueryError.
	List(ctx context.Context, base string, q schema.ListQuery) (*schema.HelpList, error)
	// Detail is one record with its phone number, as view=detail answers it; ErrNotFound when no record
	// has that id (or the id cannot be one), ErrGone when it was withdrawn or hidden.
	Detail(ctx context.Context, base, id string) (*schema.PublicHelpDetail, error)
	// Matches are up to limit matches of the record id, as GET help/{id}/matches answers them.
	Matches(ctx context.Context, base, id string, limit int) (*schema.HelpMatches, error)
	// Publish publishes a JSON body as POST help does and returns its HTTP status and JSON body; it
	// serves the forms when JavaScript is off.
	Publish(ctx context.Context, body []byte) (status int, resp []byte)
	// Act applies a publisher's action as POST help/{id}/actions does; it serves /gestionar without
	// JavaScript.
	Act(ctx context.Context, base, id, token, action string) (status int, resp []byte)
	// Responses reads the responses to record id with its manage token, as GET help/{id}/responses does
	// (a schema.ResponseList, or the same 403); /gestionar shows them without JavaScript.
	Responses(ctx context.Context, id, token string) (status int, resp []byte)
	// Report files a community report of record id (body: a JSON schema.ReportInput) as POST
	// help/{id}/reports does, the reporter told apart by r's client address as there; it serves the
	// «Reportar» form of the record pages (POST /reportar).
	Report(r *http.Request, id string, body []byte) (status int, resp []byte)
	// Respond stores a response «yo puedo ayudar» to record id (body: a JSON schema.ResponseInput) as POST
	// help/{id}/responses does, from r's client address as there; it serves the record pages' form (POST
	// /responder).
	Respond(r *http.Request, id string, body []byte) (status int, resp []byte)
	// ActOnResponse applies action (renew, withdraw) to response rid of record id with its response token,
	// as POST help/{id}/responses/{rid}/actions does; it serves the buttons after a response (POST
	// /mi-respuesta).
	ActOnResponse(r *http.Request, id, rid, token, action string) (status int, resp []byte)
}

// publishFunc is the service's Publish, nil without a service.
func (h *handler) publishFunc() func(context.Context, []byte) (int, []byte) {
	if h.o.Service == nil {
		return nil
	}
	return h.o.Service.Publish
}

// Source is the `source` of everything the site's forms publish.
const Source = "directaid-web"

const (
	markdownType = "text/markdown; charset=utf-8"
	htmlType     = "text/html; charset=utf-8"
	// Pages change with the configuration, so caches keep them briefly and revalidate by ETag.
	pageCache = "public, max-age=60"
	// Asset URLs carry a hash of their content, so they never change.
	assetCache = "public, max-age=31536000, immutable"
	// Form pages carry a one-time externalId: a shared copy would make two people's posts one record.
	formCache = "no-store"
)

// csp forbids every script but our own files (no inline script, no eval) and any third-party load.
const csp = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
	"form-action 'self'; base-uri 'none'; frame-ancestors 'none'"

//go:embed content assets
var files embed.FS

type asset struct {
	name        string // its name without the hash: site.css
	body        []byte
	contentType string
}

type handler struct {
	o        Options
	md       goldmark.Markdown
	pages    *texttemplate.Template
	layout   *htmltemplate.Template
	assets   map[string]asset // by URL path
	css      string           // URL path of the stylesheet
	js       string           // URL path of the form script
	siteJS   string           // URL path of the script of every page (service worker, outbox)
	manageJS string           // URL path of the script of /gestionar
	build    string           // hash of everything embedded: part of the service worker's version
	// placesJS and placesURL are the URL paths of the «¿Dónde?» script and of the place list it reads.
	placesJS, placesURL string
	forms               map[string]*formSpec
	filter              *filterSpec
	cache               renderCache

	// The maps (mapa.go): their tiles, script and stylesheet (Leaflet's with ours), and the
	// Content-Security-Policy of their pages.
	tiles                 MapTiles
	mapJS, mapCSS, mapCSP string
	// onUse are the assets the service worker keeps when a page first uses them, not at install: the
	// map's and the place list, the bulk of the site's bytes.
	onUse map[string]bool
}

// New builds the site handler.
func New(o Options) (http.Handler, error) {
	o.PublicURL = strings.TrimRight(o.PublicURL, "/")
	if o.PublicURL != "" {
		u, err := url.Parse(o.PublicURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.Path != "" || u.RawQuery != "" || !webutil.ValidHost(u.Host) {
			return nil, fmt.Errorf("site: PublicURL %q must be an absolute http(s) URL without path", o.PublicURL)
		}
	}
	if o.Emergencies == nil {
		o.Emergencies = func() []schema.EmergencyInfo { return nil }
	}
	h := &handler{o: o, md: newMarkdown(), assets: map[string]asset{}, forms: map[string]*formSpec{}, onUse: map[string]bool{}}
	var err error
	if h.css, err = h.addAsset("site.css"); err != nil {
		return nil, err
	}
	if h.js, err = h.addAsset("form.js"); err != nil {
		return nil, err
	}
	if h.siteJS, err = h.addAsset("site.js", "outbox.js", "site.js"); err != nil {
		return nil, err
	}
	if h.manageJS, err = h.addAsset("gestionar.js"); err != nil {
		return nil, err
	}
	if h.build, err = embeddedHash(); err != nil {
		return nil, err
	}
	if h.placesJS, err = h.addAsset("lugares.js"); err != nil {
		return nil, err
	}
	h.placesURL = h.addBytes("lugares.tsv", []byte(places.TSV()), placesType)
	h.onUse[h.placesURL] = true
	if err = h.addMap(); err != nil {
		return nil, err
	}
	h.pages, err = texttemplate.New("").Funcs(markdownFuncs).ParseFS(files, "content/*.md", "content/*.txt")
	if err != nil {
		return nil, err
	}
	h.layout, err = htmltemplate.New("").ParseFS(files, "content/*.html")
	if err != nil {
		return nil, err
	}
	for _, typ := range []string{schema.TypeRequest, schema.TypeOffer} {
		if h.forms[typ], err = newFormSpec(typ); err != nil {
			return nil, err
		}
	}
	if h.filter, err = newFilterSpec(); err != nil {
		return nil, err
	}
	return h, nil
}

// addAsset serves assets/name under a URL that carries a hash of its content; with parts, the content
// is those files of assets/ one after the other. Every asset is kept by the service worker for offline use.
// A script goes without its comment lines (jsLines).
func (h *handler) addAsset(name string, parts ...string) (string, error) {
	if len(parts) == 0 {
		parts = []string{name}
	}
	var body []byte
	for _, part := range parts {
		b, err := files.ReadFile("assets/" + part)
		if err != nil {
			return "", err
		}
		if path.Ext(part) == ".js" {
			b = jsLines(b)
		}
		body = append(body, b...)
	}
	return h.addBytes(name, body, mime.TypeByExtension(path.Ext(name))), nil
}

// jsLines drops a script's whole-line // comments, which are for its readers here and weigh on a cheap
// phone's connection: about a fifth of the publish form's scripts. A line that starts with // is a comment
// in the scripts of assets/ (none has a multi-line string).
func jsLines(b []byte) []byte {
	out := make([]byte, 0, len(b))
	for line := range bytes.Lines(b) {
		if !bytes.HasPrefix(bytes.TrimSpace(line), []byte("//")) {
			out = append(out, line...)
		}
	}
	return out
}

// addBytes serves body as the asset name, under a URL that carries a hash of its content.
func (h *handler) addBytes(name string, body []byte, contentType string) string {
	sum := sha256.Sum256(body)
	ext := path.Ext(name)
	p := "/assets/" + strings.TrimSuffix(name, ext) + "." + hex.EncodeToString(sum[:5]) + ext
	h.assets[p] = asset{name: name, body: body, contentType: contentType}
	return p
}

// placesType is the media type of the place list (code, name, latitude, longitude per line).
const placesType = "text/tab-separated-values; charset=utf-8"

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.securityHeaders(w)
	base, ok := h.baseURL(r)
	if !ok {
		http.Error(w, "Encabezado Host inválido.", http.StatusBadRequest)
		return
	}
	v := newView(h, base)
	var body []byte
	var err error
	contentType, cache := "text/plain; charset=utf-8", pageCache
	switch p := r.URL.Path; p {
	case "/robots.txt":
		body = []byte("User-agent: *\nAllow: /\n\nSitemap: " + base + "/sitemap.xml\n")
	case "/sitemap.xml":
		contentType = "application/xml; charset=utf-8"
		body, err = v.sitemap(r.Context())
	case "/llms.txt":
		body, err = v.llms()
	case serviceWorkerPath:
		contentType, cache = "text/javascript; charset=utf-8", serviceWorkerCache
		body, err = v.serviceWorker()
	case schema.PlacesPath:
		// The place list at a stable address for apps (revalidated by ETag); pages use the hashed asset.
		body, contentType = []byte(places.TSV()), placesType
	default:
		a, ok := h.assets[p]
		if !ok {
			h.servePage(w, r, v)
			return
		}
		body, contentType, cache = a.body, a.contentType, assetCache
	}
	if !allowMethods(w, r, false) {
		return
	}
	if err != nil {
		h.serverError(w, r, err)
		return
	}
	serve(w, r, http.StatusOK, body, contentType, cache)
}

// securityHeaders are on every answer of the site.
func (h *handler) securityHeaders(w http.ResponseWriter) {
	hd := w.Header()
	hd.Set("Content-Security-Policy", csp)
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Referrer-Policy", "strict-origin-when-cross-origin")
	hd.Set("X-Frame-Options", "DENY")
	hd.Set("Permissions-Policy", "geolocation=(self), camera=(), microphone=()")
}

// allowMethods answers 405 to anything but GET and HEAD (and POST where post is true).
func allowMethods(w http.ResponseWriter, r *http.Request, post bool) bool {
	allow := "GET, HEAD"
	if post {
		allow += ", POST"
	}
	if r.Method == http.MethodGet || r.Method == http.MethodHead || (post && r.Method == http.MethodPost) {
		return true
	}
	w.Header().Set("Allow", allow)
	http.Error(w, "Método no permitido aquí; use "+allow+".", http.StatusMethodNotAllowed)
	return false
}

// serverError answers 500 without internals in the body, and reports err to the operator's log; a
// database that cannot answer for now (UnavailableError) is a 503 with its Retry-After, as the API answers.
func (h *handler) serverError(w http.ResponseWriter, r *http.Request, err error) {
	status := http.StatusInternalServerError
	info := &errorInfo{Status: status}
	if u := (*UnavailableError)(nil); errors.As(err, &u) {
		status, info.Status, info.Seconds = http.StatusServiceUnavailable, http.StatusServiceUnavailable, u.RetryAfter
		if u.RetryAfter > 0 {
			w.Header().Set("Retry-After", strconv.Itoa(u.RetryAfter))
		}
	}
	if h.o.OnError != nil {
		h.o.OnError(r, status, err)
	}
	w.Header().Set("Cache-Control", "no-store")
	if base, ok := h.baseURL(r); ok {
		v := newView(h, base)
		pg := page{tmpl: "error.md", err: info}
		if rd, err := v.render(pg); err == nil {
			if _, twin := strings.CutSuffix(r.URL.Path, ".md"); twin {
				serve(w, r, status, rd.md, markdownType, "no-store")
				return
			}
			if body, err := h.htmlPage(rd.doc, pg, v, nil); err == nil {
				serve(w, r, status, body, htmlType, "no-store")
				return
			}
		}
	}
	http.Error(w, "Error interno del sitio.", status)
}

// serve writes body with a strong ETag and answers a matching If-None-Match with 304. HEAD gets the
// headers only.
func serve(w http.ResponseWriter, r *http.Request, status int, body []byte, contentType, cache string) {
	etag := webutil.ETag(body)
	hd := w.Header()
	hd.Set("ETag", etag)
	hd.Set("Cache-Control", cache)
	if status == http.StatusOK && webutil.ETagMatches(r.Header.Get("If-None-Match"), etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	hd.Set("Content-Type", contentType)
	hd.Set("Content-Length", fmt.Sprint(len(body)))
	w.WriteHeader(status)
	if r.Method != http.MethodHead {
		_, _ = w.Write(body)
	}
}

// wantsMarkdown reports whether the Accept header prefers text/markdown to text/html (a tie goes to
// Markdown: a client that names it explicitly asked for it).
func wantsMarkdown(r *http.Request) bool {
	accept := r.Header.Get("Accept")
	qMD := webutil.AcceptQ(accept, func(mt string) bool { return mt == "text/markdown" || mt == "text/x-markdown" })
	qHTML := webutil.AcceptQ(accept, func(mt string) bool { return mt == "text/html" })
	return qMD > 0 && qMD >= qHTML
}

// baseURL is the absolute base of links for r; ok is false when its Host could not be part of one.
func (h *handler) baseURL(r *http.Request) (base string, ok bool) {
	return webutil.BaseURL(h.o.PublicURL, r)
}
