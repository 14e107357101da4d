package schema

import (
	"net/url"
	"time"
)

// Matches: GET /api/public/v1/help/{id}/matches and the MCP tool buscar_coincidencias, the open records
// of the other type that may answer a record: offers for a request, requests for an offer.

// MatchesSuffix ends the path of a record's matches: HelpPath + "/{id}" + MatchesSuffix.
const MatchesSuffix = "/matches"

// Limits of a matches query.
const (
	DefaultMatchRadiusKm = 25
	MaxMatchRadiusKm     = MaxRadiusKm
	DefaultMatchLimit    = 10
	MaxMatchLimit        = 20
)

// How a record's matches were found (HelpMatches.MatchedBy).
const (
	MatchedByDistance  = "distance"  // the record has a point: within radiusKm of it, nearest first
	MatchedByMunicipio = "municipio" // only a municipio: the records of that municipio, unanswered then newest first
	MatchedByNone      = "none"      // neither: nothing can be near it
)

// MatchesPath is the path of the matches of record id.
func MatchesPath(id string) string { return HelpPath + "/" + url.PathEscape(id) + MatchesSuffix }

// MatchesPathID returns the id of a matches path (any string between the slashes: the caller checks it).
func MatchesPathID(path string) (string, bool) { return recordSubpathID(path, MatchesSuffix) }

// MatchesQuery holds the query parameters of a record's matches.
type MatchesQuery struct {
	RadiusKm *float64 `json:"radiusKm,omitempty" jsonschema:"exclusiveMinimum=0,maximum=100,default=25" jsonschema_description:"Radio en kilómetros alrededor del punto del registro (por defecto 25, máximo 100). Un registro sin punto busca en su municipio y no usa el radio."`
	Limit    int      `json:"limit,omitempty" jsonschema:"minimum=1,maximum=20,default=10" jsonschema_description:"Cuántas coincidencias devolver (por defecto 10, máximo 20)."`
}

// MatchesArgs is the input of the MCP tool buscar_coincidencias.
type MatchesArgs struct {
	ID string `json:"id" jsonschema:"pattern=^[0-9a-tv-zA-TV-Z]{16}$" jsonschema_description:"id del registro (solicitud u ofrecimiento) del que se buscan coincidencias; no distingue mayúsculas."`
	MatchesQuery
}

// HelpMatches is the answer of a record's matches.
type HelpMatches struct {
	GeneratedAt time.Time    `json:"generatedAt"`
	ID          string       `json:"id" jsonschema_description:"Id del registro del que se buscan coincidencias."`
	Type        string       `json:"type" jsonschema_description:"El tipo de las coincidencias: offer para una solicitud, request para un ofrecimiento."`
	Category    string       `json:"category" jsonschema_description:"La categoría de las coincidencias: la misma del registro."`
	MatchedBy   string       `json:"matchedBy" jsonschema:"enum=distance,enum=municipio,enum=none" jsonschema_description:"distance: el registro tiene punto; coincidencias a menos de radiusKm, de la más cercana a la más lejana (con location.distanceKm); a igual distancia, primero las que nadie ha respondido (responses 0), luego las más recientes. municipio: el registro solo tiene municipio; las de ese municipio, primero las que nadie ha respondido, luego las más recientes. none: el registro no tiene punto ni municipio; no hay coincidencias."`
	RadiusKm    *float64     `json:"radiusKm,omitempty" jsonschema_description:"Solo con matchedBy distance: el radio aplicado."`
	Municipio   string       `json:"municipioCode,omitempty" jsonschema:"pattern=^[0-9]{5}$" jsonschema_description:"Solo con matchedBy municipio: el código DIVIPOLA del municipio."`
	Limit       int          `json:"limit" jsonschema:"minimum=1,maximum=20"`
	Returned    int          `json:"returned" jsonschema:"minimum=0"`
	Items       []PublicHelp `json:"items" jsonschema_description:"Las coincidencias, en la forma de los elementos de una lista: el nombre de contacto, sin teléfono (está en la página de cada una o en view=detail)."`
	PublicURL   string       `json:"publicUrl" jsonschema:"format=uri" jsonschema_description:"Página pública del registro; también lista sus coincidencias."`
}

func init() {
	wireTypes["HelpMatches"] = &HelpMatches{}
}

// matchesPathItem is the OpenAPI path item of a record's matches.
func matchesPathItem() map[string]any {
	params := withIDParam(map[string]any{})["parameters"].([]any)
	for name, p := range reflectSchema(&MatchesQuery{}).Properties.FromOldest() {
		desc := p.Description
		p.Description = ""
		params = append(params, map[string]any{"name": name, "in": "query", "required": false, "description": desc, "schema": toMap(p)})
	}
	get := map[string]any{
		"operationId": "getHelpMatches", "tags": []string{"api"},
		"summary":     "Coincidencias de un registro: ofrecimientos para una solicitud, solicitudes para un ofrecimiento",
		"description": "Los registros vigentes (open) del tipo opuesto, de la misma emergencia y de la misma categoría, a menos de radiusKm del punto del registro (por defecto 25, máximo 100), del más cercano al más lejano, con location.distanceKm; a igual distancia, primero los que nadie ha respondido y luego los más recientes. Un registro sin punto (solo con municipio) coincide con los de su municipio: primero los que nadie ha respondido, luego los más recientes. Los registros sin punto quedan fuera de una búsqueda por radio. Los elementos tienen la forma de los de view=list: el nombre de contacto sin el teléfono. Un parámetro desconocido, repetido o inválido responde 400 invalid_parameter con field=/query/<nombre>.",
		"parameters":  params,
		"responses": map[string]any{
			"200": map[string]any{"description": "Las coincidencias (items puede estar vacío).", "headers": hdrs("ETag", "Cache-Control"), "content": jsonBody(ref("HelpMatches"))},
			"304": map[string]any{"description": "No ha cambiado desde el ETag enviado en If-None-Match.", "headers": hdrs("ETag")},
			"400": errResp("Parámetro inválido (invalid_parameter): details nombra cada uno como /query/<nombre>, o /path/id si el id no tiene la forma de un id."),
			"404": errResp("No existe ese registro (not_found)."),
			"410": errResp("El registro fue retirado u ocultado mientras se revisan reportes (gone)."),
			"500": errResp("Error interno (internal_error)."),
			"503": errResp("Servicio no disponible (unavailable).", "Retry-After"),
		},
	}
	return map[string]any{"get": get, "head": headOf(get, "headHelpMatches"), "options": withIDParam(preflight("preflightMatches"))}
}

// matchesExamples are getHelpMatches' examples, about the emergency em.
func matchesExamples(em ExampleEmergency) OperationExample {
	base := "https://ayuda.example.org"
	dist, radius := 1.84, float64(DefaultMatchRadiusKm)
	offer := exampleOffer(em)
	lat, lon := 4.5401, -75.6702
	item := PublicHelp{ID: "01k2x3y4z5a6b7d9", Type: TypeOffer, Emergency: EmergencyRef(em),
		Content: Content{Title: "Reparto agua potable en bidones", Category: "alimentos"},
		Location: &PublicLocation{Place: Place{Address: offer.Address, Latitude: &lat, Longitude: &lon}, DistanceKm: &dist, Precision: PrecisionExact,
			MunicipioCode: "63001", Municipio: "Armenia (Quindío)"},
		Contact:   PublicContact{Name: offer.ContactName, Available: true},
		CreatedAt: exampleTime.Add(-3 * time.Hour), Status: StatusOpen, UpdatedAt: exampleTime.Add(-3 * time.Hour), PublicURL: base + RecordPathPrefix + "01k2x3y4z5a6b7d9"}
	return OperationExample{
		Query: []Example{
			{Name: "cerca", Summary: "Hasta 5 coincidencias a menos de 25 km", Status: "200", Value: "radiusKm=25&limit=5"},
			{Name: "radio-excesivo", Summary: "Un radio de más de 100 km se rechaza", Status: "400", Value: "radiusKm=500"},
		},
		Responses: map[string][]Example{"200": {{Name: "ofrecimientos", Summary: "Los ofrecimientos que pueden servirle a una solicitud",
			Value: HelpMatches{GeneratedAt: exampleTime, ID: exampleID, Type: TypeOffer, Category: "alimentos", MatchedBy: MatchedByDistance,
				RadiusKm: &radius, Limit: DefaultMatchLimit, Returned: 1, Items: []PublicHelp{item}, PublicURL: base + RecordPathPrefix + exampleID}}}},
	}
}
