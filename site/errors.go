package site

import (
	"context"
	"net/http"
	"strconv"
	"strings"

	"github.com/directaid/directaid/schema"
)

// errorInfo is what the error page's template sees.
type errorInfo struct {
	Status  int
	Seconds int // from Retry-After; 0 when unknown
	// Explain and Advice are the words of the limit that refused the request (a 429), Advice's
	// placeholders filled in.
	Explain, Advice string
}

// LimitPage is what the 429 page says of one rate limit: Explain, what the site limits and why; Advice,
// in Markdown, what to do, where {espera} stands for the wait in words and {inicio} for the site's root URL.
type LimitPage struct {
	Explain, Advice string
	// WithholdsPhone: a record's page (GET or HEAD) over this limit shows the record without its phone,
	// saying why and when it shows again, instead of the error page.
	WithholdsPhone bool
}

// Wait is the time to wait, in words.
func (e errorInfo) Wait() string {
	switch {
	case e.Seconds <= 0:
		return "un minuto"
	case e.Seconds == 1:
		return "1 segundo"
	}
	return strconv.Itoa(e.Seconds) + " segundos"
}

// ServeError answers a person with the page, in Spanish, of an error that another layer decided on:
// the rate limiter's 429 (its Retry-After, already set on w, gives the seconds), a store that cannot be
// opened (503). zone names the rate limit (a key of Options.LimitPages) that answered 429. A form's POST
// over the publish limit gets its form back with what the person wrote and the wait at the top, never an
// error body. It reports false when h is not this package's handler.
func ServeError(h http.Handler, w http.ResponseWriter, r *http.Request, status int, zone string) bool {
	s, ok := h.(*handler)
	if !ok {
		return false
	}
	s.serveError(w, r, status, zone)
	return true
}

func (h *handler) serveError(w http.ResponseWriter, r *http.Request, status int, zone string) {
	h.securityHeaders(w)
	base, ok := h.baseURL(r)
	if !ok {
		http.Error(w, "Encabezado Host inválido.", http.StatusBadRequest)
		return
	}
	v := newView(h, base)
	if status == http.StatusUnauthorized {
		// Only /moderacion asks for credentials (Caddy's basic_auth, or ours when no user was set).
		w.Header().Set("WWW-Authenticate", `Basic realm="moderacion", charset="UTF-8"`)
		w.Header().Set("X-Robots-Tag", "noindex, nofollow")
	}
	e := errorInfo{Status: status}
	if n, err := strconv.Atoi(w.Header().Get("Retry-After")); err == nil && n > 0 {
		e.Seconds = n
	}
	limit := h.o.LimitPages[zone]
	e.Explain = limit.Explain
	e.Advice = strings.NewReplacer("{espera}", e.Wait(), "{inicio}", base).Replace(limit.Advice)
	p, twin := strings.CutSuffix(r.URL.Path, ".md")
	if pg, found := v.lookup(p); found && !twin && pg.form != "" && r.Method == http.MethodPost && status == http.StatusTooManyRequests {
		// The form comes back as the person filled it; the limiter answered before the publication.
		h.renderPage(w, r, v, pg, func(context.Context, []byte) (int, []byte) {
			return status, nil
		}, "Hay muchas publicaciones desde su red; intente en "+e.Wait()+". Lo que escribió sigue aquí: "+
			"vuelva a pulsar el botón y no se publicará dos veces.")
		return
	}
	if r.Method == http.MethodPost && status == http.StatusTooManyRequests && p == schema.RespondFormPath && !twin {
		// The response comes back as the person wrote it; the limiter answered before it was sent.
		r.Body = http.MaxBytesReader(nil, r.Body, 8192)
		_ = r.ParseForm()
		rv := respondViewOf(base, r.PostForm)
		rv.Errors = []formMsg{{Text: "Hay muchas respuestas desde su red; intente en " + e.Wait() + ". Lo que escribió sigue aquí: " +
			"vuelva a pulsar el botón y no se enviará dos veces."}}
		h.writePage(w, r, v, page{tmpl: "responder.md", respond: rv}, status, "no-store", false)
		return
	}
	if status == http.StatusTooManyRequests && limit.WithholdsPhone && (r.Method == http.MethodGet || r.Method == http.MethodHead) {
		if pg, found := v.lookup(p); found && pg.recordID != "" {
			pg.withheld = "desde su conexión se abrieron muchas páginas con número en el último minuto (así nadie puede copiarlos todos); vuelva a cargar esta página en " + e.Wait() + " para verlo"
			if st, _, err := v.load(r, &pg); err == nil && st == http.StatusOK {
				h.writePage(w, r, v, pg, status, "no-store", twin || wantsMarkdown(r))
				return
			}
		}
	}
	pg := page{tmpl: "error.md", err: &e}
	if status == http.StatusNotFound {
		pg = notFoundPage
	}
	h.writePage(w, r, v, pg, status, "no-store", twin || wantsMarkdown(r))
}
