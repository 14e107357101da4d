package backend

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

	"github.com/directaid/directaid/schema"
)

// JSON-RPC 2.0 validity on /mcp. mcp-go reads a message with encoding/json into loose structs: an id of
// any kind, a null method or a message that is neither request, notification nor response gets through,
// and its errors are Go's and English. So the envelope is checked here before mcp-go sees it, and the
// errors mcp-go writes are rewritten in Spanish, their codes and ids kept.

// rpcRefusal is a message refused before mcp-go: a JSON-RPC error with the id when it can be read.
type rpcRefusal struct {
	status, code int
	id           any // string, json.Number (an integer) or nil
	msg          string
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
		return &rpcRefusal{status: http.StatusBadRequest, code: mcp.PARSE_ERROR, msg: "El mensaje no es JSON válido."}, false, ""
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
			return &rpcRefusal{status: http.StatusOK, code: mcp.INVALID_PARAMS, id: echo, msg: "Parámetros inválidos: " + msg + "."}, false, ""
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
			return &rpcRefusal{status: http.StatusOK, code: mcp.INVALID_PARAMS, id: echo, msg: "Parámetros inválidos para tools/call: " + msg + "."}
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
	return &rpcRefusal{status: http.StatusBadRequest, code: mcp.INVALID_REQUEST, id: id, msg: "Mensaje JSON-RPC inválido: " + msg + "."}
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

func writeRefusal(w http.ResponseWriter, r *rpcRefusal) {
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, r.status, map[string]any{"jsonrpc": "2.0", "id": r.id, "error": map[string]any{"code": r.code, "message": r.msg}})
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

// send writes the buffered answer to w, with a JSON-RPC error's message in Spanish.
func (b *bufferedResponse) send(w http.ResponseWriter, method string, tools []string) {
	if b.status == 0 {
		b.status = http.StatusOK
	}
	body := b.body.Bytes()
	ct := b.header.Get("Content-Type")
	switch {
	case strings.HasPrefix(ct, "application/json"):
		body = spanishRPCError(body, method, tools)
	case b.status >= 400:
		// mcp-go's plain-text refusals (a session it cannot find, a body it cannot read).
		b.header.Set("Content-Type", "application/json")
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

// spanishRPCError rewrites the message of a JSON-RPC error from mcp-go (always English, sometimes Go's)
// by its code; the code, id and data stay. Any other body is returned as it is.
func spanishRPCError(body []byte, method string, tools []string) []byte {
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
		return body
	}
	e := msg.Error
	switch e.Code {
	case mcp.PARSE_ERROR:
		e.Message = "El mensaje no es JSON válido."
	case mcp.INVALID_REQUEST, mcp.INVALID_PARAMS:
		e.Message = spanishParams(e.Message, method, tools, &e.Code)
	case mcp.METHOD_NOT_FOUND:
		e.Message = fmt.Sprintf("El método JSON-RPC «%s» no existe en este servidor. Métodos: initialize, ping, tools/list, tools/call; "+
			"con el protocolo 2026-07-28 también server/discover.", method)
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
		return body
	}
	return append(out, '\n')
}

// spanishParams explains malformed params: an unknown tool by name, a member of the wrong type by its
// pointer. mcp-go gives -32600 to params it cannot decode; they are -32602 (Invalid params) in JSON-RPC.
func spanishParams(english, method string, tools []string, code *int) string {
	if strings.HasPrefix(english, "tool '") {
		name := strings.TrimPrefix(english, "tool '")
		name = name[:max(strings.Index(name, "' not found"), 0)]
		return fmt.Sprintf("La herramienta «%s» no existe. Herramientas: %s.", name, strings.Join(tools, ", "))
	}
	if !strings.HasPrefix(english, "unparsable ") {
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
