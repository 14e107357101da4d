package e2e

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/directaid/directaid/internal/testserver"
	"github.com/directaid/directaid/schema"
)

// englishOrGo are words of mcp-go's and Go's own error texts: no protocol error may carry them.
var englishOrGo = []string{"cannot", "unmarshal", "struct", "not found", "Invalid", "invalid", "Failed", "failed", "Method ",
	"missing", "expected", "Unsupported", "view=detail", "json:"}

func spanishError(t *testing.T, what, msg string) {
	t.Helper()
	if msg == "" {
		t.Errorf("%s: empty error message", what)
	}
	for _, w := range englishOrGo {
		if strings.Contains(msg, w) {
			t.Errorf("%s: the error %q speaks of %q (Go or English internals)", what, msg, w)
		}
	}
}

// TestMCPInvalidJSONRPC: what is neither a JSON-RPC 2.0 request, notification nor response is refused with
// -32600 (400), and with id null where the id cannot be read; valid JSON that is no message is -32600 too.
func TestMCPInvalidJSONRPC(t *testing.T) {
	t.Parallel()
	s := testserver.Start(t, testserver.Options{})
	jsonCT := []string{"Content-Type", "application/json", "Accept", "application/json, text/event-stream"}
	for _, c := range []struct {
		body   string
		status int
		code   float64
		id     any // nil: the answer's id must be null
	}{
		{`{"jsonrpc":"2.0","id":null,"method":"ping"}`, 400, -32600, nil},
		{`{"jsonrpc":"2.0","id":1}`, 400, -32600, 1.0},
		{`{"jsonrpc":"2.0","method":null}`, 400, -32600, nil},
		{`{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}`, 400, -32600, nil},
		{`{"jsonrpc":"2.0","id":[1],"method":"ping"}`, 400, -32600, nil},
		{`{"jsonrpc":"2.0","id":true,"method":"ping"}`, 400, -32600, nil},
		{`{"jsonrpc":"2.0","id":1.5,"method":"ping"}`, 400, -32600, nil},
		{`1`, 400, -32600, nil},
		{`"x"`, 400, -32600, nil},
		{`null`, 400, -32600, nil},
		{`true`, 400, -32600, nil},
		{`{}`, 400, -32600, nil},
		{`{"jsonrpc":"1.0","id":2,"method":"ping"}`, 400, -32600, 2.0},
		{`{"jsonrpc":2,"id":"a","method":"ping"}`, 400, -32600, "a"},
		{`{"id":3,"method":"ping"}`, 400, -32600, 3.0},
		{`{"jsonrpc":"2.0","id":4,"method":""}`, 400, -32600, 4.0},
		{`{"jsonrpc":"2.0","id":5,"method":7}`, 400, -32600, 5.0},
		{`{"jsonrpc":"2.0","id":6,"method":"ping","result":{}}`, 400, -32600, 6.0},
		{`{"jsonrpc":"2.0","id":7,"result":{},"error":{"code":1,"message":"m"}}`, 400, -32600, 7.0},
		{`{"jsonrpc":"2.0","id":8,"error":{"code":"x"}}`, 400, -32600, 8.0},
		{`{"jsonrpc":"2.0","method":"notifications/initialized","params":5}`, 400, -32600, nil},
		{`{"jsonrpc":"2.0","id":9,"method":"ping","params":[1]}`, 400, -32600, 9.0},
		{`{"jsonrpc":"2.0","id":10,"method":"ping","Method":"tools/call"}`, 400, -32600, 10.0},
		{`{"jsonrpc":"2.0","id":1,`, 400, -32700, nil},
		{`{"jsonrpc":"2.0","id":1,"method":"ping"} {}`, 400, -32700, nil},
	} {
		resp, body := call(t, s, "POST", "/mcp", []byte(c.body), jsonCT...)
		e, _ := body["error"].(map[string]any)
		if resp.StatusCode != c.status || e == nil || e["code"] != c.code || body["id"] != c.id || body["jsonrpc"] != "2.0" {
			t.Errorf("%s: want %d, code %v, id %v; got %d %v", c.body, c.status, c.code, c.id, resp.StatusCode, body)
			continue
		}
		spanishError(t, c.body, fmt.Sprint(e["message"]))
	}

	// Valid messages still pass: a request, a notification and a response (to a request the server never
	// sent, which it ignores).
	for body, status := range map[string]int{
		`{"jsonrpc":"2.0","id":"p","method":"ping"}`:                        200,
		`{"jsonrpc":"2.0","id":0,"method":"ping","params":{}}`:              200,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`:            202,
		`{"jsonrpc":"2.0","id":"s1","result":{}}`:                           202,
		`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"x"}}`: 202,
	} {
		if resp, _ := call(t, s, "POST", "/mcp", []byte(body), jsonCT...); resp.StatusCode != status {
			t.Errorf("%s: %d, want %d", body, resp.StatusCode, status)
		}
	}
}

// TestMCPErrorsInSpanish: the errors of the MCP server itself (unknown method, malformed params, unknown
// tool) keep their JSON-RPC codes and speak Spanish, without Go's words; so do the read tools' argument errors.
func TestMCPErrorsInSpanish(t *testing.T) {
	t.Parallel()
	s := testserver.Start(t, testserver.Options{})
	jsonCT := []string{"Content-Type", "application/json", "Accept", "application/json, text/event-stream"}
	for _, c := range []struct {
		body string
		code float64
		want string
	}{
		{`{"jsonrpc":"2.0","id":1,"method":"nope"}`, -32601, "nope"},
		{`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":5}}`, -32602, "name"},
		{`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"nope"}}`, -32602, "nope"},
		{`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{}}`, -32602, "name"},
		{`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"ver_ayuda","arguments":"x"}}`, -32602, "arguments"},
		{`{"jsonrpc":"2.0","id":6,"method":"initialize","params":{"protocolVersion":5,"capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`, -32602, "initialize"},
	} {
		resp, body := call(t, s, "POST", "/mcp", []byte(c.body), jsonCT...)
		e, _ := body["error"].(map[string]any)
		if e == nil || e["code"] != c.code {
			t.Errorf("%s: want code %v; got %d %v", c.body, c.code, resp.StatusCode, body)
			continue
		}
		msg := fmt.Sprint(e["message"])
		spanishError(t, c.body, msg)
		if !strings.Contains(msg, c.want) {
			t.Errorf("%s: the error %q does not name %q", c.body, msg, c.want)
		}
	}

	// Through the official Go SDK client: a tool's argument errors are tool results in Spanish.
	cs := sdkSession(t, s, "2025-11-25")
	for _, args := range []map[string]any{{}, {"id": 5}, {"id": "x", "otro": 1}} {
		res := callTool(t, cs, schema.ToolViewHelp, args)
		if !res.IsError {
			t.Errorf("ver_ayuda %v: not an error", args)
		}
		spanishError(t, fmt.Sprintf("ver_ayuda %v", args), toolText(res))
	}
	_, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "nope", Arguments: map[string]any{}})
	if err == nil {
		t.Fatal("unknown tool: no error")
	}
	spanishError(t, "unknown tool through the SDK", strings.TrimPrefix(err.Error(), "calling \"tools/call\": "))
	// A JSON-RPC error the client reads as one (an agent told the tool does not exist), not a failed
	// transport: at this protocol version the transport answers it with 200.
	var rpcErr *jsonrpc.Error
	if !errors.As(err, &rpcErr) || rpcErr.Code != jsonrpc.CodeInvalidParams {
		t.Errorf("unknown tool through the SDK: %T %v, want a JSON-RPC error -32602", err, err)
	}
}
