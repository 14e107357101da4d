package testserver

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// Serve serves h (backend.NewHandler, without Caddy) on a loopback port in this process: the contract
// checks that need no Caddy (no rate limit, reload, crash or TLS) run in milliseconds against it, through
// the same Do and CheckOpenAPI as the binary. Only the methods that talk HTTP work on it.
func Serve(t testing.TB, h http.Handler) *Server {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close) // before what the handler reads from (a store) is closed by an earlier cleanup
	return &Server{URL: srv.URL, t: t}
}
