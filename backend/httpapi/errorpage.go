package httpapi

import (
	"net/http"
	"strings"
	"sync"

	"github.com/directaid/directaid/backend"
	"github.com/directaid/directaid/internal/webutil"
	"github.com/directaid/directaid/schema"
	"github.com/directaid/directaid/site"
)

// wantsJSON reports whether r gets its errors as the JSON error body: calls of the API and of MCP, and
// clients whose Accept prefers JSON to HTML. People (browsers) get the site's pages.
func wantsJSON(r *http.Request) bool {
	if strings.HasPrefix(r.URL.Path, "/api/") || r.URL.Path == schema.MCPPath {
		return true
	}
	accept := r.Header.Get("Accept")
	qJSON := webutil.AcceptQ(accept, func(mt string) bool { return mt == "application/json" || strings.HasSuffix(mt, "+json") })
	qHTML := webutil.AcceptQ(accept, func(mt string) bool { return mt == "text/html" || mt == "text/markdown" })
	return qJSON > 0 && qJSON >= qHTML
}

// bareSite renders error pages when the store could not be opened, so there is no Handler.
var bareSite = sync.OnceValue(func() http.Handler {
	h, _ := site.New(site.Options{LimitPages: limitPages})
	return h
})

// ServeError answers r with p: the error body to those wantsJSON admits, the site's page in Spanish
// (with what to do next) to people. h is nil when the store could not be opened.
func ServeError(h *Handler, w http.ResponseWriter, r *http.Request, p *backend.Problem) {
	var st http.Handler
	if h != nil {
		st = h.site
	} else {
		st = bareSite()
	}
	if wantsJSON(r) || st == nil {
		backend.WriteProblem(w, p)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	if h != nil {
		r = h.withBase(r)
	}
	if !site.ServeError(st, w, r, p.Status, p.Zone) {
		backend.WriteProblem(w, p)
	}
}

// limitPages are the zones' 429 pages, by name, for the site.
var limitPages = func() map[string]site.LimitPage {
	pages := make(map[string]site.LimitPage, len(backend.Zones))
	for _, z := range backend.Zones {
		pages[z.Name] = site.LimitPage(z.Page)
	}
	return pages
}()
