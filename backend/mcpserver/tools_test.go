package mcpserver

import (
	"encoding/json"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/directaid/directaid/backend"
	"github.com/directaid/directaid/backend/httpapi"
	"github.com/directaid/directaid/internal/testserver"
)

// Every tool the MCP server registers is listed in every document that lists tools: the MCP instructions,
// the OpenAPI description of /mcp, discovery's capabilities, llms.txt and the integration guide.
func TestToolsListedEverywhere(t *testing.T) {
	s := testserver.Badger(t)
	svc := backend.NewService(s, backend.Config{Emergencies: []backend.Emergency{{Slug: "eje-cafetero", Title: "Terremoto"}}})
	e := New(svc)
	h, err := httpapi.NewHandler(svc, httpapi.Options{MCP: e})
	if err != nil {
		t.Fatal(err)
	}
	get := func(method, path, body string) string {
		r := httptest.NewRequest(method, "http://ayuda.test"+path, strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Accept", "application/json, text/event-stream")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != 200 {
			t.Fatalf("%s %s: %d %s", method, path, w.Code, w.Body)
		}
		return w.Body.String()
	}
	var init struct {
		Result struct{ Instructions string } `json:"result"`
	}
	if err := json.Unmarshal([]byte(get("POST", "/mcp", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)), &init); err != nil {
		t.Fatal(err)
	}
	var openapi struct {
		Paths map[string]map[string]struct{ Description string } `json:"paths"`
	}
	if err := json.Unmarshal([]byte(get("GET", "/api/public/openapi.json", "")), &openapi); err != nil {
		t.Fatal(err)
	}
	var disc struct{ Capabilities []string }
	if err := json.Unmarshal([]byte(get("GET", "/api/public/v1/help", "")), &disc); err != nil {
		t.Fatal(err)
	}
	llms, guide := get("GET", "/llms.txt", ""), get("GET", "/integraciones.md", "")

	registered := e.srv.ListTools()
	if len(registered) != len(e.Tools()) || len(registered) == 0 {
		t.Fatalf("%d tools registered, %d documented", len(registered), len(e.Tools()))
	}
	for _, doc := range e.Tools() {
		name := doc.Name
		if _, ok := registered[name]; !ok {
			t.Errorf("%s documented but not registered", name)
		}
		if doc.Summary == "" || doc.Capability == "" || doc.Title == "" {
			t.Errorf("%s: no summary, capability or title in toolNotes/annotate: %+v", name, doc)
		}
		for where, text := range map[string]string{
			"MCP instructions": init.Result.Instructions,
			"OpenAPI /mcp":     openapi.Paths["/mcp"]["post"].Description,
			"llms.txt":         llms,
			"integraciones.md": guide,
		} {
			if !strings.Contains(text, name) {
				t.Errorf("%s is missing from %s", name, where)
			}
		}
		if !slices.Contains(disc.Capabilities, doc.Capability) {
			t.Errorf("%s: capability %q is missing from discovery %v", name, doc.Capability, disc.Capabilities)
		}
	}
}
