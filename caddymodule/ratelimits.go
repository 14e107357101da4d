package caddymodule

import (
	"encoding/json"
	"fmt"
	"go.uber.org/zap"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	ratelimit "github.com/mholt/caddy-ratelimit"

	"github.com/directaid/directaid/backend"
	"github.com/directaid/directaid/internal/textdist"
	"github.com/directaid/directaid/schema"
)

func init() {
	caddy.RegisterModule(RateLimits{})
	httpcaddyfile.RegisterHandlerDirective("directaid_rate_limits", parseRateLimits)
	// Where caddy-ratelimit puts rate_limit: before authentication and before directaid.
	httpcaddyfile.RegisterDirectiveOrder("directaid_rate_limits", httpcaddyfile.Before, "basic_auth")
}

// parseRateLimits parses the directaid_rate_limits directive into caddy-ratelimit's handler (behind
// RateLimits), one zone per entry of backend.Zones, keyed by the client's network, with the zone's
// matchers:
//
//	directaid_rate_limits {
//	    <zone> <events> <window>   # publish, detail, report, manage; a zone left out keeps its default
//	    <zone> off                 # that zone is not limited
//	    distributed { … }          # any other line is rate_limit's own: distributed, storage, jitter,
//	                               # sweep_interval, log_key, zone <name> { … } (a zone of the operator's)
//	}
func parseRateLimits(h httpcaddyfile.Helper) (caddyhttp.MiddlewareHandler, error) {
	h.Next() // the directive's name
	if h.NextArg() {
		return nil, h.ArgErr()
	}
	limits := map[string]backend.Limit{}
	for _, z := range backend.Zones {
		limits[z.Name] = backend.Limit{Events: z.Events, Window: z.Window}
	}
	body := caddyfile.Segment{}
	seen := map[string]int{} // the line of each zone given
	for nesting := h.Nesting(); h.NextBlock(nesting); {
		if z := backend.ZoneNamed(h.Val()); z != nil {
			if line, ok := seen[z.Name]; ok {
				// The last line would win in silence: an operator editing the first would see no effect.
				return nil, h.Errf("zone %s given twice (first on line %d): keep one line per zone", z.Name, line)
			}
			seen[z.Name] = h.Line()
			l, err := parseZoneLimit(h.Dispenser, z.Name)
			if err != nil {
				return nil, err
			}
			limits[z.Name] = l
			continue
		}
		if !slices.Contains(rateLimitOptions, h.Val()) {
			// caddy-ratelimit skips a line it does not know: a misspelt zone would keep its default silently.
			msg := fmt.Sprintf("unknown line %q: a zone of directaid (%s) with `<events> <window>` or `off`, or one of rate_limit's own (%s)",
				h.Val(), strings.Join(zoneNames(), ", "), strings.Join(rateLimitOptions, ", "))
			if z := likeZone(h.Val()); z != "" {
				msg += fmt.Sprintf("; did you mean %s?", z)
			}
			return nil, h.Err(msg)
		}
		seg := h.NextSegment()
		if len(seg) > 1 && seg[0].Text == "zone" && backend.ZoneNamed(seg[1].Text) != nil {
			at := caddyfile.NewDispenser(seg) // the error names the zone's line
			at.Next()
			at.Next()
			return nil, at.Errf("zone %s is directaid's: write `%s <events> <window>` (or `%s off`)", seg[1].Text, seg[1].Text, seg[1].Text)
		}
		body = append(body, seg...)
	}
	var zones strings.Builder
	for _, z := range backend.Zones {
		if l := limits[z.Name]; l.Events > 0 {
			writeZone(&zones, z, l)
		}
	}
	open, err := caddyfile.Tokenize([]byte("rate_limit {\n"), "directaid_rate_limits")
	if err != nil {
		return nil, err
	}
	generated, err := caddyfile.Tokenize([]byte(zones.String()+"}\n"), "directaid_rate_limits")
	if err != nil {
		return nil, err
	}
	tokens := append(append(open, body...), generated...)
	var rl ratelimit.Handler
	if err := rl.UnmarshalCaddyfile(caddyfile.NewDispenser(tokens)); err != nil {
		return nil, err
	}
	return &RateLimits{LimiterRaw: caddyconfig.JSONModuleObject(&rl, "handler", "rate_limit", nil)}, nil
}

// clientNetVar is the request variable that keys directaid's zones: the client's network (ClientNet).
const clientNetVar = "directaid_client_net"

// RateLimits is caddy-ratelimit's handler (what directaid_rate_limits writes) behind one step: it sets
// {http.vars.directaid_client_net}, the client's network (backend.ClientNet: an IPv4 address, an IPv6
// address's /64), which keys directaid's zones, so that a host cannot spread its requests over the 2^64
// addresses of its IPv6 network.
type RateLimits struct {
	LimiterRaw json.RawMessage `json:"limiter" caddy:"namespace=http.handlers inline_key=handler"`
	limiter    caddyhttp.MiddlewareHandler
	logger     *zap.Logger
	warned     *atomic.Bool // the warning of a second directaid_rate_limits on one request's way was logged
}

// CaddyModule implements caddy.Module.
func (RateLimits) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{ID: "http.handlers.directaid_rate_limits", New: func() caddy.Module { return new(RateLimits) }}
}

// Provision loads the limiter.
func (h *RateLimits) Provision(ctx caddy.Context) error {
	mod, err := ctx.LoadModule(h, "LimiterRaw")
	if err != nil {
		return fmt.Errorf("loading the rate limiter: %w", err)
	}
	limiter, ok := mod.(caddyhttp.MiddlewareHandler)
	if !ok {
		return fmt.Errorf("the rate limiter is a %T, not an HTTP handler", mod)
	}
	h.limiter, h.logger, h.warned = limiter, ctx.Logger(), new(atomic.Bool)
	return nil
}

// ServeHTTP sets the client's network, then lets the limiter meter the request.
func (h *RateLimits) ServeHTTP(w http.ResponseWriter, r *http.Request, next caddyhttp.Handler) error {
	if caddyhttp.GetVar(r.Context(), clientNetVar) != nil {
		// An earlier directaid_rate_limits metered this request: a second block re-declares every zone
		// under the same names, which caddy-ratelimit shares, so metering again would count each request
		// twice (every limit halved, and discovery's numbers false).
		if !h.warned.Swap(true) {
			h.logger.Warn("a second directaid_rate_limits on the same requests meters nothing: put every zone in one block")
		}
		return next.ServeHTTP(w, r)
	}
	ip, _ := caddyhttp.GetVar(r.Context(), caddyhttp.ClientIPVarKey).(string)
	caddyhttp.SetVar(r.Context(), clientNetVar, backend.ClientNet(ip))
	return h.limiter.ServeHTTP(w, r, next)
}

var (
	_ caddy.Provisioner           = (*RateLimits)(nil)
	_ caddyhttp.MiddlewareHandler = (*RateLimits)(nil)
)

// parseZoneLimit reads `<zone> <events> <window>` or `<zone> off`, the dispenser on the zone's name.
func parseZoneLimit(d *caddyfile.Dispenser, zone string) (backend.Limit, error) {
	args := d.RemainingArgs()
	if d.NextBlock(d.Nesting()) {
		return backend.Limit{}, d.Errf("%s takes no block: %s <events> <window>", zone, zone)
	}
	if len(args) == 1 && args[0] == "off" {
		return backend.Limit{}, nil
	}
	if len(args) != 2 {
		return backend.Limit{}, d.Errf("usage: %s <events> <window> (e.g. %s 60 1m), or %s off", zone, zone, zone)
	}
	events, err := strconv.Atoi(args[0])
	if err != nil || events <= 0 {
		return backend.Limit{}, d.Errf("%s: events %q is not a positive whole number", zone, args[0])
	}
	window, err := caddy.ParseDuration(args[1])
	if err != nil || window <= 0 {
		return backend.Limit{}, d.Errf("%s: window %q is not a positive duration (e.g. 1m)", zone, args[1])
	}
	return backend.Limit{Events: events, Window: window}, nil
}

// writeZone writes z as a zone of a rate_limit block: its matchers (POST /mcp with the matcher of its
// MCP use among them), the client's network (RateLimits) as the key, and l.
func writeZone(b *strings.Builder, z backend.Zone, l backend.Limit) {
	fmt.Fprintf(b, "zone %s {\n", z.Name)
	for _, m := range z.Match {
		b.WriteString("match {\n")
		if len(m.Methods) > 0 {
			fmt.Fprintf(b, "method %s\n", strings.Join(m.Methods, " "))
		}
		if len(m.Paths) > 0 {
			fmt.Fprintf(b, "path %s\n", strings.Join(m.Paths, " "))
		}
		if m.Query != "" {
			fmt.Fprintf(b, "query %s\n", m.Query)
		}
		b.WriteString("}\n")
	}
	if z.MCP != backend.MCPFree {
		fmt.Fprintf(b, "match {\nmethod POST\npath %s\n%s\n}\n", schema.MCPPath, mcpMatchers[z.MCP])
	}
	fmt.Fprintf(b, "key {http.vars.%s}\nevents %d\nwindow %s\n}\n", clientNetVar, l.Events, l.Window.String())
}

// rateLimitOptions are the lines of caddy-ratelimit's rate_limit that directaid_rate_limits passes on.
var rateLimitOptions = []string{"zone", "distributed", "storage", "jitter", "sweep_interval", "log_key"}

// zoneNames are directaid's zones' names, in their order.
func zoneNames() []string {
	out := make([]string, len(backend.Zones))
	for i, z := range backend.Zones {
		out[i] = z.Name
	}
	return out
}

// likeZone is the zone whose name word is one or two edits from (a misspelling), or "".
func likeZone(word string) string {
	for _, name := range zoneNames() {
		if textdist.Distance(strings.ToLower(word), name) <= 2 {
			return name
		}
	}
	return ""
}
