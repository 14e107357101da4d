package backend

import (
	"fmt"
	"math"
	"strings"

	"github.com/directaid/directaid/backend/places"
	"github.com/directaid/directaid/backend/store"
	"github.com/directaid/directaid/schema"
)

// farKm is how far outside its emergency's area a publication's point must be for a warning: beyond the
// neighbouring municipios (a municipio of the Eje Cafetero is 10 to 30 km across).
const farKm = 50

// warnings are what a publication may have got wrong without being refused: a point far outside the area
// of its emergency (Armenia, Antioquia, chosen for the Eje Cafetero quake instead of Armenia, Quindío).
// stored says whether the publication was stored (a dry run's was not).
func (s *Service) warnings(pub *schema.Publication, stored bool) []schema.Warning {
	if pub.Latitude == nil || pub.Longitude == nil {
		return nil
	}
	outcome := "Se publicó de todos modos; si el lugar está mal, retírela (con su enlace o su código para gestionarla) y publíquela " +
		"de nuevo con el lugar correcto, como una publicación nueva."
	if !stored {
		outcome = "Esta prueba (dryRun) no publicó nada; sin dryRun se publicaría de todos modos."
	}
	var out []schema.Warning
	// A placeCode and typed coordinates that disagree: the point is the coordinates', the municipio the code's.
	if pub.PlaceCode != "" && pub.LocationPrecision != schema.PrecisionPlace {
		if pl, ok := places.Lookup(pub.PlaceCode); ok && (pl.Lat != 0 || pl.Lon != 0) {
			if d := store.HaversineKm(pl.Lat, pl.Lon, *pub.Latitude, *pub.Longitude); d > farKm {
				out = append(out, schema.Warning{Code: schema.CodePlaceFarFromPoint, Field: "/placeCode", Message: fmt.Sprintf(
					"%s, el lugar elegido, está a unos %d km de la latitud y la longitud dadas: revise cuál de los dos es el correcto; el punto del registro es el de la latitud y la longitud. %s",
					places.Label(pl), int(math.Round(d)), outcome)})
			}
		}
	}
	return append(out, s.areaWarnings(pub, outcome)...)
}

// areaWarnings warn of a publication's point far outside its emergency's area; outcome says what became
// of the publication.
func (s *Service) areaWarnings(pub *schema.Publication, outcome string) []schema.Warning {
	for _, e := range s.active {
		if e.Slug != pub.EmergencySlug || len(e.Area) == 0 || places.InArea(pub.MunicipioCode, e.Area) {
			continue
		}
		d := areaDistanceKm(e.Area, *pub.Latitude, *pub.Longitude)
		if d <= farKm {
			return nil
		}
		field, check := "/latitude", "revise la latitud y la longitud" // typed coordinates, else the place's point
		if pub.PlaceCode != "" && pub.LocationPrecision == schema.PrecisionPlace {
			field, check = "/placeCode", "revise que eligió el lugar correcto"
		}
		where := "El punto, que no está en ningún municipio de Colombia,"
		if m, ok := places.Lookup(pub.MunicipioCode); ok {
			where = places.Label(m)
		}
		return []schema.Warning{{Code: schema.CodeFarFromEmergency, Field: field, Message: fmt.Sprintf(
			"%s está a unos %d km de la zona de la emergencia «%s»: %s. %s",
			where, int(math.Round(d)), e.Title, check, outcome)}}
	}
	return nil
}

// areaDistanceKm is the distance from (lat, lon) to the nearest municipio point of area.
func areaDistanceKm(area []string, lat, lon float64) float64 {
	best := math.Inf(1)
	for _, code := range area {
		ms := []places.Place{}
		if p, ok := places.Lookup(code); ok && p.Kind() == places.Municipio {
			ms = append(ms, p)
		} else {
			ms = places.Children(code)
		}
		for _, m := range ms {
			if strings.HasPrefix(m.Code, code) && (m.Lat != 0 || m.Lon != 0) {
				best = min(best, store.HaversineKm(lat, lon, m.Lat, m.Lon))
			}
		}
	}
	return best
}
