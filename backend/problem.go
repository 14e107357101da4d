package backend

// How a *Problem and a JSON answer are written, and the query and path pointers of their details: shared
// by the transports, so that an answer is the same whoever sends it.

import (
	"encoding/json"
	"mime"
	"net/http"
	"strconv"
	"strings"

	"github.com/directaid/directaid/schema"
)

// BadHost is the answer to a request whose Host header could not be part of a link.
const BadHost = "Encabezado Host inválido: debe ser un nombre de host, una dirección IPv4 o una IPv6 entre corchetes, con puerto opcional."

// CheckJSONContentType accepts exactly one Content-Type field, application/json (UTF-8). Two fields are
// ambiguous framing (a proxy may read the other one): refused rather than guessed.
func CheckJSONContentType(r *http.Request) *Problem {
	if p := CheckBodyEncoding(r); p != nil {
		return p
	}
	if len(r.Header.Values("Content-Type")) > 1 {
		return ambiguousContentType()
	}
	mt, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err == nil && mt == "application/json" {
		if cs, ok := params["charset"]; !ok || strings.EqualFold(cs, "utf-8") {
			return nil
		}
	}
	return &Problem{Status: http.StatusUnsupportedMediaType, Body: schema.ErrorBody{Code: schema.CodeUnsupportedMediaType,
		Error: "El cuerpo debe enviarse como JSON con la cabecera Content-Type: application/json."}}
}

// CheckBodyEncoding refuses a body sent with a content coding (Content-Encoding: gzip, br, …): the API
// reads bodies as they come, and a compressed one would otherwise be refused as text that is not UTF-8.
// The caller answers with Accept-Encoding: identity (RFC 9110, 15.5.16).
func CheckBodyEncoding(r *http.Request) *Problem {
	vals := r.Header.Values("Content-Encoding")
	if len(vals) == 0 || len(vals) == 1 && strings.EqualFold(strings.TrimSpace(vals[0]), "identity") {
		return nil
	}
	return &Problem{Status: http.StatusUnsupportedMediaType, Body: schema.ErrorBody{Code: schema.CodeUnsupportedMediaType,
		Error: "El cuerpo llegó comprimido (Content-Encoding: " + strings.Join(vals, ", ") + "): envíelo sin comprimir, sin la cabecera Content-Encoding."}}
}

func ambiguousContentType() *Problem {
	return &Problem{Status: http.StatusBadRequest, Body: schema.ErrorBody{Code: schema.CodeInvalidRequest,
		Error: "La petición trae varias cabeceras Content-Type: envíe una sola, Content-Type: application/json."}}
}

func WriteJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status, b = http.StatusInternalServerError, InternalErrorJSON()
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// InternalErrorJSON is the body of a 500 that could not be marshalled.
func InternalErrorJSON() []byte {
	return []byte(`{"error":"Error interno.","code":"` + schema.CodeInternalError + `"}`)
}

// WriteProblem writes an error answer.
func WriteProblem(w http.ResponseWriter, p *Problem) {
	p.Body.Cap()
	w.Header().Set("Cache-Control", "no-store")
	if p.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(p.RetryAfter))
	}
	if p.Challenge != "" {
		w.Header().Set("WWW-Authenticate", p.Challenge)
	}
	WriteJSON(w, p.Status, &p.Body)
}

// QueryField is how details name a query parameter: a JSON pointer into {"query": {...}}.
func QueryField(name string) string { return schema.Pointer("query", name) }

// WithQueryFields turns the bare parameter names of p's details (the service's) into query pointers.
func WithQueryFields(p *Problem) *Problem { return WithFields(p, QueryField) }

// WithPathFields names the path parameters of p's details (the record id of …/{id}/reports): /path/id.
func WithPathFields(p *Problem) *Problem {
	return WithFields(p, func(name string) string { return schema.Pointer("path", name) })
}

func WithFields(p *Problem, field func(string) string) *Problem {
	for i, d := range p.Body.Details {
		if d.Field != "" && !strings.HasPrefix(d.Field, "/") {
			p.Body.Details[i].Field = field(d.Field)
		}
	}
	return p
}
