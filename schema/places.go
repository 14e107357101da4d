package schema

import "strconv"

// Places: the MCP tool buscar_lugar and GET PlaceSearchPath, which turn a place's name, as a person says
// it, into the DIVIPOLA code that publishing (placeCode) and the list's municipio filter take.

// MaxPlaceMatches is how many places buscar_lugar returns at most.
const MaxPlaceMatches = 10

// PlaceArgs is the input of buscar_lugar.
type PlaceArgs struct {
	Q             string `json:"q" jsonschema:"minLength=1,maxLength=100" jsonschema_description:"El nombre del lugar como lo dice la persona: un municipio, un centro poblado o una vereda (El Caimo, Calarcá, la tebaida), sin importar tildes ni mayúsculas; puede seguir del municipio o del departamento (el caimo armenia, armenia quindio)."`
	EmergencySlug string `json:"emergencySlug,omitempty" jsonschema:"maxLength=64" jsonschema_description:"La emergencia de la publicación: los lugares de su zona salen primero (Armenia, Quindío, antes que Armenia, Antioquia, en el Eje Cafetero)."`
}

// PlaceMatch is one place that buscar_lugar found.
type PlaceMatch struct {
	PlaceCode     string  `json:"placeCode" jsonschema:"pattern=^[0-9]{5}([0-9]{3})?$" jsonschema_description:"Código DIVIPOLA del lugar: el placeCode de publicar_solicitud y publicar_ofrecimiento."`
	Place         string  `json:"place" jsonschema_description:"El lugar con su municipio y departamento: «El Caimo, Armenia (Quindío)»."`
	Kind          string  `json:"kind" jsonschema:"enum=municipio,enum=centroPoblado" jsonschema_description:"municipio (su cabecera) o centroPoblado (un corregimiento, inspección o caserío)."`
	MunicipioCode string  `json:"municipioCode" jsonschema:"pattern=^[0-9]{5}$" jsonschema_description:"El código de su municipio: el valor del filtro municipio de buscar_ayudas."`
	Latitude      float64 `json:"latitude" jsonschema_description:"El punto del lugar (el de su cabecera para un municipio), aproximado para una persona que está en él."`
	Longitude     float64 `json:"longitude"`
	InArea        bool    `json:"inEmergencyArea,omitempty" jsonschema_description:"Con emergencySlug: el lugar está en la zona de la emergencia."`
}

// PlaceList is the answer of buscar_lugar.
type PlaceList struct {
	Places []PlaceMatch `json:"places" jsonschema_description:"Los lugares cuyo nombre coincide, el más parecido primero (nombre igual, luego que empieza así, luego con todas las palabras), con emergencySlug, los de la zona de la emergencia antes que todos los demás; como mucho 10. Vacía si ninguno coincide."`
	// Guesses answer a typo («armenai»), which a bot relaying a person's message meets as often as the
	// site's forms do.
	Guesses []PlaceMatch `json:"guesses,omitempty" jsonschema:"maxItems=10" jsonschema_description:"Solo cuando places está vacía: los lugares cuyo nombre está a una o dos letras de q (un error de escritura), los de la zona de la emergencia si alguno lo está. No son el lugar: pregunte a la persona «¿quiso decir…?» antes de usar uno."`
}

func init() { wireTypes["PlaceList"] = &PlaceList{} }

// placesPathItem documents GET PlaceSearchPath: buscar_lugar over HTTP, its arguments as query parameters.
func placesPathItem() map[string]any {
	var params []any
	for name, p := range reflectSchema(&PlaceArgs{}).Properties.FromOldest() {
		desc := p.Description
		p.Description = ""
		params = append(params, map[string]any{"name": name, "in": "query", "required": name == "q", "description": desc, "schema": toMap(p)})
	}
	get := map[string]any{
		"operationId": "findPlaces", "tags": []string{"api"},
		"summary":     "Buscar un municipio o centro poblado por su nombre: su código DIVIPOLA (placeCode)",
		"description": "Lo que hace la herramienta MCP " + ToolFindPlace + ": convierte el nombre de un lugar como lo dice la persona («estoy en El Caimo») en el código DIVIPOLA que toma placeCode al publicar sin coordenadas, y el filtro municipio de view=list. Como mucho " + strconv.Itoa(MaxPlaceMatches) + " lugares, el más parecido primero; con emergencySlug, los de la zona de la emergencia antes que los demás. La lista entera de lugares está en " + PlacesPath + ". Un parámetro desconocido, repetido o inválido responde 400 invalid_parameter con field=/query/<nombre>.",
		"parameters":  params,
		"responses": map[string]any{
			"200": map[string]any{"description": "Los lugares (places puede estar vacía).", "headers": hdrs("ETag", "Cache-Control"), "content": jsonBody(ref("PlaceList"))},
			"304": map[string]any{"description": "No ha cambiado desde el ETag enviado en If-None-Match.", "headers": hdrs("ETag")},
			"400": errResp("Parámetro inválido (invalid_parameter): falta q, no tiene letras ni cifras o pasa de 100 caracteres; emergencySlug no es el de una emergencia; un parámetro desconocido o repetido. details nombra cada uno como /query/<nombre>."),
		},
	}
	return map[string]any{"get": get, "head": headOf(get, "headFindPlaces"), "options": preflight("preflightFindPlaces")}
}

// placesExamples are findPlaces' examples, about the emergency em.
func placesExamples(em ExampleEmergency) OperationExample {
	return OperationExample{
		Query: []Example{
			{Name: "vereda", Summary: "Un centro poblado por su nombre, los de la zona de la emergencia primero", Status: "200", Value: "q=el+caimo&emergencySlug=" + em.Slug},
			{Name: "sin-nombre", Summary: "Un q sin letras ni cifras se rechaza", Status: "400", Value: "q=%2A%2A"},
		},
		Responses: map[string][]Example{"400": {{Name: CodeInvalidParameter, Summary: "Sin q", Value: ErrorBody{Code: CodeInvalidParameter,
			Error: "Parámetro inválido: falta «q», el nombre del lugar: p. ej. ?q=El+Caimo o ?q=calarca.", Details: []FieldError{{Field: "/query/q",
				Message: "falta «q», el nombre del lugar: p. ej. ?q=El+Caimo o ?q=calarca"}}}}}, "200": {{Name: "el-caimo", Summary: "El Caimo, Armenia",
			Value: PlaceList{Places: []PlaceMatch{{PlaceCode: "63001001", Place: "El Caimo, Armenia (Quindío)", Kind: "centroPoblado", MunicipioCode: "63001",
				Latitude: 4.474, Longitude: -75.7177, InArea: true}}}}}},
	}
}
