package backend_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/directaid/directaid/backend"
	"github.com/directaid/directaid/backend/httpapi"
	"github.com/directaid/directaid/internal/testserver"
)

// A Host that could not be part of a link is refused by the API, MCP and the site alike, unless the
// operator set the public URL (then no link carries the Host).
func TestBadHostRefused(t *testing.T) {
	s := testserver.Badger(t)
	for _, publicURL := range []string{"", "https://ayuda.example.org"} {
		h, err := httpapi.NewHandler(withMCP(backend.NewService(s, backend.Config{PublicURL: publicURL, Emergencies: []backend.Emergency{{Slug: "eje-cafetero", Title: "Terremoto"}}})))
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct{ method, path, body, want string }{
			{"GET", "/api/public/v1/help", "", `"code":"invalid_request"`},
			{"POST", "/mcp", `{"jsonrpc":"2.0","id":1,"method":"ping"}`, `"jsonrpc":"2.0"`},
			{"GET", "/", "", "Host"},
		} {
			r := httptest.NewRequest(c.method, c.path, strings.NewReader(c.body))
			r.Header.Set("Content-Type", "application/json")
			r.Header.Set("Accept", "application/json, text/event-stream")
			r.Host = "evil'host"
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			refused := w.Code == http.StatusBadRequest && strings.Contains(w.Body.String(), c.want)
			if refused != (publicURL == "") {
				t.Errorf("public URL %q, %s %s: %d %s", publicURL, c.method, c.path, w.Code, w.Body)
			}
		}
	}
}
