package caddymodule

import (
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"
)

// lineRE finds the position Caddy's Dispenser appends to an error: ", at Caddyfile:12".
var lineRE = regexp.MustCompile(`, at Caddyfile:(\d+)`)

// FuzzCaddyfile parses arbitrary Caddyfiles and hands every `directaid` segment to our parsers, the
// global option and the handler directive: they never panic, every error names a line of the file, and
// what they accept is a configuration that validates and survives a JSON round trip.
func FuzzCaddyfile(f *testing.F) {
	for _, name := range []string{"../Caddyfile", "../Caddyfile.local"} {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(b))
	}
	f.Add("{\n\tdirectaid {\n\t\temergency a {\n\t\t\ttitle A\n\t\t\toccurred 11/08/2026\n\t\t}\n\t}\n}\n")
	f.Add("{\n\tdirectaid {\n\t\temergency Eje_Cafetero {\n\t\t\ttitle A\n\t\t}\n\t}\n}\n")
	f.Add("{\n\tdirectaid {\n\t\temergency a {\n\t\t\ttitle A\n\t\t}\n\t\temergency a {\n\t\t\ttitle B\n\t\t\tinactive\n\t\t}\n\t}\n}\n")
	f.Add("{\n\tdirectaid {\n\t\temergency a {\n\t\t\ttitle A\n\t\t\trequest_ttl 14d\n\t\t\toffer_ttl -1h\n\t\t}\n\t}\n}\n")
	f.Add("{\n\tdirectaid {\n\t\tpublic_url ayuda.example.org\n\t}\n}\n")
	f.Add("{\n\tdirectaid {\n\t\tdatabase postgres x\n\t}\n}\n")
	f.Add("{\n\tdirectaid\n}\n:80 {\n\tdirectaid {\n\t\tfoo\n\t}\n}\n")
	f.Fuzz(func(t *testing.T, input string) {
		// import reads other files and {$VAR} the environment: neither is ours to fuzz.
		if strings.Contains(input, "import") || strings.Contains(input, "{$") || strings.Contains(input, "{env.") {
			return
		}
		blocks, err := caddyfile.Parse("Caddyfile", []byte(input))
		if err != nil {
			return // Caddy's own syntax errors
		}
		lines := strings.Count(input, "\n") + 1
		for i, sb := range blocks {
			global := i == 0 && len(sb.Keys) == 0
			for _, seg := range sb.Segments {
				if seg.Directive() != "directaid" {
					continue
				}
				var err error
				if global {
					var v any
					if v, err = parseGlobal(caddyfile.NewDispenser(seg), nil); err == nil {
						checkApp(t, v.(httpcaddyfile.App))
					}
				} else {
					_, err = parseHandler(httpcaddyfile.Helper{Dispenser: caddyfile.NewDispenser(seg)})
				}
				if err == nil {
					continue
				}
				m := lineRE.FindStringSubmatch(err.Error())
				if m == nil {
					t.Fatalf("error without file:line: %v\n%s", err, input)
				}
				if n, _ := strconv.Atoi(m[1]); n < 1 || n > lines {
					t.Fatalf("error names line %d of a %d-line file: %v", n, lines, err)
				}
			}
		}
	})
}

// checkApp verifies an accepted global option: it validates, and its JSON decodes to the same app.
func checkApp(t *testing.T, v httpcaddyfile.App) {
	t.Helper()
	var a App
	if err := json.Unmarshal(v.Value, &a); err != nil {
		t.Fatalf("accepted config is not JSON of App: %v", err)
	}
	if err := a.Validate(); err != nil {
		t.Fatalf("accepted config does not validate: %v\n%s", err, v.Value)
	}
	for _, e := range a.Emergencies {
		if !slugRE.MatchString(e.Slug) || e.Title == "" {
			t.Fatalf("accepted emergency %+v", e)
		}
	}
	b, err := json.Marshal(&a)
	if err != nil {
		t.Fatal(err)
	}
	var again App
	if err := json.Unmarshal(b, &again); err != nil || !reflect.DeepEqual(again.Emergencies, a.Emergencies) ||
		again.PublicURL != a.PublicURL || again.Database != a.Database {
		t.Fatalf("JSON round trip changed the config: %v\n%s\n%s", err, v.Value, b)
	}
}

// TestCaddyfileErrorsNameTheirLine pins the line each validation error names: the token at fault.
func TestCaddyfileErrorsNameTheirLine(t *testing.T) {
	for _, c := range []struct {
		body string
		line int
	}{
		{"\tpublic_url ayuda.example.org\n", 3},
		{"\temergency Eje_Cafetero {\n\t\ttitle A\n\t}\n", 3},
		{"\temergency a {\n\t\ttitle A\n\t\toccurred 11/08/2026\n\t}\n", 5},
		{"\temergency a {\n\t\ttitle A\n\t}\n\temergency a {\n\t\ttitle B\n\t}\n", 6},
		{"\temergency a {\n\t\tsummary x\n\t}\n", 5},
	} {
		input := "{\ndirectaid {\n" + c.body + "}\n}\n"
		blocks, err := caddyfile.Parse("Caddyfile", []byte(input))
		if err != nil {
			t.Fatal(err)
		}
		_, err = parseGlobal(caddyfile.NewDispenser(blocks[0].Segments[0]), nil)
		if m := lineRE.FindStringSubmatch(fmt.Sprint(err)); m == nil || m[1] != strconv.Itoa(c.line) {
			t.Errorf("want an error at line %d, got %v\n%s", c.line, err, input)
		}
	}
}
