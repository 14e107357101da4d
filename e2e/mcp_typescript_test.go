package e2e

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/directaid/directaid/internal/testserver"
	"github.com/directaid/directaid/schema"
)

// mcpTypeScriptSDK is the official MCP TypeScript SDK, pinned (it needs Node 20).
const mcpTypeScriptSDK = "@modelcontextprotocol/sdk@1.26.0"

// tsClient lists the tools, calls a tool that does not exist (as a model that misremembers a name does),
// then finds a place: what the client hands the agent, as JSON on stdout.
const tsClient = `import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
const client = new Client({ name: 'directaid-e2e', version: '1.0.0' });
await client.connect(new StreamableHTTPClientTransport(new URL(process.argv[2])));
const out = { tools: (await client.listTools()).tools.map((t) => t.name) };
try {
  await client.callTool({ name: 'no_existe', arguments: {} });
  out.unknown = { name: 'none' };
} catch (e) {
  out.unknown = { name: e.constructor.name, code: e.code, message: String(e.message) };
}
const found = await client.callTool({ name: process.argv[3], arguments: { q: 'el caimo' } });
out.place = found.structuredContent;
console.log(JSON.stringify(out));
await client.close();
`

// TestMCPTypeScriptSDK: the TypeScript SDK, which most agents' hosts use, over Streamable HTTP at its own
// protocol version. A tool the server does not have must reach the agent as the protocol's error
// (McpError, -32602, its Spanish message naming the tools), not as a broken connection: the SDK takes
// any HTTP status but 2xx for a failed transport.
func TestMCPTypeScriptSDK(t *testing.T) {
	npx := requireNpx(t, mcpTypeScriptSDK)
	npm := filepath.Join(filepath.Dir(npx), "npm")
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	install := exec.CommandContext(ctx, npm, "install", "--no-audit", "--no-fund", "--prefix", dir, mcpTypeScriptSDK)
	install.Env = append(os.Environ(), "npm_config_update_notifier=false")
	if out, err := install.CombinedOutput(); err != nil {
		t.Fatalf("npm install %s: %v\n%s", mcpTypeScriptSDK, err, out)
	}
	script := filepath.Join(dir, "client.mjs")
	if err := os.WriteFile(script, []byte(tsClient), 0o644); err != nil {
		t.Fatal(err)
	}
	s := testserver.Start(t, testserver.Options{})
	cmd := exec.CommandContext(ctx, "node", script, s.URL+"/mcp", schema.ToolFindPlace)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("node client: %v\n%s\n%s", err, out, stderr)
	}
	var got struct {
		Tools   []string
		Unknown struct {
			Name    string
			Code    int
			Message string
		}
		Place schema.PlaceList
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if len(got.Tools) == 0 {
		t.Errorf("no tools listed: %s", out)
	}
	if got.Unknown.Name != "McpError" || got.Unknown.Code != -32602 {
		t.Errorf("an unknown tool reached the agent as %+v, want McpError -32602", got.Unknown)
	}
	spanishError(t, "an unknown tool through the TypeScript SDK", got.Unknown.Message)
	if len(got.Place.Places) == 0 || got.Place.Places[0].PlaceCode != "63001001" {
		t.Errorf("buscar_lugar «el caimo»: %s", out)
	}
}
