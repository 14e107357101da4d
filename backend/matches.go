package backend

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/directaid/directaid/backend/store"
	"github.com/directaid/directaid/schema"
)

// A record's matches (GET help/{id}/matches, buscar_coincidencias, the record and confirmation pages):
// the open records of the other type, in the same emergency and category, near the record. They are one
// list query of the store (type, category, emergency, and a radius around the record's point, or its
// municipio), so they cost what a radius list costs.

// ReadViewMatches is the view label of the read latency metric for a record's matches.
const ReadViewMatches = "matches"

// ReadViewPlaces is the view label of the read latency metric for a search of places by name.
const ReadViewPlaces = "places"

// oppositeType is the type of the records that may answer one of type t.
func oppositeType(t string) string {
	if t == schema.TypeRequest {
		return schema.TypeOffer
	}
	return schema.TypeRequest
}

// CheckMatchesQuery validates q and applies its defaults; details name the parameters bare.
func CheckMatchesQuery(q *schema.MatchesQuery) []schema.FieldError {
	var errs []schema.FieldError
	if q.RadiusKm == nil {
		r := float64(schema.DefaultMatchRadiusKm)
		q.RadiusKm = &r
	}
	if r := *q.RadiusKm; math.IsNaN(r) || r <= 0 || r > schema.MaxMatchRadiusKm {
		errs = append(errs, ParamError("radiusKm", fmt.Sprintf("«radiusKm» debe ser mayor que 0 y como máximo %d", schema.MaxMatchRadiusKm)))
	}
	if q.Limit == 0 {
		q.Limit = schema.DefaultMatchLimit
	}
	if q.Limit < 1 || q.Limit > schema.MaxMatchLimit {
		errs = append(errs, ParamError("limit", fmt.Sprintf("«limit» debe ser un entero entre 1 y %d", schema.MaxMatchLimit)))
	}
	return errs
}

// helpMatches answers a record's matches. Errors are *Problem: 400 for a malformed id (field "id") or a
// bad parameter, 404 for an unknown id, 410 for a withdrawn or hidden record, as helpDetail answers.
func (s *Service) Matches(ctx context.Context, base, id string, q schema.MatchesQuery) (*schema.HelpMatches, error) {
	errs := CheckMatchesQuery(&q)
	typed := id
	if id = store.NormalizeID(id); !store.ValidID(id) {
		errs = append([]schema.FieldError{ParamError("id", badIDMessage(typed))}, errs...)
	}
	if len(errs) > 0 {
		return nil, InvalidParams(errs)
	}
	rec, err := s.publicRecordByID(ctx, id)
	if err != nil {
		return nil, err
	}
	out := &schema.HelpMatches{GeneratedAt: s.now().UTC(), ID: rec.ID, Type: oppositeType(rec.Type), Category: rec.Category,
		MatchedBy: schema.MatchedByNone, Limit: q.Limit, Items: []schema.PublicHelp{}, PublicURL: base + schema.RecordPath(rec.ID)}
	// The most matches any query may ask for, so that records at the same distance (placed by the same
	// placeCode) are ranked among as many as a query could see (below), then cut to its limit.
	spec := &store.ListSpec{EmergencySlug: rec.EmergencySlug, Type: out.Type, Category: rec.Category, Status: store.StatusOpen,
		Limit: schema.MaxMatchLimit, NoTotal: true}
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
	seen := map[string]bool{}
	add := func(res *store.ListResult, counts map[string]int) {
		for i, m := range res.Records {
			if m = readAt(m, now); m.Status != store.StatusOpen || seen[m.ID] { // expired since the sweep last ran
				continue
			}
			seen[m.ID] = true
			item := listItem(s, base, spec, res, i, m)
			item.Responses = counts[m.ID]
			out.Items = append(out.Items, item)
		}
	}
	add(res, counts)
	// At the same distance (or, matched by municipio, among all), the records nobody answered yet first:
	// where a helper should go first. Otherwise the store's order: nearest, then newest. The store's first
	// MaxMatchLimit in its order hold every answered record of the first MaxMatchLimit in this one, but not
	// every unanswered one: at a point many records share (one placeCode's), the older unanswered ones come
	// after the newer answered ones. When the list goes on and holds an answered record, the nearest
	// unanswered ones are read too (listCounted's pages, at most maxAttendedPages).
	if res.Next != nil && slices.ContainsFunc(res.Records, func(r *store.Record) bool { return counts[r.ID] > 0 }) {
		un, uncounts, err := s.listCounted(ctx, spec, "false", now)
		if err != nil {
			return nil, err
		}
		add(un, uncounts)
	}
	slices.SortStableFunc(out.Items, func(a, b schema.PublicHelp) int {
		return cmp.Or(cmp.Compare(itemDistance(a), itemDistance(b)), cmp.Compare(min(a.Responses, 1), min(b.Responses, 1)),
			b.CreatedAt.Compare(a.CreatedAt), cmp.Compare(b.ID, a.ID))
	})
	out.Items = out.Items[:min(len(out.Items), q.Limit)]
	out.Returned = len(out.Items)
	return out, nil
}

// itemDistance is a list item's distanceKm, -1 without one.
func itemDistance(it schema.PublicHelp) float64 {
	if it.Location == nil || it.Location.DistanceKm == nil {
		return -1
	}
	return *it.Location.DistanceKm
}
