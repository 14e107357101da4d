package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/directaid/directaid/internal/testserver"
)

// mcpConformance is the official MCP conformance suite, pinned (it needs Node 20).
const mcpConformance = "@modelcontextprotocol/conformance@0.1.13"

// requireNpx finds npx to run pkg. Without it the test is skipped, unless DIRECTAID_REQUIRE_NPX is set, as
// .ci/run does, so that CI cannot pass by skipping.
func requireNpx(t *testing.T, pkg string) string {
	t.Helper()
	npx, err := exec.LookPath("npx")
	if err != nil {
		if os.Getenv("DIRECTAID_REQUIRE_NPX") != "" {
			t.Fatal("npx not found, and DIRECTAID_REQUIRE_NPX is set: install Node 20 (see .ci/run)")
		}
		t.Skip("npx not found: install Node 20 to run " + pkg)
	}
	return npx
}

// TestMCPConformance runs the suite's server scenarios against the running binary on 127.0.0.1 (the
// DNS-rebinding scenario needs a localhost URL).
func TestMCPConformance(t *testing.T) {
	npx := requireNpx(t, mcpConformance)
	s := testserver.Start(t, testserver.Options{})
	home := t.TempDir()
	for _, scenario := range []string{"server-initialize", "ping", "tools-list", "dns-rebinding-protection"} {
		t.Run(scenario, func(t *testing.T) {
			// The first run downloads the suite into npm's cache.
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, npx, "-y", mcpConformance, "server", "--url", s.URL+"/mcp", "--scenario", scenario)
			cmd.Dir = home // results/ and any other files the suite writes
			cmd.Env = append(os.Environ(), "npm_config_update_notifier=false")
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("%s: %v\n%s", scenario, err, out)
			}
			t.Logf("%s", out)
		})
	}
}

// redocly is Redocly's OpenAPI linter, pinned: a second, independent validator of the served document.
const redocly = "@redocly/cli@2.77.0"

// TestOpenAPILint lints the document the running binary serves with Redocly's recommended rules (an
// OpenAPI 3.1 validator that we did not write, besides the one that checks every response).
func TestOpenAPILint(t *testing.T) {
	npx := requireNpx(t, redocly)
	s := testserver.Start(t, testserver.Options{})
	resp, doc := s.Do("GET", "/api/public/openapi.json", nil)
	if resp.StatusCode != 200 {
		t.Fatalf("openapi.json: %d", resp.StatusCode)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "openapi.json")
	if err := os.WriteFile(path, doc, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, npx, "-y", redocly, "lint", "--format", "stylish", path)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "npm_config_update_notifier=false", "REDOCLY_TELEMETRY=off", "REDOCLY_SUPPRESS_UPDATE_NOTICE=true")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("redocly lint: %v\n%s", err, out)
	}
	t.Logf("%s", out)
}
