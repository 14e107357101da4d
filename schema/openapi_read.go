package schema

import "strings"

// The OpenAPI description of GET /api/public/v1/help: discovery without view, and the read side with it.

func init() {
	openAPIHeaders["Link"] = map[string]any{"description": "Con view=list, cuando hay más: <URL de la página siguiente>; rel=\"next\".", "schema": map[string]any{"type": "string"}}
}

// helpQueryParameters are the query parameters, reflected from HelpQuery so that names, types, limits
// and descriptions have one source.
func helpQueryParameters() []any {
	s := reflectSchema(&HelpQuery{})
	var out []any
	for name, p := range s.Properties.FromOldest() {
		desc := p.Description
		p.Description = ""
		views := ViewsTaking(name)
		if name == "view" {
			views = Views
		} else if !strings.HasPrefix(desc, "Solo con ") {
			with := make([]string, len(views))
			for i, v := range views {
				with[i] = "view=" + v
			}
			desc = "Con " + strings.Join(with, " o ") + ". " + desc
		}
		out = append(out, map[string]any{"name": name, "in": "query", "required": false, "description": desc, "schema": toMap(p),
			"x-directaid-views": views})
	}
	return out
}

func helpGet() map[string]any {
	return map[string]any{
		"operationId": "getHelp", "tags": []string{"api"},
		"summary": "Descubrir la API, o leer la red: lista, detalle, panorama, CSV y GeoJSON",
		"description": "Sin view: el documento de descubrimiento (emergencias activas con su slug y enlaces). Llame aquí primero. No admite parámetros: uno de las vistas (p. ej. format, limit o urgency sin view=list) u otro cualquiera responde 400 invalid_parameter, en vez de ignorarse.\n\n" +
			"view=list: registros filtrables (emergencySlug, type, category, urgency, q, latitude+longitude+radiusKm, since), los más recientes primero o, alrededor de un punto, los más cercanos primero (con distanceKm). Paginado con nextCursor: recorre cada registro exactamente una vez aunque lleguen nuevos. format=csv (fila de etiquetas HXL bajo el encabezado), format=geojson o format=atom (para lectores de feeds). Los cambios en vivo llegan por " + EventsPath + " (Server-Sent Events). Las listas y exportaciones muestran el nombre de contacto pero nunca el teléfono.\n\n" +
			"view=detail&id=…: un registro con el teléfono (E.164) y su enlace wa.me. Tiene un límite por IP más estricto que las listas.\n\n" +
			"view=panorama: por emergencia activa, conteos por tipo × categoría × urgencia, personas que necesitan ayuda y hora del registro más reciente.\n\n" +
			"Cada parámetro dice en x-directaid-views (y en su descripción) con qué vistas se usa; uno de otra vista (p. ej. limit con view=detail, o id con view=list) responde 400 invalid_parameter, en vez de ignorarse. Un parámetro vacío (nombre=, como lo envía un formulario HTML con un campo en blanco) equivale a no enviarlo, en todas las operaciones; un nombre solo, sin = (?view), responde 400. Un parámetro desconocido (también vacío), repetido o inválido responde 400 invalid_parameter; details nombra cada uno con field=/query/<nombre>. El parámetro _ (el que algunos clientes añaden contra cachés) se ignora siempre. Las listas y el panorama llevan ETag y Cache-Control cortos: If-None-Match responde 304 si nada cambió.",
		"parameters": helpQueryParameters(),
		"responses": map[string]any{
			"200": map[string]any{
				"description": "Sin view: Discovery. view=list: HelpList (format=csv: text/csv; format=geojson: GeoJSONList; format=atom: application/atom+xml). view=detail: PublicHelpDetail. view=panorama: Panorama.",
				"headers":     hdrs("ETag", "Cache-Control", "Link"),
				"content": map[string]any{
					"application/json":     map[string]any{"schema": map[string]any{"oneOf": []any{ref("Discovery"), ref("HelpList"), ref("PublicHelpDetail"), ref("Panorama")}}},
					"text/csv":             map[string]any{"schema": map[string]any{"type": "string", "description": "CSV (RFC 4180, UTF-8): fila de encabezado, fila de etiquetas HXL, una fila por registro. Sin teléfonos."}},
					"application/geo+json": map[string]any{"schema": ref("GeoJSONList")},
					"application/atom+xml": map[string]any{"schema": map[string]any{"type": "string", "description": "format=atom: un feed Atom 1.0 (RFC 4287). Una entrada por registro de la página: título, id (URI tag:), updated, published, enlace a su página /ayudas/{id}, categoría y un resumen sin datos de contacto (ni nombre, ni teléfono, ni dirección). Con más páginas, un link rel=next."}},
				},
			},
			"304": map[string]any{"description": "No ha cambiado desde el ETag enviado en If-None-Match.", "headers": hdrs("ETag")},
			"400": errResp("Parámetro inválido (invalid_parameter): details nombra cada parámetro como /query/<nombre>. Sin public_url configurada, un encabezado Host que no es un nombre de host responde invalid_request."),
			"404": errResp("view=detail: no existe un registro con ese id (not_found)."),
			"410": errResp("view=detail: el registro fue retirado por quien lo publicó, borrado u ocultado mientras se revisan reportes (gone)."),
			"429": errResp("Límite temporal alcanzado (rate_limited): view=detail tiene su propio límite por IP; una exportación completa (all=true) corre de a una por cliente.", "Retry-After"),
			"500": errResp("Error interno (internal_error)."),
			"503": errResp("Servicio no disponible (unavailable); con all=true, también cuando el nodo ya hace sus exportaciones completas a la vez.", "Retry-After"),
		},
	}
}
