package caddymodule

import (
	"errors"
	"testing"

	"github.com/caddyserver/caddy/v2"
)

// TestAdminBeforeTheFirstConfig: the admin socket answers before the first configuration is loaded
// (while the store opens); Caddy's context then has no config, and asking it for the app panicked, so
// that status, readiness, backup and moderation dropped the connection. They now say it is loading.
func TestAdminBeforeTheFirstConfig(t *testing.T) {
	if _, err := appOf(caddy.Context{}); !errors.Is(err, errLoading) {
		t.Fatalf("before any config: %v, want errLoading", err)
	}
}
