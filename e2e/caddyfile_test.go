package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/directaid/directaid/internal/testserver"
)

func runBinary(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(testserver.Binary(t), args...)
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir(), "XDG_DATA_HOME="+t.TempDir(), "XDG_CONFIG_HOME="+t.TempDir())
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func TestShippedCaddyfilesAdaptAndValidate(t *testing.T) {
	// dist/Caddyfile.postgres reads it; validating opens a pool but connects to nothing.
	t.Setenv("DIRECTAID_DATABASE_URL", "postgres://directaid@127.0.0.1:1/directaid?connect_timeout=1")
	for _, f := range []string{"Caddyfile", "Caddyfile.local", "dist/Caddyfile.postgres"} {
		path := filepath.Join("..", f)
		cmd := exec.Command(testserver.Binary(t), "adapt", "--config", path, "--validate", "--pretty")
		cmd.Env = append(os.Environ(), "HOME="+t.TempDir(), "XDG_DATA_HOME="+t.TempDir(), "XDG_CONFIG_HOME="+t.TempDir())
		out, err := cmd.Output() // stdout only: the JSON
		if err != nil {
			t.Fatalf("adapt --validate %s: %v\n%s", f, err, out)
		}
		// The binary adapts it to the JSON that caddymodule's TestShippedCaddyfilesAdapt keeps.
		want, err := readFile(filepath.Join("..", "caddymodule", "testdata", "caddyfile_adapt", "shipped", f+".json"))
		if err != nil || string(out) != want {
			t.Errorf("adapt %s differs from caddymodule/testdata/caddyfile_adapt/shipped/%s.json (%v):\n%s", f, f, err, out)
		}
		if out, err := runBinary(t, "validate", "--config", path); err != nil || !strings.Contains(out, "Valid configuration") {
			t.Fatalf("validate %s: %v\n%s", f, err, out)
		}
	}
}

func TestCaddyfileErrorsNameTheLine(t *testing.T) {
	for _, c := range []struct{ name, global, want string }{
		{"unknown option", "directaid {\n\t\tdatabse badger ./x\n\t}", `unknown directaid option "databse"`},
		{"unknown emergency option", "directaid {\n\t\temergency a {\n\t\t\ttitle A\n\t\t\ttitel B\n\t\t}\n\t}", `unknown emergency option "titel"`},
		{"bad date", "directaid {\n\t\temergency a {\n\t\t\ttitle A\n\t\t\toccurred 11/08/2026\n\t\t}\n\t}", "must be a date YYYY-MM-DD"},
		{"bad slug", "directaid {\n\t\temergency Eje_Cafetero {\n\t\t\ttitle A\n\t\t}\n\t}", "lowercase letters"},
		{"no title", "directaid {\n\t\temergency a {\n\t\t\tsummary x\n\t\t}\n\t}", "needs a title"},
		{"duplicate slug", "directaid {\n\t\temergency a {\n\t\t\ttitle A\n\t\t}\n\t\temergency a {\n\t\t\ttitle B\n\t\t}\n\t}", "declared twice"},
		{"bad public_url", "directaid {\n\t\tpublic_url ayuda.example.org\n\t}", "absolute http(s) URL"},
		{"unknown database", "directaid {\n\t\tdatabase mysql x\n\t}", `unknown database "mysql" (supported: badger, postgres)`},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "Caddyfile")
			cf := "{\n\t" + c.global + "\n}\n\nhttp://:8080 {\n\tdirectaid\n}\n"
			if err := os.WriteFile(path, []byte(cf), 0o644); err != nil {
				t.Fatal(err)
			}
			out, err := runBinary(t, "adapt", "--config", path)
			out = strings.ReplaceAll(out, `\"`, `"`) // the log line is JSON
			if err == nil || !strings.Contains(out, c.want) {
				t.Fatalf("want an error containing %q, got %v:\n%s", c.want, err, out)
			}
			if c.name == "unknown option" && !strings.Contains(out, "Caddyfile:3") {
				t.Errorf("the error should name the file and line: %s", out)
			}
		})
	}
	// The handler directive takes no options.
	path := filepath.Join(t.TempDir(), "Caddyfile")
	_ = os.WriteFile(path, []byte("http://:8080 {\n\tdirectaid {\n\t\tfoo\n\t}\n}\n"), 0o644)
	if out, err := runBinary(t, "adapt", "--config", path); err == nil || !strings.Contains(out, "takes no options") {
		t.Errorf("directive options: %v %s", err, out)
	}
}

// TestOperatingDocShowsTheShippedCaddyfile: the production Caddyfile in docs/operating.md (its first
// caddyfile block) is the shipped one, word for word, so that an operator who copies it gets what the
// tests validate.
func TestOperatingDocShowsTheShippedCaddyfile(t *testing.T) {
	doc, err := readFile(filepath.Join("..", "docs", "operating.md"))
	if err != nil {
		t.Fatal(err)
	}
	shipped, err := readFile(filepath.Join("..", "Caddyfile"))
	if err != nil {
		t.Fatal(err)
	}
	_, block, ok := strings.Cut(doc, "```caddyfile\n")
	if block, _, _ = strings.Cut(block, "```"); !ok || block != shipped {
		t.Errorf("docs/operating.md's first caddyfile block differs from Caddyfile; paste the file in:\n%s", block)
	}
}

// TestXcaddyBuild: xcaddy.sh builds the same binary with xcaddy v0.4.5 (a full Caddy build: minutes,
// skipped with -short), with our modules and caddy-ratelimit at the versions of go.mod.
func TestXcaddyBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("a full Caddy build; run without -short")
	}
	out := filepath.Join(t.TempDir(), "directaid")
	cmd := exec.Command(filepath.Join("..", "xcaddy.sh"))
	cmd.Env = append(os.Environ(), "OUTPUT="+out)
	if log, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("xcaddy.sh: %v\n%s", err, log)
	}
	mods, err := exec.Command(out, "list-modules").CombinedOutput()
	if err != nil {
		t.Fatalf("list-modules: %v\n%s", err, mods)
	}
	for _, m := range []string{"directaid", "admin.api.directaid", "http.handlers.directaid", "http.handlers.rate_limit",
		"http.matchers.directaid_mcp_publish", "http.matchers.directaid_mcp_contact"} {
		if !slices.Contains(strings.Fields(string(mods)), m) {
			t.Errorf("the xcaddy build lacks the module %s:\n%s", m, mods)
		}
	}
	if v, err := exec.Command(out, "version").CombinedOutput(); err != nil || !strings.HasPrefix(string(v), "v2.11.9 ") {
		t.Errorf("version: %v %s", err, v)
	}
	// It serves the shipped local Caddyfile as the make build does.
	if log, err := exec.Command(out, "validate", "--config", filepath.Join("..", "Caddyfile.local")).CombinedOutput(); err != nil {
		t.Errorf("validate: %v\n%s", err, log)
	}
}

// TestValidateWarnsWithoutEmergency: a configuration without an active emergency is valid (a node ready
// for the next one), but its every publication is refused: validate and run say so in a warning.
func TestValidateWarnsWithoutEmergency(t *testing.T) {
	for name, want := range map[string]bool{
		"":                                    true,
		"emergency a {\n\t\t\ttitle A\n\t\t}": false,
		"emergency a {\n\t\t\ttitle A\n\t\t\tinactive\n\t\t}": true,
	} {
		path := filepath.Join(t.TempDir(), "Caddyfile")
		cf := "{\n\tdirectaid {\n\t\tdatabase badger " + filepath.Join(t.TempDir(), "db") + "\n\t\t" + name + "\n\t}\n}\n\nhttp://:8080 {\n\tdirectaid\n}\n"
		if err := os.WriteFile(path, []byte(cf), 0o644); err != nil {
			t.Fatal(err)
		}
		out, err := runBinary(t, "validate", "--config", path)
		if err != nil || !strings.Contains(out, "Valid configuration") || strings.Contains(out, "no active emergency") != want {
			t.Errorf("validate with %q: %v, want the warning %v:\n%s", name, err, want, out)
		}
	}
}
