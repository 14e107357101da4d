package mcpserver

import (
	"net/http"
	"testing"
	"time"

	"github.com/directaid/directaid/backend"
	"github.com/directaid/directaid/backend/httpapi"
	"github.com/directaid/directaid/internal/testserver"
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
	st := testserver.Badger(t)
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
	return testserver.Record(s.h, method, path, body, header...)
}

// mcpPost posts one MCP message at protocol proto (2026-07-28 adds the headers it requires).
func (s *testServer) mcpPost(proto, body string) (int, string) {
	return s.do("POST", schema.MCPPath, []byte(body), testserver.MCPHeaders(proto, body)...)
}
