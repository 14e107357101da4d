package caddymodule

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/caddyserver/caddy/v2"
)

func init() { caddy.RegisterModule(healthAPI{}) }

// healthAPI adds health routes to Caddy's admin endpoint, for systemd, a load balancer or a monitor:
//
//	GET /directaid/health/live   200 while the process answers
//	GET /directaid/health/ready  200 when a publication now would be stored, else 503 with the reason
type healthAPI struct{}

func (healthAPI) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{ID: "admin.api.directaid_health", New: func() caddy.Module { return new(healthAPI) }}
}

func (healthAPI) Routes() []caddy.AdminRoute {
	return []caddy.AdminRoute{
		{Pattern: "/directaid/health/live", Handler: caddy.AdminHandlerFunc(liveHandler)},
		{Pattern: "/directaid/health/ready", Handler: caddy.AdminHandlerFunc(readyHandler)},
	}
}

// Health is the body of both routes.
type Health struct {
	Status string `json:"status"` // alive, ready, not_ready
	// Reason says why the store does not accept writes (not_ready only).
	Reason string `json:"reason,omitempty"`
	// ProbeMs is how long the probe's synced commit took (ready only).
	ProbeMs float64 `json:"probeMs,omitempty"`
}

func writeHealth(w http.ResponseWriter, status int, h Health) error {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	return json.NewEncoder(w).Encode(h)
}

func liveHandler(w http.ResponseWriter, r *http.Request) error {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return caddy.APIError{HTTPStatus: http.StatusMethodNotAllowed, Err: errors.New("use GET")}
	}
	return writeHealth(w, http.StatusOK, Health{Status: "alive"})
}

// readyHandler commits a probe through the store (Store.Probe, which every store has): not a record, but
// the same synced write a publication needs, so that ready means a publication now would be stored.
func readyHandler(w http.ResponseWriter, r *http.Request) error {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return caddy.APIError{HTTPStatus: http.StatusMethodNotAllowed, Err: errors.New("use GET")}
	}
	app, err := currentApp()
	if errors.Is(err, errLoading) {
		return writeHealth(w, http.StatusServiceUnavailable, Health{Status: "not_ready", Reason: err.Error()})
	}
	if err != nil {
		return writeHealth(w, http.StatusServiceUnavailable, Health{Status: "not_ready", Reason: "the store does not open: " + err.Error()})
	}
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	began := time.Now()
	if err := app.store.Probe(ctx); err != nil {
		return writeHealth(w, http.StatusServiceUnavailable, Health{Status: "not_ready", Reason: err.Error()})
	}
	return writeHealth(w, http.StatusOK, Health{Status: "ready", ProbeMs: float64(time.Since(began).Microseconds()) / 1000})
}
