package site

import (
	"cmp"
	"context"
	"net/url"
	"strconv"
	"strings"

	"github.com/directaid/directaid/schema"
)

// A record's matches on the site: its page and the confirmation of its publication (with or without
// JavaScript) show up to siteMatches records of the other type that can answer it, each linking to its
// page, as GET /api/public/v1/help/{id}/matches finds them (Service.Matches).

// siteMatches is how many matches the pages show.
const siteMatches = 5

// matchesHeadings head the matches of a record, by the record's type.
var matchesHeadings = map[string]string{
	schema.TypeRequest: "Ofrecimientos cerca que pueden servirle",
	schema.TypeOffer:   "Solicitudes cerca que usted puede atender",
}

// matchesView is what a page shows of a record's matches.
type matchesView struct {
	Heading string
	Items   []recordView
	// None says that there are none, and where they were looked for; More is the emergency's page
	// filtered to the type and category of the matches ("" when that page is gone).
	None, More string
}

// matches reads the matches of the record id, of type recordType in the emergency slug; nil without
// Service.Matches. approx says the record's point is its town's (precision place): every distance from it
// is then approximate too.
func (v *view) matches(ctx context.Context, id, recordType, slug string, approx bool) (*matchesView, error) {
	if v.h.o.Service == nil {
		return nil, nil
	}
	m, err := v.h.o.Service.Matches(ctx, v.base, id, siteMatches)
	if err != nil {
		return nil, err
	}
	mv := &matchesView{Heading: matchesHeadings[recordType]}
	for i := range m.Items {
		r := schema.HelpRecord[schema.PublicContact](m.Items[i])
		rv := newRecordView(v, &r, r.Contact.Name)
		dist := rv.Distance
		if approx && r.Location != nil && r.Location.Precision != schema.PrecisionPlace && r.Location.DistanceKm != nil {
			dist = approximate(kmWords(*r.Location.DistanceKm)) // else newRecordView said it
		}
		if dist != "" {
			dist = "a " + dist
		}
		rv.Place = strings.Join(nonEmpty(dist, cmp.Or(rv.Town, rv.Municipio)), ", ")
		mv.Items = append(mv.Items, rv)
	}
	what := "ofrecimientos"
	if m.Type == schema.TypeRequest {
		what = "solicitudes"
	}
	what += " vigentes de " + strings.ToLower(enumLabels[m.Category])
	switch m.MatchedBy {
	case schema.MatchedByDistance:
		mv.None = "Todavía no hay " + what + " a menos de " + strings.Replace(strconv.FormatFloat(*m.RadiusKm, 'f', -1, 64), ".", ",", 1) + " km."
	case schema.MatchedByMunicipio:
		mv.None = "Todavía no hay " + what + " en su municipio."
	default:
		mv.None = "Sin un lugar no se pueden buscar " + what + " cerca."
	}
	for _, e := range v.ems {
		if e.Slug == slug && len(m.Items) == 0 {
			mv.More = v.base + schema.EmergencyPath(e.Slug) + "?" + url.Values{"type": {m.Type}, "category": {m.Category}}.Encode()
		}
	}
	return mv, nil
}
