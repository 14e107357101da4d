package schema

import (
	"strings"
	"testing"
)

// A request located by its DIVIPOLA code gets the place's point, marked approximate, and its municipio;
// typed coordinates keep theirs, with the municipio of the nearest listed place.
func TestDecodeLocatesByPlaceCode(t *testing.T) {
	noCoords := strings.Replace(fastBody, `"latitude":4.53390,"longitude":-75.68110,`, ``, 1)
	with := func(members string) string { return strings.Replace(noCoords, `"address"`, members+`,"address"`, 1) }
	for _, c := range []struct {
		name, body                 string
		code, municipio, precision string
		lat, lon                   float64
	}{
		{"municipio", with(`"placeCode":"63001"`), "63001", "63001", PrecisionPlace, 4.536, -75.6808},
		{"centro poblado", with(`"placeCode":" 63001001 "`), "63001001", "63001", PrecisionPlace, 0, 0},
		{"cabecera code is the municipio", with(`"placeCode":"63001000"`), "63001", "63001", PrecisionPlace, 4.536, -75.6808},
		{"San Andrés, beyond the typed longitude bounds", with(`"placeCode":"88001"`), "88001", "88001", PrecisionPlace, 12.583, -81.6961},
		{"coordinates", fastBody, "", "63001", PrecisionExact, 4.5339, -75.6811},
		{"gps coordinates", strings.Replace(fastBody, `"address"`, `"locationPrecision":"gps","address"`, 1), "", "63001", PrecisionGPS, 4.5339, -75.6811},
		{"coordinates and place", strings.Replace(fastBody, `"address"`, `"placeCode":"63130","address"`, 1), "63130", "63130", PrecisionExact, 4.5339, -75.6811},
	} {
		t.Run(c.name, func(t *testing.T) {
			decodeBoth(t, []byte(c.body), "")
			p, eb := Decode([]byte(c.body), "")
			if eb != nil {
				t.Fatalf("refused: %+v", eb)
			}
			if p.PlaceCode != c.code || p.MunicipioCode != c.municipio || p.LocationPrecision != c.precision {
				t.Errorf("place %q municipio %q precision %q, want %q %q %q", p.PlaceCode, p.MunicipioCode, p.LocationPrecision, c.code, c.municipio, c.precision)
			}
			if p.Latitude == nil || p.Longitude == nil {
				t.Fatalf("no point")
			}
			if c.lat != 0 && (*p.Latitude != c.lat || *p.Longitude != c.lon) {
				t.Errorf("point %v, %v, want %v, %v", *p.Latitude, *p.Longitude, c.lat, c.lon)
			}
		})
	}
}

func TestDecodeRefusesBadLocations(t *testing.T) {
	noCoords := strings.Replace(fastBody, `"latitude":4.53390,"longitude":-75.68110,`, ``, 1)
	with := func(members string) string { return strings.Replace(noCoords, `"address"`, members+`,"address"`, 1) }
	offer := strings.Replace(strings.Replace(strings.Replace(noCoords, `"request"`, `"offer"`, 1), `"urgency":"urgent",`, ``, 1), `,"neededPeople":12`, ``, 1)
	offer = strings.Replace(offer, `,"neighborhood":"Centro"`, ``, 1)
	for _, c := range []struct {
		name, body, code string
		fields           []string
	}{
		{"unknown municipio", with(`"placeCode":"99999"`), CodeUnknownPlace, []string{"/placeCode"}},
		{"unknown centro poblado", with(`"placeCode":"63001999"`), CodeUnknownPlace, []string{"/placeCode"}},
		{"a departamento is no place", with(`"placeCode":"63"`), CodeInvalidBody, []string{"/placeCode"}},
		{"not digits", with(`"placeCode":"Armenia"`), CodeInvalidBody, []string{"/placeCode"}},
		{"a number", with(`"placeCode":63001`), CodeInvalidBody, []string{"/placeCode"}},
		{"no location", noCoords, CodeInvalidBody, []string{"/latitude", "/longitude"}},
		{"latitude alone", with(`"latitude":4.5`), CodeInvalidBody, []string{"/longitude"}},
		{"offer longitude alone", strings.Replace(offer, `"address"`, `"longitude":-75.6,"address"`, 1), CodeInvalidBody, []string{"/latitude"}},
		{"precision without coordinates", with(`"placeCode":"63001","locationPrecision":"gps"`), CodeInvalidBody, []string{"/locationPrecision"}},
		{"precision place is the server's", strings.Replace(fastBody, `"address"`, `"locationPrecision":"place","address"`, 1), CodeInvalidBody, []string{"/locationPrecision"}},
		{"typed San Andrés", strings.Replace(fastBody, `-75.68110`, `-81.7`, 1), CodeInvalidBody, []string{"/longitude"}},
		{"unknown place and no consent", strings.Replace(with(`"placeCode":"99999"`), `"publishContact":true`, `"publishContact":false`, 1), CodeConsentRequired, []string{"/publishContact", "/placeCode"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			decodeBoth(t, []byte(c.body), "")
			_, eb := Decode([]byte(c.body), "")
			if eb == nil {
				t.Fatal("accepted")
			}
			if eb.Code != c.code {
				t.Errorf("code %s, want %s: %+v", eb.Code, c.code, eb)
			}
			var got []string
			for _, d := range eb.Details {
				got = append(got, d.Field)
				if !strings.Contains(d.Message, "«") {
					t.Errorf("message names no field: %q", d.Message)
				}
			}
			if strings.Join(got, " ") != strings.Join(c.fields, " ") {
				t.Errorf("details %v, want %v: %+v", got, c.fields, eb)
			}
		})
	}
	// An offer needs no location at all.
	if _, eb := Decode([]byte(offer), ""); eb != nil {
		t.Errorf("offer without location refused: %+v", eb)
	}
}
