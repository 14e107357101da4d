package backend

import (
	"context"
	"fmt"
	"maps"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/directaid/directaid/backend/store"
	"github.com/directaid/directaid/schema"
)

// A record's matches (GET help/{id}/matches, buscar_coincidencias, the record and confirmation pages):
// the open records of the other type, in the same emergency and category, near the record. They are one
// list query of the store (type, category, emergency, and a radius around the record's point, or its
// municipio), so they cost what a radius list costs.

// ReadViewMatches is the view label of the read latency metric for a record's matches.
const ReadViewMatches = "matches"

// matchesParams are the query parameters of GET help/{id}/matches.
var matchesParams = []string{"radiusKm", "limit"}

// oppositeType is the type of the records that may answer one of type t.
func oppositeType(t string) string {
	if t == schema.TypeRequest {
		return schema.TypeOffer
	}
	return schema.TypeRequest
}

// checkMatchesQuery validates q and applies its defaults; details name the parameters bare.
func checkMatchesQuery(q *schema.MatchesQuery) []schema.FieldError {
	var errs []schema.FieldError
	if q.RadiusKm == nil {
		r := float64(schema.DefaultMatchRadiusKm)
		q.RadiusKm = &r
	}
	if r := *q.RadiusKm; math.IsNaN(r) || r <= 0 || r > schema.MaxMatchRadiusKm {
		errs = append(errs, paramError("radiusKm", fmt.Sprintf("«radiusKm» debe ser mayor que 0 y como máximo %d", schema.MaxMatchRadiusKm)))
	}
	if q.Limit == 0 {
		q.Limit = schema.DefaultMatchLimit
	}
	if q.Limit < 1 || q.Limit > schema.MaxMatchLimit {
		errs = append(errs, paramError("limit", fmt.Sprintf("«limit» debe ser un entero entre 1 y %d", schema.MaxMatchLimit)))
	}
	return errs
}

// helpMatches answers a record's matches. Errors are *Problem: 400 for a malformed id (field "id") or a
// bad parameter, 404 for an unknown id, 410 for a withdrawn or hidden record, as helpDetail answers.
func (s *Service) Matches(ctx context.Context, base, id string, q schema.MatchesQuery) (*schema.HelpMatches, error) {
	errs := checkMatchesQuery(&q)
	id = store.NormalizeID(id)
	if !store.ValidID(id) {
		errs = append([]schema.FieldError{paramError("id", badIDMessage(id))}, errs...)
	}
	if len(errs) > 0 {
		return nil, invalidParams(errs)
	}
	rec, err := s.publicRecordByID(ctx, id)
	if err != nil {
		return nil, err
	}
	out := &schema.HelpMatches{GeneratedAt: s.now().UTC(), ID: rec.ID, Type: oppositeType(rec.Type), Category: rec.Category,
		MatchedBy: schema.MatchedByNone, Limit: q.Limit, Items: []schema.PublicHelp{}, PublicURL: base + schema.RecordPath(rec.ID)}
	spec := &store.ListSpec{EmergencySlug: rec.EmergencySlug, Type: out.Type, Category: rec.Category, Status: store.StatusOpen,
		Limit: q.Limit, NoTotal: true}
	switch {
	case rec.Latitude != nil && rec.Longitude != nil:
		spec.Near, spec.Lat, spec.Lon, spec.RadiusKm = true, *rec.Latitude, *rec.Longitude, *q.RadiusKm
		out.MatchedBy, out.RadiusKm = schema.MatchedByDistance, q.RadiusKm
	case rec.MunicipioCode != "":
		spec.Municipio = rec.MunicipioCode
		out.MatchedBy, out.Municipio = schema.MatchedByMunicipio, rec.MunicipioCode
	default:
		return out, nil
	}
	now := s.now()
	res, counts, err := s.listCounted(ctx, spec, "", now)
	if err != nil {
		return nil, err
	}
	for i, m := range res.Records {
		if m = readAt(m, now); m.Status != store.StatusOpen { // expired since the sweep last ran
			continue
		}
		item := listItem(s, base, spec, res, i, m)
		item.Responses = counts[m.ID]
		out.Items = append(out.Items, item)
	}
	out.Returned = len(out.Items)
	return out, nil
}

// serveMatches answers GET help/{id}/matches.
func (h *Handler) serveMatches(w http.ResponseWriter, r *http.Request, id string) {
	if !allow(w, r, "GET, HEAD, OPTIONS") {
		return
	}
	defer h.svc.cfg.Observe.Read(ReadViewMatches, schema.FormatJSON, time.Now())
	v := r.URL.Query()
	q, errs := parseMatchesQuery(v)
	if len(errs) > 0 { // with the range errors of the parameters that parsed, so that one answer names all
		for _, e := range checkMatchesQuery(&q) {
			if !slices.ContainsFunc(errs, func(d schema.FieldError) bool { return d.Field == e.Field }) {
				errs = append(errs, e)
			}
		}
		writeProblem(w, matchesFields(invalidParams(errs)))
		return
	}
	m, err := h.svc.Matches(r.Context(), h.svc.BaseURL(r), id, q)
	if err != nil {
		writeProblem(w, matchesFields(AsProblem(err)))
		return
	}
	serveStamped(w, r, m, func(m *schema.HelpMatches) *time.Time { return &m.GeneratedAt }, "application/json", cacheList)
}

// matchesFields names the details of p as HTTP does: the id as /path/id, the rest as /query/<name>.
func matchesFields(p *Problem) *Problem {
	return withFields(p, func(name string) string {
		if name == "id" {
			return schema.Pointer("path", name)
		}
		return queryField(name)
	})
}

// parseMatchesQuery reads the query string of GET help/{id}/matches: every parameter it does not take,
// or repeats, or that is not a number, is an error (the ranges are checkMatchesQuery's).
func parseMatchesQuery(v url.Values) (schema.MatchesQuery, []schema.FieldError) {
	var q schema.MatchesQuery
	var errs []schema.FieldError
	for _, name := range slices.Sorted(maps.Keys(v)) {
		switch {
		case name == "_":
		case !slices.Contains(matchesParams, name):
			msg := fmt.Sprintf("el parámetro «%s» no existe en las coincidencias de un registro", schema.Clip(name))
			if a, ok := paramAliases[strings.ToLower(name)]; ok && slices.Contains(matchesParams, a) {
				msg += fmt.Sprintf(" (¿quiso decir «%s»?)", a)
			}
			errs = append(errs, paramError(name, msg, matchesParams...))
		case len(v[name]) > 1:
			errs = append(errs, paramError(name, fmt.Sprintf("el parámetro «%s» está repetido: envíelo una sola vez", schema.Clip(name))))
		}
	}
	if len(errs) > 0 {
		return q, errs
	}
	if s := strings.TrimSpace(v.Get("radiusKm")); s != "" {
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			errs = append(errs, paramError("radiusKm", fmt.Sprintf("«radiusKm» debe ser un número con punto decimal, p. ej. 25 o 7.5 (se recibió %s)", schema.Quote(s))))
		} else {
			q.RadiusKm = &f
		}
	}
	if s := strings.TrimSpace(v.Get("limit")); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			errs = append(errs, paramError("limit", fmt.Sprintf("«limit» debe ser un entero entre 1 y %d", schema.MaxMatchLimit)))
		} else {
			q.Limit = n
		}
	}
	return q, errs
}
