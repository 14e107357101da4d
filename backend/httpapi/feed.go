package httpapi

import (
	"maps"
	"net/http"
	"slices"

	"github.com/directaid/directaid/backend"
	"github.com/directaid/directaid/schema"
)

// feedParams are the query parameters of the live feed: the list's filters and since.
var feedParams = []string{"emergencySlug", "type", "category", "urgency", "municipio", "latitude", "longitude", "radiusKm", "status", "since"}

// checkFeedParams names every parameter of q that the feed does not take, and every repeated one.
func checkFeedParams(q map[string][]string) []schema.FieldError {
	var errs []schema.FieldError
	for _, name := range slices.Sorted(maps.Keys(q)) {
		switch {
		case name == "_":
		case !slices.Contains(feedParams, name):
			errs = append(errs, unknownParam(name, "el flujo de eventos", feedParams))
		case len(q[name]) > 1:
			errs = append(errs, repeatedParam(name))
		}
	}
	return errs
}

// serveEvents answers GET /api/public/v1/help/events: its parameters, then the Service's stream.
func (h *Handler) serveEvents(w http.ResponseWriter, r *http.Request) {
	if !allowWithHeaders(w, r, "GET, OPTIONS", "Last-Event-ID") {
		return
	}
	q := r.URL.Query()
	errs := checkFeedParams(q)
	lq, perrs := parseListQuery(q)
	errs = append(errs, perrs...)
	if len(errs) > 0 {
		backend.WriteProblem(w, backend.WithQueryFields(backend.InvalidParams(errs)))
		return
	}
	h.svc.ServeFeed(w, r, lq)
}
