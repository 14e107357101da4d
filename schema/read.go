package schema

import (
	"slices"
	"time"

	"github.com/invopop/jsonschema"
)

// The read side: what GET /api/public/v1/help?view=list|detail|panorama answers, and the query parameters
// (which are also the input of the MCP read tools).

// Views and formats of GET /api/public/v1/help.
const (
	ViewList     = "list"
	ViewDetail   = "detail"
	ViewPanorama = "panorama"

	FormatJSON    = "json"
	FormatCSV     = "csv"
	FormatGeoJSON = "geojson"
	FormatAtom    = "atom"
)

// List limits.
const (
	DefaultListLimit = 20
	MaxListLimit     = 100
	DefaultRadiusKm  = 10
	MaxRadiusKm      = 100
	MaxQueryRunes    = 200
)

// Values of the list parameter total.
const (
	TotalExact = "exact"
	TotalNone  = "none"
)

// CodeInvalidParameter is the error code of a bad query parameter or tool argument.
const CodeInvalidParameter = "invalid_parameter"

// CodeGone is the error code of a record that was withdrawn or taken down (410).
const CodeGone = "gone"

// Statuses are a record's statuses, in the order stores encode them (it only grows at the end): open
// (listed by default), resolved, withdrawn (by its publisher), expired, hidden (taken down, never public).
var Statuses = []string{StatusOpen, StatusResolved, StatusWithdrawn, StatusExpired, StatusHidden}

// The statuses of a record.
const (
	StatusOpen      = "open"
	StatusResolved  = "resolved"
	StatusWithdrawn = "withdrawn"
	StatusExpired   = "expired"
	StatusHidden    = "hidden"
)

// ListedStatuses are the statuses a list can be filtered by; withdrawn and hidden records have no
// public content and reach mirrors only as tombstones of the change feed (since).
var ListedStatuses = []string{StatusOpen, StatusResolved, StatusExpired}

// RemovedStatuses are the others: those of the change feed's tombstones.
var RemovedStatuses = []string{StatusWithdrawn, StatusHidden}

// ListQuery holds the filters of a list. It is the query string of view=list, the input of the MCP tool
// buscar_ayudas, and, normalized, the `filters` echoed in the answer.
type ListQuery struct {
	EmergencySlug string   `json:"emergencySlug,omitempty" jsonschema:"maxLength=64" jsonschema_description:"Solo registros de esta emergencia (slug de GET /api/public/v1/help)."`
	Type          string   `json:"type,omitempty" jsonschema_description:"request (solicitudes) u offer (ofrecimientos)."`
	Category      string   `json:"category,omitempty" jsonschema_description:"Categoría de la ayuda."`
	Urgency       string   `json:"urgency,omitempty" jsonschema_description:"Urgencia (solo las solicitudes la tienen)."`
	Q             string   `json:"q,omitempty" jsonschema:"maxLength=200" jsonschema_description:"Texto a buscar en el título y la descripción, sin distinguir mayúsculas ni tildes (medico encuentra Médico), y un plural encuentra también el singular y el otro género (personas atrapadas encuentra Persona atrapada; medico encuentra médicos, no médica). Varias palabras: deben aparecer todas, cada una como parte de una palabra (insul encuentra Insulina)."`
	Latitude      *float64 `json:"latitude,omitempty" jsonschema:"minimum=-90,maximum=90" jsonschema_description:"Latitud del punto de búsqueda; con longitude limita a radiusKm y ordena del más cercano al más lejano."`
	Longitude     *float64 `json:"longitude,omitempty" jsonschema:"minimum=-180,maximum=180" jsonschema_description:"Longitud del punto de búsqueda."`
	RadiusKm      *float64 `json:"radiusKm,omitempty" jsonschema:"exclusiveMinimum=0,maximum=100,default=10" jsonschema_description:"Radio en kilómetros alrededor de latitude/longitude (por defecto 10, máximo 100). Los registros sin coordenadas quedan fuera."`
	Municipio     string   `json:"municipio,omitempty" jsonschema:"maxLength=100" jsonschema_description:"Solo registros de este municipio: su código DIVIPOLA de 5 dígitos (63001) o su nombre sin tildes ni mayúsculas (armenia; «armenia quindio» si hay varios con ese nombre). Ver location.municipioCode."`
	Status        string   `json:"status,omitempty" enum:"listed" jsonschema:"default=open" jsonschema_description:"Estado de los registros: open (vigentes, por defecto), resolved (resueltos) o expired (vencidos). Con since, sin status llegan todos los estados; con status, los registros que cambiaron a otro estado llegan en removed, con ese estado."`
	Since         string   `json:"since,omitempty" jsonschema:"maxLength=60" jsonschema_description:"Solo registros que cambiaron después de este instante (updatedAt, RFC 3339), del cambio más antiguo al más reciente, de todos los estados: los retirados u ocultos llegan en removed, sin contenido. Es la forma de mantener una copia sincronizada. También admite el id de un evento del flujo /api/public/v1/help/events (2026-08-11T14:30:00.123Z~01k2x3y4z5a6b7c8): los cambios posteriores a ese. No se combina con q, municipio ni latitude/longitude."`
	Limit         int      `json:"limit,omitempty" jsonschema:"minimum=1,maximum=100,default=20" jsonschema_description:"Registros por página (por defecto 20, máximo 100)."`
	Total         string   `json:"total,omitempty" jsonschema:"enum=exact,enum=none,default=exact" jsonschema_description:"none: no cuenta los registros de las demás páginas, para responder la página sin ese costo; total es entonces solo una cota inferior y totalExact es false, salvo que esta sea la única página."`
	Attended      string   `json:"attended,omitempty" jsonschema:"enum=true,enum=false" jsonschema_description:"false: solo registros abiertos que nadie ha respondido todavía (responses 0): por ahí conviene empezar a ayudar. true: solo los que tienen al menos una respuesta activa. Con attended, total es una cota superior (totalExact false) y una página puede traer menos de limit registros: siga paginando con nextCursor."`
	Cursor        string   `json:"cursor,omitempty" jsonschema:"maxLength=200" jsonschema_description:"nextCursor de la página anterior, con los mismos filtros: recorre todos los registros exactamente una vez aunque lleguen nuevos."`
}

// HelpQuery is every query parameter of GET /api/public/v1/help; the OpenAPI parameters are reflected
// from it. Without view the answer is the discovery document.
type HelpQuery struct {
	View   string `json:"view,omitempty" jsonschema:"enum=list,enum=detail,enum=panorama" jsonschema_description:"list (lista filtrable y paginada), detail (un registro con su teléfono), panorama (conteos por emergencia). Sin view: documento de descubrimiento."`
	Format string `json:"format,omitempty" jsonschema:"enum=json,enum=csv,enum=geojson,enum=atom,default=json" jsonschema_description:"Solo con view=list: json, csv (con fila de etiquetas HXL bajo el encabezado), geojson (FeatureCollection) o atom (un feed Atom 1.0 para lectores de feeds: una entrada por registro con el enlace a su página, sin datos de contacto)."`
	All    string `json:"all,omitempty" jsonschema:"enum=true" jsonschema_description:"Solo con view=list y format=csv o geojson, sin limit: todos los registros que cumplen los filtros en una sola respuesta, transmitida por partes (sin límite de página ni nextCursor; con cursor, desde esa posición). Sin all, la exportación se pagina como la lista."`
	ID     string `json:"id,omitempty" jsonschema:"pattern=^[0-9a-tv-zA-TV-Z]{16}$" jsonschema_description:"Solo con view=detail (obligatorio): id del registro; no distingue mayúsculas."`
	ListQuery
}

// ViewParams are the query parameters each view of GET /api/public/v1/help takes (view included); the
// server refuses the others, and the OpenAPI document says of each parameter which views take it.
var ViewParams = map[string][]string{
	ViewList:     {"view", "format", "all", "emergencySlug", "type", "category", "urgency", "municipio", "q", "latitude", "longitude", "radiusKm", "status", "since", "attended", "limit", "total", "cursor"},
	ViewDetail:   {"view", "id"},
	ViewPanorama: {"view", "emergencySlug"},
}

// Views are the values of view, in the order the documents list them.
var Views = []string{ViewList, ViewDetail, ViewPanorama}

// ViewsTaking lists the views that take the parameter name (none for view itself, which chooses them).
func ViewsTaking(name string) []string {
	var out []string
	for _, v := range Views {
		if name != "view" && slices.Contains(ViewParams[v], name) {
			out = append(out, v)
		}
	}
	return out
}

// EmergencyRef names the emergency of a record.
type EmergencyRef struct {
	Slug  string `json:"slug"`
	Title string `json:"title"`
}

// PublicLocation is where a record is. distanceKm is present only in searches around a point.
type PublicLocation struct {
	Place
	DistanceKm    *float64 `json:"distanceKm,omitempty" jsonschema_description:"Distancia en km al punto de búsqueda (solo con latitude/longitude)."`
	Precision     string   `json:"precision,omitempty" jsonschema:"enum=place,enum=gps,enum=exact" jsonschema_description:"De dónde sale el punto: place (el punto del lugar de placeCode, su cabecera o centro poblado: aproximado), gps (el GPS de un teléfono) o exact (coordenadas dadas como exactas). Ausente en registros anteriores a este campo."`
	PlaceCode     string   `json:"placeCode,omitempty" jsonschema_description:"Código DIVIPOLA (DANE) del lugar que dio quien publicó: municipio (5 dígitos) o centro poblado (8)."`
	PlaceName     string   `json:"place,omitempty" jsonschema_description:"Nombre del lugar de placeCode, con su municipio y departamento: «El Caimo, Armenia (Quindío)»."`
	MunicipioCode string   `json:"municipioCode,omitempty" jsonschema:"pattern=^[0-9]{5}$" jsonschema_description:"Código DIVIPOLA del municipio: el de placeCode o, con solo coordenadas, el del lugar de la lista más cercano (aproximado cerca de los límites). Es el valor del filtro municipio."`
	Municipio     string   `json:"municipio,omitempty" jsonschema_description:"Nombre del municipio con su departamento: «Armenia (Quindío)»."`
}

// PublicContact is the contact as lists, exports and feeds show it: a name and the fact that a number
// exists. It has no field for the phone, so a list cannot leak one.
type PublicContact struct {
	Name      string `json:"name"`
	Available bool   `json:"available" jsonschema_description:"true cuando el detalle del registro (view=detail) o su página muestran su teléfono; false cuando está oculto (alguien reportó que el número es suyo) o la publicación venció."`
}

// DetailContact is the contact of one record read on its own (view=detail, the record page).
type DetailContact struct {
	Name        string `json:"name"`
	Available   bool   `json:"available" jsonschema_description:"false cuando el teléfono está oculto (alguien reportó que el número es suyo y no dio permiso): entonces no hay whatsapp ni whatsappUrl."`
	Whatsapp    string `json:"whatsapp,omitempty" jsonschema:"minLength=8,maxLength=16,pattern=^\\+[1-9][0-9]+$" jsonschema_description:"Número de WhatsApp en formato E.164, publicado con el consentimiento de la persona."`
	WhatsappURL string `json:"whatsappUrl,omitempty" jsonschema:"format=uri" jsonschema_description:"Enlace https://wa.me/ para escribir por WhatsApp."`
}

// HelpRecord is a published record as readers see it; C is the contact shape, which is what tells a
// list item (PublicContact, no phone) from a detail (DetailContact).
type HelpRecord[C any] struct {
	ID        string       `json:"id" jsonschema_description:"Identificador del registro."`
	Type      string       `json:"type" `
	Emergency EmergencyRef `json:"emergency"`
	Content
	Needs                        // requests only
	CenterStatus                 // offers only
	Location     *PublicLocation `json:"location,omitempty" jsonschema_description:"Ausente si el ofrecimiento no dio dirección ni coordenadas."`
	Contact      C               `json:"contact"`
	CreatedAt    time.Time       `json:"createdAt"`
	Status       string          `json:"status" enum:"listed" jsonschema_description:"open, resolved o expired (vencida: su plazo pasó sin que nadie la renovara; ya no muestra el número de contacto). Los demás estados no se muestran."`
	Responses    int             `json:"responses" jsonschema:"minimum=0" jsonschema_description:"Cuántas personas dicen que están ayudando: respuestas activas (POST …/{id}/responses de las últimas 48 horas, no retiradas). 0 si la publicación no está abierta. De una misma conexión cuentan hasta 20 respuestas en 48 horas. Solo el número: los mensajes y teléfonos los ve únicamente quien publicó."`
	UpdatedAt    time.Time       `json:"updatedAt" jsonschema_description:"Último cambio del registro (publicación, estado, renovación)."`
	ExpiresAt    *time.Time      `json:"expiresAt,omitempty" jsonschema_description:"Solo mientras está abierta: cuándo vence (pasa a expired, deja las listas y ya no muestra su número) si quien la publicó no la renueva antes. Una renovación la cambia y cambia updatedAt."`
	PublicURL    string          `json:"publicUrl" jsonschema:"format=uri" jsonschema_description:"Página pública del registro."`
}

// PublicHelp is a record in a list or an export: the contact without its phone.
type PublicHelp HelpRecord[PublicContact]

// PublicHelpDetail is one record read on its own (view=detail): the contact with its phone.
type PublicHelpDetail HelpRecord[DetailContact]

// JSONSchemaExtend says which type of record has the members of one type only.
func (PublicHelp) JSONSchemaExtend(s *jsonschema.Schema) { typeNotes(s) }

// JSONSchemaExtend says which type of record has the members of one type only.
func (PublicHelpDetail) JSONSchemaExtend(s *jsonschema.Schema) { typeNotes(s) }

// typeNotes: in the public shape, where both types meet, each member of Needs and CenterStatus says
// which type has it (the published shapes say it by having it or not).
func typeNotes(s *jsonschema.Schema) {
	for name, note := range map[string]string{"urgency": "Solo solicitudes. ", "neededPeople": "Solo solicitudes. ", "collectionCenterStatus": "Solo ofrecimientos. "} {
		if p, ok := s.Properties.Get(name); ok {
			p.Description = note + p.Description
		}
	}
}

// HelpList is the answer of view=list.
type HelpList struct {
	GeneratedAt time.Time    `json:"generatedAt"`
	Total       int          `json:"total" jsonschema:"minimum=0" jsonschema_description:"Registros que cumplen los filtros (en todas las páginas); una estimación si totalExact es false."`
	TotalExact  bool         `json:"totalExact" jsonschema_description:"false en búsquedas de texto (q) de más de 20000 candidatos (total es entonces una estimación, a partir de una muestra de los 2000 más recientes) o de palabras muy comunes, que no se indexan (de, la, una sílaba: se comprueban en el texto de los registros que dan los demás filtros), con attended (total es entonces una cota superior), con total=none (total es entonces una cota inferior) y en un radio donde las celdas geográficas que cruza el borde del círculo tienen más de 1024 registros. Ese total sale de contadores por celda: exacto para las celdas dentro del círculo y, para las del borde, la parte de su área dentro del círculo; queda siempre entre los registros de las celdas interiores y esos más todos los de las celdas del borde, y con la densidad de 1 millón de registros en el Eje Cafetero se aleja del exacto 0,2 % en promedio (2,5 % en el peor caso medido, radios de 1 a 20 km). Igual con emergencySlug o municipio, con los contadores por celda de esa emergencia o municipio. También false con since cuando no se leyeron todos los cambios ni después ni antes de since (a cada lado se leen a lo sumo 10000 cambios, coincidan o no con los filtros, y 2001 que coincidan): total es entonces una estimación por el ritmo de los cambios leídos después de since, entre los que coinciden de ellos y los registros de esos filtros menos los que coinciden antes. Los demás totales son exactos."`
	Returned    int          `json:"returned" jsonschema:"minimum=0" jsonschema_description:"Registros en esta página."`
	Filters     ListQuery    `json:"filters" jsonschema_description:"Los filtros aplicados, normalizados."`
	Items       []PublicHelp `json:"items"`
	Removed     []Tombstone  `json:"removed,omitempty" jsonschema_description:"Solo con since: registros retirados u ocultos desde entonces (y, con status, los que pasaron a otro estado), sin contenido; quien mantiene una copia debe borrarlos."`
	NextCursor  string       `json:"nextCursor,omitempty" jsonschema_description:"Para la página siguiente (parámetro cursor). Ausente en la última página. Con q puede venir con menos de limit registros: siga paginando."`
}

// Tombstone is a record that left public view (withdrawn or hidden), in the change feed.
type Tombstone struct {
	ID        string    `json:"id"`
	Status    string    `json:"status" enum:"statuses" jsonschema_description:"withdrawn u hidden; con el filtro status, también el estado al que pasó un registro que dejó ese estado (resolved, expired)."`
	UpdatedAt time.Time `json:"updatedAt"`
}

// PanoramaCount is the number of records of one type, category and urgency.
type PanoramaCount struct {
	Type     string `json:"type" `
	Category string `json:"category" `
	Urgency  string `json:"urgency,omitempty" jsonschema_description:"Solo solicitudes."`
	Count    int    `json:"count" jsonschema:"minimum=1"`
}

// EmergencyPanorama sums up the records of one emergency.
type EmergencyPanorama struct {
	Slug         string          `json:"slug"`
	Title        string          `json:"title"`
	Total        int             `json:"total" jsonschema:"minimum=0"`
	Requests     int             `json:"requests" jsonschema:"minimum=0"`
	Offers       int             `json:"offers" jsonschema:"minimum=0"`
	NeededPeople int             `json:"neededPeople" jsonschema:"minimum=0" jsonschema_description:"Suma de neededPeople de las solicitudes vigentes (open)."`
	NewestAt     *time.Time      `json:"newestAt,omitempty" jsonschema_description:"Creación del registro más reciente; ausente si no hay registros."`
	Counts       []PanoramaCount `json:"counts" jsonschema_description:"Conteos de los registros vigentes (open) por tipo × categoría × urgencia; solo las combinaciones con registros."`
	Statuses     map[string]int  `json:"statuses" jsonschema_description:"Registros por estado (open, resolved, withdrawn, expired, hidden); solo los estados con registros."`
	Links        Links           `json:"links"`
}

// Panorama is the answer of view=panorama: one entry per active emergency.
type Panorama struct {
	GeneratedAt time.Time           `json:"generatedAt"`
	Emergencies []EmergencyPanorama `json:"emergencies"`
}

// GeoJSONPoint is a GeoJSON Point: [longitude, latitude].
type GeoJSONPoint struct {
	Type        string     `json:"type" jsonschema:"enum=Point"`
	Coordinates [2]float64 `json:"coordinates" jsonschema_description:"[longitud, latitud]."`
}

// GeoJSONFeature is one record of a GeoJSON export; geometry is null for an offer without coordinates.
type GeoJSONFeature struct {
	Type       string        `json:"type" jsonschema:"enum=Feature"`
	ID         string        `json:"id"`
	Geometry   *GeoJSONPoint `json:"geometry"`
	Properties PublicHelp    `json:"properties"`
}

// JSONSchemaExtend makes geometry nullable, as RFC 7946 allows for an unlocated feature.
func (GeoJSONFeature) JSONSchemaExtend(s *jsonschema.Schema) {
	if p, ok := s.Properties.Get("geometry"); ok {
		point := *p
		*p = jsonschema.Schema{OneOf: []*jsonschema.Schema{&point, {Type: "null"}}}
	}
}

// GeoJSONList is the answer of view=list&format=geojson: a FeatureCollection with the paging fields of
// HelpList as foreign members.
type GeoJSONList struct {
	Type        string           `json:"type" jsonschema:"enum=FeatureCollection"`
	Features    []GeoJSONFeature `json:"features"`
	GeneratedAt time.Time        `json:"generatedAt"`
	Total       int              `json:"total"`
	TotalExact  bool             `json:"totalExact"`
	NextCursor  string           `json:"nextCursor,omitempty"`
}

// ReflectArgs is the JSON Schema of an argument struct (an MCP tool's input), reflected like the wire types.
func ReflectArgs(v any) map[string]any { return toMap(reflectSchema(v)) }

func init() {
	wireTypes["ListQuery"] = &ListQuery{}
	wireTypes["PublicHelp"] = &PublicHelp{}
	wireTypes["PublicHelpDetail"] = &PublicHelpDetail{}
	wireTypes["HelpList"] = &HelpList{}
	wireTypes["Panorama"] = &Panorama{}
	wireTypes["GeoJSONList"] = &GeoJSONList{}
}
