package caddymodule

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2/caddyconfig"
	"github.com/caddyserver/caddy/v2/caddytest"

	_ "github.com/caddyserver/caddy/v2/modules/standard"
	_ "github.com/mholt/caddy-ratelimit"
)

// updateAdapt rewrites the expected halves of the adapt files (DIRECTAID_UPDATE_GOLDEN=1, as e2e's TestGolden).
var updateAdapt = os.Getenv("DIRECTAID_UPDATE_GOLDEN") == "1"

const adaptSep = "----------"

// TestCaddyfileAdapt keeps, as Caddy and caddy-l4 do, one testdata/caddyfile_adapt/*.caddyfiletest per case: a
// Caddyfile, a line of dashes, then either the JSON it adapts to (compared with caddytest.CompareAdapt) or
// the exact error, which names the file and line.
func TestCaddyfileAdapt(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "caddyfile_adapt", "*.caddyfiletest"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no adapt files: %v", err)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			cf, want, ok := strings.Cut(string(data), adaptSep)
			if !ok {
				t.Fatalf("%s has no %s line", file, adaptSep)
			}
			cf, want = strings.TrimSpace(cf)+"\n", strings.TrimSpace(want)
			checkAdapt(t, file, cf, want, func(got string) string { return strings.TrimSpace(cf) + "\n\n" + adaptSep + "\n" + got + "\n" })
		})
	}
}

// TestShippedCaddyfilesAdapt: the shipped Caddyfile and Caddyfile.local adapt to the JSON kept beside the
// cases (testdata/caddyfile_adapt/shipped/*.json).
func TestShippedCaddyfilesAdapt(t *testing.T) {
	for _, name := range []string{"Caddyfile", "Caddyfile.local", "dist/Caddyfile.postgres"} {
		t.Run(name, func(t *testing.T) {
			cf, err := os.ReadFile(filepath.Join("..", name))
			if err != nil {
				t.Fatal(err)
			}
			file := filepath.Join("testdata", "caddyfile_adapt", "shipped", name+".json")
			want, _ := os.ReadFile(file)
			checkAdapt(t, file, string(cf), strings.TrimSpace(string(want)), func(got string) string { return got + "\n" })
		})
	}
}

// checkAdapt adapts cf and compares the result with want: indented JSON, or an error message. With
// DIRECTAID_UPDATE_GOLDEN=1 it writes content(got) to file instead.
func checkAdapt(t *testing.T, file, cf, want string, content func(got string) string) {
	t.Helper()
	adapter := caddyconfig.GetAdapter("caddyfile")
	out, warnings, err := adapter.Adapt([]byte(cf), nil)
	for _, w := range warnings {
		t.Errorf("warning: %s:%d: %s: %s", w.File, w.Line, w.Directive, w.Message)
	}
	got := ""
	if err != nil {
		got = err.Error()
	} else {
		var b bytes.Buffer
		if err := json.Indent(&b, out, "", "\t"); err != nil {
			t.Fatal(err)
		}
		got = b.String()
	}
	if updateAdapt {
		if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(file, []byte(content(got)), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if strings.HasPrefix(want, "{") {
		if err != nil {
			t.Fatalf("%s: adapting failed: %v", file, err)
		}
		if !caddytest.CompareAdapt(t, file, cf, "caddyfile", want) {
			t.Errorf("%s: the adapted JSON differs (see the diff above; DIRECTAID_UPDATE_GOLDEN=1 rewrites it)", file)
		}
		return
	}
	if err == nil {
		t.Fatalf("%s: want the error %q, adapting succeeded", file, want)
	}
	if got != want {
		t.Errorf("%s: error\n got: %s\nwant: %s", file, got, want)
	}
}
