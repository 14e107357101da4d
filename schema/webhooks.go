package schema

import (
	"strings"
	"time"
)

// The types of a webhook event (WebhookEvent.Type and the X-Directaid-Event header).
const (
	WebhookMatch    = "match"
	WebhookResponse = "response"
	WebhookStatus   = "status"
	WebhookExpiring = "expiring"
)

// WebhookEventTypes are the webhook event types, in the order the documentation gives them.
var WebhookEventTypes = []string{WebhookMatch, WebhookResponse, WebhookStatus, WebhookExpiring}

// The headers of a webhook delivery.
const (
	WebhookSignatureHeader = "X-Directaid-Signature" // sha256=<hex HMAC-SHA256 of "<timestamp>.<body>" under the webhook's secret>
	WebhookTimestampHeader = "X-Directaid-Timestamp" // Unix seconds when the attempt was signed
	WebhookEventIDHeader   = "X-Directaid-Event-Id"  // the event's id, the same on every attempt: a receiver drops repeats by it
	WebhookEventTypeHeader = "X-Directaid-Event"     // one of WebhookEventTypes
)

// WebhookEvent is the body directaid POSTs to an app's webhook about a record the app published.
type WebhookEvent struct {
	ID         string                `json:"id" jsonschema_description:"Id del evento: el mismo en cada intento de entrega (descarte los repetidos por él)."`
	Type       string                `json:"type" enum:"webhookEvents" jsonschema_description:"match: un registro nuevo del otro tipo puede responder al suyo; response: cambió el número de respuestas «yo puedo ayudar»; status: cambió el estado; expiring: vence en menos de 24 horas si no se renueva."`
	OccurredAt time.Time             `json:"occurredAt" jsonschema_description:"Cuándo ocurrió (UTC, RFC 3339)."`
	Record     WebhookRecord         `json:"record" jsonschema_description:"El registro publicado por la aplicación al que se refiere el evento."`
	Match      *WebhookMatchInfo     `json:"match,omitempty" jsonschema_description:"Solo en match: el registro que puede responder."`
	Response   *WebhookResponseCount `json:"response,omitempty" jsonschema_description:"Solo en response: cuántas respuestas activas tiene ahora. Los mensajes y números se leen con el manageToken (GET …/{id}/responses)."`
	Status     *WebhookStatusChange  `json:"status,omitempty" jsonschema_description:"Solo en status: el estado anterior y el nuevo."`
	Expiring   *WebhookExpiry        `json:"expiring,omitempty" jsonschema_description:"Solo en expiring: cuándo vence."`
}

// WebhookRecord is the record an event is about: what the app that published it knows of it already.
type WebhookRecord struct {
	ID         string `json:"id"`
	Source     string `json:"source"`
	ExternalID string `json:"externalId"`
	Status     string `json:"status" enum:"statuses"`
	URL        string `json:"url" jsonschema_description:"La página pública del registro."`
}

// WebhookMatchInfo is the new record of the other type that may answer the record.
type WebhookMatchInfo struct {
	ID         string   `json:"id"`
	URL        string   `json:"url"`
	DistanceKm *float64 `json:"distanceKm,omitempty" jsonschema_description:"Distancia en km, cuando los dos registros tienen un punto."`
	// Approximate tells a distance between places' points (two records of one village are 0 km apart,
	// which a bot must not read as «at the door»).
	Approximate bool `json:"approximate,omitempty" jsonschema_description:"true cuando el punto de uno de los dos registros es el de su lugar (placeCode, sin coordenadas): distanceKm es entre los puntos de los lugares, aproximada (0 si es el mismo lugar)."`
}

// WebhookResponseCount is how many active responses («yo puedo ayudar») the record has now.
type WebhookResponseCount struct {
	Count int `json:"count"`
}

// WebhookStatusChange is a change of status; From is absent when the earlier status was never seen.
type WebhookStatusChange struct {
	From string `json:"from,omitempty" enum:"statuses"`
	To   string `json:"to" enum:"statuses"`
}

// WebhookExpiry is when the open record expires unless renewed.
type WebhookExpiry struct {
	ExpiresAt time.Time `json:"expiresAt"`
}

func init() {
	wireTypes["WebhookEvent"] = &WebhookEvent{}
	namedEnums["webhookEvents"] = func() []string { return WebhookEventTypes }
}

// webhookItems documents the events directaid POSTs to the webhooks an operator configures (OpenAPI's
// top-level webhooks).
func webhookItems() map[string]any {
	header := func(name, desc string) map[string]any {
		return map[string]any{"name": name, "in": "header", "required": true, "description": desc, "schema": map[string]any{"type": "string"}}
	}
	return map[string]any{"helpEvent": map[string]any{"post": map[string]any{
		"operationId": "helpEvent", "tags": []string{"api"},
		"summary": "Evento de un registro publicado por una aplicación (webhook)",
		"description": "El operador configura en el Caddyfile un webhook por aplicación (webhook <url> { secret …; sources … }). directaid envía un POST cuando un registro publicado con uno de esos source tiene una coincidencia, una respuesta, un cambio de estado o está por vencer. " +
			"Al menos una vez, en orden por registro, reintentado con espera creciente durante un día mientras la respuesta no sea 2xx; una sola entrega por evento aunque haya varios nodos. " +
			"Verifique la firma: HMAC-SHA256, con el secreto del webhook, de «<" + WebhookTimestampHeader + ">.<cuerpo>», en hexadecimal tras «sha256=».",
		"parameters": []any{
			header(WebhookSignatureHeader, "sha256=<HMAC-SHA256 en hexadecimal de «<marca de tiempo>.<cuerpo>» con el secreto del webhook>."),
			header(WebhookTimestampHeader, "Segundos Unix en que se firmó este intento; rechace los muy antiguos."),
			header(WebhookEventIDHeader, "El id del evento, igual en cada intento."),
			header(WebhookEventTypeHeader, "El tipo del evento: "+strings.Join(WebhookEventTypes, ", ")+"."),
		},
		"requestBody": map[string]any{"required": true, "content": jsonBody(ref("WebhookEvent"))},
		"responses": map[string]any{
			"2XX":     map[string]any{"description": "Recibido: no se vuelve a enviar."},
			"default": map[string]any{"description": "Cualquier otra respuesta (o ninguna antes del tiempo límite): se reintenta."},
		},
	}}}
}
