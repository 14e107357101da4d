package backend_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/directaid/directaid/backend"
	"github.com/directaid/directaid/backend/badgerstore"
	"github.com/directaid/directaid/internal/golden"
)

// twoEmergencies are those of testserver.TwoEmergencies, the binary's default in the e2e tests.
var twoEmergencies = []backend.Emergency{
	{Slug: "eje-cafetero", Title: "Terremoto en el Eje Cafetero", Summary: "Sismo con daños en Armenia y Pereira.", Location: "Eje Cafetero", OccurredOn: "2026-08-11"},
	{Slug: "inundaciones-la-mojana", Title: "Inundaciones en La Mojana", Location: "La Mojana", OccurredOn: "2026-10-02"},
}

// contractServer serves backend.NewHandler over a real Badger store in a temporary directory, configured as
// the binary is in the e2e tests (the limits are those testserver puts in its Caddyfile).
type contractServer struct {
	*httptest.Server
	t *testing.T
}

func newContractServer(t *testing.T) *contractServer {
	t.Helper()
	st, err := badgerstore.Open(badgerstore.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	svc := backend.NewService(st, backend.Config{Emergencies: twoEmergencies,
		RateLimitEvents: 100000, RateLimitWindow: time.Minute, DetailRateLimitEvents: 100000, DetailRateLimitWindow: time.Minute})
	h, err := backend.NewHandler(svc)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close) // before the store closes
	return &contractServer{Server: srv, t: t}
}

// do sends a request (header is name, value pairs) and returns the answer with its body read.
func (s *contractServer) do(method, path string, body []byte, header ...string) (*http.Response, []byte) {
	s.t.Helper()
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, s.URL+path, r)
	if err != nil {
		s.t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := s.Client().Do(req)
	if err != nil {
		s.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		s.t.Fatalf("%s %s: %v", method, path, err)
	}
	return resp, b
}

// TestGoldenInProcess: backend.NewHandler, without Caddy, gives the answers the binary gives (e2e's
// TestGolden keeps them in e2e/testdata/golden).
func TestGoldenInProcess(t *testing.T) {
	s := newContractServer(t)
	golden.Run(t, "../e2e/testdata/golden", strings.TrimPrefix(s.URL, "http://"), s.do)
}
