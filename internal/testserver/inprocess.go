package testserver

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
)

// Serve serves h (httpapi.NewHandler, without Caddy) on a loopback port in this process: the contract
// checks that need no Caddy (no rate limit, reload, crash or TLS) run in milliseconds against it, through
// the same Do and CheckOpenAPI as the binary. Only the methods that talk HTTP work on it.
func Serve(t testing.TB, h http.Handler) *Server {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close) // before what the handler reads from (a store) is closed by an earlier cleanup
	return &Server{URL: srv.URL, t: t}
}

// Record answers one request of h in process, without a listener: a JSON body (Content-Type set) and the
// given header name and value pairs, at host ayuda.test. It returns the status and the body.
func Record(h http.Handler, method, path string, body []byte, header ...string) (int, string) {
	r := httptest.NewRequest(method, "http://ayuda.test"+path, bytes.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		r.Header.Set(header[i], header[i+1])
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w.Code, w.Body.String()
}

// MCPHeaders are the headers of an MCP POST of body (one JSON-RPC message) at protocol proto: from
// 2026-07-28 on they include the Mcp-Method and Mcp-Name that protocol requires.
func MCPHeaders(proto, body string) []string {
	hd := []string{"Accept", "application/json, text/event-stream", "MCP-Protocol-Version", proto}
	if proto == "2026-07-28" {
		var m struct {
			Method string `json:"method"`
			Params struct {
				Name string `json:"name"`
			} `json:"params"`
		}
		_ = json.Unmarshal([]byte(body), &m)
		hd = append(hd, "Mcp-Method", m.Method)
		if m.Params.Name != "" {
			hd = append(hd, "Mcp-Name", m.Params.Name)
		}
	}
	return hd
}
