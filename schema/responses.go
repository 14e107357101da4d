package schema

import (
	"strings"
	"time"
)

// Responses ("yo puedo ayudar"): a person tells the publisher of an open record that they can help,
// with a message and, if they want, a name and a WhatsApp number that only the publisher sees.

// ResponsesSuffix follows HelpPath + "/{id}" in the path of a record's responses.
const ResponsesSuffix = "/responses"

// MaxResponseMessageRunes bounds a response's message.
const MaxResponseMessageRunes = 300

// ResponseTTL is how long a response stays active unless its author renews it.
const ResponseTTL = 48 * time.Hour

// The actions of a response's author (POST …/responses/{responseId}/actions with the responseToken).
const (
	ResponseActionRenew    = "renew"
	ResponseActionWithdraw = "withdraw"
)

// ResponseActions lists the actions of a response's author.
var ResponseActions = []string{ResponseActionRenew, ResponseActionWithdraw}

// The statuses of a response. Only an active one before its expiresAt counts; the others stay for the
// publisher's history until the record is erased.
const (
	ResponseActive    = "active"
	ResponseWithdrawn = "withdrawn" // by its author
	ResponseEnded     = "ended"     // the record was resolved, withdrawn, hidden or expired
	ResponseHidden    = "hidden"    // reported by several people
)

// ResponsesPath is the path of the responses of record id.
func ResponsesPath(id string) string { return HelpPath + "/" + id + ResponsesSuffix }

// ResponsePath splits a path under HelpPath + "/{id}" + ResponsesSuffix: the record id, then what follows
// (empty for the collection; "{responseId}/actions" or "{responseId}/reports" below it).
func ResponsePath(path string) (id, rest string, ok bool) {
	r, ok := strings.CutPrefix(path, HelpPath+"/")
	if !ok {
		return "", "", false
	}
	id, r, ok = strings.Cut(r, "/")
	if !ok || id == "" {
		return "", "", false
	}
	if r == ResponsesSuffix[1:] {
		return id, "", true
	}
	rest, ok = strings.CutPrefix(r, ResponsesSuffix[1:]+"/")
	return id, rest, ok && rest != ""
}

// ResponseInput is the body of POST …/{id}/responses.
type ResponseInput struct {
	Message         string `json:"message" jsonschema:"minLength=1,maxLength=300,pattern=^[^\\x00-\\x08\\x0b\\x0c\\x0e-\\x1f\\x7f-\\x9f]*$" jsonschema_description:"Qué puede hacer y cuándo (máximo 300 caracteres). Solo lo ve quien publicó."`
	ContactName     string `json:"contactName,omitempty" jsonschema:"maxLength=100,pattern=^[^\\x00-\\x1f\\x7f-\\x9f]*$" jsonschema_description:"Nombre opcional de quien responde. Solo lo ve quien publicó."`
	ContactWhatsapp string `json:"contactWhatsapp,omitempty" jsonschema:"maxLength=40" jsonschema_description:"WhatsApp opcional de quien responde, con las mismas reglas que al publicar (ejemplo: +57 300 123 4567 o 3001234567). Solo lo ve quien publicó; nunca se muestra en público."`
}

// RespondArgs is the input of the MCP tool responder_solicitud.
type RespondArgs struct {
	ID string `json:"id" jsonschema:"minLength=16,maxLength=16" jsonschema_description:"Id del registro (16 caracteres)."`
	ResponseInput
}

// ResponseCreated is the answer to a new response (201).
type ResponseCreated struct {
	OK            bool      `json:"ok" jsonschema_description:"Siempre true."`
	ID            string    `json:"id" jsonschema_description:"Id del registro al que responde."`
	ResponseID    string    `json:"responseId" jsonschema_description:"Id de la respuesta."`
	ResponseToken string    `json:"responseToken" jsonschema_description:"Código para renovar o retirar la respuesta (Authorization: Bearer <responseToken> en POST …/responses/{responseId}/actions). Solo se entrega ahora: guárdelo."`
	Status        string    `json:"status" jsonschema:"enum=active"`
	ExpiresAt     time.Time `json:"expiresAt" jsonschema_description:"Cuándo deja de contar la respuesta (48 horas) si no se renueva."`
	Message       string    `json:"message" jsonschema_description:"Qué pasa ahora, en español."`
}

// ResponseActionRequest is the body of POST …/responses/{responseId}/actions.
type ResponseActionRequest struct {
	Action string `json:"action" jsonschema:"enum=renew,enum=withdraw" jsonschema_description:"renew: la respuesta cuenta otras 48 horas. withdraw: retirarla; el mensaje, el nombre y el teléfono se borran."`
}

// ResponseActionResult is the answer to an author's action on a response.
type ResponseActionResult struct {
	OK         bool       `json:"ok" jsonschema_description:"Siempre true en 200."`
	ID         string     `json:"id" jsonschema_description:"Id del registro."`
	ResponseID string     `json:"responseId"`
	Action     string     `json:"action" jsonschema:"enum=renew,enum=withdraw"`
	Changed    bool       `json:"changed" jsonschema_description:"false si la respuesta ya estaba así."`
	Status     string     `json:"status" jsonschema:"enum=active,enum=withdrawn,enum=ended,enum=hidden"`
	ExpiresAt  *time.Time `json:"expiresAt,omitempty" jsonschema_description:"Cuándo deja de contar, mientras está activa."`
}

// ResponseView is one response as the publisher sees it (GET …/{id}/responses with the manage token).
type ResponseView struct {
	ResponseID      string    `json:"responseId"`
	CreatedAt       time.Time `json:"createdAt"`
	ExpiresAt       time.Time `json:"expiresAt"`
	Status          string    `json:"status" jsonschema:"enum=active,enum=expired,enum=withdrawn,enum=ended" jsonschema_description:"active: cuenta hasta expiresAt; expired: pasó expiresAt sin renovarse; withdrawn: la retiró su autor; ended: la publicación se resolvió o retiró."`
	Message         string    `json:"message,omitempty"`
	ContactName     string    `json:"contactName,omitempty"`
	ContactWhatsapp string    `json:"contactWhatsapp,omitempty" jsonschema_description:"El número tal como lo escribió quien responde."`
	WhatsappURL     string    `json:"whatsappUrl,omitempty" jsonschema:"format=uri" jsonschema_description:"Enlace wa.me para escribirle."`
}

// ResponseList is the publisher's view of a record's responses.
type ResponseList struct {
	ID     string         `json:"id"`
	Active int            `json:"active" jsonschema_description:"Respuestas que cuentan ahora (el número público responses)."`
	Items  []ResponseView `json:"items" jsonschema_description:"Las respuestas, las más recientes primero; las ocultas por reportes no aparecen."`
}

// ResponseStatusExpired is how a response past its expiresAt reads, stored active or not.
const ResponseStatusExpired = "expired"

// NormalizePhone parses a phone as publishing does: its E.164 form, or the error of /contactWhatsapp.
func NormalizePhone(s string) (string, *FieldError) { return parsePhone(s, true) }

// WhatsappURL is the wa.me link of an E.164 number.
func WhatsappURL(e164 string) string { return "https://wa.me/" + strings.TrimPrefix(e164, "+") }

func init() {
	wireTypes["ResponseInput"] = &ResponseInput{}
	wireTypes["ResponseCreated"] = &ResponseCreated{}
	wireTypes["ResponseActionRequest"] = &ResponseActionRequest{}
	wireTypes["ResponseActionResult"] = &ResponseActionResult{}
	wireTypes["ResponseList"] = &ResponseList{}
}
