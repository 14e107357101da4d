// Package schema is the wire contract of directaid: the Go structs here are the one source of truth
// from which the JSON Schemas (validation, MCP tool inputs) and the OpenAPI document are produced.
package schema

import "time"

// APIVersion is the one version string of the public API: OpenAPI info.version, discovery, API-Version header.
const APIVersion = "1.0.0"

// Record types.
const (
	TypeRequest = "request"
	TypeOffer   = "offer"
)

// Enumerations, in the order the documentation shows them.
var (
	Categories               = []string{"alimentos", "salud", "refugio", "transporte", "acopio", "rescate", "otro"}
	Urgencies                = []string{"urgent", "needed", "stable"}
	CollectionCenterStatuses = []string{"full", "needs_volunteers", "needs_resources"}
)

// Defaults applied before a request is stored.
const (
	DefaultUrgency      = "needed"
	DefaultNeededPeople = 1
)

// Common holds the fields shared by requests and offers. Limits not fixed by SPEC.md (source, externalId,
// address, neighborhood, slug, phone) are bounded so that no field can grow without limit.
type Common struct {
	Source        string `json:"source" jsonschema:"minLength=1,maxLength=100,pattern=^[^\\x00-\\x1f\\x7f-\\x9f]*$" jsonschema_description:"Nombre de la aplicación que publica. Forma parte de la clave de idempotencia."`
	ExternalID    string `json:"externalId" jsonschema:"minLength=1,maxLength=200,pattern=^[^\\x00-\\x1f\\x7f-\\x9f]*$" jsonschema_description:"Identificador estable del registro en la aplicación de origen. Forma parte de la clave de idempotencia: reintentar con el mismo par (source, externalId) no crea un duplicado."`
	EmergencySlug string `json:"emergencySlug,omitempty" jsonschema:"maxLength=64,pattern=^[^\\x00-\\x1f\\x7f-\\x9f]*$" jsonschema_description:"Slug de la emergencia, tomado de GET /api/public/v1/help. Obligatorio cuando hay más de una emergencia activa."`
	Content
	ContactName     string `json:"contactName" jsonschema:"minLength=1,maxLength=100,pattern=^[^\\x00-\\x1f\\x7f-\\x9f]*$" jsonschema_description:"Nombre de la persona de contacto. Se publica."`
	ContactWhatsapp string `json:"contactWhatsapp" jsonschema:"minLength=1,maxLength=40"` // pattern, description and examples: phone.go
	PublishContact  bool   `json:"publishContact" jsonschema_description:"Debe ser true: confirma que la persona aceptó que su teléfono se muestre públicamente."`
}

// Content is what a record says: the same members under the same rules in the published shapes (through
// Common) and in the public one (HelpRecord). A member added here reaches all of them.
type Content struct {
	Title       string `json:"title" jsonschema:"minLength=1,maxLength=100,pattern=^[^\\x00-\\x1f\\x7f-\\x9f]*$" jsonschema_description:"Título corto y claro."`
	Description string `json:"description,omitempty" jsonschema:"maxLength=600,pattern=^[^\\x00-\\x08\\x0b\\x0c\\x0e-\\x1f\\x7f-\\x9f]*$" jsonschema_description:"Descripción con los detalles necesarios."`
	Category    string `json:"category" jsonschema_description:"Categoría de la ayuda: alimentos (comida y agua potable), salud (medicinas, atención médica), refugio (albergue, techo, cobijas), transporte (llevar personas o cosas), acopio (centros de acopio y donaciones), rescate (personas atrapadas o en peligro) u otro. Las coincidencias son de la misma categoría."`
}

// Needs is what a request says of its need (an offer has none): published (Request), stored
// (Publication) and shown (HelpRecord) alike.
type Needs struct {
	Urgency      string `json:"urgency,omitempty" jsonschema_description:"Urgencia: urgent (urgente), needed (necesaria) o stable (estable)."`
	NeededPeople *int   `json:"neededPeople,omitempty" jsonschema:"minimum=0,maximum=10000" jsonschema_description:"Número de personas que necesitan la ayuda."`
}

// CenterStatus is what an offer that is a collection center says of it (a request has none): published
// (Offer), stored (Publication) and shown (HelpRecord) alike.
type CenterStatus struct {
	CollectionCenterStatus string `json:"collectionCenterStatus,omitempty" jsonschema_description:"Estado del centro de acopio: full (lleno), needs_volunteers (necesita voluntarios), needs_resources (necesita recursos)."`
}

// Place is where a record is, as stored (Publication) and as readers see it (PublicLocation). The
// published shapes declare these members themselves: a request requires them, an offer does not.
type Place struct {
	Address      string   `json:"address,omitempty"`
	Neighborhood string   `json:"neighborhood,omitempty"`
	Latitude     *float64 `json:"latitude,omitempty"`
	Longitude    *float64 `json:"longitude,omitempty"`
}

// Request is a request for help (type = request).
type Request struct {
	Type string `json:"type" jsonschema_description:"Siempre \"request\"."`
	Common
	Address      string   `json:"address" jsonschema:"minLength=1,maxLength=300,pattern=^[^\\x00-\\x1f\\x7f-\\x9f]*$" jsonschema_description:"Dirección donde se necesita la ayuda."`
	Neighborhood string   `json:"neighborhood,omitempty" jsonschema:"maxLength=100,pattern=^[^\\x00-\\x1f\\x7f-\\x9f]*$" jsonschema_description:"Barrio o vereda."`
	Latitude     *float64 `json:"latitude,omitempty" jsonschema:"minimum=-4.3,maximum=13.6" jsonschema_description:"Latitud (grados decimales, Colombia). Obligatoria junto con longitude, salvo que se dé placeCode."`
	Longitude    *float64 `json:"longitude,omitempty" jsonschema:"minimum=-79.1,maximum=-66.8" jsonschema_description:"Longitud (grados decimales, Colombia). Obligatoria junto con latitude, salvo que se dé placeCode."`
	PlaceRef
	Needs
}

// Offer is an offer of help (type = offer). Location is optional.
type Offer struct {
	Type string `json:"type" jsonschema_description:"Siempre \"offer\"."`
	Common
	Address   string   `json:"address,omitempty" jsonschema:"maxLength=300,pattern=^[^\\x00-\\x1f\\x7f-\\x9f]*$" jsonschema_description:"Dirección donde se ofrece la ayuda."`
	Latitude  *float64 `json:"latitude,omitempty" jsonschema:"minimum=-4.3,maximum=13.6" jsonschema_description:"Latitud (grados decimales, Colombia)."`
	Longitude *float64 `json:"longitude,omitempty" jsonschema:"minimum=-79.1,maximum=-66.8" jsonschema_description:"Longitud (grados decimales, Colombia)."`
	PlaceRef
	CenterStatus
}

// PlaceRef says where a record is by name rather than by coordinates: a DIVIPOLA code (DANE's official list
// of municipios and centros poblados, the list behind the site's «¿Dónde?»), and how exact typed
// coordinates are. Its point bounds are the list's, not the typed coordinates': San Andrés (longitude
// -81.7) is outside SPEC's longitude range but is Colombia, so it is reachable by its code.
type PlaceRef struct {
	PlaceCode         string `json:"placeCode,omitempty" jsonschema:"pattern=^[0-9]{5}([0-9]{3})?$" jsonschema_description:"Código DIVIPOLA (DANE) del lugar: 5 dígitos para un municipio (63001, Armenia), 8 para un centro poblado o vereda (63001001, El Caimo). Sin latitude/longitude, el registro toma el punto de ese lugar, marcado como aproximado (location.precision place); así una solicitud no necesita coordenadas. Lista de códigos: GET /lugares.tsv (código, nombre, latitud, longitud)."`
	LocationPrecision string `json:"locationPrecision,omitempty" jsonschema:"enum=gps,enum=exact" jsonschema_description:"Solo con latitude/longitude: de dónde salen. gps (el GPS del teléfono, con su margen de error) o exact (un punto conocido, p. ej. la puerta de la casa). Por defecto exact."`
}

// How exact a record's point is (PublicLocation.precision).
const (
	PrecisionPlace = "place" // the point of its DIVIPOLA place (a cabecera or a centro poblado): approximate
	PrecisionGPS   = "gps"   // a phone's GPS
	PrecisionExact = "exact" // coordinates the publisher gave as exact
)

// Publication is a validated, normalized request or offer: strings trimmed, defaults applied, phone parsed.
type Publication struct {
	Type string `json:"type"`
	Common
	Place
	PlaceRef
	// MunicipioCode is the DIVIPOLA municipio of placeCode, or of the listed place nearest to the coordinates.
	MunicipioCode string `json:"municipioCode,omitempty"`
	Needs
	CenterStatus
	// ContactE164 is contactWhatsapp parsed to E.164 (+573001234567).
	ContactE164 string `json:"contactE164"`
}

// FieldError names one violated constraint: a JSON pointer into the body and a Spanish message.
type FieldError struct {
	Field   string   `json:"field" jsonschema_description:"Puntero JSON (RFC 6901) al campo: del cuerpo (/latitude), de la consulta (/query/limit), de la ruta (/path/id) o de una cabecera (/header/Authorization)."`
	Message string   `json:"message" jsonschema_description:"Qué está mal, en español."`
	Allowed []string `json:"allowed,omitempty" jsonschema_description:"Valores permitidos, cuando aplica."`
}

// ErrorBody is the body of every error response.
type ErrorBody struct {
	Error   string       `json:"error" jsonschema_description:"Mensaje en español."`
	Code    string       `json:"code" enum:"errorCodes" jsonschema_description:"Código estable en inglés."`
	Details []FieldError `json:"details,omitempty" jsonschema:"maxItems=20" jsonschema_description:"Cada restricción violada, hasta 20 (las demás se cuentan en detailsOmitted)."`
	// DetailsOmitted bounds the answer to any request: a URL with thousands of unknown parameters must not
	// get an answer many times its size.
	DetailsOmitted int `json:"detailsOmitted,omitempty" jsonschema:"minimum=1" jsonschema_description:"Cuántas restricciones violadas más hay, además de las 20 de details. Ausente si details las lista todas."`
	// RecordStatus tells a 410 of a withdrawn record from one of a hidden record, which its publisher can
	// still withdraw.
	RecordStatus string `json:"recordStatus,omitempty" enum:"removed" jsonschema_description:"Solo en un 410 de un registro: withdrawn (retirado: sus datos personales se borraron) o hidden (oculto mientras se revisan reportes; quien lo publicó aún puede retirarlo)."`
}

// MaxDetails is how many details an error body lists at most.
const MaxDetails = 20

// Cap keeps the first MaxDetails details and counts the rest in DetailsOmitted.
func (e *ErrorBody) Cap() {
	if n := len(e.Details); n > MaxDetails {
		e.Details = e.Details[:MaxDetails:MaxDetails]
		e.DetailsOmitted += n - MaxDetails
	}
}

// PublishResult is the body of 200 and 201 answers to a publication.
type PublishResult struct {
	OK             bool       `json:"ok" jsonschema_description:"Siempre true en 200 y 201."`
	Duplicate      bool       `json:"duplicate" jsonschema_description:"true si el par (source, externalId) ya existía: no se creó nada."`
	ContentMatches *bool      `json:"contentMatches,omitempty" jsonschema_description:"Solo en duplicados: false si el contenido enviado difiere del guardado (el cambio NO se aplicó)."`
	ID             string     `json:"id" jsonschema_description:"Identificador del registro."`
	Type           string     `json:"type" `
	EmergencySlug  string     `json:"emergencySlug"`
	CreatedAt      time.Time  `json:"createdAt"`
	PublicURL      string     `json:"publicUrl" jsonschema:"format=uri" jsonschema_description:"Página pública del registro."`
	Status         string     `json:"status,omitempty" enum:"statuses" jsonschema_description:"Estado del registro guardado (un reintento después de retirarlo dice withdrawn: nunca se vuelve a publicar)."`
	ExpiresAt      *time.Time `json:"expiresAt,omitempty" jsonschema_description:"Mientras está abierta: cuándo vence si nadie la renueva. Al vencer deja las listas y su número ya no se muestra; con el manageToken, la acción renew la abre por otro plazo."`
	ManageToken    string     `json:"manageToken,omitempty" jsonschema_description:"Código para gestionar el registro (resolver, reabrir, renovar, retirar): se envía en la cabecera Authorization: Bearer. Solo en 201 y en reintentos con contentMatches true enviados desde la misma red que publicó (la misma dirección IPv4 o red IPv6 /64). Guárdelo: no se vuelve a mostrar en ninguna lectura."`
	ManageURL      string     `json:"manageUrl,omitempty" jsonschema:"format=uri" jsonschema_description:"Enlace para gestionar el registro en el sitio (el código va en el fragmento #, que no llega a ningún servidor)."`
	Warnings       []Warning  `json:"warnings,omitempty" jsonschema_description:"Avisos sobre lo publicado, que no impiden publicar: p. ej. un lugar muy lejos de la zona de la emergencia. Muéstrelos a la persona para que corrija si se equivocó."`
}

// Warning is something a publication may have got wrong that did not stop it.
type Warning struct {
	Code    string `json:"code" jsonschema:"enum=far_from_emergency,enum=place_far_from_point,enum=phone_in_text,enum=phone_disowned,enum=pair_taken,enum=pair_reused,enum=manage_token_withheld" jsonschema_description:"Código estable en inglés: far_from_emergency (el lugar está lejos de la zona de la emergencia), place_far_from_point (placeCode y las coordenadas dadas están lejos entre sí), phone_in_text (un texto tenía un número de teléfono, que se publica con sus cifras ocultas: •••), phone_disowned (alguien informó que contactWhatsapp no es de quien lo publica desde esta red, en las últimas 24 horas, o, en un reintento, que el número de esta publicación no es suyo: la publicación se muestra sin número), pair_taken (otra red ya publicó otro contenido con este source y externalId: lo enviado NO se guardó) pair_reused (esta misma red ya publicó otro contenido con este source y externalId: lo enviado NO se guardó; una publicación nueva lleva un externalId nuevo) o manage_token_withheld (un reintento del mismo contenido desde otra red que la que publicó: no trae manageToken; use el de la primera respuesta)."`
	Field   string `json:"field" jsonschema_description:"Puntero JSON al campo del cuerpo que lo causa."`
	Message string `json:"message" jsonschema_description:"El aviso en español, para mostrárselo a la persona: nombra los campos como ella los ve (field los nombra para los programas)."`
}

// CodeFarFromEmergency is the warning of a place far outside its emergency's area.
const CodeFarFromEmergency = "far_from_emergency"

// CodePlaceFarFromPoint is the warning of a placeCode far from the coordinates given with it.
const CodePlaceFarFromPoint = "place_far_from_point"

// CodePhoneInText is the warning of a phone number typed in a text, whose digits MaskPhones hid.
const CodePhoneInText = "phone_in_text"

// CodePairTaken is the warning of a retry that is no retry: another network published other content under
// the same (source, externalId) first, and what was sent was not stored.
const CodePairTaken = "pair_taken"

// CodePairReused is the warning of a retry that is no retry from the publisher's own network: other
// content under a (source, externalId) it published before (a reused externalId, a copied example), which
// was not stored.
const CodePairReused = "pair_reused"

// CodeManageTokenWithheld is the warning of a faithful retry from another network than the publisher's:
// it is answered without the manage token, which only the publisher's network gets again.
const CodeManageTokenWithheld = "manage_token_withheld"

// CodePhoneDisowned is the warning of a contactWhatsapp whose owner reported it as published without
// their consent (not_my_number): the publication is shown without it.
const CodePhoneDisowned = "phone_disowned"

// Links are the integration links of the discovery document and of each emergency.
type Links struct {
	Page     string `json:"page" jsonschema:"format=uri" jsonschema_description:"Página web."`
	Markdown string `json:"markdown" jsonschema:"format=uri" jsonschema_description:"Gemelo Markdown de la página."`
	Publish  string `json:"publish,omitempty" jsonschema:"format=uri" jsonschema_description:"Dónde publicar (POST)."`
}

// EmergencyInfo is an active emergency as discovery and listar_emergencias show it.
type EmergencyInfo struct {
	Slug       string `json:"slug" jsonschema_description:"Valor para emergencySlug."`
	Title      string `json:"title"`
	Summary    string `json:"summary,omitempty"`
	Location   string `json:"location,omitempty"`
	OccurredOn string `json:"occurredOn,omitempty" jsonschema:"format=date"`
	// Area names where the emergency is: DIVIPOLA codes of departamentos (2 digits) or municipios (5).
	Area []string `json:"area,omitempty" jsonschema_description:"Dónde es la emergencia: códigos DIVIPOLA de departamentos (2 dígitos) o municipios (5). Los lugares de esa zona salen primero al buscar por nombre, y una publicación muy lejos de ella recibe un aviso (warnings)."`
	// Lines are the phone lines to call in this emergency, as the operator listed them (the site shows
	// DefaultLines when there are none).
	Lines []PhoneLine `json:"lines,omitempty" jsonschema_description:"Líneas de teléfono para llamar en esta emergencia (rescate, salud), tal como las configuró quien opera el sitio."`
	Links Links       `json:"links"`
}

// PhoneLine is a phone line to call in an emergency: «Línea de emergencias», 123.
type PhoneLine struct {
	Name   string `json:"name"`
	Number string `json:"number" jsonschema:"minLength=3,maxLength=16,pattern=^\\+?[0-9]+$"`
}

// DefaultLines are the lines of an emergency whose operator listed none: Colombia's single emergency
// number.
var DefaultLines = []PhoneLine{{Name: "Línea de emergencias", Number: "123"}}

// RateLimit publishes a rate limit (one zone of the Caddyfile) so that integrators can plan retries.
type RateLimit struct {
	Events        int    `json:"events" jsonschema_description:"Solicitudes permitidas por ventana y por IP."`
	WindowSeconds int    `json:"windowSeconds"`
	Scope         string `json:"scope" jsonschema_description:"A qué se aplica el límite."`
}

// Discovery is the body of GET /api/public/v1/help.
type Discovery struct {
	Name                  string          `json:"name"`
	Version               string          `json:"version"`
	Public                bool            `json:"public"`
	Authentication        string          `json:"authentication" jsonschema:"enum=none"`
	Documentation         string          `json:"documentation" jsonschema:"format=uri"`
	DocumentationMarkdown string          `json:"documentationMarkdown" jsonschema:"format=uri"`
	OpenAPI               string          `json:"openapi" jsonschema:"format=uri"`
	MCP                   string          `json:"mcp" jsonschema:"format=uri"`
	LLMs                  string          `json:"llms" jsonschema:"format=uri"`
	Publish               string          `json:"publish" jsonschema:"format=uri" jsonschema_description:"POST aquí una solicitud o un ofrecimiento."`
	Places                string          `json:"places" jsonschema:"format=uri" jsonschema_description:"GET aquí con ?q=<nombre> (y emergencySlug): el código DIVIPOLA (placeCode) de un municipio o centro poblado, como buscar_lugar."`
	Capabilities          []string        `json:"capabilities"`
	RateLimit             *RateLimit      `json:"rateLimit,omitempty"`
	DetailRateLimit       *RateLimit      `json:"detailRateLimit,omitempty" jsonschema_description:"Límite de lecturas de un registro con su teléfono (view=detail), más estricto para que los números no se puedan recolectar."`
	ReportRateLimit       *RateLimit      `json:"reportRateLimit,omitempty" jsonschema_description:"Límite de reportes de la comunidad (POST /api/public/v1/help/{id}/reports y el formulario /reportar)."`
	ManageRateLimit       *RateLimit      `json:"manageRateLimit,omitempty" jsonschema_description:"Límite de acciones de quien publicó, con su código para gestionar (POST /api/public/v1/help/{id}/actions y el formulario /gestionar)."`
	RespondRateLimit      *RateLimit      `json:"respondRateLimit,omitempty" jsonschema_description:"Límite de respuestas «yo puedo ayudar» (POST /api/public/v1/help/{id}/responses y la herramienta MCP responder_solicitud)."`
	Emergencies           []EmergencyInfo `json:"emergencies"`
}
