package schema

import (
	"encoding/json"
	"fmt"
	"time"
)

// Examples of the OpenAPI document, built from the wire structs and marshalled, so that a tool or a
// person can start from a body that works. An operation declares its examples by its operationId in
// operationExamples; an answer whose schema is Error or JSONRPCError gets one by its status code
// (ErrorExamples). TestEveryOperationHasExamples fails for an operation without them, and the e2e test
// TestOpenAPIExamplesWork sends every request example to the server and expects its status.

// Example is one named example of an operation: a request body (with Status, the answer it gets from
// the server that serves the document, whose first active emergency the examples name) or an answer.
type Example struct {
	Name, Summary string
	Status        string // request examples only: the status the server answers
	Value         any
}

// OperationExample holds an operation's examples: of its request body, and of each JSON answer by status.
type OperationExample struct {
	Request []Example
	// Query are examples of a GET's query string (Value is the string, without "?"), sent by the e2e
	// test like the request examples: the document carries them as x-query-examples.
	Query     []Example
	Responses map[string][]Example
}

var exampleTime = time.Date(2026, 8, 11, 14, 30, 0, 0, time.UTC)

func examplePhone() string { return PhoneExamples[0] }

// ExampleEmergency is the emergency the examples publish into: the serving server's first active one,
// so that a tool that follows the document gets the documented answers.
type ExampleEmergency struct{ Slug, Title string }

// DefaultExampleEmergency is the examples' emergency in a document built without a server's emergencies.
var DefaultExampleEmergency = ExampleEmergency{Slug: "eje-cafetero", Title: "Terremoto en el Eje Cafetero"}

func exampleRequest(em ExampleEmergency) Request {
	lat, lon, people := 4.5339, -75.6811, 4
	return Request{Type: TypeRequest, Common: Common{Source: "bot-whatsapp-cruz-roja", ExternalID: "wa-2026-000123", EmergencySlug: em.Slug,
		Content: Content{Title: "Agua potable para 4 personas", Description: "Familia con dos niños, sin agua desde el sismo. La casa está en pie.",
			Category: "alimentos"}, ContactName: "Ana Gómez", ContactWhatsapp: examplePhone(), PublishContact: true},
		Address: "Cra 14 # 20-31", Neighborhood: "Centro", Latitude: &lat, Longitude: &lon, Needs: Needs{Urgency: "urgent", NeededPeople: &people}}
}

func exampleOffer(em ExampleEmergency) Offer {
	return Offer{Type: TypeOffer, Common: Common{Source: "formulario-parroquia", ExternalID: "of-778", EmergencySlug: em.Slug,
		Content: Content{Title: "Centro de acopio recibe donaciones", Description: "Recibimos agua, mercados y cobijas de 8 a. m. a 6 p. m.",
			Category: "acopio"}, ContactName: "Parroquia San José", ContactWhatsapp: "+57 310 987 6543", PublishContact: true},
		Address: "Calle 20 # 15-10, Armenia", CenterStatus: CenterStatus{CollectionCenterStatus: "needs_volunteers"}}
}

const exampleID = "01k2x3y4z5a6b7c8"

func examplePublished(em ExampleEmergency, duplicate bool) PublishResult {
	r := PublishResult{OK: true, Duplicate: duplicate, ID: exampleID, Type: TypeRequest, EmergencySlug: em.Slug,
		CreatedAt: exampleTime, PublicURL: "https://ayuda.example.org" + RecordPathPrefix + exampleID}
	expires := exampleTime.Add(14 * 24 * time.Hour)
	r.Status, r.ExpiresAt = StatusOpen, &expires
	if duplicate {
		matches := true
		r.ContentMatches = &matches
	}
	return r
}

// APICapabilities are the discovery capabilities that no MCP tool stands for (the tools' come first).
var APICapabilities = []string{"idempotent_publish", "mcp", "openapi", "markdown_twins", "list_help", "geo_search", "csv_hxl_export", "geojson_export"}

func exampleDiscovery(em ExampleEmergency) Discovery {
	base := "https://ayuda.example.org"
	return Discovery{Name: "directaid", Version: APIVersion, Public: true, Authentication: "none",
		Documentation: base + "/integraciones", DocumentationMarkdown: base + "/integraciones.md", OpenAPI: base + OpenAPIPath,
		MCP: base + MCPPath, LLMs: base + "/llms.txt", Publish: base + HelpPath, Places: base + PlaceSearchPath,
		Capabilities: append([]string{"list_emergencies", "find_place", "publish_request", "publish_offer", "search_help", "help_detail"}, APICapabilities...),
		RateLimit:    &RateLimit{Events: 60, WindowSeconds: 60, Scope: "publicaciones por cliente (una dirección IPv4 o una red IPv6 /64)"},
		Emergencies:  []EmergencyInfo{{Slug: em.Slug, Title: em.Title, Links: EmergencyLinks(base, em.Slug)}},
	}
}

// ErrorExamples are the error bodies shown for each status whose answer is an Error.
var ErrorExamples = map[string]ErrorBody{
	"400": {Code: CodeInvalidBody, Error: "Datos inválidos: «latitude» debe ser menor o igual que 13.6.",
		Details: []FieldError{{Field: "/latitude", Message: "«latitude» debe ser menor o igual que 13.6"}}},
	"401": {Code: CodeUnauthorized, Error: "Falta el código para gestionar esta publicación: envíelo en la cabecera Authorization: Bearer <manageToken>, el que recibió al publicarla.",
		Details: []FieldError{{Field: "/header/Authorization", Message: "falta «Authorization: Bearer <manageToken>»"}}},
	"403": {Code: CodeForbidden, Error: "El código para gestionar esta publicación no es válido. Use el enlace o el código que recibió al publicarla."},
	"409": {Code: CodeInvalidTransition, Error: "La publicación está retirada: no se puede reabrir."},
	"404": {Code: CodeNotFound, Error: "No existe ningún registro con id \"" + exampleID + "\"."},
	"410": {Code: CodeGone, Error: "Esta publicación fue retirada (por quien la publicó o por el operador) y sus datos personales se borraron.", RecordStatus: StatusWithdrawn},
	"405": {Code: CodeMethodNotAllowed, Error: "Método no permitido en esta ruta."},
	"413": {Code: CodeBodyTooLarge, Error: "El cuerpo supera los 64 KiB."},
	"415": {Code: CodeUnsupportedMediaType, Error: "Envíe el cuerpo con Content-Type: application/json."},
	"429": {Code: CodeRateLimited, Error: "Límite temporal alcanzado: espere 60 segundos (Retry-After) y reintente."},
	"500": {Code: CodeInternalError, Error: "Error interno: reintente con el mismo externalId."},
	"503": {Code: CodeUnavailable, Error: "Servicio no disponible por un momento: reintente tras Retry-After segundos."},
}

// operationExamples are the examples of each operation, by operationId, about the emergency em.
func operationExamples(em ExampleEmergency) map[string]OperationExample {
	return map[string]OperationExample{
		"publishHelp": {
			Request: []Example{
				{Name: "solicitud", Summary: "Una solicitud de ayuda", Status: "201", Value: exampleRequest(em)},
				{Name: "ofrecimiento", Summary: "Un ofrecimiento de ayuda", Status: "201", Value: exampleOffer(em)},
			},
			Responses: map[string][]Example{
				"201": {{Name: "publicado", Value: examplePublished(em, false)}},
				"200": {{Name: "reintento", Summary: "El par (source, externalId) ya existía", Value: examplePublished(em, true)}},
				"429": {{Name: CodeRateLimited, Summary: "El límite de publicaciones (zona publish)", Value: ErrorBody{Code: CodeRateLimited,
					Error: "Límite temporal de publicaciones alcanzado: espere 60 segundos (Retry-After) y reintente con el mismo externalId."}}},
			},
		},
		"helpEvents": {Responses: map[string][]Example{"429": {{Name: CodeTooManyStreams, Value: ErrorBody{Code: CodeTooManyStreams,
			Error: "Esta dirección ya tiene 4 flujos de eventos abiertos, el máximo: cierre uno antes de abrir otro."}}},
			"410": {{Name: CodeCursorTooOld, Value: ErrorBody{Code: CodeCursorTooOld, Error: fmt.Sprintf("No se puede reanudar desde esa posición: hay más de %d cambios que repetir. "+
				"Póngase al día con view=list&since=<id> y vuelva a suscribirse desde su último cambio.", FeedMaxReplay)}}}}},
		"reportHelp": {
			Request: []Example{{Name: "fraude", Summary: "Reportar una publicación que pide dinero", Status: "202",
				Value: ReportInput{Reason: "fraud", Note: "Piden una consignación antes de entregar la ayuda."}}},
			Responses: map[string][]Example{"202": {{Name: "registrado", Value: ReportResult{OK: true, ID: exampleID, Reason: "fraud", Outcome: ReportCounted,
				Message: "Gracias: el reporte quedó registrado y lo revisará quien opera el servicio."}},
				{Name: "en-cola", Summary: "Un reporte que habría ocultado un teléfono, retenido por los límites contra el abuso", Value: ReportResult{OK: true, ID: exampleID,
					Reason: "not_my_number", Outcome: ReportQueued,
					Message: "Gracias: el reporte quedó registrado. Por ahora no se oculta nada automáticamente (hubo muchos reportes recientes): lo decidirá quien opera el servicio, en cuanto lo revise."}}}},
		},
		"actOnHelp": {
			Request: []Example{{Name: "resolver", Summary: "Marcar como resuelta (sin Authorization: Bearer <manageToken> responde 401)", Status: "401",
				Value: ActionRequest{Action: ActionResolve}}},
			Responses: map[string][]Example{"200": {{Name: "resuelta", Value: ActionResult{OK: true, ID: exampleID, Action: ActionResolve, Changed: true,
				Status: StatusResolved, UpdatedAt: exampleTime, PublicURL: "https://ayuda.example.org" + RecordPathPrefix + exampleID}}}},
		},
		"getHelp": {Responses: map[string][]Example{
			"200": {{Name: "descubrimiento", Summary: "Sin view: el documento de descubrimiento", Value: exampleDiscovery(em)}},
		}},
		"getHelpMatches": matchesExamples(em),
		"findPlaces":     placesExamples(em),
		"getOpenAPI": {Responses: map[string][]Example{
			"200": {{Name: "documento", Summary: "El comienzo de este documento", Value: map[string]any{"openapi": "3.1.0", "info": map[string]any{"title": "directaid", "version": APIVersion}}}},
		}},
		"mcp": {
			Request: []Example{
				{Name: "ping", Status: "200", Value: map[string]any{"jsonrpc": "2.0", "id": 1, "method": "ping"}},
				{Name: "tools/list", Status: "200", Value: map[string]any{"jsonrpc": "2.0", "id": 2, "method": "tools/list"}},
				{Name: "notificación", Summary: "Una notificación no tiene respuesta", Status: "202", Value: map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"}},
			},
			Responses: map[string][]Example{
				"200": {{Name: "ping", Value: map[string]any{"jsonrpc": "2.0", "id": 1, "result": map[string]any{}}}},
			},
		},
	}
}

// rpcErrorExample is the example of a JSONRPCError answer.
var rpcErrorExample = map[string]any{"jsonrpc": "2.0", "id": nil, "error": map[string]any{"code": -32600,
	"message": "Mensaje JSON-RPC inválido: «id» debe ser un texto o un número entero."}}

// addExamples writes into doc's operations the examples they declare, as OpenAPI Example Objects (a
// request example carries its expected status as x-status).
func addExamples(paths map[string]any, em ExampleEmergency) {
	examples := operationExamples(em)
	addResponsesExamples(examples)
	for _, item := range paths {
		for _, op := range item.(map[string]any) {
			op := op.(map[string]any)
			ex := examples[op["operationId"].(string)]
			if rb, ok := op["requestBody"].(map[string]any); ok {
				if mt := jsonMediaType(rb); mt != nil && len(ex.Request) > 0 {
					mt["examples"] = exampleObjects(ex.Request)
				}
			}
			if len(ex.Query) > 0 {
				var qs []any
				for _, e := range ex.Query {
					qs = append(qs, map[string]any{"name": e.Name, "summary": e.Summary, "query": e.Value, "x-status": e.Status})
				}
				op["x-query-examples"] = qs
			}
			responses, _ := op["responses"].(map[string]any)
			for status, r := range responses {
				mt := jsonMediaType(r.(map[string]any))
				if mt == nil {
					continue
				}
				switch sch, _ := mt["schema"].(map[string]any); sch["$ref"] {
				case "#/components/schemas/Error": // the operation's own example, else the status's
					if list := ex.Responses[status]; len(list) > 0 {
						mt["examples"] = exampleObjects(list)
					} else if e, ok := ErrorExamples[status]; ok {
						mt["examples"] = exampleObjects([]Example{{Name: e.Code, Value: e}})
					}
				case "#/components/schemas/JSONRPCError":
					mt["examples"] = exampleObjects([]Example{{Name: "error", Value: rpcErrorExample}})
				default:
					if list := ex.Responses[status]; len(list) > 0 {
						mt["examples"] = exampleObjects(list)
					}
				}
			}
		}
	}
}

func jsonMediaType(holder map[string]any) map[string]any {
	content, _ := holder["content"].(map[string]any)
	mt, _ := content["application/json"].(map[string]any)
	return mt
}

func exampleObjects(list []Example) map[string]any {
	out := map[string]any{}
	for _, e := range list {
		o := map[string]any{"value": plain(e.Value)}
		if e.Summary != "" {
			o["summary"] = e.Summary
		}
		if e.Status != "" {
			o["x-status"] = e.Status
		}
		out[e.Name] = o
	}
	return out
}

// plain is v as JSON data, as the document carries it.
func plain(v any) any {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		panic(err)
	}
	return out
}
