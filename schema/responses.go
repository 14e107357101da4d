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
	ContactWhatsapp string `json:"contactWhatsapp,omitempty" jsonschema:"maxLength=40" jsonschema_description:"WhatsApp opcional de quien responde. Solo lo ve quien publicó; nunca se muestra en público."`
}

// RespondArgs is the input of the MCP tool responder_solicitud.
type RespondArgs struct {
	ID string `json:"id" jsonschema:"minLength=16,maxLength=16" jsonschema_description:"Id del registro (16 caracteres)."`
	ResponseInput
}

// ResponsesArgs is the input of the MCP tool ver_respuestas: a record and its manage token, as GET
// help/{id}/responses takes them.
type ResponsesArgs struct {
	ID          string `json:"id" jsonschema:"minLength=16,maxLength=16" jsonschema_description:"Id del registro (16 caracteres), el que recibió al publicarla."`
	ManageToken string `json:"manageToken" jsonschema:"minLength=1,maxLength=200" jsonschema_description:"El código para gestionar (manageToken) que recibió al publicarla. No lo muestre a nadie más."`
}

// ResponseActionArgs is the input of the MCP tool actualizar_respuesta: a response, its token and the
// action, as POST help/{id}/responses/{responseId}/actions takes them.
type ResponseActionArgs struct {
	ID            string `json:"id" jsonschema:"minLength=16,maxLength=16" jsonschema_description:"Id del registro al que se respondió (16 caracteres)."`
	ResponseID    string `json:"responseId" jsonschema:"minLength=1,maxLength=64" jsonschema_description:"Id de la respuesta (responseId), el que recibió al responder."`
	ResponseToken string `json:"responseToken" jsonschema:"minLength=1,maxLength=200" jsonschema_description:"El código de la respuesta (responseToken) que recibió al responder. No lo muestre a nadie más."`
	ResponseActionRequest
}

// ResponseCreated is the answer to a new response (201).
type ResponseCreated struct {
	OK            bool      `json:"ok" jsonschema_description:"Siempre true."`
	ID            string    `json:"id" jsonschema_description:"Id del registro al que responde."`
	ResponseID    string    `json:"responseId" jsonschema_description:"Id de la respuesta."`
	ResponseToken string    `json:"responseToken" jsonschema_description:"Código para renovar o retirar la respuesta (Authorization: Bearer <responseToken> en POST …/responses/{responseId}/actions). Solo se entrega ahora: guárdelo."`
	Status        string    `json:"status" jsonschema:"enum=active"`
	ExpiresAt     time.Time `json:"expiresAt" jsonschema_description:"Cuándo deja de contar la respuesta (48 horas) si no se renueva."`
	Duplicate     bool      `json:"duplicate,omitempty" jsonschema_description:"true (y HTTP 200) cuando la misma respuesta (mensaje, nombre y número) ya se había enviado desde la misma conexión en los últimos 10 minutos: se devuelve la guardada, con su responseToken; no se creó otra."`
	Counted       bool      `json:"counted" jsonschema_description:"true si la respuesta se suma al número público de personas que responden (responses, attended). false cuando desde la misma conexión ya se sumaron 20 respuestas en las últimas 48 horas: la respuesta llega igual a quien publicó."`
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
	Counted    bool       `json:"counted" jsonschema_description:"true si la respuesta se suma ahora al número público de personas que responden. Una renovación se suma dentro de lo que su conexión puede sumar (20 respuestas en 48 horas)."`
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

// responsesPathItems are the OpenAPI path items of a record's responses.
func responsesPathItems() map[string]any {
	rid := map[string]any{"name": "responseId", "in": "path", "required": true, "description": "Id de la respuesta (responseId).",
		"schema": map[string]any{"type": "string", "pattern": "^[0-9a-f]{16}$"}}
	withRID := func(op map[string]any) map[string]any {
		op = withIDParam(op)
		op["parameters"] = append(op["parameters"].([]any), rid)
		return op
	}
	collection := map[string]any{
		"post": withIDParam(map[string]any{
			"operationId": "respondToHelp", "tags": []string{"api"},
			"summary":     "Responder «yo puedo ayudar» a una publicación abierta",
			"description": "Cualquiera puede responder a una publicación abierta: a una solicitud («puedo ayudarle») o a un ofrecimiento («me interesa»). message es obligatorio; contactName y contactWhatsapp son opcionales (el teléfono con las mismas reglas que al publicar) y solo los ve quien publicó, con su manageToken: nunca aparecen en listas, detalles, páginas, exportaciones ni registros. El público ve solo el número de respuestas activas (responses en cada registro). La respuesta cuenta 48 horas; su autor la renueva o la retira con el responseToken (POST …/responses/{responseId}/actions). Resolver o retirar la publicación termina sus respuestas; retirarla las borra.",
			"requestBody": map[string]any{"required": true, "content": jsonBody(ref("ResponseInput"))},
			"responses": map[string]any{
				"200": map[string]any{"description": "La misma respuesta (mensaje, nombre y número) ya se había enviado desde esta conexión en los últimos 10 minutos: se devuelve la guardada con duplicate true y su mismo responseToken; no se creó otra.", "headers": hdrs("Cache-Control"), "content": jsonBody(ref("ResponseCreated"))},
				"201": map[string]any{"description": "Respuesta guardada: el responseToken solo se entrega ahora (y a un reintento de la misma respuesta en 10 minutos).", "headers": hdrs("Cache-Control"), "content": jsonBody(ref("ResponseCreated"))},
				"400": errResp("Datos inválidos (invalid_body con details por campo, invalid_json; invalid_parameter si el id no tiene la forma de un id o la URL trae parámetros)."),
				"404": errResp("No existe ese registro (not_found)."),
				"409": errResp("La publicación ya tiene 300 respuestas, las que guarda como máximo (too_many_responses): busque otra parecida que nadie haya respondido."),
				"410": errResp("La publicación no está abierta (resuelta, vencida, retirada u oculta): no recibe respuestas (gone)."),
				"413": errResp("Cuerpo de más de 64 KiB (body_too_large)."),
				"415": errResp(unsupportedMediaWords),
				"429": errResp("Límite temporal de respuestas alcanzado (rate_limited; el número está en respondRateLimit del descubrimiento: reintente tras Retry-After segundos), o esta red ya envió 3 respuestas distintas a esta publicación en 48 horas (network_share_spent: Retry-After dice cuándo se libera un lugar; quien quiera ayudar puede responder desde su propio teléfono).", "Retry-After"),
				"503": errResp("Servicio no disponible (unavailable). Reintente tras Retry-After segundos.", "Retry-After"),
			},
		}),
		"get": withIDParam(map[string]any{
			"operationId": "listHelpResponses", "tags": []string{"api"},
			"summary":     "Las respuestas a una publicación, para quien la publicó",
			"description": "Con el manageToken de la publicación en la cabecera Authorization: Bearer. Cada respuesta con su mensaje, nombre y WhatsApp (con enlace wa.me), las más recientes primero; las ocultas por reportes no aparecen.",
			"security":    []any{map[string]any{"manageToken": []any{}}},
			"responses": map[string]any{
				"200": map[string]any{"description": "Las respuestas.", "headers": hdrs("Cache-Control"), "content": jsonBody(ref("ResponseList"))},
				"400": errResp("La URL trae parámetros (invalid_parameter)."),
				"401": errResp("Falta la cabecera Authorization: Bearer <manageToken> (unauthorized). La respuesta es la misma exista o no el registro.", "WWW-Authenticate"),
				"403": errResp("El código no es válido o es de otro registro (forbidden): la misma respuesta que en …/actions, exista o no el registro."),
				"503": errResp("Servicio no disponible (unavailable).", "Retry-After"),
			},
		}),
		"options": withIDParam(preflight("preflightResponses")),
	}
	actions := map[string]any{
		"post": withRID(map[string]any{
			"operationId": "actOnResponse", "tags": []string{"api"},
			"summary":     "Acción de quien respondió: renovar o retirar su respuesta",
			"description": "Con el responseToken en la cabecera Authorization: Bearer. renew: la respuesta cuenta otras 48 horas desde ahora (también si ya venció, mientras la publicación siga abierta). withdraw: la retira y borra el mensaje, el nombre y el teléfono. Repetir withdraw responde 200 con changed false.",
			"security":    []any{map[string]any{"responseToken": []any{}}},
			"requestBody": map[string]any{"required": true, "content": jsonBody(ref("ResponseActionRequest"))},
			"responses": map[string]any{
				"200": map[string]any{"description": "Hecho (o ya estaba hecho: changed false).", "headers": hdrs("Cache-Control"), "content": jsonBody(ref("ResponseActionResult"))},
				"400": errResp("Acción desconocida o cuerpo inválido (invalid_body, invalid_json)."),
				"401": errResp("Falta la cabecera Authorization: Bearer <responseToken> (unauthorized).", "WWW-Authenticate"),
				"403": errResp("El código no es el de esa respuesta (forbidden), exista o no."),
				"409": errResp("La respuesta o la publicación ya no admite renovarse (invalid_transition)."),
				"413": errResp("Cuerpo de más de 64 KiB (body_too_large)."),
				"415": errResp(unsupportedMediaWords),
				"429": errResp("Límite de acciones por IP alcanzado (rate_limited, zona manage).", "Retry-After"),
				"503": errResp("Servicio no disponible (unavailable).", "Retry-After"),
			},
		}),
		"options": withRID(preflight("preflightResponseActions")),
	}
	reports := map[string]any{
		"post": withRID(map[string]any{
			"operationId": "reportResponse", "tags": []string{"api"},
			"summary":     "Reportar una respuesta",
			"description": "Como los reportes de registros: quien reporta cuenta una vez (hash con clave de su IP). Cuando varias personas distintas la reportan (3 por omisión, hide_after_reports), la respuesta deja de contar y de mostrarse a quien publicó, dentro de un límite por emergencia (0,5 % de sus registros por hora, al menos 3): pasado ese límite, el reporte se cuenta sin ocultar nada (outcome queued).",
			"requestBody": map[string]any{"required": true, "content": jsonBody(ref("ReportInput"))},
			"responses": map[string]any{
				"202": map[string]any{"description": "Reporte registrado.", "headers": hdrs("Cache-Control"), "content": jsonBody(ref("ReportResult"))},
				"400": errResp("Datos inválidos (invalid_body, invalid_json; invalid_parameter si un id no tiene la forma de un id)."),
				"404": errResp("No existe esa respuesta (not_found)."),
				"410": errResp("La respuesta fue retirada o ya está oculta (gone)."),
				"413": errResp("Cuerpo de más de 64 KiB (body_too_large)."),
				"415": errResp(unsupportedMediaWords),
				"429": errResp("Límite temporal de reportes alcanzado (rate_limited, zona report).", "Retry-After"),
				"503": errResp("Servicio no disponible (unavailable).", "Retry-After"),
			},
		}),
		"options": withRID(preflight("preflightResponseReports")),
	}
	return map[string]any{
		HelpPath + "/{id}" + ResponsesSuffix:                                   collection,
		HelpPath + "/{id}" + ResponsesSuffix + "/{responseId}" + ActionsSuffix: actions,
		HelpPath + "/{id}" + ResponsesSuffix + "/{responseId}" + ReportsSuffix: reports,
	}
}

// RespondFormPath is where the site's «Yo puedo ayudar» form of the record pages posts (the respond
// zone's), and ResponseFormPath where its confirmation's buttons renew or withdraw the response (the
// manage zone's).
const (
	RespondFormPath  = "/responder"
	ResponseFormPath = "/mi-respuesta"
)

var exampleResponseID = "3f9a1c0b7d2e4a61"

// addResponsesExamples adds the responses' operations' examples to ex (they name no emergency).
func addResponsesExamples(ex map[string]OperationExample) {
	exp := exampleTime.Add(ResponseTTL)
	ex["respondToHelp"] = OperationExample{
		Request: []Example{{Name: "puedo-ayudar", Summary: "Ofrecer ayuda a una solicitud, con WhatsApp solo para quien publicó", Status: "201",
			Value: ResponseInput{Message: "Tengo insulina refrigerada; puedo llevarla hoy en la tarde.", ContactName: "Luis", ContactWhatsapp: "+57 310 555 0101"}}},
		Responses: map[string][]Example{"201": {{Name: "guardada", Value: ResponseCreated{OK: true, ID: exampleID, ResponseID: exampleResponseID,
			ResponseToken: "q8Zt1m2R3x4Y5w6V7u8T9s0R1q2P3o4N5m6L7k8J9i0", Status: ResponseActive, ExpiresAt: exp, Counted: true,
			Message: "Gracias: quien publicó verá su mensaje y su WhatsApp. La respuesta cuenta 48 horas; renuévela o retírela con el responseToken."}}},
			"200": {{Name: "reintento", Summary: "La misma respuesta enviada otra vez en 10 minutos: la guardada", Value: ResponseCreated{OK: true, ID: exampleID,
				ResponseID: exampleResponseID, ResponseToken: "q8Zt1m2R3x4Y5w6V7u8T9s0R1q2P3o4N5m6L7k8J9i0", Status: ResponseActive, ExpiresAt: exp,
				Counted: true, Duplicate: true,
				Message: "Esta respuesta ya se había enviado: no se creó otra. Quien publicó verá su mensaje y su WhatsApp; este es el mismo responseToken para renovarla o retirarla."}}},
			"429": {{Name: CodeNetworkShareSpent, Summary: "La cuarta respuesta distinta desde una misma red a la misma publicación en 48 horas", Value: ErrorBody{Code: CodeNetworkShareSpent,
				Error: "Desde su conexión ya se enviaron 3 respuestas a esta publicación en las últimas 48 horas, las que admite de una misma red: quien la publicó ya las tiene. Si alguien más quiere ayudar, que responda desde su propio teléfono (sus datos móviles)."}},
				{Name: CodeRateLimited, Summary: "El límite de respuestas por minuto (zona respond)", Value: ErrorBody{Code: CodeRateLimited,
					Error: "Límite temporal de respuestas alcanzado: espere 12 segundos (Retry-After) y reintente."}}},
			"409": {{Name: CodeTooManyResponses, Summary: "La publicación ya guarda el máximo de respuestas", Value: ErrorBody{Code: CodeTooManyResponses,
				Error: "Esta publicación ya recibió 300 respuestas, las que guarda como máximo: quien la publicó ya tiene muchas para revisar. Busque otra parecida que nadie haya respondido todavía (attended=false en la lista)."}}}},
	}
	ex["listHelpResponses"] = OperationExample{Responses: map[string][]Example{"200": {{Name: "respuestas",
		Value: ResponseList{ID: exampleID, Active: 1, Items: []ResponseView{{ResponseID: exampleResponseID, CreatedAt: exampleTime, ExpiresAt: exp,
			Status: ResponseActive, Message: "Tengo insulina refrigerada; puedo llevarla hoy en la tarde.", ContactName: "Luis",
			ContactWhatsapp: "+57 310 555 0101", WhatsappURL: "https://wa.me/573105550101"}}}}}}}
	ex["actOnResponse"] = OperationExample{
		Request: []Example{{Name: "renovar", Summary: "Renovar por 48 horas más (sin Authorization: Bearer <responseToken> responde 401)", Status: "401",
			Value: ResponseActionRequest{Action: ResponseActionRenew}}},
		Responses: map[string][]Example{"200": {{Name: "renovada", Value: ResponseActionResult{OK: true, ID: exampleID, ResponseID: exampleResponseID,
			Action: ResponseActionRenew, Changed: true, Status: ResponseActive, ExpiresAt: &exp, Counted: true}}}},
	}
	ex["reportResponse"] = OperationExample{
		Request: []Example{{Name: "spam", Summary: "Reportar una respuesta engañosa", Status: "202", Value: ReportInput{Reason: "spam"}}},
		Responses: map[string][]Example{"202": {{Name: "registrado", Value: ReportResult{OK: true, ID: exampleID, Reason: "spam", Outcome: ReportCounted,
			Message: "Gracias: el reporte de la respuesta quedó registrado."}}}},
	}
}
