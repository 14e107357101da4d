package backend_test

import (
	"go/build"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestImportsPointDown: each package imports only the packages of ours below it in the layering that
// docs/architecture.md draws, so the domain never imports a transport and the site never the domain.
func TestImportsPointDown(t *testing.T) {
	const mod = "github.com/directaid/directaid/"
	allowed := map[string][]string{
		"backend/httpapi":     {"backend", "site", "backend/store", "schema", "internal/webutil"},
		"backend/mcpserver":   {"backend", "schema", "internal/webutil"},
		"backend/metrics":     {"backend", "backend/store", "schema"},
		"site":                {"schema", "backend/places", "internal/webutil"},
		"backend":             {"backend/store", "schema", "backend/places", "internal/webutil"},
		"backend/webhooks":    {"backend/store", "schema"},
		"backend/badgerstore": {"backend/store", "backend/store/recordjson", "schema"},
		"backend/pgstore":     {"backend/store", "backend/store/recordjson", "schema"},
		"backend/store":       {"schema"},
		"schema":              {"backend/places"},
		"backend/places":      {"internal/textdist"},
	}
	for pkg, ok := range allowed {
		p, err := build.Import(mod+pkg, ".", 0)
		if err != nil {
			t.Fatalf("%s: %v", pkg, err)
		}
		for _, imp := range p.Imports {
			ours, found := strings.CutPrefix(imp, mod)
			if found && !slices.Contains(ok, ours) {
				t.Errorf("%s imports %s, which is not below it", pkg, ours)
			}
		}
	}
}

// TestNoCaddyBelowTheGlue: neither the domain and its transports and stores (backend/...) nor the
// contract (schema/...) depends on Caddy, directly or through another package: Caddy stays in caddymodule.
// (certmagic, Caddy's TLS library, is allowed: pgstore's CertStorage implements its Storage interface.)
func TestNoCaddyBelowTheGlue(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-test=false", "../backend/...", "../schema/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		if strings.HasPrefix(dep, "github.com/caddyserver/caddy/") {
			t.Errorf("backend/... or schema/... depends on %s", dep)
		}
	}
}
