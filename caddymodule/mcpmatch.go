package caddymodule

import (
	"bytes"
	"io"
	"net/http"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/directaid/directaid/backend"
	"github.com/directaid/directaid/backend/mcpserver"
	"github.com/directaid/directaid/schema"
)

func init() {
	caddy.RegisterModule(new(MatchMCPPublish))
	caddy.RegisterModule(new(MatchMCPContact))
	caddy.RegisterModule(new(MatchMCPReport))
	caddy.RegisterModule(new(MatchMCPManage))
	caddy.RegisterModule(new(MatchMCPRespond))
}

// MatchMCPPublish is `http.matchers.directaid_mcp_publish`: it matches an MCP POST that may publish (a
// tools/call of a tool not annotated read-only), so that the rate_limit zone of POST help meters MCP
// publishing and nothing else: an agent's initialize, tools/list or listar_emergencias must not spend the
// budget. No stock matcher sees the JSON-RPC method, which travels in the body; this one reads the body
// (bounded like the MCP endpoint) and puts it back for the handler.
//
//	match {
//	    method POST
//	    path /mcp
//	    directaid_mcp_publish
//	}
type MatchMCPPublish struct{ mcpMatcher }

// MatchMCPContact is `http.matchers.directaid_mcp_contact`: it matches an MCP tools/call of a tool that
// answers with a phone number (ver_ayuda), so that the zone that meters view=detail meters it too.
type MatchMCPContact struct{ mcpMatcher }

// MatchMCPReport is `http.matchers.directaid_mcp_report`: it matches an MCP tools/call of
// reportar_publicacion, so that the zone that meters POST …/reports meters it too.
type MatchMCPReport struct{ mcpMatcher }

// MatchMCPManage is `http.matchers.directaid_mcp_manage`: it matches an MCP tools/call of
// actualizar_publicacion, so that the zone that meters POST …/actions meters it too.
type MatchMCPManage struct{ mcpMatcher }

// MatchMCPRespond is `http.matchers.directaid_mcp_respond`: it matches an MCP tools/call of
// responder_solicitud, so that the zone that meters POST …/responses meters it too.
type MatchMCPRespond struct{ mcpMatcher }

// CaddyModule returns the Caddy module information.
func (*MatchMCPRespond) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{ID: "http.matchers." + caddy.ModuleID(mcpMatchers[backend.MCPRespond]), New: func() caddy.Module {
		return &MatchMCPRespond{mcpMatcher{name: mcpMatchers[backend.MCPRespond], use: backend.MCPRespond}}
	}}
}

// CaddyModule returns the Caddy module information.
func (*MatchMCPReport) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{ID: "http.matchers." + caddy.ModuleID(mcpMatchers[backend.MCPReport]), New: func() caddy.Module {
		return &MatchMCPReport{mcpMatcher{name: mcpMatchers[backend.MCPReport], use: backend.MCPReport}}
	}}
}

// CaddyModule returns the Caddy module information.
func (*MatchMCPManage) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{ID: "http.matchers." + caddy.ModuleID(mcpMatchers[backend.MCPManage]), New: func() caddy.Module {
		return &MatchMCPManage{mcpMatcher{name: mcpMatchers[backend.MCPManage], use: backend.MCPManage}}
	}}
}

// CaddyModule returns the Caddy module information.
func (*MatchMCPPublish) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{ID: "http.matchers." + caddy.ModuleID(mcpMatchers[backend.MCPPublish]), New: func() caddy.Module {
		return &MatchMCPPublish{mcpMatcher{name: mcpMatchers[backend.MCPPublish], use: backend.MCPPublish}}
	}}
}

// CaddyModule returns the Caddy module information.
func (*MatchMCPContact) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{ID: "http.matchers." + caddy.ModuleID(mcpMatchers[backend.MCPContact]), New: func() caddy.Module {
		return &MatchMCPContact{mcpMatcher{name: mcpMatchers[backend.MCPContact], use: backend.MCPContact}}
	}}
}

// mcpMatchers are the matchers' names by the use each matches.
var mcpMatchers = [...]string{
	backend.MCPPublish: "directaid_mcp_publish",
	backend.MCPContact: "directaid_mcp_contact",
	backend.MCPReport:  "directaid_mcp_report",
	backend.MCPManage:  "directaid_mcp_manage",
	backend.MCPRespond: "directaid_mcp_respond",
}

// mcpMatcher matches an MCP POST whose body may do use.
type mcpMatcher struct {
	name string
	use  backend.MCPUse
	app  *App
}

// UnmarshalCaddyfile implements caddyfile.Unmarshaler; the matchers take no arguments.
func (m *mcpMatcher) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	d.Next()
	if d.NextArg() || d.NextBlock(0) {
		return d.Errf("%s takes no arguments", m.name)
	}
	return nil
}

// Provision finds the directaid app, whose MCP server knows what each tool does.
func (m *mcpMatcher) Provision(ctx caddy.Context) (err error) {
	m.app, err = directaidApp(ctx)
	return err
}

// mcpUseVar caches what the body may do: several zones may ask, and the body is read once.
const mcpUseVar = "directaid.mcp_use"

// MatchWithError implements caddyhttp.RequestMatcherWithError.
func (m *mcpMatcher) MatchWithError(r *http.Request) (bool, error) {
	use, err := m.useOf(r)
	return use == m.use, err
}

func (m *mcpMatcher) useOf(r *http.Request) (backend.MCPUse, error) {
	// Only a POST to the MCP endpoint is read, whatever the order in which Caddy runs the matchers of a
	// set (it sorts them by name, so this one may run before `path`): reading every POST body here would
	// wait on slow or endless bodies that the API refuses unread. A body announced over the endpoint's
	// limit is refused unread too, so it can do nothing; reading it would also defeat Expect: 100-continue.
	if r.Method != http.MethodPost || r.URL.Path != schema.MCPPath || r.Body == nil || r.ContentLength > mcpserver.MaxBodyBytes {
		return backend.MCPFree, nil
	}
	if v, ok := caddyhttp.GetVar(r.Context(), mcpUseVar).(backend.MCPUse); ok {
		return v, nil
	}
	// One byte past the endpoint's limit is enough to know the body will be refused (and counts).
	head, err := io.ReadAll(io.LimitReader(r.Body, mcpserver.MaxBodyBytes+1))
	r.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(head), r.Body), r.Body}
	if err != nil {
		return backend.MCPFree, err
	}
	use := backend.MCPPublish
	if h := m.app.handler.Load(); h != nil {
		use = h.MCPUseOf(head)
	}
	caddyhttp.SetVar(r.Context(), mcpUseVar, use)
	return use, nil
}

// mcpUse is what the matchers found the request's MCP body may do (MCPFree when none asked).
func mcpUse(r *http.Request) backend.MCPUse {
	use, _ := caddyhttp.GetVar(r.Context(), mcpUseVar).(backend.MCPUse)
	return use
}

var (
	_ caddy.Provisioner                 = (*MatchMCPPublish)(nil)
	_ caddyhttp.RequestMatcherWithError = (*MatchMCPPublish)(nil)
	_ caddyfile.Unmarshaler             = (*MatchMCPPublish)(nil)
	_ caddy.Provisioner                 = (*MatchMCPContact)(nil)
	_ caddyhttp.RequestMatcherWithError = (*MatchMCPContact)(nil)
	_ caddyfile.Unmarshaler             = (*MatchMCPContact)(nil)
	_ caddy.Provisioner                 = (*MatchMCPReport)(nil)
	_ caddyhttp.RequestMatcherWithError = (*MatchMCPReport)(nil)
	_ caddyfile.Unmarshaler             = (*MatchMCPReport)(nil)
	_ caddy.Provisioner                 = (*MatchMCPManage)(nil)
	_ caddyhttp.RequestMatcherWithError = (*MatchMCPManage)(nil)
	_ caddyfile.Unmarshaler             = (*MatchMCPManage)(nil)
	_ caddy.Provisioner                 = (*MatchMCPRespond)(nil)
	_ caddyhttp.RequestMatcherWithError = (*MatchMCPRespond)(nil)
	_ caddyfile.Unmarshaler             = (*MatchMCPRespond)(nil)
)
