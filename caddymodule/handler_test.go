package caddymodule

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/directaid/directaid/backend"
	"github.com/directaid/directaid/backend/store"
	"github.com/directaid/directaid/schema"
)

// TestHandlerWrapsNoWriter: a request through the handler allocates nothing more when Caddy's idle-timeout
// writer is in its context (as in every request of a real server: write_idle defaults to a minute) than
// without: only a whole export wraps its writer (deadlineWriter), which TestExportOutlivesServerTimeouts
// (e2e) checks. Before, every request allocated a deadlineWriter.
func TestHandlerWrapsNoWriter(t *testing.T) {
	d, err := store.Embedded()
	if err != nil {
		t.Fatal(err)
	}
	st, err := d.Open(store.Config{Where: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	a := &App{store: st}
	a.openOnce.Do(func() {}) // opened: the store above
	if err := a.build(backend.Config{}); err != nil {
		t.Fatal(err)
	}
	h := &Handler{app: a}
	vars := context.WithValue(context.Background(), caddyhttp.VarsCtxKey, map[string]any{caddyhttp.ClientIPVarKey: "127.0.0.1"})
	allocs := func(ctx context.Context) float64 {
		r := httptest.NewRequestWithContext(ctx, http.MethodGet, "http://localhost"+schema.OpenAPIPath, nil)
		w := &discardWriter{hd: http.Header{}}
		return testing.AllocsPerRun(200, func() {
			clear(w.hd)
			if err := h.ServeHTTP(w, r, nil); err != nil || w.status != http.StatusOK {
				t.Fatalf("%s: %d, %v", schema.OpenAPIPath, w.status, err)
			}
		})
	}
	without := allocs(vars)
	with := allocs(caddyhttp.ContextWithIdleTimeouts(vars, nil, &caddyhttp.IdleTimeoutWriter{}))
	if with != without {
		t.Fatalf("a request allocates %v times with Caddy's idle-timeout writer in its context, %v without", with, without)
	}
}

// discardWriter is a ResponseWriter that keeps the status and throws the body away.
type discardWriter struct {
	hd     http.Header
	status int
}

func (d *discardWriter) Header() http.Header         { return d.hd }
func (d *discardWriter) WriteHeader(s int)           { d.status = s }
func (d *discardWriter) Write(b []byte) (int, error) { return len(b), nil }
