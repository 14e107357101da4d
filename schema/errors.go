package schema

// The other codes of ErrorBody (the validation codes are in decode.go, the publisher's in manage.go).
const (
	CodeUnsupportedMediaType = "unsupported_media_type"
	CodeBodyTooLarge         = "body_too_large"
	CodeMethodNotAllowed     = "method_not_allowed"
	CodeInvalidRequest       = "invalid_request" // another 4xx of the web server (headers too large…)
	CodeRateLimited          = "rate_limited"
	CodeNotFound             = "not_found"
	CodeInternalError        = "internal_error"
	CodeUnavailable          = "unavailable"
)

// ErrorCode is one code of ErrorBody: the HTTP status it comes with and what it means, in Spanish.
type ErrorCode struct {
	Code    string
	Status  int
	Meaning string
}

// ErrorCodes lists every code of ErrorBody, in the OpenAPI enum's order: the enum, the integration
// guide's table and the metrics' label values come from it.
var ErrorCodes = []ErrorCode{
	{CodeInvalidBody, 400, "Uno o varios campos no cumplen las reglas. `details` nombra cada uno con un puntero JSON (por ejemplo `/latitude`) y un mensaje."},
	{CodeInvalidJSON, 400, "El cuerpo no es JSON válido: error de sintaxis, texto que no es UTF-8 o una clave repetida."},
	{CodeInvalidParameter, 400, "Un parámetro de consulta es desconocido, está repetido o no es válido, o el `id` de la ruta no tiene la forma de un id; `details` lo nombra como `/query/<nombre>` o `/path/id`."},
	{CodeConsentRequired, 400, "`publishContact` falta o no es el booleano `true`."},
	{CodeEmergencyRequired, 400, "Hay varias emergencias activas y falta `emergencySlug`; `details` lista las válidas."},
	{CodeUnknownEmergency, 400, "`emergencySlug` no corresponde a una emergencia activa."},
	{CodeUnknownPlace, 400, "`placeCode` no es el código DIVIPOLA de ningún municipio ni centro poblado (lista en `/lugares.tsv`)."},
	{CodeNoActiveEmergency, 400, "No hay ninguna emergencia activa: por ahora no se puede publicar."},
	{CodeUnsupportedMediaType, 415, "Falta la cabecera `Content-Type: application/json`, o el cuerpo llegó comprimido (`Content-Encoding`): se envía sin comprimir."},
	{CodeBodyTooLarge, 413, "El cuerpo pasa de 64 KiB."},
	{CodeMethodNotAllowed, 405, "Ese método no se admite en la ruta; la cabecera `Allow` dice cuáles sí."},
	{CodeInvalidRequest, 400, "El servidor web no pudo atender la petición tal como llegó (otro error 4xx, por ejemplo cabeceras demasiado grandes); el estado HTTP dice cuál."},
	{CodeRateLimited, 429, "Se alcanzó el límite temporal. Espere los segundos de `Retry-After` y reintente con el mismo `externalId`."},
	{CodeNotFound, 404, "La ruta no existe, o ningún registro (o respuesta) tiene ese id."},
	{CodeGone, 410, "En el detalle, las coincidencias o un reporte: el registro fue retirado (por quien lo publicó o por el operador) o está oculto mientras se revisa (`recordStatus` dice cuál): ya no se muestra, y un espejo lo quita (llega como `removed` en `since`). Al responder «yo puedo ayudar»: la publicación ya no recibe respuestas (resuelta, vencida, retirada u oculta); una resuelta o vencida sigue pública y no se quita."},
	{CodeUnauthorized, 401, "Las acciones del publicador (`POST /api/public/v1/help/{id}/actions`) llevan el `manageToken` de la publicación en `Authorization: Bearer`, y falta. Responde con `WWW-Authenticate: Bearer`; la respuesta es la misma exista o no el registro."},
	{CodeForbidden, 403, "El `manageToken` de una acción del publicador no es válido o es de otro registro. La respuesta es la misma exista o no el registro."},
	{CodeInvalidTransition, 409, "El estado del registro no admite esa acción (por ejemplo, reabrir uno retirado o renovar uno resuelto)."},
	{CodeTooManyResponses, 409, "La publicación ya tiene el máximo de respuestas que guarda (300): quien la publicó ya tiene muchas para revisar. Busque otra parecida que nadie haya respondido (`attended=false`)."},
	{CodeCursorTooOld, 410, "El flujo de eventos no puede reanudar desde esa posición: hay demasiados cambios que repetir. Póngase al día con la lista (`view=list&since=`) y vuelva a conectarse desde su último cambio."},
	{CodeNetworkShareSpent, 429, "Desde esta red (una dirección IPv4 o una red IPv6 /64) ya llegaron 3 respuestas distintas a esta publicación en 48 horas, las que admite de una misma red. No es un límite de velocidad: `Retry-After` dice cuándo se libera un lugar (hasta 48 horas). Una aplicación que transmite a muchos voluntarios debe decirle a la persona que responda desde su propio teléfono (la página de la publicación)."},
	{CodeTooManyStreams, 429, "Esta dirección ya tiene abiertos todos los flujos de eventos que admite el servidor: cierre uno antes de abrir otro."},
	{CodeInternalError, 500, "Error del servidor. Reintente con el mismo `externalId`: no se duplicará."},
	{CodeUnavailable, 503, "El servicio no está disponible por un momento. Reintente con el mismo `externalId`: no se duplicará."},
}

// ErrorCodeNames are the codes of ErrorCodes.
func ErrorCodeNames() []string {
	names := make([]string, len(ErrorCodes))
	for i, c := range ErrorCodes {
		names[i] = c.Code
	}
	return names
}
