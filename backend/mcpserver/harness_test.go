package mcpserver

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/directaid/directaid/backend"
	"github.com/directaid/directaid/backend/badgerstore"
	"github.com/directaid/directaid/backend/httpapi"
	"github.com/directaid/directaid/schema"
)

// testServer is the HTTP surface of a service over a real Badger store, with this package's MCP server,
// served in process.
type testServer struct {
	t *testing.T
	h http.Handler
}

func newTestServer(t *testing.T) *testServer {
	t.Helper()
	st, err := badgerstore.Open(badgerstore.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	svc := backend.NewService(st, backend.Config{Emergencies: []backend.Emergency{
		{Slug: "eje-cafetero", Title: "Terremoto en el Eje Cafetero", RequestTTL: 48 * time.Hour, OfferTTL: 96 * time.Hour},
		{Slug: "inundaciones-la-mojana", Title: "Inundaciones en La Mojana"},
	}, RateLimits: map[string]backend.Limit{backend.ZonePublish: {Events: 1000, Window: time.Minute}, backend.ZoneDetail: {Events: 1000, Window: time.Minute}}})
	h, err := httpapi.NewHandler(svc, httpapi.Options{MCP: New(svc)})
	if err != nil {
		t.Fatal(err)
	}
	return &testServer{t: t, h: h}
}

func (s *testServer) do(method, path string, body []byte, header ...string) (int, string) {
	s.t.Helper()
	r := httptest.NewRequest(method, "http://ayuda.test"+path, strings.NewReader(string(body)))
	r.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		r.Header.Set(header[i], header[i+1])
	}
	w := httptest.NewRecorder()
	s.h.ServeHTTP(w, r)
	return w.Code, w.Body.String()
}

// mcpPost posts one MCP message at protocol proto (2026-07-28 adds the headers it requires).
func (s *testServer) mcpPost(proto, body string) (int, string) {
	s.t.Helper()
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
	return s.do("POST", schema.MCPPath, []byte(body), hd...)
}
