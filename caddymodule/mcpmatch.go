package caddymodule

import (
	"bytes"
	"io"
	"net/http"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/directaid/directaid/backend"
)

func init() { caddy.RegisterModule(new(MatchMCPPublish)) }

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
type MatchMCPPublish struct {
	app *App
}

// CaddyModule returns the Caddy module information.
func (*MatchMCPPublish) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{ID: "http.matchers.directaid_mcp_publish", New: func() caddy.Module { return new(MatchMCPPublish) }}
}

// UnmarshalCaddyfile implements caddyfile.Unmarshaler; the matcher takes no arguments.
func (*MatchMCPPublish) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	d.Next()
	if d.NextArg() || d.NextBlock(0) {
		return d.Err("directaid_mcp_publish takes no arguments")
	}
	return nil
}

// Provision finds the directaid app, whose MCP server knows which tools are read-only.
func (m *MatchMCPPublish) Provision(ctx caddy.Context) (err error) {
	m.app, err = directaidApp(ctx)
	return err
}

const mcpPublishVar = "directaid.mcp_publish"

// MatchWithError implements caddyhttp.RequestMatcherWithError.
func (m *MatchMCPPublish) MatchWithError(r *http.Request) (bool, error) {
	// A body announced over the endpoint's limit is refused unread, so it cannot publish; reading it here
	// would also defeat Expect: 100-continue.
	if r.Method != http.MethodPost || r.Body == nil || r.ContentLength > backend.MCPMaxBodyBytes {
		return false, nil
	}
	// Several zones may ask; the body is read once.
	if v, ok := caddyhttp.GetVar(r.Context(), mcpPublishVar).(bool); ok {
		return v, nil
	}
	// One byte past the endpoint's limit is enough to know the body will be refused (and counts).
	head, err := io.ReadAll(io.LimitReader(r.Body, backend.MCPMaxBodyBytes+1))
	r.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(head), r.Body), r.Body}
	if err != nil {
		return false, err
	}
	h := m.app.handler.Load()
	publish := h == nil || h.MCPCountsAsPublish(head)
	caddyhttp.SetVar(r.Context(), mcpPublishVar, publish)
	return publish, nil
}

var (
	_ caddy.Provisioner                 = (*MatchMCPPublish)(nil)
	_ caddyhttp.RequestMatcherWithError = (*MatchMCPPublish)(nil)
	_ caddyfile.Unmarshaler             = (*MatchMCPPublish)(nil)
)
