package schema

import (
	"fmt"

	"github.com/directaid/directaid/backend/places"
)

// locationFaults are the location rules that a JSON Schema of flat properties does not say: latitude and
// longitude go together; a request needs them or a placeCode; placeCode names a listed municipio or
// centro poblado (when lookup, i.e. it is a well-formed code); locationPrecision qualifies coordinates.
// Only the presence of p's coordinates is read.
func locationFaults(p *Publication, lookup bool) []FieldError {
	var out []FieldError
	hasLat, hasLon := p.Latitude != nil, p.Longitude != nil
	switch {
	case hasLat && !hasLon:
		out = append(out, FieldError{Field: "/longitude", Message: "«longitude» es obligatorio cuando se da «latitude»: las coordenadas van juntas"})
	case hasLon && !hasLat:
		out = append(out, FieldError{Field: "/latitude", Message: "«latitude» es obligatorio cuando se da «longitude»: las coordenadas van juntas"})
	case !hasLat && p.Type == TypeRequest && p.PlaceCode == "":
		for _, f := range []string{"latitude", "longitude"} {
			out = append(out, FieldError{Field: "/" + f, Message: fmt.Sprintf(
				"«%s» es obligatorio, salvo que se dé «placeCode» (el código DIVIPOLA del municipio o centro poblado, p. ej. 63001 para Armenia)", f)})
		}
	}
	if lookup {
		if pl, ok := places.Lookup(p.PlaceCode); !ok || pl.Kind() == places.Departamento {
			out = append(out, FieldError{Field: "/placeCode", Message: fmt.Sprintf(
				"«placeCode» %s no es el código DIVIPOLA de ningún municipio ni centro poblado (la lista está en /lugares.tsv)", Quote(p.PlaceCode))})
		}
	}
	if p.LocationPrecision != "" && !hasLat && !hasLon {
		out = append(out, FieldError{Field: "/locationPrecision", Message: "«locationPrecision» solo se da junto con «latitude» y «longitude»"})
	}
	return out
}

// locate applies locationFaults to a decoded publication and, when it has none, completes its location:
// the point of its place when it gave no coordinates, how exact the point is, and its municipio (unless
// later, when the municipio comes from the point alone: see NeedsMunicipio).
func locate(p *Publication, later bool) []FieldError {
	if fe := locationFaults(p, p.PlaceCode != ""); fe != nil {
		return fe
	}
	var pl places.Place
	if p.PlaceCode != "" {
		pl, _ = places.Lookup(p.PlaceCode)
		p.PlaceCode = pl.Code // a cabecera's NNNNN000 is its municipio's NNNNN
	}
	switch {
	case p.Latitude != nil:
		if p.LocationPrecision == "" {
			p.LocationPrecision = PrecisionExact
		}
		if pl.Code == "" {
			if !later {
				p.MunicipioCode = places.MunicipioOf(*p.Latitude, *p.Longitude)
			}
			return nil
		}
	case pl.Code != "":
		lat, lon := pl.Lat, pl.Lon
		p.Latitude, p.Longitude, p.LocationPrecision = &lat, &lon, PrecisionPlace
	}
	p.MunicipioCode = pl.MunicipioCode()
	return nil
}

// NeedsMunicipio reports whether p, decoded with MunicipioLater, still lacks the municipio of its point.
func NeedsMunicipio(p *Publication) bool {
	return p.Latitude != nil && p.Longitude != nil && p.PlaceCode == "" && p.MunicipioCode == ""
}

// FillMunicipio gives p, located by coordinates alone, the municipio of the nearest listed place (none
// for a point farther than places.MaxMunicipioKm from every place): what Decode does unless MunicipioLater.
func FillMunicipio(p *Publication) {
	if NeedsMunicipio(p) {
		p.MunicipioCode = places.MunicipioOf(*p.Latitude, *p.Longitude)
	}
}
