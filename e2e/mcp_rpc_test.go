package e2e

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/directaid/directaid/backend/mcpserver"
	"github.com/directaid/directaid/internal/testserver"
	"github.com/directaid/directaid/schema"
)

const modernProtocol = "2026-07-28"

// rpcClient speaks raw JSON-RPC to /mcp as a client of one protocol version would, and checks every answer
// against the served OpenAPI document (through call).
type rpcClient struct {
	t       *testing.T
	s       *testserver.Server
	version string
	id      int
	header  []string // extra headers on every request (Host, Origin)
}

func (c *rpcClient) modern() bool { return c.version >= modernProtocol }

// post sends one JSON-RPC message with the headers its protocol version asks for.
func (c *rpcClient) post(msg map[string]any) (*http.Response, map[string]any) {
	c.t.Helper()
	h := []string{"Content-Type", "application/json", "Accept", "application/json, text/event-stream"}
	for i := 0; i+1 < len(c.header); i += 2 {
		if c.header[i+1] != "" {
			h = append(h, c.header[i], c.header[i+1])
		}
	}
	method, _ := msg["method"].(string)
	if c.modern() {
		params, _ := msg["params"].(map[string]any)
		if params == nil {
			params = map[string]any{}
		}
		params["_meta"] = map[string]any{
			"io.modelcontextprotocol/protocolVersion":    c.version,
			"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "e2e-raw", "version": "1.0.0"},
			"io.modelcontextprotocol/clientCapabilities": map[string]any{},
		}
		msg["params"] = params
		h = append(h, "Mcp-Method", method)
		if name, ok := params["name"].(string); ok {
			h = append(h, "Mcp-Name", name)
		}
	}
	// 2025-03-26 clients send no version header; later ones do after initialize.
	if c.version >= "2025-06-18" && method != "initialize" {
		h = append(h, "Mcp-Protocol-Version", c.version)
	}
	msg["jsonrpc"] = "2.0"
	return call(c.t, c.s, "POST", "/mcp", mustJSON(c.t, msg), h...)
}

// request sends a JSON-RPC request and returns its result, failing the test on any error.
func (c *rpcClient) request(method string, params map[string]any) map[string]any {
	c.t.Helper()
	c.id++
	resp, body := c.post(map[string]any{"id": c.id, "method": method, "params": params})
	if resp.StatusCode != 200 || body["error"] != nil || body["id"] != float64(c.id) {
		c.t.Fatalf("%s (%s): %d %v", method, c.version, resp.StatusCode, body)
	}
	if sid := resp.Header.Get("Mcp-Session-Id"); sid != "" {
		c.t.Errorf("%s: stateless server sent Mcp-Session-Id %q", method, sid)
	}
	result, _ := body["result"].(map[string]any)
	return result
}

// callTool calls a tool and returns the tool result.
func (c *rpcClient) callTool(name string, args map[string]any) map[string]any {
	c.t.Helper()
	return c.request("tools/call", map[string]any{"name": name, "arguments": args})
}

// connect runs the version's handshake: initialize + notifications/initialized, or server/discover.
func (c *rpcClient) connect() {
	c.t.Helper()
	if c.modern() {
		disc := c.request("server/discover", nil)
		if vs, _ := disc["supportedVersions"].([]any); !slices.Contains(vs, any(c.version)) {
			c.t.Fatalf("server/discover does not offer %s: %v", c.version, disc)
		}
		return
	}
	init := c.request("initialize", map[string]any{"protocolVersion": c.version, "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "e2e-raw", "version": "1.0.0"}})
	if init["protocolVersion"] != c.version {
		c.t.Fatalf("initialize %s: protocolVersion %v", c.version, init["protocolVersion"])
	}
	if info, _ := init["serverInfo"].(map[string]any); info["name"] != "directaid" || init["instructions"] == "" {
		c.t.Errorf("initialize: %v", init)
	}
	resp, body := c.post(map[string]any{"method": "notifications/initialized"})
	if resp.StatusCode != 202 || body != nil {
		c.t.Fatalf("notification: %d %v", resp.StatusCode, body)
	}
}

func mcpArgs(record map[string]any) map[string]any { return with(record, "type", nil) }

func structured(t *testing.T, result map[string]any) map[string]any {
	t.Helper()
	if result["isError"] == true {
		t.Fatalf("tool error: %v", result["content"])
	}
	sc, ok := result["structuredContent"].(map[string]any)
	if !ok {
		t.Fatalf("no structuredContent: %v", result)
	}
	return sc
}

func TestMCPProtocolVersions(t *testing.T) {
	t.Parallel()
	s := testserver.Start(t, testserver.Options{})
	for _, v := range []string{"2025-03-26", "2025-06-18", "2025-11-25", modernProtocol} {
		t.Run(v, func(t *testing.T) {
			c := &rpcClient{t: t, s: s, version: v}
			c.connect()
			if !c.modern() { // 2026-07-28 removed ping
				if r := c.request("ping", nil); len(r) != 0 {
					t.Errorf("ping: %v", r)
				}
			}
			var names []string
			for _, tool := range c.request("tools/list", nil)["tools"].([]any) {
				names = append(names, tool.(map[string]any)["name"].(string))
			}
			for _, want := range []string{schema.ToolListEmergencies, schema.ToolPublishRequest, schema.ToolPublishOffer} {
				if !slices.Contains(names, want) {
					t.Fatalf("tools/list lacks %s: %v", want, names)
				}
			}
			if em := structured(t, c.callTool(schema.ToolListEmergencies, nil))["emergencies"].([]any); len(em) != 2 {
				t.Errorf("emergencies: %v", em)
			}
			res := structured(t, c.callTool(schema.ToolPublishOffer, mcpArgs(validOffer())))
			if res["ok"] != true || res["duplicate"] != false || res["type"] != "offer" || res["emergencySlug"] != "eje-cafetero" {
				t.Errorf("publish: %v", res)
			}
			// A notification the server need not act on is accepted all the same.
			resp, body := c.post(map[string]any{"method": "notifications/cancelled", "params": map[string]any{"requestId": 999}})
			if resp.StatusCode != 202 || body != nil {
				t.Errorf("notification: %d %v", resp.StatusCode, body)
			}
		})
	}
}

// rpcError checks a JSON-RPC error answer produced before a message reaches the MCP server.
func rpcError(t *testing.T, what string, resp *http.Response, body map[string]any, status int) {
	t.Helper()
	if resp.StatusCode != status || resp.Header.Get("Content-Type") != "application/json" || body["jsonrpc"] != "2.0" {
		t.Errorf("%s: want %d with a JSON-RPC error, got %d %s %v", what, status, resp.StatusCode, resp.Header.Get("Content-Type"), body)
		return
	}
	if e, _ := body["error"].(map[string]any); e["message"] == "" || e["code"] == nil {
		t.Errorf("%s: error body %v", what, body)
	}
}

func TestMCPHTTPAnswers(t *testing.T) {
	t.Parallel()
	s := testserver.Start(t, testserver.Options{})
	ping := mustJSON(t, map[string]any{"jsonrpc": "2.0", "id": 1, "method": "ping"})
	jsonCT := []string{"Content-Type", "application/json"}

	for _, m := range []string{"GET", "DELETE", "HEAD"} {
		for _, version := range []string{"", "2025-11-25", modernProtocol} {
			resp, body := call(t, s, m, "/mcp", nil, "Accept", "text/event-stream", "Mcp-Protocol-Version", version)
			if resp.Header.Get("Allow") != "POST, OPTIONS" {
				t.Errorf("%s /mcp (%s): Allow %q", m, version, resp.Header.Get("Allow"))
			}
			if m != "HEAD" {
				rpcError(t, m+" /mcp", resp, body, 405)
			} else if resp.StatusCode != 405 {
				t.Errorf("HEAD /mcp: %d", resp.StatusCode)
			}
		}
	}

	resp, _ := call(t, s, "OPTIONS", "/mcp", nil, "Origin", "http://localhost:6274", "Access-Control-Request-Method", "POST",
		"Access-Control-Request-Headers", "content-type,mcp-protocol-version,mcp-session-id,mcp-method,mcp-name,last-event-id")
	allowed := strings.ToLower(resp.Header.Get("Access-Control-Allow-Headers"))
	for _, h := range []string{"content-type", "mcp-protocol-version", "mcp-session-id", "mcp-method", "mcp-name", "last-event-id"} {
		if !strings.Contains(allowed, h) {
			t.Errorf("preflight does not allow %s: %q", h, allowed)
		}
	}
	if resp.StatusCode != 204 || resp.Header.Get("Access-Control-Allow-Origin") != "*" || !strings.Contains(resp.Header.Get("Access-Control-Allow-Methods"), "POST") {
		t.Errorf("preflight: %d %v", resp.StatusCode, resp.Header)
	}

	resp, body := call(t, s, "POST", "/mcp", ping, append(jsonCT, "Origin", "http://localhost:6274")...)
	if resp.StatusCode != 200 || body["result"] == nil {
		t.Fatalf("ping: %d %v", resp.StatusCode, body)
	}
	expose := resp.Header.Get("Access-Control-Expose-Headers")
	if resp.Header.Get("Access-Control-Allow-Origin") != "*" || !strings.Contains(expose, "Mcp-Session-Id") || !strings.Contains(expose, "Mcp-Protocol-Version") {
		t.Errorf("CORS on POST /mcp: %v", resp.Header)
	}

	resp, body = call(t, s, "POST", "/mcp", ping, "Content-Type", "text/plain")
	rpcError(t, "text/plain", resp, body, 415)
	resp, body = call(t, s, "POST", "/mcp", ping, append(jsonCT, "Mcp-Protocol-Version", "1999-01-01")...)
	rpcError(t, "unknown protocol version", resp, body, 400)
	resp, body = call(t, s, "POST", "/mcp", []byte(`{"jsonrpc":"2.0","id":1,`), jsonCT...)
	rpcError(t, "truncated JSON", resp, body, 400)
	big := append(bytes.Repeat([]byte(" "), mcpserver.MaxBodyBytes), ping...)
	resp, body = call(t, s, "POST", "/mcp", big, jsonCT...)
	rpcError(t, "body over the limit", resp, body, 413)
	if e, _ := body["error"].(map[string]any); !strings.Contains(fmt.Sprint(e["message"]), "128 KiB") {
		t.Errorf("body over the limit does not say the limit: %v", body)
	}

	// Arguments over the publish body limit fit in a message but are refused like POST help refuses them.
	c := &rpcClient{t: t, s: s, version: "2025-11-25"}
	res := c.callTool(schema.ToolPublishOffer, with(mcpArgs(validOffer()), "description", strings.Repeat("a", 70<<10)))
	if res["isError"] != true || !strings.Contains(fmt.Sprint(res["content"]), "64 KiB") {
		t.Errorf("70 KiB of arguments: %v", res)
	}
}

func TestMCPBatchRefused(t *testing.T) {
	t.Parallel()
	s := testserver.Start(t, testserver.Options{})
	batch := func(n int) ([]byte, []map[string]any) {
		var calls []any
		var records []map[string]any
		for i := range n {
			rec := validOffer()
			records = append(records, rec)
			calls = append(calls, map[string]any{"jsonrpc": "2.0", "id": i, "method": "tools/call",
				"params": map[string]any{"name": schema.ToolPublishOffer, "arguments": mcpArgs(rec)}})
		}
		return mustJSON(t, calls), records
	}
	// A batch within the size bound is refused as a whole, before any call runs.
	body, records := batch(50)
	resp, answer := call(t, s, "POST", "/mcp", body, "Content-Type", "application/json")
	rpcError(t, "batch", resp, answer, 400)
	for _, rec := range []map[string]any{records[0], records[49]} {
		if r, b := publish(t, s, rec); r.StatusCode != 201 {
			t.Errorf("a call of the refused batch was executed: POST help of its record answered %d %v", r.StatusCode, b)
		}
	}
	// Ten thousand calls do not even fit in one message: refused on their Content-Length, unread. (With
	// Expect: 100-continue the client waits for that answer; otherwise it would keep writing into a
	// connection the server closes, and Go's client reports the reset instead of the 413.)
	body, _ = batch(10000)
	resp, answer = call(t, s, "POST", "/mcp", body, "Content-Type", "application/json", "Expect", "100-continue")
	rpcError(t, "batch of 10000 calls", resp, answer, 413)
}

// nonLoopbackIP is an address of this machine that is not loopback, to reach the server as a public
// deployment would be reached.
func nonLoopbackIP() string {
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if ip, ok := a.(*net.IPNet); ok && ip.IP.To4() != nil && !ip.IP.IsLoopback() && !ip.IP.IsLinkLocalUnicast() {
			return ip.IP.String()
		}
	}
	return ""
}

func TestMCPDNSRebindingProtection(t *testing.T) {
	t.Parallel()
	public := nonLoopbackIP()
	site := ""
	if public != "" {
		site = "bind 127.0.0.1 " + public
	}
	s := testserver.Start(t, testserver.Options{Emergencies: testserver.TwoEmergencies + "\n\t\tpublic_url https://ayuda.example.org", Site: site})
	local := "127.0.0.1:" + strconv.Itoa(s.Port)
	for _, c := range []struct {
		name, host, origin string
		want               int
	}{
		{"foreign Host and Origin (rebinding)", "evil.example.com", "http://evil.example.com", 403},
		{"foreign Host", "evil.example.com:" + strconv.Itoa(s.Port), "", 403},
		{"foreign Origin", local, "http://evil.example.com", 403},
		{"opaque Origin", local, "null", 403},
		{"loopback IP", local, "http://" + local, 200},
		{"localhost with a local client's Origin", "localhost:" + strconv.Itoa(s.Port), "http://localhost:6274", 200},
		{"IPv6 loopback", "[::1]:" + strconv.Itoa(s.Port), "", 200},
		{"RFC 6761 .localhost", "directaid.localhost", "http://directaid.localhost", 200},
		// A reverse proxy on the same machine forwards the public name over loopback; browsers anywhere may call it.
		{"public_url behind a local proxy", "ayuda.example.org", "https://cliente.example", 200},
	} {
		t.Run(c.name, func(t *testing.T) {
			cl := &rpcClient{t: t, s: s, version: "2025-11-25", header: []string{"Host", c.host, "Origin", c.origin}}
			resp, body := cl.post(map[string]any{"id": 1, "method": "initialize", "params": map[string]any{
				"protocolVersion": "2025-11-25", "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "e2e", "version": "1"}}})
			if c.want == 403 {
				rpcError(t, c.name, resp, body, 403)
			} else if resp.StatusCode != c.want || body["result"] == nil {
				t.Errorf("%d %v", resp.StatusCode, body)
			}
		})
	}
	t.Run("preflight", func(t *testing.T) {
		preflight := func(host, origin string) *http.Response {
			resp, _ := call(t, s, "OPTIONS", "/mcp", nil, "Host", host, "Origin", origin, "Access-Control-Request-Method", "POST")
			return resp
		}
		if r := preflight("ayuda.example.org", "https://cliente.example"); r.StatusCode != 204 || r.Header.Get("Access-Control-Allow-Origin") != "*" {
			t.Errorf("browser client of the public name: %d %v", r.StatusCode, r.Header)
		}
	})
	t.Run("public address answers any Host", func(t *testing.T) {
		if public == "" {
			t.Skip("this machine has no non-loopback IPv4 address")
		}
		url := fmt.Sprintf("http://%s:%d/mcp", public, s.Port)
		ping := mustJSON(t, map[string]any{"jsonrpc": "2.0", "id": 1, "method": "ping"})
		resp, body := call(t, s, "POST", url, ping, "Content-Type", "application/json", "Host", "evil.example.com", "Origin", "http://evil.example.com")
		if resp.StatusCode != 200 || body["result"] == nil {
			t.Errorf("%d %v", resp.StatusCode, body)
		}
	})
}

// TestMCPRateLimit: MCP publishing spends the publish budget of POST help, and nothing else an agent
// does (handshake, listing, pings, listar_emergencias) spends it or is blocked by it.
func TestMCPRateLimit(t *testing.T) {
	t.Parallel()
	s := testserver.Start(t, testserver.Options{PublishEvents: 3, PublishWindow: "1m"})
	c := &rpcClient{t: t, s: s, version: "2025-11-25"}
	c.connect()
	for range 5 {
		c.request("tools/list", nil)
		c.request("ping", nil)
		structured(t, c.callTool(schema.ToolListEmergencies, nil))
	}
	if resp, body := publish(t, s, validRequest()); resp.StatusCode != 201 {
		t.Fatalf("POST help: %d %v", resp.StatusCode, body)
	}
	structured(t, c.callTool(schema.ToolPublishOffer, mcpArgs(validOffer())))
	structured(t, c.callTool(schema.ToolPublishRequest, mcpArgs(validRequest())))

	over := func(what string, resp *http.Response, body map[string]any) {
		t.Helper()
		if resp.StatusCode != 429 || body["code"] != "rate_limited" || resp.Header.Get("Retry-After") == "" || resp.Header.Get("Access-Control-Allow-Origin") != "*" {
			t.Errorf("%s over the limit: %d %v %v", what, resp.StatusCode, resp.Header, body)
		}
	}
	toolCall := func(name string, args map[string]any) (*http.Response, map[string]any) {
		c.id++
		return c.post(map[string]any{"id": c.id, "method": "tools/call", "params": map[string]any{"name": name, "arguments": args}})
	}
	resp, body := toolCall(schema.ToolPublishOffer, mcpArgs(validOffer()))
	over("MCP publish", resp, body)
	resp, body = publish(t, s, validRequest())
	over("POST help", resp, body)
	// Any tools/call that might publish counts, an unknown tool included; a 2026-07-28 call too.
	resp, body = toolCall("publicar_otra_cosa", map[string]any{})
	over("unknown tool", resp, body)
	modern := &rpcClient{t: t, s: s, version: modernProtocol}
	modern.connect()
	resp, body = modern.post(map[string]any{"id": 1, "method": "tools/call", "params": map[string]any{"name": schema.ToolPublishRequest, "arguments": mcpArgs(validRequest())}})
	over("MCP publish (2026-07-28)", resp, body)

	// The agent can still connect, list, and call every tool annotated read-only (the annotation is what
	// the limit goes by), whatever the arguments make of the call.
	c2 := &rpcClient{t: t, s: s, version: "2025-03-26"}
	c2.connect()
	free := 0
	for _, tool := range c2.request("tools/list", nil)["tools"].([]any) {
		tm := tool.(map[string]any)
		if ann, _ := tm["annotations"].(map[string]any); ann["readOnlyHint"] == true {
			free++
			if resp, body := toolCall(tm["name"].(string), map[string]any{}); resp.StatusCode != 200 || body["result"] == nil {
				t.Errorf("read-only %v over the publish limit: %d %v", tm["name"], resp.StatusCode, body)
			}
		}
	}
	if free == 0 {
		t.Error("no read-only tool listed")
	}
	structured(t, modern.callTool(schema.ToolListEmergencies, nil))
}
