package schema

import (
	"fmt"
	"time"
)

// The live feed: GET EventsPath, a stream of Server-Sent Events.

// The events of the live feed (the SSE `event:` field).
const (
	// EventPublished carries a record new to the feed (its first version) in the list-item shape. A
	// record changed again before the feed read it comes first as EventUpdated (or EventRemoved).
	EventPublished = "published"
	// EventUpdated carries a later version of a record in the list-item shape.
	EventUpdated = "updated"
	// EventRemoved carries a FeedRemoved: the record left what the filters select.
	EventRemoved = "removed"
	// EventReconnect is the last event of a stream the server ends: resume with lastEventId.
	EventReconnect = "reconnect"
)

// Codes of a reconnect event and of the feed's refusals.
const (
	CodeFeedBehind     = "feed_behind"      // the subscriber did not read fast enough
	CodeFeedClosing    = "feed_closing"     // the server is reloading or stopping
	CodeFeedShared     = "feed_shared"      // a full node ended the oldest stream of a client with more than others
	CodeCursorTooOld   = "cursor_too_old"   // 410: too many changes to replay since the cursor
	CodeTooManyStreams = "too_many_streams" // 429: the client address has its streams open
)

// FeedMaxReplay is how many changes a resumed stream replays at most (after the filters the stores
// apply: emergency, type, category, urgency); a cursor further behind is answered 410 cursor_too_old.
const FeedMaxReplay = 10000

// FeedRemoved is the data of a removed event: the record was withdrawn or hidden, or (with status) its
// status is no longer the one asked for. It has no content.
type FeedRemoved struct {
	ID        string    `json:"id"`
	Status    string    `json:"status" jsonschema:"enum=open,enum=resolved,enum=withdrawn,enum=expired,enum=hidden"`
	UpdatedAt time.Time `json:"updatedAt"`
}

// FeedReconnect is the data of the reconnect event that ends a stream.
type FeedReconnect struct {
	Code        string `json:"code" jsonschema:"enum=feed_behind,enum=feed_closing,enum=feed_shared"`
	Error       string `json:"error"`
	LastEventID string `json:"lastEventId" jsonschema_description:"El id del último evento de este flujo: reconéctese con la cabecera Last-Event-ID (o since) con este valor."`
}

func init() {
	wireTypes["FeedRemoved"] = &FeedRemoved{}
	wireTypes["FeedReconnect"] = &FeedReconnect{}
}

// feedQueryParameters are the parameters of the live feed: the list's filters and since, described as
// for the list.
func feedQueryParameters() []any {
	var out []any
	for _, p := range helpQueryParameters() {
		name := p.(map[string]any)["name"].(string)
		switch name {
		case "emergencySlug", "type", "category", "urgency", "municipio", "latitude", "longitude", "radiusKm":
			out = append(out, p)
		case "status":
			m := p.(map[string]any)
			m["description"] = "Sin status llegan los cambios de todos los estados (retirados y ocultos como removed). Con status (open, resolved o expired), un registro que pasa a otro estado llega como removed."
			m["schema"] = map[string]any{"type": "string", "enum": ListedStatuses}
			out = append(out, m)
		case "since":
			m := p.(map[string]any)
			m["description"] = "Reanudar: el id de un evento (2026-08-11T14:30:00.123Z~01k2x3y4z5a6b7c8) o un instante RFC 3339; el flujo repite primero los cambios posteriores (a lo sumo " + fmt.Sprint(FeedMaxReplay) + ") y sigue en vivo, sin huecos ni repetidos. La cabecera Last-Event-ID, que un navegador envía al reconectarse, tiene prioridad."
			out = append(out, m)
		}
	}
	return append(out, map[string]any{"name": "Last-Event-ID", "in": "header", "required": false,
		"description": "El id del último evento recibido (lo envía EventSource al reconectarse): el flujo sigue después de ese cambio.", "schema": map[string]any{"type": "string", "maxLength": 60}})
}

// eventsPathItem is the OpenAPI path item of the live feed.
func eventsPathItem() map[string]any {
	get := map[string]any{
		"operationId": "helpEvents", "tags": []string{"api"},
		"summary": "Flujo en vivo de cambios (Server-Sent Events) con los filtros de la lista",
		"description": "Un flujo text/event-stream. Eventos: published (un registro nuevo: data es un elemento de lista, como en view=list, con el nombre de contacto y nunca el teléfono), updated (una versión posterior del registro, igual forma), removed (data FeedRemoved: el registro fue retirado u ocultado o, con status, ya no está en ese estado; sin contenido) y reconnect (data FeedReconnect: el servidor cierra el flujo porque el cliente no leía a tiempo, code feed_behind, o porque se reinicia, code feed_closing, o porque el nodo tenía todos sus flujos abiertos y este cliente más que otros, code feed_shared; reconéctese con Last-Event-ID igual a lastEventId).\n\n" +
			"Cada evento lleva un id (id:) que nombra su cambio: vale como Last-Event-ID para reanudar sin huecos ni repetidos y como since de view=list. El primer bloque del flujo es retry: y el id de la posición de partida. Cada 15 s llega un comentario (: ping), a veces con un id más reciente, para que los proxies no cierren la conexión.\n\n" +
			"Funciona con varios nodos sobre PostgreSQL: cada nodo lee el registro de cambios compartido cada 250 ms. Límites: " + "4 flujos abiertos por cliente, una dirección IPv4 o una red IPv6 /64 (429 too_many_streams), y 1000 por nodo (503; un nodo lleno cierra el flujo más antiguo del cliente que tiene más, si tiene al menos dos más que quien llega), configurables en el Caddyfile (directaid { feed { streams_per_client, streams } }).",
		"parameters": feedQueryParameters(),
		"responses": map[string]any{
			"200": map[string]any{
				"description": "El flujo de eventos (no termina mientras el cliente lo lea).",
				"headers":     hdrs("Cache-Control"),
				"content": map[string]any{"text/event-stream": map[string]any{"schema": map[string]any{"type": "string",
					"description": "Bloques separados por una línea vacía: id: <posición>, event: published|updated|removed|reconnect, data: <JSON>. data de published y updated: PublicHelp; de removed: FeedRemoved; de reconnect: FeedReconnect."}}},
			},
			"400": errResp("Parámetro inválido (invalid_parameter): details nombra cada uno como /query/<nombre> o /header/Last-Event-ID."),
			"410": errResp("Reanudación demasiado atrás (cursor_too_old): más de " + fmt.Sprint(FeedMaxReplay) + " cambios después de ese id; sincronice con view=list&since=<id> y vuelva a suscribirse."),
			"429": errResp("Esta dirección ya tiene abiertos todos los flujos que admite (too_many_streams).", "Retry-After"),
			"500": errResp("Error interno (internal_error)."),
			"503": errResp("El nodo tiene abiertos todos los flujos que admite, se está reiniciando o la base de datos no responde (unavailable).", "Retry-After"),
		},
	}
	pre := preflight("preflightHelpEvents")
	return map[string]any{"get": get, "options": pre}
}
