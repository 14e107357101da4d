package mcpserver

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/directaid/directaid/backend"
	"github.com/directaid/directaid/backend/store/storetest"
	"github.com/directaid/directaid/internal/testserver"
	"github.com/directaid/directaid/schema"
)

func callReadTool(t *testing.T, svc *backend.Service, name, args string) *mcp.CallToolResult {
	t.Helper()
	for _, st := range readTools(svc) {
		if st.Tool.Name == name {
			var req mcp.CallToolRequest
			req.Params.Name = name
			req.Params.RawArguments = json.RawMessage(args)
			res, err := st.Handler(context.WithValue(context.Background(), mcpBaseKey{}, "https://ayuda.example.org"), req)
			if err != nil {
				t.Fatal(err)
			}
			return res
		}
	}
	t.Fatalf("no tool %s", name)
	return nil
}

func resultText(r *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range r.Content {
		if tc, ok := c.(mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

func TestMCPReadTools(t *testing.T) {
	s := testserver.Badger(t)
	recs := storetest.Seed(t, s, 50, time.Date(2026, 8, 11, 0, 0, 0, 0, time.UTC), time.Minute)
	svc := backend.NewService(s, backend.Config{Emergencies: []backend.Emergency{{Slug: "eje-cafetero", Title: "Terremoto"}, {Slug: "la-mojana", Title: "Inundaciones"}}})

	res := callReadTool(t, svc, schema.ToolSearchHelp, `{"emergencySlug":"eje-cafetero","limit":3,"q":"MÉDIC"}`)
	if res.IsError || res.StructuredContent == nil || strings.Contains(resultText(res), "+57") {
		t.Fatalf("buscar_ayudas: %v", resultText(res))
	}
	b, _ := json.Marshal(res.StructuredContent)
	if strings.Contains(string(b), "573001234567") || !strings.Contains(string(b), `"available":true`) {
		t.Fatalf("buscar_ayudas structured: %s", b)
	}
	for args, want := range map[string]string{
		`{"limit":0.5}`:         "número entero",
		`{"lat":4}`:             "no existe",
		`{"category":"comida"}`: "category",
		`{"latitude":4.5}`:      "longitude",
	} {
		if res := callReadTool(t, svc, schema.ToolSearchHelp, args); !res.IsError || !strings.Contains(resultText(res), want) {
			t.Errorf("%s: %v", args, resultText(res))
		}
	}
	res = callReadTool(t, svc, schema.ToolViewHelp, `{"id":"`+recs[0].ID+`"}`)
	if res.IsError || !strings.Contains(resultText(res), "https://wa.me/573001234567") {
		t.Fatalf("ver_ayuda: %v", resultText(res))
	}
	if res := callReadTool(t, svc, schema.ToolViewHelp, `{"id":"0000000000000000"}`); !res.IsError {
		t.Fatal("ver_ayuda of an unknown id")
	}
	res = callReadTool(t, svc, schema.ToolPanorama, `{}`)
	if res.IsError || !strings.Contains(resultText(res), "Terremoto (eje-cafetero)") {
		t.Fatalf("consultar_panorama: %v", resultText(res))
	}
}

// TestListTextTotals: the summary says a total as the list gives it: exact, an estimate, a lower bound
// (total=none: it was not counted) or an upper bound (attended), one record in the singular.
func TestListTextTotals(t *testing.T) {
	for _, c := range []struct {
		l    schema.HelpList
		want string
	}{
		{schema.HelpList{Total: 24, TotalExact: true, Returned: 1}, "24 registros en total; estos son 1:"},
		{schema.HelpList{Total: 1, TotalExact: true, Returned: 1}, "1 registro en total; estos son 1:"},
		{schema.HelpList{Total: 1, Returned: 1, Filters: schema.ListQuery{Total: schema.TotalNone}}, "Al menos 1 registro (sin contar el total, como se pidió con total=none); estos son 1:"},
		{schema.HelpList{Total: 16, Returned: 10, Filters: schema.ListQuery{Attended: "false"}}, "Hasta 16 registros en total; estos son 10:"},
		{schema.HelpList{Total: 2400, Returned: 10, Filters: schema.ListQuery{Q: "agua"}}, "Unos 2400 registros en total (estimado); estos son 10:"},
		{schema.HelpList{}, "No hay registros con esos filtros."},
	} {
		if got := listText(&c.l); got != c.want {
			t.Errorf("%+v: %q, want %q", c.l, got, c.want)
		}
	}
}
