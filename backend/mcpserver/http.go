package mcpserver

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/directaid/directaid/backend"
	"github.com/directaid/directaid/internal/webutil"
	"github.com/directaid/directaid/schema"
)

// MaxBodyBytes bounds one MCP message: a tools/call is at most a publish body (schema.MaxBodyBytes)
// in a small JSON-RPC envelope. mcp-go itself reads bodies unbounded.
const MaxBodyBytes = 2 * schema.MaxBodyBytes

// tooLarge refuses a message over MaxBodyBytes, saying the bound.
var tooLarge = fmt.Sprintf("Mensaje demasiado grande: un mensaje MCP tiene como máximo %d KiB.", MaxBodyBytes>>10)

// Headers a browser-based MCP client sends: Mcp-Method and Mcp-Name are required on every POST from
// protocol 2026-07-28 on; Accept is listed because its MCP value is not a CORS-safelisted one.
const mcpAllowHeaders = "Content-Type, Accept, Mcp-Protocol-Version, Mcp-Session-Id, Mcp-Method, Mcp-Name, Last-Event-ID"

// Endpoint is the HTTP face of the MCP server: what mcp-go leaves to the host (CORS, body bounds,
// batches, methods, DNS-rebinding protection) is decided here, and only a bounded, single JSON-RPC POST
// reaches mcp-go.
type Endpoint struct {
	srv        *server.MCPServer
	rpc        http.Handler
	publicHost string   // host of public_url: a local reverse proxy forwards it over loopback
	toolNames  []string // for the error that names an unknown tool
	publicURL  string
	tools      []schema.MCPTool
}

// New builds the MCP server over svc and its HTTP endpoint, which serves schema.MCPPath.
func New(svc *backend.Service) *Endpoint {
	srv, tools := newMCPServer(svc)
	e := &Endpoint{srv: srv, publicURL: svc.Config().PublicURL, tools: tools, rpc: server.NewStreamableHTTPServer(srv,
		server.WithStateLess(true),
		server.WithDisableStreaming(true),
		// Replaced by rebinding below, which lets public_url through a local reverse proxy and checks Origin.
		server.WithDisableLocalhostProtection(true),
		server.WithHTTPContextFunc(mcpContext(svc)),
	)}
	for name := range srv.ListTools() {
		e.toolNames = append(e.toolNames, name)
	}
	slices.Sort(e.toolNames)
	if u, err := url.Parse(svc.Config().PublicURL); err == nil {
		e.publicHost = u.Hostname()
	}
	return e
}

// Tools are the registered tools, in registration order, as the documents list them.
func (e *Endpoint) Tools() []schema.MCPTool { return e.tools }

func (e *Endpoint) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if _, ok := webutil.BaseURL(e.publicURL, r); !ok {
		// Links in the answer would carry the Host (the API and the site refuse it alike).
		writeRPCError(w, http.StatusBadRequest, backend.BadHost)
		return
	}
	if r.Method == http.MethodOptions {
		// A preflight reads nothing and changes nothing; the request it announces meets the checks below.
		// A browser's GET passes CORS without being listed (GET is CORS-safelisted), so a browser client
		// still gets the 405 the MCP specification describes instead of an opaque CORS failure.
		hd := w.Header()
		hd.Set("Allow", schema.MCPMethods)
		hd.Set("Access-Control-Allow-Methods", schema.MCPMethods)
		hd.Set("Access-Control-Allow-Headers", mcpAllowHeaders)
		hd.Set("Access-Control-Max-Age", "86400")
		w.WriteHeader(http.StatusNoContent)
		return
	}
	if e.rebinding(r) {
		writeRPCError(w, http.StatusForbidden, "Host u Origin no permitido: este servidor local solo atiende a localhost. "+
			"Detrás de un proxy inverso en la misma máquina, configure public_url con el nombre público.")
		return
	}
	if r.Method != http.MethodPost {
		// No server-initiated stream and no sessions: the MCP answer for GET (and DELETE) is 405.
		w.Header().Set("Allow", schema.MCPMethods)
		writeRPCError(w, http.StatusMethodNotAllowed, "Método no permitido: este servidor MCP no tiene flujo SSE ni sesiones; envíe cada mensaje JSON-RPC por POST.")
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	if p := backend.CheckBodyEncoding(r); p != nil {
		w.Header().Set("Accept-Encoding", "identity")
		writeRPCError(w, p.Status, p.Body.Error)
		return
	}
	if p := backend.CheckJSONContentType(r); p != nil {
		if p.Status == http.StatusBadRequest {
			writeRPCErrorCode(w, p.Status, mcp.INVALID_REQUEST, p.Body.Error)
			return
		}
		writeRPCError(w, http.StatusUnsupportedMediaType, "Envíe el mensaje JSON-RPC con Content-Type: application/json.")
		return
	}
	proto := r.Header.Get(mcp.HeaderProtocolVersion)
	if proto != "" && !mcp.IsValidProtocolVersion(proto) {
		writeRPCError(w, http.StatusBadRequest, "Versión de protocolo MCP no admitida: "+proto+"; admitidas: "+strings.Join(mcp.ValidProtocolVersions, ", ")+".")
		return
	}
	if r.ContentLength > MaxBodyBytes {
		w.Header().Set("Connection", "close")
		writeRPCError(w, http.StatusRequestEntityTooLarge, tooLarge)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			w.Header().Set("Connection", "close")
			writeRPCError(w, http.StatusRequestEntityTooLarge, tooLarge)
			return
		}
		writeRPCError(w, http.StatusBadRequest, "No se pudo leer el cuerpo de la petición.")
		return
	}
	// One message per POST (batches left MCP in 2025-06-18). Refusing them here, before decoding,
	// keeps a batch of thousands of calls from running, and keeps "one POST = at most one publication",
	// which the rate limit counts on. Text that is not JSON at all (a cut «[[[…») is a parse error first.
	if t := bytes.TrimLeft(body, " \t\r\n"); len(t) > 0 && t[0] == '[' {
		if !json.Valid(body) {
			writeRefusal(w, &rpcRefusal{code: mcp.PARSE_ERROR, msg: msgNotJSON}, proto)
			return
		}
		writeRefusal(w, &rpcRefusal{code: mcp.INVALID_REQUEST, msg: "No se admiten lotes JSON-RPC: envíe un mensaje por petición."}, proto)
		return
	}
	refusal, response, method := checkMessage(body)
	switch {
	case refusal != nil:
		writeRefusal(w, refusal, proto)
		return
	case response:
		w.WriteHeader(http.StatusAccepted) // a response to nothing this stateless server asked: accepted, ignored
		return
	}
	// mcp-go reads the id into a float64: an integer above 2^53 would come back changed. The answer
	// carries the id exactly as it came (checkMessage refused ids in another case or repeated).
	var envelope struct {
		ID json.RawMessage `json:"id"`
	}
	_ = json.Unmarshal(body, &envelope)
	r.Body = io.NopCloser(bytes.NewReader(body))
	b := &bufferedResponse{header: http.Header{}}
	e.rpc.ServeHTTP(b, r)
	b.send(w, method, e.toolNames, envelope.ID, proto)
}

// rebinding reports a request that a DNS-rebinding attack could have sent: it came over a loopback
// connection (the server is reachable as localhost from the victim's browser) but names a foreign
// host, or a page of a foreign origin sent it. On a public address, Caddy's site matching already
// rejects foreign hosts. A local reverse proxy forwarding public_url's host is let through with CORS
// open, as on any public deployment.
func (e *Endpoint) rebinding(r *http.Request) bool {
	if !loopbackConn(r) {
		return false
	}
	host := hostOnly(r.Host)
	if e.publicHost != "" && strings.EqualFold(host, e.publicHost) {
		return false
	}
	if !loopbackName(host) {
		return true
	}
	if origin := r.Header.Get("Origin"); origin != "" {
		u, err := url.Parse(origin)
		return err != nil || !loopbackName(u.Hostname())
	}
	return false
}

func loopbackConn(r *http.Request) bool {
	addr, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if !ok || addr == nil {
		return false
	}
	ap, err := netip.ParseAddrPort(addr.String())
	return err == nil && ap.Addr().IsLoopback()
}

func hostOnly(hostport string) string {
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		return h
	}
	return strings.Trim(hostport, "[]")
}

// loopbackName: names a browser resolves to this machine only (RFC 6761 .localhost included), so no
// attacker's DNS can stand behind them.
func loopbackName(host string) bool {
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}

func writeRPCError(w http.ResponseWriter, status int, msg string) {
	writeRPCErrorCode(w, status, -32000, msg) // -32000: the implementation-defined server error
}

// writeRPCErrorCode answers with a JSON-RPC error (id null: the message was not read), the body MCP
// clients parse on a failed POST.
func writeRPCErrorCode(w http.ResponseWriter, status, code int, msg string) {
	w.Header().Set("Cache-Control", "no-store")
	backend.WriteJSON(w, status, map[string]any{"jsonrpc": "2.0", "id": nil, "error": map[string]any{"code": code, "message": msg}})
}

// UseOf tells what an MCP POST body may do, so that the rate limits meter MCP as they meter the HTTP
// API: only a message that surely cannot publish is free of the publish budget, that is one that is not
// a tools/call, or calls a tool annotated read-only (the annotation is the one source of that fact).
// Anything unreadable counts, and is refused anyway. The decoding is mcp-go's own (encoding/json into a
// struct: case-insensitive keys, the last duplicate wins), so the two cannot read one body differently.
func (e *Endpoint) UseOf(body []byte) backend.MCPUse {
	var msg struct {
		Method string `json:"method"`
		Params struct {
			Name string `json:"name"`
		} `json:"params"`
	}
	if json.Unmarshal(body, &msg) != nil {
		return backend.MCPPublish
	}
	if msg.Method != string(mcp.MethodToolsCall) {
		return backend.MCPFree
	}
	t := e.srv.GetTool(msg.Params.Name)
	if t == nil {
		return backend.MCPPublish
	}
	return toolUse(&t.Tool)
}
