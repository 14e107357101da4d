package e2e

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/directaid/directaid/backend"
	"github.com/directaid/directaid/internal/testmcp"
	"github.com/directaid/directaid/internal/testserver"
	"github.com/directaid/directaid/schema"
)

// sdkSessionFrom connects the official Go SDK client from the loopback address ip (127.0.0.2, …): to the
// server, a distinct reporter. Every exchange is checked against the served OpenAPI document.
func sdkSessionFrom(t *testing.T, s *testserver.Server, ip string) *sdk.ClientSession {
	t.Helper()
	rt := testmcp.Checked(s, fromAddr(ip).Transport)
	client := sdk.NewClient(&sdk.Implementation{Name: "directaid-e2e-" + ip, Version: "1.0.0"}, nil)
	cs, err := client.Connect(context.Background(), &sdk.StreamableClientTransport{Endpoint: s.URL + schema.MCPPath,
		HTTPClient: &http.Client{Transport: rt, Timeout: 30 * time.Second}}, nil)
	if err != nil {
		t.Fatalf("connect from %s: %v", ip, err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// TestMCPReportsNotMyNumberAndThreshold: through the official client, reportar_publicacion with
// not_my_number hides the phone at once from ver_ayuda and from the API's detail while the record stays
// listed; hide_after_reports (2 here) distinct reporters hide a record, the same reporter twice counts
// once; the operator's restore brings it back to the read tools.
func TestMCPReportsNotMyNumberAndThreshold(t *testing.T) {
	t.Parallel()
	s := testserver.Start(t, testserver.Options{Emergencies: testserver.TwoEmergencies + "\n\t\thide_after_reports 2"})
	publisher := sdkSessionFrom(t, s, "127.0.0.1")
	a := published(t, callTool(t, publisher, backend.ToolPublishRequest, mcpArgs(validRequest())))
	b := published(t, callTool(t, publisher, backend.ToolPublishOffer, mcpArgs(with(validOffer(), "contactWhatsapp", "+57 312 555 0199"))))

	view := func(cs *sdk.ClientSession, id string) (map[string]any, string, bool) {
		t.Helper()
		res := callTool(t, cs, backend.ToolViewHelp, map[string]any{"id": id})
		if res.IsError {
			return nil, toolText(res), true
		}
		return roundTrip[map[string]any](t, res.StructuredContent), toolText(res), false
	}
	listed := func(cs *sdk.ClientSession) string {
		t.Helper()
		res := callTool(t, cs, backend.ToolSearchHelp, map[string]any{})
		if res.IsError {
			t.Fatalf("buscar_ayudas: %s", toolText(res))
		}
		return fmt.Sprint(res.StructuredContent)
	}
	reportFrom := func(cs *sdk.ClientSession, id, reason string) schema.ReportResult {
		t.Helper()
		res := callTool(t, cs, backend.ToolReport, map[string]any{"id": id, "reason": reason})
		if res.IsError {
			t.Fatalf("reportar_publicacion %s %s: %s", id, reason, toolText(res))
		}
		return roundTrip[schema.ReportResult](t, res.StructuredContent)
	}
	r1, r2, r3 := sdkSessionFrom(t, s, "127.0.0.21"), sdkSessionFrom(t, s, "127.0.0.22"), sdkSessionFrom(t, s, "127.0.0.23")

	// not_my_number: the phone is shown before, and gone at once after one report.
	if d, text, isErr := view(r3, b.ID); isErr || !strings.Contains(fmt.Sprint(d["contact"]), "573125550199") {
		t.Fatalf("before the report, ver_ayuda shows the phone: %v %s", d, text)
	}
	if rep := reportFrom(r1, b.ID, "not_my_number"); !rep.OK || rep.ID != b.ID || !strings.Contains(rep.Message, "teléfono") {
		t.Fatalf("not_my_number: %+v", rep)
	}
	d, text, isErr := view(r3, b.ID)
	contact, _ := d["contact"].(map[string]any)
	if isErr || contact["available"] != false || contact["whatsapp"] != nil || contact["whatsappUrl"] != nil ||
		strings.Contains(text, "5550199") || strings.Contains(text, "555 0199") {
		t.Fatalf("ver_ayuda after not_my_number: %v\n%s", d, text)
	}
	if code, body := detailStatus(t, s, b.ID); code != 200 || strings.Contains(string(mustJSON(t, body)), "5550199") ||
		body["contact"].(map[string]any)["available"] != false {
		t.Fatalf("API detail after not_my_number: %d %v", code, body)
	}
	if l := listed(r3); !strings.Contains(l, b.ID) {
		t.Fatalf("the record leaves the list after not_my_number; it should stay without the phone: %s", l)
	}

	// The threshold: the same reporter twice counts once; a second distinct reporter hides it.
	reportFrom(r2, a.ID, "spam")
	reportFrom(r2, a.ID, "fraud")
	if _, text, isErr := view(r3, a.ID); isErr {
		t.Fatalf("one reporter (twice) hid the record: %s", text)
	}
	if code, _ := detailStatus(t, s, a.ID); code != 200 {
		t.Fatalf("one reporter (twice): detail %d", code)
	}
	reportFrom(r3, a.ID, "spam")
	if _, text, isErr := view(r1, a.ID); !isErr || strings.Contains(text, "3001234567") {
		t.Fatalf("two distinct reporters: ver_ayuda still shows it: %v %s", isErr, text)
	}
	if code, body := detailStatus(t, s, a.ID); code != 410 || body["code"] != "gone" {
		t.Fatalf("two distinct reporters: detail %d %v", code, body)
	}
	if l := listed(r1); strings.Contains(l, a.ID) {
		t.Fatalf("a hidden record is listed by buscar_ayudas: %s", l)
	}
	toolError(t, callTool(t, r1, backend.ToolReport, map[string]any{"id": a.ID, "reason": "spam"}))

	// The operator reviews and restores: the read tools show it again, with its phone.
	if q := moderate(t, s, "queue"); !strings.Contains(q, a.ID) || !strings.Contains(q, b.ID) || strings.Contains(q, "127.0.0.2") {
		t.Fatalf("queue: %s", q)
	}
	moderate(t, s, "restore", a.ID)
	if d, text, isErr := view(r1, a.ID); isErr || d["status"] != "open" || !strings.Contains(fmt.Sprint(d["contact"]), "3001234567") {
		t.Fatalf("after restore: %v %s", d, text)
	}
	if l := listed(r1); !strings.Contains(l, a.ID) {
		t.Fatalf("restored record not listed: %s", l)
	}
}
