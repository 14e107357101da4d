package mcpserver

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// TestMCPIDsExact: JSON-RPC asks for the request's id back; integers past 2^53 (which a float64 rounds)
// and long ones come back digit for digit, in results and in errors.
func TestMCPIDsExact(t *testing.T) {
	s := newTestServer(t)
	for _, id := range []string{"9007199254740993", "123456789012345678901234567890", "-9007199254740993", `"9007199254740993"`, `"\u00e9\u2028"`, "0"} {
		for _, m := range []string{`"method":"ping"`, `"method":"tools/list"`, `"method":"nope"`, `"method":"tools/list","params":{"cursor":"zzz"}`} {
			body := `{"jsonrpc":"2.0","id":` + id + `,` + m + `}`
			_, got := s.mcpPost("2025-06-18", body)
			if !strings.HasPrefix(got, `{"jsonrpc":"2.0","id":`+id+`,`) {
				t.Errorf("%s: %.200s", body, got)
			}
		}
	}
}

// TestMCPErrorReasons: a -32602 says what is wrong with the params, and every JSON-RPC error code has one
// HTTP status at each protocol version, whoever refuses (before 2026-07-28 a well-formed request's error
// is a 200, where those versions' clients read it; from it on 400 and 404); text cut short is -32700, not
// a batch.
func TestMCPErrorReasons(t *testing.T) {
	s := newTestServer(t)
	const meta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
	for _, c := range []struct {
		proto, body string
		status      int
		code        float64
		want        string // in the message
	}{
		{"2025-06-18", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"cursor":"zzz"}}`, 200, -32602, "«params/cursor»"},
		{"2026-07-28", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"cursor":"zzz",` + meta + `}}`, 400, -32602, "«params/cursor»"},
		{"2026-07-28", `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{}}`, 400, -32602, "io.modelcontextprotocol/protocolVersion"},
		{"2026-07-28", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`, 400, -32602, "io.modelcontextprotocol/clientCapabilities"},
		{"2025-06-18", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"nope"}}`, 200, -32602, "«nope»"},
		{"2026-07-28", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"nope",` + meta + `}}`, 400, -32602, "«nope»"},
		{"2025-06-18", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{}}`, 200, -32602, "«params/name»"},
		{"2026-07-28", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{` + meta + `}}`, 400, -32602, "«params/name»"},
		{"2025-06-18", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":5}}`, 200, -32602, "«params/protocolVersion»"},
		{"2025-06-18", `{"jsonrpc":"2.0","id":1,"method":"nope"}`, 200, -32601, "«nope»"},
		{"2026-07-28", `{"jsonrpc":"2.0","id":1,"method":"nope","params":{` + meta + `}}`, 404, -32601, "«nope»"},
		{"2025-06-18", `{"jsonrpc":"2.0","id":1}`, 400, -32600, "«method»"},
		{"2025-06-18", `[{"jsonrpc":"2.0","id":1,"method":"ping"}]`, 400, -32600, "lotes"},
		{"2025-06-18", `[[[[[[`, 400, -32700, "JSON"},
		{"2025-06-18", `[{"jsonrpc":"2.0","id":1,"method":"ping"}`, 400, -32700, "JSON"},
		{"2025-06-18", `{"jsonrpc":"2.0","id":1,"method":"` + strings.Repeat("m", 3000) + `"}`, 200, -32601, "«" + strings.Repeat("m", 40) + "…»"},
	} {
		status, body := s.mcpPost(c.proto, c.body)
		var res struct {
			Error struct {
				Code    float64
				Message string
			}
		}
		_ = json.Unmarshal([]byte(body), &res)
		if status != c.status || res.Error.Code != c.code || !strings.Contains(res.Error.Message, c.want) {
			t.Errorf("%s %.120s: %d %.300s; want %d, code %v, naming %s", c.proto, c.body, status, body, c.status, c.code, c.want)
		}
		if len(body) > 1000 {
			t.Errorf("%.120s: an error of %d bytes", c.body, len(body))
		}
	}
	// Valid calls are still 200.
	if status, body := s.mcpPost("2025-06-18", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`); status != http.StatusOK || !strings.Contains(body, `"tools"`) {
		t.Errorf("tools/list: %d %.200s", status, body)
	}
}
