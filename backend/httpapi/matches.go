package httpapi

import (
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/directaid/directaid/backend"
	"github.com/directaid/directaid/schema"
)

// matchesParams are the query parameters of GET help/{id}/matches.
var matchesParams = []string{"radiusKm", "limit"}

// serveMatches answers GET help/{id}/matches.
func (h *Handler) serveMatches(w http.ResponseWriter, r *http.Request, id string) {
	if !allow(w, r, "GET, HEAD, OPTIONS") {
		return
	}
	defer h.svc.Config().Observe.Read(backend.ReadViewMatches, schema.FormatJSON, time.Now())
	v := r.URL.Query()
	q, errs := parseMatchesQuery(v)
	if len(errs) > 0 { // with the range errors of the parameters that parsed, so that one answer names all
		for _, e := range backend.CheckMatchesQuery(&q) {
			if !slices.ContainsFunc(errs, func(d schema.FieldError) bool { return d.Field == e.Field }) {
				errs = append(errs, e)
			}
		}
		backend.WriteProblem(w, matchesFields(backend.InvalidParams(errs)))
		return
	}
	m, err := h.svc.Matches(r.Context(), h.svc.BaseURL(r), id, q)
	if err != nil {
		backend.WriteProblem(w, matchesFields(backend.AsProblem(err)))
		return
	}
	serveStamped(w, r, m, func(m *schema.HelpMatches) *time.Time { return &m.GeneratedAt }, "application/json", cacheList)
}

// matchesFields names the details of p as HTTP does: the id as /path/id, the rest as /query/<name>.
func matchesFields(p *backend.Problem) *backend.Problem {
	return backend.WithFields(p, func(name string) string {
		if name == "id" {
			return schema.Pointer("path", name)
		}
		return backend.QueryField(name)
	})
}

// parseMatchesQuery reads the query string of GET help/{id}/matches: every parameter it does not take,
// or repeats, or that is not a number, is an error (the ranges are backend.CheckMatchesQuery's).
func parseMatchesQuery(v url.Values) (schema.MatchesQuery, []schema.FieldError) {
	var q schema.MatchesQuery
	var errs []schema.FieldError
	for _, name := range slices.Sorted(maps.Keys(v)) {
		switch {
		case name == "_":
		case !slices.Contains(matchesParams, name):
			errs = append(errs, unknownParam(name, "las coincidencias de un registro", matchesParams))
		case len(v[name]) > 1:
			errs = append(errs, repeatedParam(name))
		}
	}
	if len(errs) > 0 {
		return q, errs
	}
	if s := strings.TrimSpace(v.Get("radiusKm")); s != "" {
		f, err := parseDecimal(s)
		if err != nil {
			errs = append(errs, backend.ParamError("radiusKm", fmt.Sprintf("«radiusKm» debe ser un número con punto decimal, p. ej. 25 o 7.5 (se recibió %s)", schema.Quote(s))))
		} else {
			q.RadiusKm = &f
		}
	}
	if s := strings.TrimSpace(v.Get("limit")); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			errs = append(errs, backend.ParamError("limit", fmt.Sprintf("«limit» debe ser un entero entre 1 y %d", schema.MaxMatchLimit)))
		} else {
			q.Limit = n
		}
	}
	return q, errs
}
