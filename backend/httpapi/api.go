// Package httpapi is directaid's HTTP surface over a backend.Service: the REST API under
// /api/public/v1/help, the OpenAPI document, the site (package site, through its site.Service) and its
// error pages, and the MCP server (backend/mcpserver) at /mcp. It holds no rule of the service: each
// handler reads its request, calls the Service and writes the answer.
package httpapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/directaid/directaid/backend"
	"github.com/directaid/directaid/internal/webutil"
	"github.com/directaid/directaid/schema"
	"github.com/directaid/directaid/site"
)

// Handler serves the API, and hands every other path to the site.
type Handler struct {
	svc     *backend.Service
	openapi []byte
	site    http.Handler
	mcp     MCP
	tools   []schema.MCPTool // the registered MCP tools, as the documents list them
}

// MCP is the MCP server a Handler serves at /mcp (backend/mcpserver's).
type MCP interface {
	http.Handler
	// UseOf tells what an MCP POST body may do, as far as the rate limits care.
	UseOf(body []byte) backend.MCPUse
	// Tools are the registered tools, as the documents list them.
	Tools() []schema.MCPTool
}

// Options are what a Handler serves besides the Service's API.
type Options struct {
	// MCP is served at /mcp (backend/mcpserver's New); nil: /mcp is not found, and the documents list no
	// tools.
	MCP MCP
	// MapTiles is the background of the site's maps (zero: site.DefaultMapTiles, OpenStreetMap's).
	MapTiles site.MapTiles
}

// NewHandler builds the HTTP surface of svc: the API, MCP and the site.
func NewHandler(svc *backend.Service, o Options) (*Handler, error) {
	mcp := o.MCP
	var tools []schema.MCPTool
	if mcp != nil {
		tools = mcp.Tools()
	}
	doc, err := schema.OpenAPIFor(svc.Config().PublicURL, svc.ExampleEmergency(), tools...)
	if err != nil {
		return nil, err
	}
	st, err := newSite(svc, tools, o.MapTiles)
	if err != nil {
		return nil, err
	}
	h := &Handler{svc: svc, openapi: doc, site: st, mcp: mcp, tools: tools}
	return h, nil
}

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	SetCommonHeaders(w)
	if _, ok := webutil.BaseURL(h.svc.Config().PublicURL, r); !ok && (r.URL.Path == schema.HelpPath || r.URL.Path == schema.EventsPath) {
		// Links in the answer would carry the Host (the site and MCP refuse it alike).
		backend.WriteProblem(w, &backend.Problem{Status: http.StatusBadRequest, Body: schema.ErrorBody{Code: schema.CodeInvalidRequest, Error: backend.BadHost}})
		return
	}
	if errs := malformedQuery(r.URL.RawQuery); len(errs) > 0 {
		backend.WriteProblem(w, backend.WithQueryFields(backend.InvalidParams(errs)))
		return
	}
	switch r.URL.Path {
	case schema.HelpPath:
		h.serveHelp(w, r)
	case schema.EventsPath:
		h.serveEvents(w, r) // feed.go
	case schema.PlaceSearchPath:
		h.servePlaces(w, r) // places.go
	case schema.OpenAPIPath:
		if !allow(w, r, "GET, HEAD, OPTIONS") {
			return
		}
		serveCacheable(w, r, h.openapi, "application/json", "public, max-age=300")
	case schema.MCPPath:
		if h.mcp == nil {
			backend.WriteProblem(w, notFound())
			return
		}
		h.mcp.ServeHTTP(w, r)
	default:
		if id, ok := schema.ReportsPathID(r.URL.Path); ok {
			h.serveReports(w, r, id) // reports.go
			return
		}
		if id, ok := schema.MatchesPathID(r.URL.Path); ok {
			h.serveMatches(w, r, id) // matches.go
			return
		}
		if id, rest, ok := schema.ResponsePath(r.URL.Path); ok {
			h.serveResponses(w, r, id, rest) // responses.go
			return
		}
		if strings.HasPrefix(r.URL.Path, schema.HelpPath+"/") {
			h.serveRecordAPI(w, r) // manage.go
			return
		}
		// No page lives under /api/: an unknown API path is 404 for every method, not the site's 405.
		if h.site == nil || strings.HasPrefix(r.URL.Path, "/api/") {
			backend.WriteProblem(w, notFound())
			return
		}
		h.serveSite(w, r)
	}
}

// SetCommonHeaders sets what every answer carries: the API version and open CORS.
func SetCommonHeaders(w http.ResponseWriter) {
	hd := w.Header()
	hd.Set("API-Version", schema.APIVersion)
	hd.Set("Access-Control-Allow-Origin", "*")
	hd.Set("Access-Control-Expose-Headers", "Location, API-Version, Retry-After, ETag, Link, WWW-Authenticate, Mcp-Session-Id, Mcp-Protocol-Version")
}

func notFound() *backend.Problem {
	return &backend.Problem{Status: http.StatusNotFound, Body: schema.ErrorBody{Code: schema.CodeNotFound, Error: "No existe ese recurso."}}
}

// allow answers OPTIONS (CORS preflight) and refuses methods not in methods; it reports whether the
// request should go on.
func allow(w http.ResponseWriter, r *http.Request, methods string) bool {
	return allowWithHeaders(w, r, methods, "Content-Type")
}

// allowWithHeaders is allow for a route whose requests carry the given headers (CORS).
func allowWithHeaders(w http.ResponseWriter, r *http.Request, methods, headers string) bool {
	if r.Method == http.MethodOptions {
		hd := w.Header()
		hd.Set("Allow", methods)
		hd.Set("Access-Control-Allow-Methods", methods)
		hd.Set("Access-Control-Allow-Headers", headers)
		hd.Set("Access-Control-Max-Age", "86400")
		hd.Set("Cache-Control", "public, max-age=86400")
		w.WriteHeader(http.StatusNoContent)
		return false
	}
	for _, m := range strings.Split(methods, ", ") {
		if r.Method == m {
			return true
		}
	}
	w.Header().Set("Allow", methods)
	backend.WriteProblem(w, &backend.Problem{Status: http.StatusMethodNotAllowed, Body: schema.ErrorBody{Code: schema.CodeMethodNotAllowed,
		Error: "Método no permitido aquí; use " + methods + "."}})
	return false
}

func (h *Handler) serveHelp(w http.ResponseWriter, r *http.Request) {
	if !allow(w, r, "GET, HEAD, POST, OPTIONS") {
		return
	}
	if r.Method == http.MethodPost {
		h.publish(w, r)
		return
	}
	sent := apiQuery(r)
	if sent.vals.Has("view") {
		h.serveRead(w, r, sent) // read.go
		return
	}
	// Discovery takes no parameters: a list filter sent without view=list is told so, not ignored.
	if errs := checkParams(sent, "", nil); len(errs) > 0 {
		backend.WriteProblem(w, backend.WithQueryFields(backend.InvalidParams(errs)))
		return
	}
	body, err := json.Marshal(discovery(h.svc, h.svc.BaseURL(r), h.tools))
	if err != nil {
		backend.WriteProblem(w, backend.AsProblem(err))
		return
	}
	serveCacheable(w, r, body, "application/json", "public, max-age=60")
}

// discovery is the body of GET help; its capabilities are those of the MCP tools, then the API's own.
func discovery(s *backend.Service, base string, tools []schema.MCPTool) *schema.Discovery {
	d := &schema.Discovery{
		Name: "directaid", Version: schema.APIVersion, Public: true, Authentication: "none",
		Documentation: base + "/integraciones", DocumentationMarkdown: base + "/integraciones.md",
		OpenAPI: base + schema.OpenAPIPath, MCP: base + schema.MCPPath, LLMs: base + "/llms.txt", Publish: base + schema.HelpPath, Places: base + schema.PlaceSearchPath,
		Emergencies: s.ActiveEmergencies(base),
	}
	for _, t := range tools {
		d.Capabilities = append(d.Capabilities, t.Capability)
	}
	d.Capabilities = append(d.Capabilities, schema.APICapabilities...)
	for _, z := range backend.Zones {
		if l := s.Config().RateLimits[z.Name]; l.Events > 0 {
			*z.Discovery(d) = &schema.RateLimit{Events: l.Events, WindowSeconds: int(l.Window.Seconds()), Scope: z.Scope}
		}
	}
	return d
}

// MCPUseOf tells what an MCP POST body may do, so that the Caddyfile's rate-limit zones meter MCP as they
// meter the HTTP API (caddymodule's matchers ask before the limiter runs).
func (h *Handler) MCPUseOf(body []byte) backend.MCPUse {
	if h.mcp == nil {
		return backend.MCPPublish
	}
	return h.mcp.UseOf(body)
}

func (h *Handler) publish(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	w.Header().Set("Cache-Control", "no-store")
	q, p := postParams(r, schema.DryRunArg)
	if p != nil {
		h.svc.Config().Observe.Published(backend.ChannelAPI, start, nil, false, p)
		backend.WriteProblem(w, p)
		return
	}
	body, p := readJSONBody(w, r)
	if p != nil {
		h.svc.Config().Observe.Published(backend.ChannelAPI, start, nil, false, p)
		backend.WriteProblem(w, p)
		return
	}
	switch dry, p := dryRunParam(q); {
	case p != nil:
		backend.WriteProblem(w, p)
		return
	case dry:
		res, err := h.svc.DryRun(r.Context(), h.svc.BaseURL(r), body, "", backend.ClientIP(r))
		if err != nil {
			backend.WriteProblem(w, backend.AsProblem(err))
			return
		}
		backend.WriteJSON(w, http.StatusOK, res)
		return
	}
	base := h.svc.BaseURL(r)
	res, created, err := h.svc.Publish(r.Context(), base, body, "", backend.ClientIP(r))
	if err != nil {
		p := backend.AsProblem(err)
		h.svc.Config().Observe.Published(backend.ChannelAPI, start, nil, false, p)
		backend.WriteProblem(w, p)
		return
	}
	h.svc.Config().Observe.Published(backend.ChannelAPI, start, res, created, nil)
	status := http.StatusOK
	if created {
		status = http.StatusCreated
		w.Header().Set("Location", res.PublicURL)
	}
	backend.WriteJSON(w, status, res)
}

// postParams reads the query of a POST (apiQuery) and refuses any parameter but allowed (and "_", which
// GETs ignore too), whatever its value: a misspelled or assumed flag (dryrun, dry_run, dryRun where there
// is none) must not let a call that acts for real go through as if it had been understood. An allowed
// one sent as a bare name (?dryRun) is refused too: it may well mean true.
func postParams(r *http.Request, allowed ...string) (url.Values, *backend.Problem) {
	var errs []schema.FieldError
	sent := apiQuery(r)
	for _, name := range sent.names {
		if name == "_" {
			continue
		}
		if slices.Contains(allowed, name) {
			if slices.Contains(sent.bare, name) {
				errs = append(errs, bareParam(name))
			}
			continue
		}
		msg := fmt.Sprintf("el parámetro «%s» no existe en esta petición, que no se ejecutó", schema.Clip(name))
		if len(allowed) == 0 {
			msg = fmt.Sprintf("el parámetro «%s» no existe: esta petición no admite parámetros, y no se ejecutó", schema.Clip(name))
		}
		fold := strings.NewReplacer("_", "", "-", "").Replace(strings.ToLower(name))
		if i := slices.IndexFunc(allowed, func(a string) bool { return strings.ToLower(a) == fold }); i >= 0 {
			msg += fmt.Sprintf(" (¿quiso decir «%s»?)", allowed[i])
		}
		errs = append(errs, backend.ParamError(name, msg, allowed...))
	}
	if len(errs) > 0 {
		return nil, backend.WithQueryFields(backend.InvalidParams(errs))
	}
	return sent.vals, nil
}

// dryRunParam reads ?dryRun=true|false from q (postParams'); any other value (or a repeated one) is
// refused rather than taken as a publication.
func dryRunParam(q url.Values) (bool, *backend.Problem) {
	vals, ok := q[schema.DryRunArg]
	if !ok {
		return false, nil
	}
	if len(vals) == 1 && (vals[0] == "true" || vals[0] == "false") {
		return vals[0] == "true", nil
	}
	return false, backend.WithQueryFields(backend.InvalidParams([]schema.FieldError{backend.ParamError(schema.DryRunArg, "«dryRun» debe ser true o false, una sola vez")}))
}

// readJSONBody is the start of every handler that takes a JSON body: r must declare one, uncompressed
// (else 415, or 400 for two Content-Type fields), and it is read up to schema.MaxBodyBytes; a larger one is refused
// with 413 without reading it all (the connection is then closed). The caller writes the problem.
func readJSONBody(w http.ResponseWriter, r *http.Request) ([]byte, *backend.Problem) {
	if p := backend.CheckBodyEncoding(r); p != nil {
		w.Header().Set("Accept-Encoding", "identity")
		return nil, p
	}
	if p := backend.CheckJSONContentType(r); p != nil {
		return nil, p
	}
	const limit = schema.MaxBodyBytes
	tooLarge := &backend.Problem{Status: http.StatusRequestEntityTooLarge, Body: schema.ErrorBody{Code: schema.CodeBodyTooLarge,
		Error: "El cuerpo es demasiado grande: el máximo es 64 KiB."}}
	if r.ContentLength > limit {
		w.Header().Set("Connection", "close")
		return nil, tooLarge
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		w.Header().Set("Connection", "close")
		return nil, tooLarge
	}
	if err != nil {
		return nil, &backend.Problem{Status: http.StatusBadRequest, Body: schema.ErrorBody{Code: schema.CodeInvalidJSON,
			Error: "No se pudo leer el cuerpo de la petición."}}
	}
	return body, nil
}

// serveCacheable writes body with a strong ETag and answers If-None-Match with 304.
func serveCacheable(w http.ResponseWriter, r *http.Request, body []byte, contentType, cacheControl string) {
	serveWithETag(w, r, body, webutil.ETag(body), contentType, cacheControl)
}

// serveWithETag writes body with the given ETag and answers If-None-Match with 304. HEAD gets the
// headers GET would get, Content-Length included (net/http counts a GET's short body, not a HEAD's).
func serveWithETag(w http.ResponseWriter, r *http.Request, body []byte, etag, contentType, cacheControl string) {
	hd := w.Header()
	hd.Set("ETag", etag)
	hd.Set("Cache-Control", cacheControl)
	if inm := r.Header.Get("If-None-Match"); inm != "" && webutil.ETagMatches(inm, etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	hd.Set("Content-Type", contentType)
	hd.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write(body)
	}
}
