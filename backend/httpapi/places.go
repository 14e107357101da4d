package httpapi

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/directaid/directaid/backend"
	"github.com/directaid/directaid/schema"
)

// placeParams are the query parameters of GET places: buscar_lugar's arguments.
var placeParams = []string{"q", "emergencySlug"}

// servePlaces answers GET places: a place's name into its DIVIPOLA code, as the MCP tool buscar_lugar.
func (h *Handler) servePlaces(w http.ResponseWriter, r *http.Request) {
	if !allow(w, r, "GET, HEAD, OPTIONS") {
		return
	}
	defer h.svc.Config().Observe.Read(backend.ReadViewPlaces, schema.FormatJSON, time.Now())
	sent := apiQuery(r)
	var errs []schema.FieldError
	for _, name := range sent.names {
		switch {
		case name == "_":
		case !slices.Contains(placeParams, name):
			errs = append(errs, unknownParam(name, "la búsqueda de lugares", placeParams))
		case slices.Contains(sent.bare, name):
			errs = append(errs, bareParam(name))
		case len(sent.vals[name]) > 1:
			errs = append(errs, repeatedParam(name))
		}
	}
	if len(errs) == 0 && !sent.vals.Has("q") {
		errs = append(errs, backend.ParamError("q", "falta «q», el nombre del lugar: p. ej. ?q=El+Caimo o ?q=calarca"))
	}
	if len(errs) > 0 {
		backend.WriteProblem(w, backend.WithQueryFields(backend.InvalidParams(errs)))
		return
	}
	found, err := h.svc.FindPlaces(sent.vals.Get("q"), sent.vals.Get("emergencySlug"))
	if err != nil {
		// FindPlaces names its arguments as buscar_lugar's (/q): here they are query parameters.
		p := backend.AsProblem(err)
		for i, d := range p.Body.Details {
			if name, ok := strings.CutPrefix(d.Field, "/"); ok && slices.Contains(placeParams, name) {
				p.Body.Details[i].Field = backend.QueryField(name)
			}
		}
		backend.WriteProblem(w, p)
		return
	}
	body, err := json.Marshal(found)
	if err != nil {
		backend.WriteProblem(w, backend.AsProblem(err))
		return
	}
	serveCacheable(w, r, body, "application/json", "public, max-age=300")
}
