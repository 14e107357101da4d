// Package testmcp connects the official MCP Go SDK client to a test server (the binary or httpapi.NewHandler
// in process), every HTTP exchange checked against the served OpenAPI document. Tests only.
package testmcp

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/directaid/directaid/internal/testserver"
)

// Checked is rt with every HTTP exchange checked against s's served OpenAPI document: for clients we
// did not write.
func Checked(s *testserver.Server, rt http.RoundTripper) http.RoundTripper {
	return openAPIChecked{s, rt}
}

type openAPIChecked struct {
	s  *testserver.Server
	rt http.RoundTripper
}

func (c openAPIChecked) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := c.rt.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	c.s.CheckOpenAPI(req, resp, body)
	resp.Body = io.NopCloser(bytes.NewReader(body))
	return resp, nil
}

// Session connects the official Go SDK client over Streamable HTTP; version "" is the SDK's default
// (2026-07-28 through server/discover).
func Session(t testing.TB, s *testserver.Server, version string) *sdk.ClientSession {
	t.Helper()
	client := sdk.NewClient(&sdk.Implementation{Name: "directaid-e2e", Version: "1.0.0"}, nil)
	transport := &sdk.StreamableClientTransport{Endpoint: s.URL + "/mcp", HTTPClient: &http.Client{Transport: Checked(s, http.DefaultTransport)}}
	cs, err := client.Connect(context.Background(), transport, &sdk.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("connect (%q): %v", version, err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// CallTool calls a tool; a protocol error fails the test (a tool error is a result).
func CallTool(t testing.TB, cs *sdk.ClientSession, name string, args map[string]any) *sdk.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return res
}

// Text is the result's text blocks, one a line.
func Text(res *sdk.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			b.WriteString(tc.Text + "\n")
		}
	}
	return b.String()
}

// Error checks that res is a tool error whose text holds every want.
func Error(t testing.TB, res *sdk.CallToolResult, want ...string) {
	t.Helper()
	text := Text(res)
	if !res.IsError {
		t.Fatalf("want isError, got %s", text)
	}
	for _, w := range want {
		if !strings.Contains(text, w) {
			t.Errorf("error text lacks %q:\n%s", w, text)
		}
	}
}
