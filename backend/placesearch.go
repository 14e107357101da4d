package backend

import (
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/directaid/directaid/backend/places"
	"github.com/directaid/directaid/schema"
)

// FindPlaces finds the municipios and centros poblados whose name matches q (places.Search), those of
// the area of emergencySlug first: how an agent turns what a person says («estoy en El Caimo») into the
// placeCode of a publication, without coordinates. An emergencySlug that names no emergency, and a q with
// no letter or digit, are InvalidParams.
func (s *Service) FindPlaces(q, emergencySlug string) (*schema.PlaceList, error) {
	q = strings.TrimSpace(q) // counted as it is searched
	var area []string
	var errs []schema.FieldError
	if slug := strings.TrimSpace(emergencySlug); slug != "" {
		if e, ok := s.emergency(slug); ok {
			area = e.Area
		} else {
			errs = append(errs, s.unknownSlug("/emergencySlug", slug))
		}
	}
	if places.Fold(q) == "" || utf8.RuneCountInString(q) > 100 || !utf8.ValidString(q) || strings.ContainsFunc(q, unicode.IsControl) {
		errs = append([]schema.FieldError{{Field: "/q",
			Message: fmt.Sprintf("«q» %s no es el nombre de un lugar: escriba el de un municipio o centro poblado (hasta 100 caracteres), p. ej. «El Caimo» o «calarca»", schema.Quote(q))}}, errs...)
	}
	if len(errs) > 0 {
		return nil, InvalidParams(errs)
	}
	// The area's places first, whatever their rank among the others: an agent takes the first.
	found := places.Search(q, 6*schema.MaxPlaceMatches, area...)
	slices.SortStableFunc(found, func(a, b places.Place) int { return places.AreaFirst(a, b, area) })
	out := &schema.PlaceList{Places: []schema.PlaceMatch{}}
	match := func(p places.Place) schema.PlaceMatch {
		return schema.PlaceMatch{PlaceCode: p.Code, Place: places.Label(p), Kind: p.Kind(),
			MunicipioCode: p.MunicipioCode(), Latitude: p.Lat, Longitude: p.Lon, InArea: len(area) > 0 && places.InArea(p.Code, area)}
	}
	for _, p := range found[:min(len(found), schema.MaxPlaceMatches)] {
		out.Places = append(out.Places, match(p))
	}
	if len(found) == 0 {
		// A typo: the names like it, as the forms offer them, to ask the person about.
		for _, p := range places.NamesLike(q, schema.MaxPlaceMatches, area...) {
			out.Guesses = append(out.Guesses, match(p))
		}
	}
	return out, nil
}
