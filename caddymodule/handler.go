package caddymodule

import (
	"errors"
	"net/http"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/directaid/directaid/backend"
	"github.com/directaid/directaid/backend/httpapi"
	"github.com/directaid/directaid/schema"
)

// Handler is `http.handlers.directaid`: it serves the API, the MCP endpoint and the site. Inside
// handle_errors it renders the error (e.g. rate_limit's 429) as the API's JSON error body.
type Handler struct {
	app *App
}

// CaddyModule returns the Caddy module information.
func (Handler) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{ID: "http.handlers.directaid", New: func() caddy.Module { return new(Handler) }}
}

// Provision finds the directaid app.
func (h *Handler) Provision(ctx caddy.Context) (err error) {
	h.app, err = directaidApp(ctx)
	return err
}

// directaidApp is the directaid app (instantiated with defaults when the Caddyfile has no global block).
func directaidApp(ctx caddy.Context) (*App, error) {
	a, err := ctx.App("directaid")
	if err != nil {
		return nil, err
	}
	return a.(*App), nil
}

// ServeHTTP implements caddyhttp.MiddlewareHandler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request, _ caddyhttp.Handler) error {
	if herr, ok := r.Context().Value(caddyhttp.ErrorCtxKey).(error); ok {
		httpapi.SetCommonHeaders(w)
		p := problemFor(herr, w, r)
		if p.Status == http.StatusTooManyRequests {
			h.app.observe.RateLimited(limitZone(r))
		}
		httpapi.ServeError(h.app.handler.Load(), w, r, p)
		return nil
	}
	if err := h.app.open(); err != nil {
		// The store could not be opened (disk, permissions): say so on every request rather than crash.
		httpapi.SetCommonHeaders(w)
		w.Header().Set("Retry-After", "30")
		httpapi.ServeError(nil, w, r, &backend.Problem{Status: http.StatusServiceUnavailable, Body: schema.ErrorBody{Code: schema.CodeUnavailable,
			Error: "El servicio no está disponible en este momento; reintente más tarde con el mismo externalId."}})
		return nil
	}
	if ip, ok := caddyhttp.GetVar(r.Context(), caddyhttp.ClientIPVarKey).(string); ok {
		r = r.WithContext(backend.WithClientIP(r.Context(), ip))
	}
	// The user that an authentication handler before us (basic_auth in the Caddyfile) authenticated: the
	// site's /moderacion refuses a request without one.
	if repl, ok := r.Context().Value(caddy.ReplacerCtxKey).(*caddy.Replacer); ok {
		if user, _ := repl.GetString("http.auth.user.id"); user != "" {
			r = r.WithContext(backend.WithModerator(r.Context(), user))
		}
	}
	h.app.handler.Load().ServeHTTP(w, r)
	return nil
}

// deadlineWriter lets a whole export, or a stream of the live feed, move its response's deadlines past the
// server's timeouts with http.ResponseController (an export moves its write deadline page by page; a
// stream, at every write, and clears its read deadline once the request is read). Caddy caps every write
// at start+`write` and every read at start+`read_body` (the HardDeadline of its IdleTimeoutWriter and
// IdleTimeoutReader), whatever a handler sets: without this, SetWriteDeadline succeeds and the response
// is still cut at `write`, and the request's context ends at `read_body` (net/http's background read of
// the connection times out). Only those responses are wrapped (backend.Config.ExportWriter), so other
// requests allocate nothing for it.
type deadlineWriter struct {
	http.ResponseWriter
	r *caddyhttp.IdleTimeoutReader
	w *caddyhttp.IdleTimeoutWriter
}

func newDeadlineWriter(w http.ResponseWriter, r *http.Request) http.ResponseWriter {
	if ir, iw := caddyhttp.IdleTimeoutsFromContext(r.Context()); ir != nil || iw != nil {
		return &deadlineWriter{ResponseWriter: w, r: ir, w: iw}
	}
	return w
}

// Unwrap lets http.ResponseController reach the writers below (Flush reaches Caddy's FlushError).
func (d *deadlineWriter) Unwrap() http.ResponseWriter { return d.ResponseWriter }

// SetWriteDeadline moves Caddy's ceiling to deadline (zero: none) and sets it. IdleTimeoutWriter has no
// lock: the goroutine writing the response uses it, and that is the one that sets the deadline (the
// export's handler; its reading goroutine never touches the writer).
func (d *deadlineWriter) SetWriteDeadline(deadline time.Time) error {
	if d.w != nil {
		d.w.Deadline.HardDeadline = deadline
	}
	return http.NewResponseController(d.ResponseWriter).SetWriteDeadline(deadline)
}

// SetReadDeadline moves Caddy's read ceiling to deadline (zero: none) and sets it. Only a handler that
// has read its request whole calls it (a stream of the feed, whose GET has no body): nothing reads
// through the IdleTimeoutReader then.
func (d *deadlineWriter) SetReadDeadline(deadline time.Time) error {
	if d.r != nil {
		d.r.Deadline.HardDeadline = deadline
	}
	return http.NewResponseController(d.ResponseWriter).SetReadDeadline(deadline)
}

// limitZone tells which rate_limit zone refused r (backend.ZoneOf, from the zones' matchers), and, for
// the publish zone, through which channel r was publishing.
func limitZone(r *http.Request) (zone, channel string) {
	use, channel := backend.MCPFree, backend.ChannelForm
	switch r.URL.Path {
	case schema.MCPPath:
		use, channel = mcpUse(r), backend.ChannelMCP
	case schema.HelpPath:
		channel = backend.ChannelAPI
	}
	zone = backend.ZoneOf(r, use)
	if zone != backend.ZonePublish {
		channel = ""
	}
	return zone, channel
}

// problemFor renders an error that another handler returned (we are in handle_errors); w holds the
// headers that handler set (the limiter's Retry-After).
func problemFor(err error, w http.ResponseWriter, r *http.Request) *backend.Problem {
	status := http.StatusInternalServerError
	var he caddyhttp.HandlerError
	if errors.As(err, &he) && he.StatusCode != 0 {
		status = he.StatusCode
	}
	if status == http.StatusTooManyRequests {
		zone, _ := limitZone(r)
		return backend.RateLimitedIn(zone, w.Header().Get("Retry-After"))
	}
	p := &backend.Problem{Status: status, Body: schema.ErrorBody{Code: schema.CodeInternalError, Error: "Error interno."}}
	if status < 500 {
		p.Body = schema.ErrorBody{Code: schema.CodeInvalidRequest, Error: http.StatusText(status)}
		switch status {
		case http.StatusNotFound:
			p.Body = schema.ErrorBody{Code: schema.CodeNotFound, Error: "No existe ese recurso."}
		case http.StatusUnauthorized: // basic_auth in front of /moderacion
			p.Body.Error = "Se necesitan el usuario y la contraseña de moderación."
		}
	}
	return p
}

var (
	_ caddy.Provisioner           = (*Handler)(nil)
	_ caddyhttp.MiddlewareHandler = (*Handler)(nil)
)
