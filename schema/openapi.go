package schema

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"

	invjs "github.com/invopop/jsonschema"
)

// Response headers, documented once and referenced everywhere.
var openAPIHeaders = map[string]any{
	"API-Version":                   map[string]any{"description": "Versión de la API (" + APIVersion + ").", "schema": map[string]any{"type": "string", "const": APIVersion}},
	"Retry-After":                   map[string]any{"description": "Segundos que hay que esperar antes de reintentar.", "schema": map[string]any{"type": "integer", "minimum": 0}},
	"Location":                      map[string]any{"description": "URL pública del registro creado.", "schema": map[string]any{"type": "string", "format": "uri"}},
	"ETag":                          map[string]any{"description": "Validador para If-None-Match.", "schema": map[string]any{"type": "string"}},
	"Cache-Control":                 map[string]any{"description": "Política de caché.", "schema": map[string]any{"type": "string"}},
	"Access-Control-Allow-Origin":   map[string]any{"description": "CORS: cualquier origen.", "schema": map[string]any{"type": "string", "const": "*"}},
	"Access-Control-Expose-Headers": map[string]any{"description": "CORS: cabeceras que un navegador deja leer.", "schema": map[string]any{"type": "string"}},
	"Access-Control-Allow-Methods":  map[string]any{"description": "CORS: métodos permitidos.", "schema": map[string]any{"type": "string"}},
	"Access-Control-Allow-Headers":  map[string]any{"description": "CORS: cabeceras permitidas.", "schema": map[string]any{"type": "string"}},
	"Access-Control-Max-Age":        map[string]any{"description": "CORS: segundos que el navegador guarda la respuesta previa.", "schema": map[string]any{"type": "string"}},
	"Allow":                         map[string]any{"description": "Métodos que admite la ruta.", "schema": map[string]any{"type": "string"}},
	"WWW-Authenticate":              map[string]any{"description": "El esquema de autenticación que pide la ruta.", "schema": map[string]any{"type": "string", "const": ManageTokenScheme}},
}

// everyAnswer are the headers that every answer carries (httpapi.SetCommonHeaders).
var everyAnswer = []string{"API-Version", "Access-Control-Allow-Origin", "Access-Control-Expose-Headers"}

func hdrs(names ...string) map[string]any {
	out := map[string]any{}
	for _, n := range slices.Concat(everyAnswer, names) {
		out[n] = map[string]any{"$ref": "#/components/headers/" + n}
	}
	return out
}

func ref(name string) map[string]any { return map[string]any{"$ref": "#/components/schemas/" + name} }

func jsonBody(schemaRef map[string]any) map[string]any {
	return map[string]any{"application/json": map[string]any{"schema": schemaRef}}
}

// unsupportedMediaWords describe a 415 answer of every operation that takes a body.
const unsupportedMediaWords = "Content-Type distinto de application/json, o cuerpo comprimido con Content-Encoding (unsupported_media_type)."

// errResp is an error answer: never cached.
func errResp(desc string, extraHeaders ...string) map[string]any {
	return map[string]any{"description": desc, "headers": hdrs(slices.Concat(extraHeaders, []string{"Cache-Control"})...), "content": jsonBody(ref("Error"))}
}

// headOf is GET's twin for HEAD: the same status codes and headers, no body.
func headOf(get map[string]any, operationID string) map[string]any {
	responses := map[string]any{}
	for code, r := range get["responses"].(map[string]any) {
		resp := map[string]any{}
		for k, v := range r.(map[string]any) {
			if k != "content" {
				resp[k] = v
			}
		}
		responses[code] = resp
	}
	head := map[string]any{"operationId": operationID, "tags": get["tags"], "summary": "Como GET, sin cuerpo", "responses": responses}
	if p, ok := get["parameters"]; ok {
		head["parameters"] = p
	}
	return head
}

// rpcErr is an answer of /mcp refused before or by the MCP server: a JSON-RPC error, which MCP clients read.
func rpcErr(desc string, extraHeaders ...string) map[string]any {
	return map[string]any{"description": desc, "headers": hdrs(extraHeaders...), "content": jsonBody(ref("JSONRPCError"))}
}

// MCPMethods are the methods /mcp serves: its preflight's Allow and Access-Control-Allow-Methods and the
// Allow of its 405 say exactly this.
const MCPMethods = "POST, OPTIONS"

// mcpMethodsHeader documents a header of /mcp whose value is always MCPMethods.
func mcpMethodsHeader(desc string) map[string]any {
	return map[string]any{"description": desc, "schema": map[string]any{"type": "string", "const": MCPMethods}}
}

// mcpPreflight is /mcp's CORS preflight: the methods it allows are the ones it serves.
func mcpPreflight() map[string]any {
	p := preflight("preflightMCP")
	h := p["responses"].(map[string]any)["204"].(map[string]any)["headers"].(map[string]any)
	h["Allow"] = mcpMethodsHeader("Métodos que admite /mcp.")
	h["Access-Control-Allow-Methods"] = mcpMethodsHeader("CORS: los mismos métodos que Allow. GET, que CORS no necesita anunciar, recibe 405.")
	return p
}

// jsonRPCSchemas describes JSON-RPC 2.0 answers; the MCP results inside are MCP's, not ours to restate.
func jsonRPCSchemas() (response, errorResponse map[string]any) {
	id := map[string]any{"type": []string{"string", "integer", "null"}}
	errObj := map[string]any{"type": "object", "required": []string{"code", "message"}, "properties": map[string]any{
		"code": map[string]any{"type": "integer"}, "message": map[string]any{"type": "string"}, "data": map[string]any{},
	}}
	response = map[string]any{"type": "object", "required": []string{"jsonrpc", "id"}, "properties": map[string]any{
		"jsonrpc": map[string]any{"const": "2.0"}, "id": id, "result": map[string]any{"type": "object"}, "error": errObj,
	}}
	errorResponse = map[string]any{"type": "object", "required": []string{"jsonrpc", "id", "error"}, "properties": map[string]any{
		"jsonrpc": map[string]any{"const": "2.0"}, "id": id, "error": errObj,
	}}
	return response, errorResponse
}

// jsonRPCMessage is what /mcp takes (backend's checkMessage): one JSON-RPC 2.0 request or notification
// (a method, an optional id that is a text or an integer, params an object), or a response to ignore (an
// id and exactly one of result and error).
func jsonRPCMessage() map[string]any {
	id := map[string]any{"type": []string{"string", "integer"}}
	_, errorResponse := jsonRPCSchemas()
	errObj := errorResponse["properties"].(map[string]any)["error"]
	jsonrpc := map[string]any{"const": "2.0"}
	has := func(name string) map[string]any {
		return map[string]any{"required": []string{name}, "properties": map[string]any{name: map[string]any{}}}
	}
	return map[string]any{"oneOf": []any{
		map[string]any{"title": "Petición o notificación (sin id)", "type": "object", "required": []string{"jsonrpc", "method"},
			"properties": map[string]any{"jsonrpc": jsonrpc, "id": id, "method": map[string]any{"type": "string", "minLength": 1},
				"params": map[string]any{"type": []string{"object", "null"}}},
			"not": map[string]any{"anyOf": []any{has("result"), has("error")}}},
		map[string]any{"title": "Respuesta (se acepta y se ignora)", "type": "object", "required": []string{"jsonrpc", "id", "result"},
			"properties": map[string]any{"jsonrpc": jsonrpc, "id": id, "result": map[string]any{"type": "object"}},
			"not":        map[string]any{"anyOf": []any{has("method"), has("error")}}},
		map[string]any{"title": "Respuesta de error (se acepta y se ignora)", "type": "object", "required": []string{"jsonrpc", "id", "error"},
			"properties": map[string]any{"jsonrpc": jsonrpc, "id": map[string]any{"type": []string{"string", "integer", "null"}}, "error": errObj},
			"not":        map[string]any{"anyOf": []any{has("method"), has("result")}}},
	}}
}

func preflight(operationID string) map[string]any {
	return map[string]any{
		"operationId": operationID, "summary": "Petición previa CORS", "tags": []string{"api"},
		"responses": map[string]any{"204": map[string]any{"description": "CORS habilitado para cualquier origen.",
			"headers": hdrs("Allow", "Access-Control-Allow-Methods", "Access-Control-Allow-Headers", "Access-Control-Max-Age")}},
	}
}

// OpenAPI assembles the OpenAPI 3.1.0 document from the same reflected schemas that validate the API.
// serverURL is the public base URL; empty means "where this document is served". tools are the tools the
// MCP server registers, which the description of /mcp lists. Its examples name the emergency eje-cafetero.
func OpenAPI(serverURL string, tools ...MCPTool) ([]byte, error) {
	return OpenAPIFor(serverURL, DefaultExampleEmergency, tools...)
}

// OpenAPIFor is OpenAPI whose examples name the emergency em: a server serves its document with its own
// first active emergency, so that the examples work there as written.
func OpenAPIFor(serverURL string, em ExampleEmergency, tools ...MCPTool) ([]byte, error) {
	if serverURL = strings.TrimRight(serverURL, "/"); serverURL == "" {
		serverURL = "/"
	}
	schemas := map[string]any{}
	for name := range wireTypes {
		schemas[name] = JSONSchema(name)
	}
	withLocationRules(schemas["HelpRequest"].(*invjs.Schema), true)
	withLocationRules(schemas["HelpOffer"].(*invjs.Schema), false)
	schemas["JSONRPCResponse"], schemas["JSONRPCError"] = jsonRPCSchemas()
	publishResponses := map[string]any{
		"201": map[string]any{"description": "Publicado: el registro se creó y está guardado en disco.", "headers": hdrs("Location", "Cache-Control"), "content": jsonBody(ref("PublishResult")),
			"links": publishLinks()},
		"200": map[string]any{"description": "Reintento idempotente: el par (source, externalId) ya existía; no se creó nada. contentMatches=false avisa de que el contenido enviado difiere del guardado. Con dryRun=true: la publicación es válida y esto es lo que se guardaría (DryRunResult); no se guardó nada.",
			"headers": hdrs("Cache-Control"), "content": jsonBody(map[string]any{"oneOf": []any{ref("PublishResult"), ref("DryRunResult")}})},
		"400": errResp("Datos inválidos (invalid_body, invalid_json, consent_required, emergency_required, unknown_emergency, no_active_emergency; invalid_request si llegan varias cabeceras Content-Type). details nombra cada campo con un puntero JSON. Sin public_url configurada, un encabezado Host que no es un nombre de host responde invalid_request."),
		"413": errResp("Cuerpo de más de 64 KiB (body_too_large)."),
		"415": errResp(unsupportedMediaWords),
		"429": errResp("Límite temporal alcanzado (rate_limited). Reintente tras Retry-After segundos con el mismo externalId.", "Retry-After"),
		"500": errResp("Error interno (internal_error). Reintente con el mismo externalId."),
		"503": errResp("Servicio no disponible (unavailable). Reintente tras Retry-After segundos con el mismo externalId.", "Retry-After"),
	}
	getHelp := helpGet() // openapi_read.go
	getOpenAPI := map[string]any{
		"operationId": "getOpenAPI", "tags": []string{"api"}, "summary": "Este documento OpenAPI 3.1",
		"responses": map[string]any{
			"200": map[string]any{"description": "El documento.", "headers": hdrs("ETag", "Cache-Control"), "content": map[string]any{"application/json": map[string]any{"schema": map[string]any{"type": "object"}}}},
			"304": map[string]any{"description": "No ha cambiado.", "headers": hdrs("ETag", "Cache-Control")},
		},
	}
	doc := map[string]any{
		"openapi":           "3.1.0",
		"jsonSchemaDialect": "https://json-schema.org/draft/2020-12/schema",
		"info": map[string]any{
			"title":   "directaid: red pública de ayuda directa",
			"version": APIVersion,
			"summary": "Publicar solicitudes y ofrecimientos de ayuda durante una emergencia.",
			"description": "API pública, sin autenticación e idempotente. El par (source, externalId) identifica un registro: reintentar no crea duplicados. El teléfono de contacto se publica, por eso publishContact debe ser true. Todas las respuestas llevan la cabecera API-Version y CORS abierto (Access-Control-Allow-Origin: *).\n\n" +
				"Parámetros de consulta, en todas las operaciones: uno vacío (nombre=, como lo envía un formulario HTML con un campo en blanco) equivale a no enviarlo; un nombre solo, sin = (?dryRun), responde 400 invalid_parameter, porque podría querer decir true; un nombre que la operación no conoce responde 400 invalid_parameter aunque esté vacío.\n\n" +
				"Un método que una ruta no admite (los que no están en este documento: PUT, PATCH o DELETE en " + HelpPath + ", POST en " + OpenAPIPath + "…) responde 405 con la cabecera Allow, los métodos que sí admite, y el cuerpo Error con code method_not_allowed. " +
				"En " + MCPPath + ", GET (no hay flujo SSE iniciado por el servidor, como permite la especificación MCP), DELETE (no hay sesiones que cerrar), HEAD, PUT y PATCH responden 405 con Allow: " + MCPMethods + " y un error JSON-RPC (-32000).",
			"license": map[string]any{"name": "Apache-2.0", "identifier": "Apache-2.0"},
		},
		"servers": []any{map[string]any{"url": serverURL}},
		// No authentication: an empty requirement list says so explicitly.
		"security": []any{},
		"tags": []any{
			map[string]any{"name": "api", "description": "Publicación y descubrimiento."},
			map[string]any{"name": "mcp", "description": "Servidor MCP remoto (Streamable HTTP, sin estado)."},
		},
		"paths": map[string]any{
			HelpPath: map[string]any{
				"get":  getHelp,
				"head": headOf(getHelp, "headHelp"),
				"post": map[string]any{
					"operationId": "publishHelp", "tags": []string{"api"},
					"summary":     "Publicar una solicitud o un ofrecimiento de ayuda",
					"description": "El campo type elige la variante: request (solicitud) u offer (ofrecimiento). Idempotente por (source, externalId). Se responde solo cuando el registro está guardado en disco. Con ?dryRun=true se valida igual que una publicación y no se guarda nada.",
					"parameters": []any{map[string]any{"name": DryRunArg, "in": "query", "required": false, "description": DryRunDescription,
						"schema": map[string]any{"type": "boolean", "default": false}}},
					"requestBody": map[string]any{"required": true, "content": map[string]any{"application/json": map[string]any{"schema": map[string]any{
						"oneOf":         []any{ref("HelpRequest"), ref("HelpOffer")},
						"discriminator": map[string]any{"propertyName": "type", "mapping": map[string]any{TypeRequest: "#/components/schemas/HelpRequest", TypeOffer: "#/components/schemas/HelpOffer"}},
					}}}},
					"responses": publishResponses,
				},
				"options": preflight("preflightHelp"),
			},
			EventsPath:                         eventsPathItem(),  // feed.go
			HelpPath + "/{id}" + ReportsSuffix: reportsPathItem(), // moderation.go
			HelpPath + "/{id}" + ActionsSuffix: actionsPath(),
			HelpPath + "/{id}" + MatchesSuffix: matchesPathItem(), // matches.go
			PlaceSearchPath:                    placesPathItem(),  // places.go
			OpenAPIPath: map[string]any{
				"get":     getOpenAPI,
				"head":    headOf(getOpenAPI, "headOpenAPI"),
				"options": preflight("preflightOpenAPI"),
			},
			MCPPath: map[string]any{
				"post": map[string]any{
					"operationId": "mcp", "tags": []string{"mcp"},
					"summary": "Servidor MCP (Streamable HTTP, sin estado)",
					"description": "Un mensaje JSON-RPC 2.0 por petición (los lotes se rechazan), de hasta 128 KiB. Herramientas: " + strings.Join(ToolNames(tools, nil), ", ") + ". " +
						"Protocolos 2025-03-26, 2025-06-18 y 2025-11-25 (initialize) y 2026-07-28 (server/discover, con las cabeceras Mcp-Method y Mcp-Name); también 2024-11-05. " +
						"Sin sesión: no se emite Mcp-Session-Id. " + mcpLimits(tools) + " Las respuestas son siempre application/json: no hay flujos SSE. En un servidor local (conexión por loopback) se rechazan con 403 un Host o un Origin ajenos (protección contra DNS rebinding).",
					"requestBody": map[string]any{"required": true, "content": map[string]any{"application/json": map[string]any{"schema": jsonRPCMessage()}}},
					"responses": map[string]any{
						"200": map[string]any{"description": "Respuesta JSON-RPC: el resultado (los argumentos inválidos de una herramienta son un resultado con isError true, que explica cada campo), o un error interno (-32603). Cada código de error JSON-RPC tiene un solo estado HTTP en cada versión del protocolo: 400 para -32700, -32600, -32020, -32021 y -32022; desde 2026-07-28, 400 para -32602 y 404 para -32601, como esa versión pide; antes de ella, 200 para -32602 y -32601 (el error de una petición bien formada va en el cuerpo, donde lo leen los clientes de esas versiones); 200 para los demás. El id de la respuesta es el de la petición, tal cual (también enteros de más de 2^53). Los mensajes de error están en español y dicen la causa.", "headers": hdrs("Cache-Control"), "content": jsonBody(ref("JSONRPCResponse"))},
						"202": map[string]any{"description": "Notificación o respuesta JSON-RPC válida aceptada; sin cuerpo (este servidor sin estado no envía peticiones, así que una respuesta se ignora).", "headers": hdrs("Cache-Control")},
						"400": rpcErr("Mensaje inválido: JSON mal formado (-32700); JSON que no es una petición, una notificación ni una respuesta JSON-RPC 2.0 válida, p. ej. un id null, un objeto o con decimales, o un method que no es un texto (-32600, con id null cuando no se puede leer); lote JSON-RPC (-32600); parámetros inválidos con el protocolo 2026-07-28 (-32602: p. ej. una herramienta que no existe, un cursor que no es de tools/list, o sin los _meta que pide esa versión); varias cabeceras Content-Type; versión de protocolo no admitida o cabeceras que no concuerdan con el cuerpo (2026-07-28, -32020 a -32022); o, sin public_url configurada, un encabezado Host que no es un nombre de host."),
						"403": rpcErr("Host u Origin ajeno en un servidor local (protección contra DNS rebinding)."),
						"404": rpcErr("Método JSON-RPC desconocido (-32601), con el protocolo 2026-07-28 (antes de esa versión, 200 con el error en el cuerpo)."),
						"413": rpcErr("Mensaje de más de 128 KiB."),
						"415": rpcErr("Content-Type distinto de application/json."),
						"429": errResp("Límite temporal alcanzado (rate_limited): solo en tools/call de las herramientas de publicación (límite de publicación) y de ver_ayuda (límite de view=detail). Reintente tras Retry-After segundos, con el mismo externalId si publicaba.", "Retry-After"),
					},
				},
				"options": mcpPreflight(),
			},
		},
		"webhooks": webhookItems(), // webhooks.go
		"components": map[string]any{"schemas": schemas, "headers": openAPIHeaders, "securitySchemes": map[string]any{
			"manageToken": map[string]any{"type": "http", "scheme": "bearer",
				"description": "El manageToken que devolvió la publicación (201, o un reintento con contentMatches true): Authorization: Bearer <manageToken>. Lo piden las acciones del publicador y la lista de respuestas a su publicación."},
			"responseToken": map[string]any{"type": "http", "scheme": "bearer",
				"description": "El responseToken que devolvió una respuesta «yo puedo ayudar» (201): Authorization: Bearer <responseToken>. Solo lo piden las acciones de quien respondió (renovar o retirar su respuesta)."},
		}},
	}
	maps.Copy(doc["paths"].(map[string]any), responsesPathItems()) // responses.go
	addExamples(doc["paths"].(map[string]any), em)                 // examples.go
	return json.MarshalIndent(doc, "", "  ")
}

// publishLinks lead from a publication's 201 to what can be done with the record next, by its id.
func publishLinks() map[string]any {
	id := map[string]any{"id": "$response.body#/id"}
	return map[string]any{
		"actOnHelp": map[string]any{"operationId": "actOnHelp", "parameters": id,
			"description": "Resolver, reabrir, renovar o retirar el registro creado, con el manageToken de esta misma respuesta en Authorization: Bearer."},
		"reportHelp": map[string]any{"operationId": "reportHelp", "parameters": id,
			"description": "Reportar el registro creado (spam, fraude, un número sin permiso…)."},
	}
}

// actionsPath documents the publisher's actions on a record (manage.go).
func actionsPath() map[string]any {
	post := withIDParam(map[string]any{
		"operationId": "actOnHelp", "tags": []string{"api"},
		"summary":     "Acción del publicador: resolver, reabrir, retirar o renovar",
		"description": "Con el manageToken de la publicación en la cabecera Authorization: Bearer (nunca en la URL). resolve: la saca de las listas (ya no se necesita o ya no está disponible). reopen: la vuelve a abrir. withdraw: la retira y borra de la base de datos el nombre, el teléfono y la dirección exacta; un reintento de la publicación original responde 200 con status withdrawn y no la vuelve a publicar. renew: la deja abierta por otro plazo (también si ya venció). Cada acción se puede repetir: si el registro ya está así responde 200 con changed false.",
		"security":    []any{map[string]any{"manageToken": []any{}}},
		"requestBody": map[string]any{"required": true, "content": jsonBody(ref("ActionRequest"))},
		"responses": map[string]any{
			"200": map[string]any{"description": "Hecho (o ya estaba hecho: changed false).", "headers": hdrs("Cache-Control"), "content": jsonBody(ref("ActionResult"))},
			"400": errResp("Acción desconocida o cuerpo inválido (invalid_body, invalid_json; invalid_request si llegan varias cabeceras Content-Type)."),
			"401": errResp("Falta la cabecera Authorization: Bearer <manageToken>, o no lleva un código (unauthorized, con details en /header/Authorization). La respuesta es la misma exista o no el registro.", "WWW-Authenticate"),
			"403": errResp("El código no es válido o es de otro registro (forbidden). La respuesta es la misma exista o no el registro."),
			"409": errResp("El estado del registro no admite la acción (invalid_transition): por ejemplo reabrir uno retirado."),
			"413": errResp("Cuerpo de más de 64 KiB (body_too_large)."),
			"415": errResp(unsupportedMediaWords),
			"429": errResp("Límite de acciones por IP alcanzado (rate_limited; el número está en manageRateLimit del descubrimiento). Reintente tras Retry-After segundos: repetir una acción no la aplica dos veces.", "Retry-After"),
			"500": errResp("Error interno (internal_error)."),
			"503": errResp("Servicio no disponible (unavailable).", "Retry-After"),
		},
	})
	return map[string]any{"post": post, "options": withIDParam(preflight("preflightActions"))}
}
