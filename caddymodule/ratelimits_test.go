package caddymodule

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	ratelimit "github.com/mholt/caddy-ratelimit"

	"github.com/directaid/directaid/backend"
)

// TestZoneOfAgreesWithTheLimiter: the zone backend.ZoneOf names for a request (the 429's words, the
// metrics' label) is the zone whose matchers, as directaid_rate_limits writes them for caddy-ratelimit,
// match it; and each zone meters some request. MCP's matchers are left out: they read the body and ask
// the app, and both sides take MCPUse.Zone from the same table.
func TestZoneOfAgreesWithTheLimiter(t *testing.T) {
	out, _, err := caddyconfig.GetAdapter("caddyfile").Adapt([]byte(":8080 {\n\tdirectaid_rate_limits\n}\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		Apps struct {
			HTTP struct {
				Servers map[string]struct {
					Routes []struct {
						Handle []struct {
							Handler string            `json:"handler"`
							Limiter ratelimit.Handler `json:"limiter"`
						} `json:"handle"`
					} `json:"routes"`
				} `json:"servers"`
			} `json:"http"`
		} `json:"apps"`
	}
	if err := json.Unmarshal(out, &cfg); err != nil {
		t.Fatal(err)
	}
	h := cfg.Apps.HTTP.Servers["srv0"].Routes[0].Handle[0]
	if h.Handler != "directaid_rate_limits" {
		t.Fatalf("directaid_rate_limits wrote the handler %q", h.Handler)
	}
	zones := h.Limiter.RateLimits
	if len(zones) != len(backend.Zones) {
		t.Fatalf("directaid_rate_limits wrote %d zones, the table has %d", len(zones), len(backend.Zones))
	}
	ctx, cancel := caddy.NewContext(caddy.Context{Context: context.Background()})
	defer cancel()
	matchers := map[string]caddyhttp.MatcherSets{}
	for name, z := range zones {
		if def := backend.ZoneNamed(name); def == nil || z.MaxEvents != def.Events || z.Window != caddy.Duration(def.Window) {
			t.Errorf("zone %s: %d per %v, not the table's default", name, z.MaxEvents, z.Window)
		}
		rl := &ratelimit.RateLimit{}
		for _, set := range z.MatcherSetsRaw {
			if !strings.Contains(string(set["path"]), "/mcp") {
				rl.MatcherSetsRaw = append(rl.MatcherSetsRaw, set)
			}
		}
		mods, err := ctx.LoadModule(rl, "MatcherSetsRaw")
		if err != nil {
			t.Fatal(err)
		}
		var ms caddyhttp.MatcherSets
		if err := ms.FromInterface(mods); err != nil {
			t.Fatal(err)
		}
		matchers[name] = ms
	}
	metered := map[string]bool{}
	for _, c := range []struct{ method, target string }{
		{"POST", "/api/public/v1/help"}, {"POST", "/pedir"}, {"POST", "/ofrecer"}, {"POST", "/api/public/v1/help?dryRun=true"},
		{"GET", "/api/public/v1/help?view=detail&id=06h0esgyp8jkswec"}, {"HEAD", "/api/public/v1/help?id=x&view=detail"},
		{"GET", "/ayudas/06h0esgyp8jkswec"}, {"HEAD", "/ayudas/06h0esgyp8jkswec.md"}, {"GET", "/Ayudas/x"},
		{"POST", "/api/public/v1/help/06h0esgyp8jkswec/reports"}, {"POST", "/reportar"},
		{"POST", "/api/public/v1/help/06h0esgyp8jkswec/actions"}, {"POST", "/gestionar"},
		{"GET", "/api/public/v1/help"}, {"GET", "/"}, {"GET", "/pedir"}, {"POST", "/api/public/v1/help/a/b/reports"},
		{"POST", "/api/public/v1/help/06h0esgyp8jkswec/responses"}, {"GET", "/api/public/v1/help/06h0esgyp8jkswec/responses"},
		{"POST", "/api/public/v1/help/06h0esgyp8jkswec/responses/3f9a1c0b7d2e4a61/actions"},
		{"POST", "/api/public/v1/help/06h0esgyp8jkswec/responses/3f9a1c0b7d2e4a61/reports"},
	} {
		r := httptest.NewRequest(c.method, c.target, nil)
		repl := caddy.NewReplacer()
		r = r.WithContext(context.WithValue(r.Context(), caddy.ReplacerCtxKey, repl))
		var spent []string
		for _, z := range backend.Zones {
			ok, err := matchers[z.Name].AnyMatchWithError(r)
			if err != nil {
				t.Fatal(err)
			}
			if ok {
				spent = append(spent, z.Name)
			}
		}
		switch got := backend.ZoneOf(r, backend.MCPFree); {
		case len(spent) > 1:
			t.Errorf("%s %s spends several zones: %v", c.method, c.target, spent)
		case len(spent) == 1 && got != spent[0]:
			t.Errorf("%s %s: ZoneOf says %s, the limiter's matchers %s", c.method, c.target, got, spent[0])
		case len(spent) == 1:
			metered[got] = true
		}
	}
	for _, z := range backend.Zones {
		if !metered[z.Name] {
			t.Errorf("no request spent zone %s", z.Name)
		}
	}
}

// TestRateLimitsKeyTheClientsNetwork: the limiter meters a request by the client's network, which
// RateLimits sets before it: an IPv6 address's /64, an IPv4 address itself.
func TestRateLimitsKeyTheClientsNetwork(t *testing.T) {
	var seen string
	h := &RateLimits{}
	h.limiter = middlewareFunc(func(w http.ResponseWriter, r *http.Request, next caddyhttp.Handler) error {
		seen, _ = caddyhttp.GetVar(r.Context(), clientNetVar).(string)
		return nil
	})
	for ip, want := range map[string]string{"2001:db8:1:2::5": "2001:db8:1:2::/64", "2001:db8:1:2:ffff::1": "2001:db8:1:2::/64", "198.51.100.7": "198.51.100.7"} {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r = r.WithContext(context.WithValue(r.Context(), caddyhttp.VarsCtxKey, map[string]any{caddyhttp.ClientIPVarKey: ip}))
		if err := h.ServeHTTP(httptest.NewRecorder(), r, nil); err != nil || seen != want {
			t.Errorf("client %s: keyed %q (%v), want %q", ip, seen, err, want)
		}
	}
}

type middlewareFunc func(http.ResponseWriter, *http.Request, caddyhttp.Handler) error

func (f middlewareFunc) ServeHTTP(w http.ResponseWriter, r *http.Request, next caddyhttp.Handler) error {
	return f(w, r, next)
}

// TestRateLimitsRefuseUnknownLines: a line of directaid_rate_limits that is neither a zone of directaid
// nor an option of caddy-ratelimit's rate_limit is refused, naming its line and the zone it resembles:
// caddy-ratelimit skips lines it does not know, so a misspelt zone would keep its default in silence. A
// zone given twice is refused too (the last line would win in silence).
func TestRateLimitsRefuseUnknownLines(t *testing.T) {
	adapt := func(body string) error {
		_, _, err := caddyconfig.GetAdapter("caddyfile").Adapt([]byte(":8080 {\n\tdirectaid_rate_limits {\n"+body+"\t}\n}\n"), nil)
		return err
	}
	for _, c := range []struct{ body, want string }{
		{"\t\tpublsh 6000 1m\n", "did you mean publish?"},
		{"\t\tPublish 6000 1m\n", "did you mean publish?"},
		{"\t\tresponds 5 1m\n", "did you mean respond?"},
		{"\t\tpublish 60 1m\n\t\tburst 10\n", `unknown line "burst"`},
		{"\t\tpublish 60 1m\n\t\tdetail 30 1m\n\t\tpublish 5 1m\n", "zone publish given twice (first on line 3)"},
		{"\t\trespond off\n\t\trespond 20 1m\n", "zone respond given twice"},
	} {
		err := adapt(c.body)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "Caddyfile:") {
			t.Errorf("%q: %v, want an error naming its line with %q", c.body, err, c.want)
		}
	}
	for _, body := range []string{"\t\tpublish 6000 1m\n\t\tjitter 0.1\n\t\tsweep_interval 2m\n\t\tlog_key\n", "\t\trespond off\n"} {
		if err := adapt(body); err != nil {
			t.Errorf("%q: %v", body, err)
		}
	}
}
