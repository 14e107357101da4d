package backend_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/directaid/directaid/backend/store"
	"github.com/directaid/directaid/schema"
)

// TestPOSTsRefuseWhatTheyDoNotKnow: an unknown query parameter on any POST of the API is a 400
// invalid_parameter naming /query/<name>, and nothing happens; the JSON bodies of actions and reports
// are read by a publication's rules (a repeated member, a name in another case, an unknown member: each
// refused and named); an MCP message with a repeated member is refused before any tool runs.
func TestPOSTsRefuseWhatTheyDoNotKnow(t *testing.T) {
	s := newExpiryServer(t, &fakeClock{at: time.Now().UTC()})
	offer := func(ext string) map[string]any {
		return map[string]any{"type": "offer", "source": "app", "externalId": ext, "emergencySlug": "eje-cafetero",
			"title": "Transporte", "category": "transporte", "contactName": "Luis", "contactWhatsapp": "3109876543", "publishContact": true}
	}
	rec := s.publish(offer("a"))
	auth := []string{"Authorization", "Bearer " + rec.ManageToken}
	type refusal struct {
		Code    string `json:"code"`
		Details []struct {
			Field, Message string
		} `json:"details"`
	}
	check := func(name string, code int, body, wantCode, wantField string) {
		t.Helper()
		var r refusal
		_ = json.Unmarshal([]byte(body), &r)
		if code != http.StatusBadRequest || r.Code != wantCode || len(r.Details) == 0 || r.Details[0].Field != wantField {
			t.Errorf("%s: %d %s, want 400 %s naming %s", name, code, body, wantCode, wantField)
		}
	}
	pub, _ := json.Marshal(offer("b"))
	for _, q := range []string{"dryrun=true", "DryRun=true", "dry_run=true", "foo=1"} {
		code, body := s.do("POST", schema.HelpPath+"?"+q, pub)
		check("publish ?"+q, code, body, schema.CodeInvalidParameter, "/query/"+strings.Split(q, "=")[0])
		if q != "foo=1" && !strings.Contains(body, "dryRun") {
			t.Errorf("publish ?%s does not point to dryRun: %s", q, body)
		}
	}
	if _, err := s.st.Get(t.Context(), rec.ID); err != nil {
		t.Fatal(err)
	}
	code, body := s.do("POST", schema.ActionsPath(rec.ID)+"?dryRun=true", []byte(`{"action":"withdraw"}`), auth...)
	check("actions ?dryRun", code, body, schema.CodeInvalidParameter, "/query/dryRun")
	code, body = s.do("POST", schema.HelpPath+"/"+rec.ID+schema.ReportsSuffix+"?dryRun=true&foo=1", []byte(`{"reason":"not_my_number"}`))
	check("reports ?dryRun", code, body, schema.CodeInvalidParameter, "/query/dryRun")
	for _, c := range []struct{ name, body, code, field string }{
		{"repeated action", `{"action":"resolve","action":"withdraw"}`, schema.CodeInvalidJSON, "/action"},
		{"another case", `{"Action":"resolve"}`, schema.CodeInvalidBody, "/action"},
		{"unknown member", `{"action":"resolve","x":1}`, schema.CodeInvalidBody, "/x"},
		{"empty", `{}`, schema.CodeInvalidBody, "/action"},
	} {
		code, body := s.do("POST", schema.ActionsPath(rec.ID), []byte(c.body), auth...)
		check("actions "+c.name, code, body, c.code, c.field)
	}
	code, body = s.do("POST", schema.ActionsPath(rec.ID), []byte(`{"action":5}`), auth...)
	if check("actions a number", code, body, schema.CodeInvalidBody, "/action"); !strings.Contains(body, "texto") {
		t.Errorf("{\"action\":5} is not told it must be a text: %s", body)
	}
	code, body = s.do("POST", schema.HelpPath+"/"+rec.ID+schema.ReportsSuffix, []byte(`{"reason":"spam","reason":"not_my_number"}`))
	check("reports repeated reason", code, body, schema.CodeInvalidJSON, "/reason")
	// Nothing of the above acted: the record is open, with its phone.
	if got, err := s.st.Get(t.Context(), rec.ID); err != nil || got.Status != store.StatusOpen || got.ContactHidden {
		t.Fatalf("after the refusals: %+v %v", got, err)
	}
	// MCP: consent given twice, false then true, is no consent.
	code, body = s.do("POST", schema.MCPPath, []byte(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"publicar_ofrecimiento","arguments":{"source":"app","externalId":"mcp-dup","emergencySlug":"eje-cafetero","title":"Carpas","category":"refugio","contactName":"Luis","contactWhatsapp":"3109876543","publishContact":false,"publishContact":true}}}`),
		"Accept", "application/json, text/event-stream", "MCP-Protocol-Version", "2025-06-18")
	if !strings.Contains(body, `"code":-32602`) || !strings.Contains(body, "publishContact") || !strings.Contains(body, `"id":7`) {
		t.Errorf("MCP arguments with a repeated member: %d %s", code, body)
	}
	res, err := s.st.List(t.Context(), &store.ListSpec{Limit: 10})
	if err != nil || len(res.Records) != 1 {
		t.Fatalf("records stored: %d, %v", len(res.Records), err)
	}
}

// TestToolErrorsPointToTheirList: a tool result has no details member, so a refusal with several
// problems points to the list under its message, not to "details".
func TestToolErrorsPointToTheirList(t *testing.T) {
	s := newExpiryServer(t, &fakeClock{at: time.Now().UTC()})
	_, body := s.do("POST", schema.MCPPath, []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"buscar_ayudas","arguments":{"latitude":4.5,"emergencySlug":"nope","municipio":"zzz"}}}`),
		"Accept", "application/json, text/event-stream", "MCP-Protocol-Version", "2025-06-18")
	if !strings.Contains(body, `"isError":true`) || strings.Contains(body, "revise details") || !strings.Contains(body, "lista de abajo") {
		t.Fatalf("a tool error with several problems: %s", body)
	}
}
