package backend

import (
	"fmt"
	"net/http"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/directaid/directaid/schema"
)

// A Zone is one of directaid's rate limits, per client IP. Zones is the one place a zone is declared:
// caddymodule's `directaid_rate_limits` directive expands it into caddy-ratelimit's zones (the matchers
// below, the key, the budget), ZoneOf decides from it which zone a request spends, and discovery, the
// metrics' labels, the 429's JSON body and the 429 page read it.
type Zone struct {
	Name string // the rate_limit zone, the Caddyfile's word and the label of directaid_rate_limited_total
	// Events per Window is the budget when the operator names no other.
	Events int
	Window time.Duration
	// Match lists the requests of the API and the site that spend the budget (any one of them);
	// MCP is the use of an MCP call (POST /mcp, told apart by its body) that spends it too.
	Match []ZoneMatch
	MCP   MCPUse
	// Discovery is the field of GET help that publishes the limit; Scope says there what it covers.
	Discovery func(*schema.Discovery) **schema.RateLimit
	Scope     string
	// Refusal is the 429's message in the JSON error body; Page is what the 429 page tells a person.
	Refusal string
	Page    LimitPage
}

// LimitPage is what the 429 page tells a person of a zone: Explain, what the site limits and why; Advice,
// what to do now ({espera}: the time to wait, in words; {inicio}: the site's base URL).
type LimitPage struct {
	Explain, Advice string
	// WithholdsPhone: a record's page over the limit shows the record without its phone (its text is
	// public in the lists anyway), not this page, so that people behind a carrier's shared address can
	// still read what is needed; Advice then says when the number shows again.
	WithholdsPhone bool
}

// ZoneMatch is one kind of request a zone meters, as a Caddy matcher set: all that is set must hold.
type ZoneMatch struct {
	Methods []string
	Paths   []string // Caddy path patterns: exact, "/prefix/*", or a * standing for one segment
	Query   string   // key=value
}

// The names of the zones of Zones.
const (
	ZonePublish = "publish"
	ZoneDetail  = "detail"
	ZoneReport  = "report"
	ZoneManage  = "manage"
	ZoneRespond = "respond"
)

// ScopeClient ends every zone's scope: whom the limit counts apart. An IPv6 host has a whole /64.
const ScopeClient = "por cliente (una dirección IPv4 o una red IPv6 /64)"

// Zones are directaid's rate limits; their order is the Caddyfile's and the metrics'.
var Zones = []Zone{
	{
		Name: ZonePublish, Events: 60, Window: time.Minute, MCP: MCPPublish,
		Match:     []ZoneMatch{{Methods: []string{http.MethodPost}, Paths: []string{schema.HelpPath, "/pedir", "/ofrecer"}}},
		Discovery: func(d *schema.Discovery) **schema.RateLimit { return &d.RateLimit },
		Scope:     "publicaciones (POST " + schema.HelpPath + " y herramientas de publicación MCP) " + ScopeClient,
		Refusal:   "Límite temporal de publicaciones alcanzado: espere los segundos que indica Retry-After y reintente con el mismo externalId.",
		Page: LimitPage{
			Explain: "Este sitio limita cuántas publicaciones se pueden enviar por minuto desde una misma red, para que nadie pueda copiar los números de todos.",
			Advice:  "Espere {espera} y vuelva a cargar esta página.",
		},
	},
	{
		Name: ZoneDetail, Events: 30, Window: time.Minute, MCP: MCPContact,
		Match: []ZoneMatch{
			{Methods: []string{http.MethodGet, http.MethodHead}, Query: "view=" + schema.ViewDetail},
			{Methods: []string{http.MethodGet, http.MethodHead}, Paths: []string{schema.RecordPathPrefix + "*"}},
		},
		Discovery: func(d *schema.Discovery) **schema.RateLimit { return &d.DetailRateLimit },
		Scope: "lecturas de un registro con su teléfono (GET " + schema.HelpPath + "?view=detail, las páginas " +
			schema.RecordPathPrefix + "{id} y la herramienta MCP " + schema.ToolViewHelp + ") " + ScopeClient,
		Refusal: "Límite temporal de consultas de registros con teléfono alcanzado: espere los segundos que indica Retry-After.",
		Page: LimitPage{
			Explain:        "Este sitio limita cuántas páginas con número de teléfono se pueden abrir por minuto desde una misma red, para que nadie pueda copiar los números de todos.",
			Advice:         "Espere {espera} y vuelva a cargar esta página.",
			WithholdsPhone: true,
		},
	},
	{
		Name: ZoneReport, Events: 10, Window: time.Minute, MCP: MCPReport,
		Match: []ZoneMatch{{Methods: []string{http.MethodPost}, Paths: []string{schema.HelpPath + "/*" + schema.ReportsSuffix, schema.ReportFormPath,
			schema.HelpPath + "/*" + schema.ResponsesSuffix + "/*" + schema.ReportsSuffix}}},
		Discovery: func(d *schema.Discovery) **schema.RateLimit { return &d.ReportRateLimit },
		Scope:     "reportes (POST " + schema.HelpPath + "/{id}" + schema.ReportsSuffix + " y el formulario " + schema.ReportFormPath + ") " + ScopeClient,
		Refusal:   "Límite temporal de reportes alcanzado: espere los segundos que indica Retry-After.",
		Page: LimitPage{
			Explain: "Este sitio limita cuántos reportes se pueden enviar por minuto desde una misma red, para que nadie pueda llenar de reportes la revisión. Su reporte no se envió.",
			Advice:  "Espere {espera} y vuelva a enviar el reporte desde la página de la publicación.",
		},
	},
	{
		Name: ZoneManage, Events: 30, Window: time.Minute, MCP: MCPManage,
		Match: []ZoneMatch{{Methods: []string{http.MethodPost}, Paths: []string{schema.HelpPath + "/*" + schema.ActionsSuffix, schema.ManagePath,
			schema.HelpPath + "/*" + schema.ResponsesSuffix + "/*" + schema.ActionsSuffix, schema.ResponseFormPath}}},
		Discovery: func(d *schema.Discovery) **schema.RateLimit { return &d.ManageRateLimit },
		Scope:     "acciones con el código para gestionar (POST " + schema.HelpPath + "/{id}" + schema.ActionsSuffix + " y el formulario " + schema.ManagePath + ") " + ScopeClient,
		Refusal:   "Límite temporal de acciones sobre publicaciones alcanzado: espere los segundos que indica Retry-After y reintente (repetir una acción no la aplica dos veces).",
		Page: LimitPage{
			Explain: "Este sitio limita cuántas veces por minuto se puede resolver, reabrir, renovar o retirar una publicación desde una misma red. Este intento no cambió nada.",
			Advice:  "Espere {espera}, vuelva a [gestionar su publicación]({inicio}" + schema.ManagePath + ") con su código y pulse el botón otra vez: repetir una acción no la aplica dos veces.",
		},
	},
	{
		Name: ZoneRespond, Events: 20, Window: time.Minute, MCP: MCPRespond,
		Match:     []ZoneMatch{{Methods: []string{http.MethodPost}, Paths: []string{schema.HelpPath + "/*" + schema.ResponsesSuffix, schema.RespondFormPath}}},
		Discovery: func(d *schema.Discovery) **schema.RateLimit { return &d.RespondRateLimit },
		Scope: "respuestas «yo puedo ayudar» (POST " + schema.HelpPath + "/{id}" + schema.ResponsesSuffix + ", el formulario " + schema.RespondFormPath +
			" y la herramienta MCP " + schema.ToolRespond + ") " + ScopeClient,
		Refusal: "Límite temporal de respuestas alcanzado: espere los segundos que indica Retry-After y reintente.",
		Page: LimitPage{
			Explain: "Este sitio limita cuántas respuestas «yo puedo ayudar» se pueden enviar por minuto desde una misma red, para que nadie pueda llenar de mensajes a quien pidió ayuda. Su respuesta no se envió.",
			Advice:  "Espere {espera} y vuelva a enviarla desde la página de la publicación.",
		},
	},
}

// RateLimitZones lists the zones' names (the label values of directaid_rate_limited_total).
var RateLimitZones = func() []string {
	names := make([]string, len(Zones))
	for i, z := range Zones {
		names[i] = z.Name
	}
	return names
}()

// ZoneNamed is the zone called name, nil for none.
func ZoneNamed(name string) *Zone {
	for i := range Zones {
		if Zones[i].Name == name {
			return &Zones[i]
		}
	}
	return nil
}

// Limit is a zone's budget: Events per Window per client IP.
type Limit struct {
	Events int
	Window time.Duration
}

// ZoneOf is the zone a request spends, decided by the zones' matchers; use is what an MCP POST may do
// (ignored for other requests). A request none of them matches was refused by a zone of the operator's
// own: it counts as a publication if it is a POST or an MCP call, as a detail read otherwise.
func ZoneOf(r *http.Request, use MCPUse) string {
	mcp := r.URL.Path == schema.MCPPath
	for _, z := range Zones {
		if mcp && use != MCPFree && z.MCP == use {
			return z.Name
		}
		if !mcp && slices.ContainsFunc(z.Match, func(m ZoneMatch) bool { return m.matches(r) }) {
			return z.Name
		}
	}
	if mcp || r.Method == http.MethodPost {
		return ZonePublish
	}
	return ZoneDetail
}

// matches reports whether r is of this kind, as Caddy's method, path and query matchers decide it.
func (m ZoneMatch) matches(r *http.Request) bool {
	if len(m.Methods) > 0 && !slices.Contains(m.Methods, r.Method) {
		return false
	}
	if len(m.Paths) > 0 && !slices.ContainsFunc(m.Paths, func(p string) bool { return pathMatches(p, r.URL.Path) }) {
		return false
	}
	if m.Query != "" {
		key, value, _ := strings.Cut(m.Query, "=")
		if !slices.Contains(r.URL.Query()[key], value) {
			return false
		}
	}
	return true
}

// pathMatches is Caddy's path matcher for the patterns of Zones: case-insensitive, exact, a prefix
// ending in /*, or path.Match's * within a segment.
func pathMatches(pattern, p string) bool {
	pattern, p = strings.ToLower(pattern), strings.ToLower(p)
	if prefix, ok := strings.CutSuffix(pattern, "*"); ok && !strings.Contains(prefix, "*") {
		return strings.HasPrefix(p, prefix)
	}
	ok, _ := path.Match(pattern, p)
	return ok
}

// RateLimitedIn is the answer to a request over the limit of zone; retryAfter is the Retry-After the
// limiter set (in seconds, "" when none), which the message then says too: a client that shows a model
// or a person the body alone (an MCP tool call) cannot read the header.
func RateLimitedIn(zone, retryAfter string) *Problem {
	z := ZoneNamed(zone)
	if z == nil {
		z = &Zones[0]
	}
	msg := z.Refusal
	if n, err := strconv.Atoi(retryAfter); err == nil && n > 0 {
		wait := fmt.Sprintf("%d segundos (Retry-After)", n)
		if n == 1 {
			wait = "1 segundo (Retry-After)"
		}
		msg = strings.Replace(msg, "los segundos que indica Retry-After", wait, 1)
	}
	return &Problem{Status: http.StatusTooManyRequests, Zone: z.Name,
		Body: schema.ErrorBody{Code: schema.CodeRateLimited, Error: msg}}
}

// MCPUse is what an MCP POST may do, as far as the rate limits care.
type MCPUse uint8

const (
	MCPFree    MCPUse = iota // spends no budget: initialize, tools/list, a read-only tool without contact data
	MCPPublish               // may publish: metered with POST help (zone publish)
	MCPContact               // reads a record's phone number: metered with view=detail (zone detail)
	MCPReport                // reports a record: metered with POST …/reports (zone report)
	MCPManage                // a publisher's action: metered with POST …/actions (zone manage)
	MCPRespond               // a response to a record: metered with POST …/responses (zone respond)
)

// Zone is the rate_limit zone a call of this use spends (the Zones entry whose MCP it is), "" for none.
func (u MCPUse) Zone() string {
	for _, z := range Zones {
		if u != MCPFree && z.MCP == u {
			return z.Name
		}
	}
	return ""
}
