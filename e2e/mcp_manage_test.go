package e2e

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/directaid/directaid/internal/testserver"
	"github.com/directaid/directaid/schema"
)

// TestMCPManageAndReport: through the official client, a publisher resolves, reopens and withdraws its
// record with the manage token from the publication; a wrong token is refused with the API's 403 message
// whether or not the id exists; anyone reports; buscar_ayudas shows other statuses with its status filter.
func TestMCPManageAndReport(t *testing.T) {
	t.Parallel()
	s := testserver.Start(t, testserver.Options{})
	cs := sdkSession(t, s, "")
	const externalID = "mcp-ext-7f3a9c51"
	created := callTool(t, cs, schema.ToolPublishRequest, mcpArgs(with(validRequest(), "externalId", externalID)))
	pub := published(t, created)
	// The text a model reads tells it to give the person the manage link, and gives it.
	if text := toolText(created); !strings.Contains(text, "Entregue a la persona") || !strings.Contains(text, pub.ManageURL) {
		t.Errorf("a publication's text does not hand over the manage link: %s", text)
	}
	if pub.ManageToken == "" {
		t.Fatalf("no manageToken in the tool's result: %+v", pub)
	}
	manage := func(id, token, action string) (schema.ActionResult, string, bool) {
		res := callTool(t, cs, schema.ToolManage, map[string]any{"id": id, "manageToken": token, "action": action})
		if res.IsError {
			return schema.ActionResult{}, toolText(res), true
		}
		structuredAsText(t, schema.ToolManage, res)
		return roundTrip[schema.ActionResult](t, res.StructuredContent), toolText(res), false
	}
	list := func(status string) []string {
		args := map[string]any{}
		if status != "" {
			args["status"] = status
		}
		res := callTool(t, cs, schema.ToolSearchHelp, args)
		if res.IsError {
			t.Fatalf("buscar_ayudas %v: %s", args, toolText(res))
		}
		var ids []string
		for _, it := range roundTrip[schema.HelpList](t, res.StructuredContent).Items {
			ids = append(ids, it.ID)
		}
		return ids
	}

	// A wrong token, for this id and for one that does not exist: the same Spanish error, nothing changes.
	const forbidden = "El código para gestionar esta publicación no es válido"
	var first string
	for _, c := range []struct{ id, token string }{{pub.ID, "x"}, {pub.ID, pub.ManageToken + "x"}, {"06fz0000000000zz", pub.ManageToken}} {
		_, text, isErr := manage(c.id, c.token, schema.ActionWithdraw)
		if !isErr || !strings.Contains(text, forbidden) {
			t.Fatalf("%+v: %v %s", c, isErr, text)
		}
		if first == "" {
			first = text
		} else if text != first {
			t.Errorf("wrong token answers differ:\n%s\n%s", first, text)
		}
	}

	res, _, isErr := manage(pub.ID, pub.ManageToken, schema.ActionResolve)
	if isErr || !res.OK || !res.Changed || res.Status != "resolved" || res.ExpiresAt != nil {
		t.Fatalf("resolve: %+v", res)
	}
	if again, _, _ := manage(pub.ID, pub.ManageToken, schema.ActionResolve); again.Changed || again.Status != "resolved" {
		t.Errorf("resolve again: %+v", again)
	}
	// The status filter of the read tool: resolved records leave the default list and show with status.
	if got := list(""); len(got) != 0 {
		t.Errorf("default search lists a resolved record: %v", got)
	}
	if got := list("resolved"); len(got) != 1 || got[0] != pub.ID {
		t.Errorf("status=resolved: %v", got)
	}
	toolError(t, callTool(t, cs, schema.ToolSearchHelp, map[string]any{"status": "withdrawn"}), "status")

	if res, _, _ := manage(pub.ID, pub.ManageToken, schema.ActionReopen); res.Status != "open" || res.ExpiresAt == nil {
		t.Errorf("reopen: %+v", res)
	}
	if got := list("open"); len(got) != 1 || got[0] != pub.ID {
		t.Errorf("status=open after reopen: %v", got)
	}

	// Anyone reports, with a reason; an unknown reason is refused naming the argument.
	res2 := callTool(t, cs, schema.ToolReport, map[string]any{"id": pub.ID, "reason": "spam", "note": "Parece repetido"})
	if res2.IsError {
		t.Fatalf("report: %s", toolText(res2))
	}
	structuredAsText(t, schema.ToolReport, res2)
	if rep := roundTrip[schema.ReportResult](t, res2.StructuredContent); !rep.OK || rep.ID != pub.ID || rep.Reason != "spam" || rep.Message == "" {
		t.Errorf("report: %+v", rep)
	}
	toolError(t, callTool(t, cs, schema.ToolReport, map[string]any{"id": pub.ID, "reason": "aburrido"}), "reason")

	// Withdraw erases the contact; the record page no longer shows the phone.
	if res, _, _ := manage(pub.ID, pub.ManageToken, schema.ActionWithdraw); res.Status != "withdrawn" || !res.Changed {
		t.Errorf("withdraw: %+v", res)
	}
	if _, text, isErr := manage(pub.ID, pub.ManageToken, schema.ActionReopen); !isErr || !strings.Contains(text, "retirada") {
		t.Errorf("reopen after withdraw: %v %s", isErr, text)
	}
	// The same publication again: the record was withdrawn, which the answer says (its data do not differ).
	again := callTool(t, cs, schema.ToolPublishRequest, mcpArgs(with(validRequest(), "externalId", externalID)))
	if text := toolText(again); again.IsError || !strings.Contains(text, "retiró") || strings.Contains(text, "difieren") ||
		strings.Contains(text, "otro contenido") || !strings.Contains(text, "solo si la persona lo pide") {
		t.Errorf("publishing a withdrawn record again: %s", text)
	}
	_, detail := call(t, s, "GET", "/api/public/v1/help?view=detail&id="+pub.ID, nil)
	if raw := string(mustJSON(t, detail)); strings.Contains(raw, "3001234567") {
		t.Errorf("withdrawn record still shows the phone: %s", raw)
	}
	// The token, used through MCP, and the externalId show in no read, export, page, tool result or log.
	checkNeverShown(t, s, []string{pub.ManageToken, externalID}, pub.ID)
}

// TestMCPResponsesTools: over MCP alone, a publisher's agent reads who answered «yo puedo ayudar» with the
// manage token (what GET …/responses answers, the same refusal for a wrong token), and a responder's agent
// withdraws the response with its token; both spend the manage zone, as their HTTP twins do.
func TestMCPResponsesTools(t *testing.T) {
	t.Parallel()
	s := testserver.Start(t, testserver.Options{PublishEvents: 6}) // every zone: six a minute
	cs := sdkSession(t, s, "")
	pub := published(t, callTool(t, cs, schema.ToolPublishRequest, mcpArgs(validRequest())))
	answered := callTool(t, cs, schema.ToolRespond, map[string]any{"id": pub.ID, "message": "Llevo agua en la tarde", "contactName": "Luis", "contactWhatsapp": "310 555 0101"})
	if answered.IsError {
		t.Fatalf("responder_solicitud: %s", toolText(answered))
	}
	structuredAsText(t, schema.ToolRespond, answered)
	created := roundTrip[schema.ResponseCreated](t, answered.StructuredContent)
	if !strings.Contains(toolText(answered), created.ResponseToken) {
		t.Errorf("the response's text does not hand over its token: %s", toolText(answered))
	}

	// The publisher's agent: the response with the responder's name and number, as the API lists it.
	res := callTool(t, cs, schema.ToolResponses, map[string]any{"id": pub.ID, "manageToken": pub.ManageToken})
	if res.IsError {
		t.Fatalf("ver_respuestas: %s", toolText(res))
	}
	structuredAsText(t, schema.ToolResponses, res)
	list := roundTrip[schema.ResponseList](t, res.StructuredContent)
	_, api := s.Do("GET", schema.ResponsesPath(pub.ID), nil, "Authorization", "Bearer "+pub.ManageToken)
	var want schema.ResponseList
	if err := json.Unmarshal(api, &want); err != nil || !reflect.DeepEqual(list, want) {
		t.Errorf("ver_respuestas %+v, the API %s", list, api)
	}
	if list.Active != 1 || len(list.Items) != 1 || list.Items[0].WhatsappURL != "https://wa.me/573105550101" || !strings.Contains(toolText(res), "Llevo agua en la tarde") {
		t.Errorf("ver_respuestas: %+v\n%s", list, toolText(res))
	}
	toolError(t, callTool(t, cs, schema.ToolResponses, map[string]any{"id": pub.ID, "manageToken": "otro"}), "no es válido")

	// The responder's agent withdraws it; again changes nothing; a wrong token is refused.
	toolError(t, callTool(t, cs, schema.ToolResponseAction, map[string]any{"id": pub.ID, "responseId": created.ResponseID, "responseToken": "otro", "action": "withdraw"}), "no es válido")
	for i, changed := range []bool{true, false} {
		res = callTool(t, cs, schema.ToolResponseAction, map[string]any{"id": pub.ID, "responseId": created.ResponseID, "responseToken": created.ResponseToken, "action": "withdraw"})
		if res.IsError {
			t.Fatalf("actualizar_respuesta %d: %s", i, toolText(res))
		}
		structuredAsText(t, schema.ToolResponseAction, res)
		if done := roundTrip[schema.ResponseActionResult](t, res.StructuredContent); done.Status != schema.ResponseWithdrawn || done.Changed != changed {
			t.Errorf("actualizar_respuesta %d: %+v", i, done)
		}
	}
	toolError(t, callTool(t, cs, schema.ToolResponseAction, map[string]any{"id": pub.ID, "responseId": created.ResponseID, "responseToken": created.ResponseToken, "action": "borrar"}), "action")
	// Six calls of the manage zone so far (those refused count too): over its six a minute,
	// the next is 429 on the transport, as POST …/actions is.
	if _, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: schema.ToolResponses, Arguments: map[string]any{"id": pub.ID, "manageToken": pub.ManageToken}}); err == nil || !strings.Contains(err.Error(), "Too Many Requests") {
		t.Errorf("ver_respuestas past the manage zone: %v", err)
	}
}
