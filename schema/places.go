package schema

// Places: the MCP tool buscar_lugar, which turns a place's name, as a person says it, into the DIVIPOLA
// code that publishing (placeCode) and the list's municipio filter take.

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
}
