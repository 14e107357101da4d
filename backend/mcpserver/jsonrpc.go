package mcpserver

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/directaid/directaid/backend"
	"github.com/directaid/directaid/schema"
)

// JSON-RPC 2.0 validity on /mcp. mcp-go reads a message with encoding/json into loose structs: an id of
// any kind, a null method or a message that is neither request, notification nor response gets through,
// and its errors are Go's and English. So the envelope is checked here before mcp-go sees it, and the
// errors mcp-go writes are rewritten in Spanish, their codes and ids kept.

// rpcRefusal is a message refused before mcp-go: a JSON-RPC error with the id when it can be read.
type rpcRefusal struct {
	code int
	id   any // string, json.Number (an integer: its digits, exactly) or nil
	msg  string
}

// msgNotJSON is the message of -32700.
const msgNotJSON = "El mensaje no es JSON válido."

// statusesFrom is the first protocol version whose transport gives a JSON-RPC error of a well-formed
// request its own HTTP status.
const statusesFrom = "2026-07-28"

// rpcStatus is the one HTTP status of each JSON-RPC error code at protocol version proto (the request's
// MCP-Protocol-Version; "" without one), whoever refuses (checkMessage or mcp-go). A message that is not
// valid JSON-RPC is 400. From protocol 2026-07-28 on, invalid params are 400 and an unknown method 404,
// the table that version prescribes (mcp-go applies it there only); before it, the transport answers a
// well-formed request's error with 200 and the JSON-RPC error in the body, which is where the clients of
// those versions read it (the TypeScript SDK takes any other status for a broken connection: an unknown
// tool became a network error for the agent). The rest (a server error) keep 200. Transport refusals
// (403, 405, 413, 415) are written with their own status and the server-error code -32000.
func rpcStatus(code int, proto string) int {
	switch code {
	case mcp.PARSE_ERROR, mcp.INVALID_REQUEST, mcp.HEADER_MISMATCH,
		mcp.MISSING_REQUIRED_CLIENT_CAPABILITY, mcp.UNSUPPORTED_PROTOCOL_VERSION:
		return http.StatusBadRequest
	case mcp.INVALID_PARAMS:
		if proto >= statusesFrom {
			return http.StatusBadRequest
		}
	case mcp.METHOD_NOT_FOUND:
		if proto >= statusesFrom {
			return http.StatusNotFound
		}
	}
	return http.StatusOK
}

// rpcMembers are the members of a JSON-RPC 2.0 message; mcp-go matches names case-insensitively, so a
// member that differs only in case ("Method") is refused rather than read differently by the two.
var rpcMembers = []string{"jsonrpc", "id", "method", "params", "result", "error"}

// checkMessage returns nil for a valid JSON-RPC 2.0 request or notification, which mcp-go may read;
// response reports a valid response (the stateless server sends no requests, so it is accepted and
// ignored). Anything else is refused: -32700 for text that is not JSON, -32600 for JSON that is no
// message, -32602 for a tools/call whose params cannot name a tool.
func checkMessage(body []byte) (refusal *rpcRefusal, response bool, method string) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil || dec.Decode(new(any)) != io.EOF {
		return &rpcRefusal{code: mcp.PARSE_ERROR, msg: msgNotJSON}, false, ""
	}
	m, ok := v.(map[string]any)
	if !ok {
		return invalid(nil, "el mensaje debe ser un objeto JSON-RPC 2.0 (una petición, una notificación o una respuesta), no "+jsonKind(v)), false, ""
	}
	id, hasID := m["id"]
	readableID := validID(id)
	var echo any
	if readableID {
		echo = id
	}
	for k := range m {
		if i := slices.IndexFunc(rpcMembers, func(n string) bool { return strings.EqualFold(n, k) }); i >= 0 && rpcMembers[i] != k {
			return invalid(echo, fmt.Sprintf("el miembro «%s» no existe: los nombres de JSON-RPC distinguen mayúsculas (%s)", k, rpcMembers[i])), false, ""
		}
	}
	// A repeated member («publishContact» false, then true) is refused, not read as whichever copy
	// mcp-go's parser keeps; in a tool's arguments it is the call's params that are wrong.
	if field := schema.RepeatedMember(body); field != "" {
		msg := fmt.Sprintf("el miembro %s está repetido: envíe cada uno una sola vez", field)
		if strings.HasPrefix(field, "/params/") {
			return &rpcRefusal{code: mcp.INVALID_PARAMS, id: echo, msg: "Parámetros inválidos: " + msg + "."}, false, ""
		}
		return invalid(echo, msg), false, ""
	}
	if m["jsonrpc"] != "2.0" {
		return invalid(echo, `«jsonrpc» es obligatorio y debe ser el texto "2.0"`), false, ""
	}
	if hasID && !readableID && !(id == nil && m["error"] != nil && m["method"] == nil) {
		return invalid(nil, "«id» debe ser un texto o un número entero (ni null, ni un objeto, una lista, un booleano o un número con decimales)"), false, ""
	}
	methodVal, hasMethod := m["method"]
	_, hasResult := m["result"]
	_, hasError := m["error"]
	if !hasMethod {
		// A response: an id, and exactly one of result (an object) and error ({code: integer, message: text}).
		switch {
		case !hasID:
			return invalid(nil, "el mensaje no es una petición (falta «method»), ni una notificación, ni una respuesta (falta «id»)"), false, ""
		case hasResult == hasError:
			return invalid(echo, "el mensaje no es una petición (falta «method»), y una respuesta lleva exactamente uno de «result» y «error»"), false, ""
		case hasResult && jsonKind(m["result"]) != "un objeto":
			return invalid(echo, "«result» debe ser un objeto"), false, ""
		case hasError && !validErrorObject(m["error"]):
			return invalid(echo, "«error» debe ser un objeto con «code» (número entero) y «message» (texto)"), false, ""
		}
		return nil, true, ""
	}
	name, _ := methodVal.(string)
	switch {
	case name == "":
		return invalid(echo, "«method» debe ser el nombre de un método (un texto no vacío)"), false, ""
	case hasResult || hasError:
		return invalid(echo, "una petición (con «method») no lleva «result» ni «error»"), false, ""
	}
	params, hasParams := m["params"]
	p, isObject := params.(map[string]any)
	if hasParams && params != nil && !isObject { // null is taken as absent: clients send it
		return invalid(echo, "«params» debe ser un objeto, no "+jsonKind(params)), false, ""
	}
	if name == string(mcp.MethodToolsCall) && hasID {
		bad := func(msg string) *rpcRefusal {
			return &rpcRefusal{code: mcp.INVALID_PARAMS, id: echo, msg: "Parámetros inválidos para tools/call: " + msg + "."}
		}
		if n, ok := p["name"].(string); !ok || n == "" {
			return bad("«params/name» es obligatorio y debe ser el nombre de una herramienta (un texto)"), false, ""
		}
		if a, ok := p["arguments"]; ok && a != nil && jsonKind(a) != "un objeto" {
			return bad("«params/arguments» debe ser un objeto con los argumentos de la herramienta, no " + jsonKind(a)), false, ""
		}
	}
	return nil, false, name
}

func invalid(id any, msg string) *rpcRefusal {
	return &rpcRefusal{code: mcp.INVALID_REQUEST, id: id, msg: "Mensaje JSON-RPC inválido: " + msg + "."}
}

// validID: MCP ids are texts or integers, never null.
func validID(id any) bool {
	switch id := id.(type) {
	case string:
		return true
	case json.Number:
		return !strings.ContainsAny(string(id), ".eE")
	}
	return false
}

func validErrorObject(v any) bool {
	e, ok := v.(map[string]any)
	if !ok {
		return false
	}
	code, ok := e["code"].(json.Number)
	_, isText := e["message"].(string)
	return ok && validID(code) && isText
}

func jsonKind(v any) string {
	switch v.(type) {
	case map[string]any:
		return "un objeto"
	case []any:
		return "una lista"
	case string:
		return "un texto"
	case json.Number:
		return "un número"
	case bool:
		return "un booleano"
	}
	return "null"
}

func writeRefusal(w http.ResponseWriter, r *rpcRefusal, proto string) {
	w.Header().Set("Cache-Control", "no-store")
	backend.WriteJSON(w, rpcStatus(r.code, proto), map[string]any{"jsonrpc": "2.0", "id": r.id, "error": map[string]any{"code": r.code, "message": r.msg}})
}

// bufferedResponse holds mcp-go's answer (one JSON body: streaming is disabled) so that its errors can be
// rewritten before they are sent.
type bufferedResponse struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (b *bufferedResponse) Header() http.Header         { return b.header }
func (b *bufferedResponse) Write(p []byte) (int, error) { return b.body.Write(p) }
func (b *bufferedResponse) WriteHeader(status int) {
	if b.status == 0 {
		b.status = status
	}
}

// send writes the buffered answer to w, with a JSON-RPC error's message in Spanish and its code's
// status, and the request's id as it came (id: its JSON text; empty for none).
func (b *bufferedResponse) send(w http.ResponseWriter, method string, tools []string, id json.RawMessage, proto string) {
	if b.status == 0 {
		b.status = http.StatusOK
	}
	body := b.body.Bytes()
	ct := b.header.Get("Content-Type")
	switch {
	case strings.HasPrefix(ct, "application/json"):
		var code int
		if body, code = spanishRPCError(body, method, tools); code != 0 {
			b.status = rpcStatus(code, proto)
		}
		if len(id) > 0 {
			body = withID(body, id)
		}
	case b.status >= 400:
		// mcp-go's plain-text refusals (a session it cannot find, a body it cannot read).
		b.header.Set("Content-Type", "application/json")
		b.status = rpcStatus(mcp.INVALID_REQUEST, proto)
		body, _ = json.Marshal(map[string]any{"jsonrpc": "2.0", "id": nil, "error": map[string]any{"code": mcp.INVALID_REQUEST,
			"message": "Mensaje JSON-RPC no admitido por este servidor sin sesiones."}})
	}
	for k, v := range b.header {
		w.Header()[k] = v
	}
	w.Header().Del("Content-Length")
	w.WriteHeader(b.status)
	_, _ = w.Write(body)
}

// goField reads the member and the Go type out of encoding/json's "cannot unmarshal X into Go struct
// field T.a.b of type U", which mcp-go passes on as "unparsable <method> request: …".
var goField = regexp.MustCompile(`cannot unmarshal (\w+) into Go struct field [\w]+\.([\w.]+) of type (\S+)`)

var goTypes = map[string]string{"string": "un texto", "number": "un número", "bool": "un booleano", "array": "una lista", "object": "un objeto"}

// withID returns the JSON-RPC message body with the value of its top-level "id" replaced by id, the
// request's own bytes: mcp-go re-encodes the id it read as a float64 (9007199254740993 would come back
// as 9007199254740992). A body without a top-level id is returned as it is.
func withID(body []byte, id json.RawMessage) []byte {
	dec := json.NewDecoder(bytes.NewReader(body))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return body
	}
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return body
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return body
		}
		if key == "id" {
			end := int(dec.InputOffset())
			start := end - len(v)
			if start < 0 || !bytes.Equal(body[start:end], v) {
				return body
			}
			return slices.Concat(body[:start], id, body[end:])
		}
	}
	return body
}

// spanishRPCError rewrites the message of a JSON-RPC error from mcp-go (always English, sometimes Go's)
// by its code, and returns the code (0 for a body that is no error); the code, id and data stay. Any
// other body is returned as it is.
func spanishRPCError(body []byte, method string, tools []string) ([]byte, int) {
	var msg struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   *struct {
			Code    int             `json:"code"`
			Message string          `json:"message"`
			Data    json.RawMessage `json:"data,omitempty"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &msg) != nil || msg.Error == nil {
		return body, 0
	}
	e := msg.Error
	switch e.Code {
	case mcp.PARSE_ERROR:
		e.Message = msgNotJSON
	case mcp.INVALID_REQUEST, mcp.INVALID_PARAMS:
		e.Message = spanishParams(e.Message, method, tools, &e.Code)
	case mcp.METHOD_NOT_FOUND:
		e.Message = fmt.Sprintf("El método JSON-RPC «%s» no existe en este servidor. Métodos: initialize, ping, tools/list, tools/call; "+
			"con el protocolo 2026-07-28 también server/discover.", schema.Clip(method))
	case mcp.INTERNAL_ERROR:
		e.Message = "Error interno del servidor MCP. Vuelva a intentarlo."
	case mcp.REQUEST_INTERRUPTED:
		e.Message = "La petición se interrumpió."
	case mcp.RESOURCE_NOT_FOUND:
		e.Message = "Este servidor no ofrece recursos."
	case mcp.HEADER_MISMATCH:
		e.Message = "Las cabeceras Mcp-Method o Mcp-Name no concuerdan con el cuerpo del mensaje."
	case mcp.MISSING_REQUIRED_CLIENT_CAPABILITY:
		e.Message = "El cliente no declara una capacidad que esta petición necesita."
	case mcp.UNSUPPORTED_PROTOCOL_VERSION:
		e.Message = "Versión de protocolo MCP no admitida; admitidas: " + strings.Join(mcp.ValidProtocolVersions, ", ") + "."
	default:
		e.Message = fmt.Sprintf("Error del servidor MCP (código %d).", e.Code)
	}
	out, err := json.Marshal(msg)
	if err != nil {
		return body, e.Code
	}
	return append(out, '\n'), e.Code
}

// spanishParams explains malformed params: an unknown tool by name, a member of the wrong type by its
// pointer. mcp-go gives -32600 to params it cannot decode; they are -32602 (Invalid params) in JSON-RPC.
func spanishParams(english, method string, tools []string, code *int) string {
	if strings.HasPrefix(english, "tool '") {
		name := strings.TrimPrefix(english, "tool '")
		name = name[:max(strings.Index(name, "' not found"), 0)]
		return fmt.Sprintf("La herramienta «%s» no existe. Herramientas: %s.", schema.Clip(name), strings.Join(tools, ", "))
	}
	if *code == mcp.INVALID_PARAMS {
		if reason := paramsReason(english); reason != "" {
			return fmt.Sprintf("Parámetros inválidos para %s: %s.", method, reason)
		}
	}
	if !strings.HasPrefix(english, "unparsable ") {
		if *code == mcp.INVALID_PARAMS {
			return fmt.Sprintf("Parámetros inválidos para %s: no tienen la forma que pide la especificación MCP para este método.", method)
		}
		return fmt.Sprintf("Petición JSON-RPC inválida para «%s».", method)
	}
	*code = mcp.INVALID_PARAMS
	msg := fmt.Sprintf("Parámetros inválidos para %s: no tienen la forma que pide la especificación MCP", method)
	if m := goField.FindStringSubmatch(english); m != nil {
		path := m[2]
		if i := strings.Index(path, "params"); i >= 0 {
			path = path[i:]
		}
		want := goTypes[m[3]]
		switch {
		case want != "":
		case strings.HasPrefix(m[3], "[]"):
			want = "una lista"
		case strings.Contains(m[3], "int") || strings.Contains(m[3], "float"):
			want = "un número"
		default:
			want = "un objeto"
		}
		msg = fmt.Sprintf("Parámetros inválidos para %s: «%s» debe ser %s (se recibió %s)", method, strings.ReplaceAll(path, ".", "/"), want, goTypes[m[1]])
	}
	return msg + "."
}

// paramsReason says in Spanish why mcp-go refused a request's params (-32602), from its English text;
// "" when the text is not one it is known to write.
func paramsReason(english string) string {
	const meta = "missing or invalid _meta field "
	switch {
	case strings.HasPrefix(english, "illegal base64 data"):
		// listByPagination: a cursor is base64 of the last name of the previous page.
		return "«params/cursor» no es un cursor de esta lista: use tal cual el nextCursor de la respuesta anterior, u omítalo para la primera página"
	case strings.HasPrefix(english, meta):
		key := strings.TrimPrefix(english, meta)
		var what string
		switch key {
		case mcp.MetaKeyProtocolVersion:
			what = "la versión del protocolo (la misma de la cabecera " + mcp.HeaderProtocolVersion + ")"
		case mcp.MetaKeyClientCapabilities:
			what = "un objeto con las capacidades del cliente ({} si no declara ninguna)"
		default:
			key, what = schema.Clip(key), "un valor válido"
		}
		return fmt.Sprintf("con el protocolo %s, «params/_meta» debe llevar «%s» con %s", mcp.ProtocolVersion20260728, key, what)
	}
	return ""
}
