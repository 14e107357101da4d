package backend_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/directaid/directaid/backend"
	"github.com/directaid/directaid/backend/store"
	"github.com/directaid/directaid/schema"
)

// The responder's number in every form a view could show it.
var responderPhoneForms = []string{"311 222 3344", "3112223344", "573112223344", "+57 311 222 3344", "311-222-3344"}

func (s *expiryServer) respond(id, body string) (int, schema.ResponseCreated, string) {
	s.t.Helper()
	code, out := s.do("POST", schema.ResponsesPath(id), []byte(body))
	var res schema.ResponseCreated
	if code == http.StatusCreated {
		if err := json.Unmarshal([]byte(out), &res); err != nil {
			s.t.Fatal(err)
		}
	}
	return code, res, out
}

func (s *expiryServer) responsesOf(id, token string) (int, schema.ResponseList, string) {
	s.t.Helper()
	var hd []string
	if token != "" {
		hd = []string{"Authorization", "Bearer " + token}
	}
	code, out := s.do("GET", schema.ResponsesPath(id), nil, hd...)
	var res schema.ResponseList
	if code == http.StatusOK {
		if err := json.Unmarshal([]byte(out), &res); err != nil {
			s.t.Fatal(err)
		}
	}
	return code, res, out
}

func (s *expiryServer) responseAct(id, rid, token, action string) (int, schema.ResponseActionResult) {
	s.t.Helper()
	code, out := s.do("POST", schema.ResponsesPath(id)+"/"+rid+schema.ActionsSuffix, []byte(`{"action":"`+action+`"}`), "Authorization", "Bearer "+token)
	var res schema.ResponseActionResult
	if code == http.StatusOK {
		if err := json.Unmarshal([]byte(out), &res); err != nil {
			s.t.Fatal(err)
		}
	}
	return code, res
}

// count is the responses member of record id in its detail and in the default list (which must agree).
func (s *expiryServer) count(id string) int {
	s.t.Helper()
	code, body := s.do("GET", schema.HelpPath+"?view=detail&id="+id, nil)
	if code != http.StatusOK {
		return -1
	}
	var d schema.PublicHelpDetail
	if err := json.Unmarshal([]byte(body), &d); err != nil {
		s.t.Fatal(err)
	}
	_, lb := s.do("GET", schema.HelpPath+"?view=list&limit=100", nil)
	var l schema.HelpList
	if err := json.Unmarshal([]byte(lb), &l); err != nil {
		s.t.Fatal(err)
	}
	for _, it := range l.Items {
		if it.ID == id && it.Responses != d.Responses {
			s.t.Fatalf("list says %d responses, detail %d", it.Responses, d.Responses)
		}
	}
	return d.Responses
}

func insulinRequest(ext string) map[string]any {
	return map[string]any{"type": "request", "source": "app", "externalId": ext, "emergencySlug": "inundaciones-la-mojana",
		"title": "Necesito insulina", "category": "salud", "urgency": "urgent", "contactName": "Ana", "contactWhatsapp": "3001234567", "publishContact": true,
		"address": "Cra 14 # 20-31", "latitude": 4.5339, "longitude": -75.6811}
}

// TestResponses: the whole life of «yo puedo ayudar» through the HTTP API: a response counts in every
// view of the record; the publisher alone reads it, with the manage token (the same 401 and 403 as
// …/actions); its author renews and withdraws it with its token; it lapses after 48 h; resolving the
// record ends them, withdrawing it erases them; attended=false lists the unanswered.
func TestResponses(t *testing.T) {
	clk := &fakeClock{at: time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)}
	s := newExpiryServer(t, clk)
	a, b := s.publish(insulinRequest("a")), s.publish(insulinRequest("b"))
	if n := s.count(a.ID); n != 0 {
		t.Fatalf("a new record has %d responses", n)
	}
	code, r1, body := s.respond(a.ID, `{"message":"Tengo insulina, la llevo hoy","contactName":"Luis","contactWhatsapp":"311 222 3344"}`)
	if code != http.StatusCreated || r1.ResponseToken == "" || r1.ResponseID == "" || r1.ID != a.ID || !r1.ExpiresAt.Equal(clk.now().Add(48*time.Hour)) {
		t.Fatalf("respond: %d %s", code, body)
	}
	if n := s.count(a.ID); n != 1 {
		t.Fatalf("after one response: %d", n)
	}
	clk.set(clk.now().Add(time.Minute))
	code, r2, _ := s.respond(a.ID, `{"message":"Puedo llevarla en moto"}`)
	if code != http.StatusCreated {
		t.Fatalf("a response without contact: %d", code)
	}
	if n := s.count(a.ID); n != 2 {
		t.Fatalf("after two responses: %d", n)
	}
	for _, page := range []string{schema.RecordPath(a.ID), schema.RecordPath(a.ID) + ".md"} {
		if _, p := s.do("GET", page, nil); !strings.Contains(p, "2 personas dicen que están ayudando") {
			t.Errorf("%s does not say how many help", page)
		}
	}
	// attended=false: b only; attended=true: a only.
	if l := s.list("&attended=false"); len(l) != 1 || l[b.ID] == "" {
		t.Fatalf("attended=false: %v", l)
	}
	if l := s.list("&attended=true"); len(l) != 1 || l[a.ID] == "" {
		t.Fatalf("attended=true: %v", l)
	}
	if code, _ := s.do("GET", schema.HelpPath+"?view=list&attended=no", nil); code != http.StatusBadRequest {
		t.Fatalf("attended=no: %d", code)
	}
	// Paging an attended list one record at a time reaches every unanswered record once.
	c := s.publish(insulinRequest("c"))
	seen, cursor := []string{}, ""
	for range 5 {
		_, body := s.do("GET", schema.HelpPath+"?view=list&attended=false&limit=1"+cursor, nil)
		var l schema.HelpList
		if err := json.Unmarshal([]byte(body), &l); err != nil {
			t.Fatal(err)
		}
		for _, it := range l.Items {
			seen = append(seen, it.ID)
		}
		if l.NextCursor == "" {
			break
		}
		cursor = "&cursor=" + l.NextCursor
	}
	if strings.Join(seen, ",") != c.ID+","+b.ID {
		t.Fatalf("attended=false page by page: %v, want %s,%s", seen, c.ID, b.ID)
	}
	// A pharmacy's offer nearby: its matches show the request with the same count.
	offer := insulinRequest("pharmacy")
	offer["type"], offer["title"], offer["latitude"] = "offer", "Farmacia con insulina", 4.54
	delete(offer, "urgency")
	o := s.publish(offer)
	_, mb := s.do("GET", schema.MatchesPath(o.ID), nil)
	var m schema.HelpMatches
	if err := json.Unmarshal([]byte(mb), &m); err != nil || len(m.Items) == 0 {
		t.Fatalf("matches of the offer: %s", mb)
	}
	for _, it := range m.Items {
		if it.ID == a.ID && it.Responses != 2 {
			t.Errorf("matches say %d responses, detail 2", it.Responses)
		}
	}

	// The publisher reads them with the manage token; anyone else gets the answers of …/actions.
	code, list, body := s.responsesOf(a.ID, a.ManageToken)
	if code != http.StatusOK || list.Active != 2 || len(list.Items) != 2 || list.Items[1].ContactWhatsapp != "311 222 3344" ||
		list.Items[1].WhatsappURL != "https://wa.me/573112223344" || list.Items[1].Message != "Tengo insulina, la llevo hoy" || list.Items[1].ContactName != "Luis" {
		t.Fatalf("the publisher's view: %d %s", code, body)
	}
	_, forbiddenAct := s.do("POST", schema.ActionsPath(a.ID), []byte(`{"action":"resolve"}`), "Authorization", "Bearer nope")
	for _, c := range []struct{ id, token string }{{a.ID, b.ManageToken}, {a.ID, "nope"}, {"0000000000000000", a.ManageToken}, {a.ID, r1.ResponseToken}} {
		if code, _, body := s.responsesOf(c.id, c.token); code != http.StatusForbidden || body != forbiddenAct {
			t.Errorf("GET responses of %s with %q: %d %s, want the 403 of …/actions", c.id, c.token, code, body)
		}
	}
	r := httptest.NewRequest("GET", "http://ayuda.test"+schema.ResponsesPath(a.ID), nil)
	w := httptest.NewRecorder()
	s.h.ServeHTTP(w, r)
	if w.Code != http.StatusUnauthorized || w.Header().Get("WWW-Authenticate") != schema.ManageTokenScheme {
		t.Fatalf("GET responses without a token: %d %v", w.Code, w.Header())
	}

	// The author's actions: another response's token is refused; renew moves the expiry; withdraw ends it.
	if code, _ := s.responseAct(a.ID, r1.ResponseID, r2.ResponseToken, "withdraw"); code != http.StatusForbidden {
		t.Fatalf("another response's token: %d", code)
	}
	if code, _ := s.do("POST", schema.ResponsesPath(a.ID)+"/"+r1.ResponseID+"/actions", []byte(`{"action":"withdraw"}`)); code != http.StatusUnauthorized {
		t.Fatalf("an action without a token: %d", code)
	}
	clk.set(clk.now().Add(47 * time.Hour))
	if code, res := s.responseAct(a.ID, r1.ResponseID, r1.ResponseToken, "renew"); code != http.StatusOK || res.ExpiresAt == nil || !res.ExpiresAt.Equal(clk.now().Add(48*time.Hour)) {
		t.Fatalf("renew: %d %+v", code, res)
	}
	clk.set(clk.now().Add(2 * time.Hour)) // r2 (not renewed, a minute younger than r1) is past its 48 h
	if n := s.count(a.ID); n != 1 {
		t.Fatalf("after r2 lapsed: %d", n)
	}
	if _, list, _ := s.responsesOf(a.ID, a.ManageToken); list.Active != 1 || list.Items[0].Status != schema.ResponseStatusExpired {
		t.Fatalf("the lapsed response reads %+v", list)
	}
	if code, res := s.responseAct(a.ID, r2.ResponseID, r2.ResponseToken, "renew"); code != http.StatusOK || res.Status != schema.ResponseActive {
		t.Fatalf("renewing a lapsed response of an open record: %d %+v", code, res)
	}
	if code, res := s.responseAct(a.ID, r2.ResponseID, r2.ResponseToken, "withdraw"); code != http.StatusOK || !res.Changed || res.Status != schema.ResponseWithdrawn {
		t.Fatalf("withdraw: %d %+v", code, res)
	}
	if code, res := s.responseAct(a.ID, r2.ResponseID, r2.ResponseToken, "withdraw"); code != http.StatusOK || res.Changed {
		t.Fatalf("withdraw again: %d %+v", code, res)
	}
	if code, _ := s.responseAct(a.ID, r2.ResponseID, r2.ResponseToken, "renew"); code != http.StatusConflict {
		t.Fatalf("renewing a withdrawn response: %d", code)
	}
	if _, list, _ := s.responsesOf(a.ID, a.ManageToken); list.Items[0].Message != "" || list.Items[0].Status != schema.ResponseWithdrawn {
		t.Fatalf("a withdrawn response keeps what it said: %+v", list.Items[0])
	}
	if n := s.count(a.ID); n != 1 {
		t.Fatalf("after the withdrawal: %d", n)
	}

	// Resolving ends them; a closed record takes no response (410), an unknown id is 404.
	if code, _ := s.act(a.ID, a.ManageToken, "resolve"); code != http.StatusOK {
		t.Fatal(code)
	}
	if _, list, _ := s.responsesOf(a.ID, a.ManageToken); list.Active != 0 || list.Items[1].Status != schema.ResponseEnded {
		t.Fatalf("after resolve: %+v", list)
	}
	if code, _, _ := s.respond(a.ID, `{"message":"hola"}`); code != http.StatusGone {
		t.Fatalf("a response to a resolved record: %d", code)
	}
	if code, _ := s.act(a.ID, a.ManageToken, "reopen"); code != http.StatusOK {
		t.Fatal(code)
	}
	if n := s.count(a.ID); n != 0 {
		t.Fatalf("reopening does not bring ended responses back: %d", n)
	}
	if code, _, _ := s.respond("0000000000000000", `{"message":"hola"}`); code != http.StatusNotFound {
		t.Fatalf("unknown id: %d", code)
	}
	// Withdrawing the record erases its responses.
	if code, _, _ := s.respond(b.ID, `{"message":"voy","contactWhatsapp":"3112223344"}`); code != http.StatusCreated {
		t.Fatal(code)
	}
	if code, _ := s.act(b.ID, b.ManageToken, "withdraw"); code != http.StatusOK {
		t.Fatal(code)
	}
	if rs, err := s.st.RecordResponses(context.Background(), b.ID); err != nil || len(rs) != 0 {
		t.Fatalf("the responses of a withdrawn record: %v %v", rs, err)
	}
}

// TestResponsesStrictBody: a response's body and URL are decoded as strictly as every other POST's:
// each refusal is 400 with the member's pointer, and stores nothing.
func TestResponsesStrictBody(t *testing.T) {
	s := newExpiryServer(t, &fakeClock{at: time.Now().UTC()})
	a := s.publish(insulinRequest("a"))
	long := strings.Repeat("a", schema.MaxResponseMessageRunes+1)
	for body, field := range map[string]string{
		`{"message":"hola","message":"otra"}`:      "",
		`{"Message":"hola"}`:                       "/Message",
		`{"message":"hola","telefono":"3001"}`:     "/telefono",
		`{"message":"hola","contactWhatsapp":"1"}`: "/contactWhatsapp",
		`{"message":"   "}`:                        "/message",
		`{"message":"` + long + `"}`:               "/message",
		`{}`:                                       "",
		`{"message":7}`:                            "/message",
	} {
		code, _, out := s.respond(a.ID, body)
		if code != http.StatusBadRequest || !strings.Contains(out, `"field":"`+field) {
			t.Errorf("%s: %d %s, want 400 naming %q", body, code, out, field)
		}
	}
	if code, out := s.do("POST", schema.ResponsesPath(a.ID)+"?dryRun=true", []byte(`{"message":"hola"}`)); code != http.StatusBadRequest || !strings.Contains(out, "/query/dryRun") {
		t.Errorf("a query parameter: %d %s", code, out)
	}
	if n := s.count(a.ID); n != 0 {
		t.Fatalf("refused bodies stored %d responses", n)
	}
	if got := backend.ZoneOf(httptest.NewRequest("POST", schema.ResponsesPath(a.ID), nil), backend.MCPFree); got != backend.ZoneRespond {
		t.Fatalf("the zone of a response: %q", got)
	}
	for _, p := range []struct{ path, zone string }{{schema.ResponsesPath(a.ID) + "/3f9a1c0b7d2e4a61" + schema.ActionsSuffix, backend.ZoneManage},
		{schema.ResponsesPath(a.ID) + "/3f9a1c0b7d2e4a61" + schema.ReportsSuffix, backend.ZoneReport}} {
		if got := backend.ZoneOf(httptest.NewRequest("POST", p.path, nil), backend.MCPFree); got != p.zone {
			t.Errorf("the zone of POST %s: %q, want %q", p.path, got, p.zone)
		}
	}
}

// TestResponsesPrivacy: the responder's name stays with the publisher, and the number appears in no
// public view (detail, list, change feed, exports, page, twin, MCP), whatever its form.
func TestResponsesPrivacy(t *testing.T) {
	s := newExpiryServer(t, &fakeClock{at: time.Now().UTC()})
	a := s.publish(insulinRequest("a"))
	if code, _, _ := s.respond(a.ID, `{"message":"Tengo insulina","contactName":"Responde Privado","contactWhatsapp":"+57 311 222 3344"}`); code != http.StatusCreated {
		t.Fatal(code)
	}
	views := s.views(a.ID)
	text, structured := s.callTool(schema.ToolSearchHelp, `{}`)
	views["mcp buscar_ayudas"] = text + string(structured)
	for name, path := range map[string]string{"attended": schema.HelpPath + "?view=list&attended=true", "all csv": schema.HelpPath + "?view=list&format=csv&all=true",
		"emergency page": schema.EmergencyPath("inundaciones-la-mojana"), "emergency twin": schema.EmergencyPath("inundaciones-la-mojana") + ".md"} {
		code, body := s.do("GET", path, nil)
		if code != http.StatusOK {
			t.Fatalf("%s: %d %s", name, code, body)
		}
		views[name] = body
	}
	for name, v := range views {
		for _, f := range append(responderPhoneForms, "Responde Privado", "Tengo insulina") {
			if strings.Contains(v, f) {
				t.Errorf("the %s shows the responder's %q", name, f)
			}
		}
	}
	if !strings.Contains(views["detail"], `"responses":1`) {
		t.Errorf("the detail lacks the count: %s", views["detail"])
	}
}

// TestResponseReports: a reporter counts once; HideAfterReports distinct reporters hide a response from
// the publisher and from the count.
func TestResponseReports(t *testing.T) {
	s := newExpiryServer(t, &fakeClock{at: time.Now().UTC()})
	a := s.publish(insulinRequest("a"))
	_, r1, _ := s.respond(a.ID, `{"message":"Mándeme plata primero"}`)
	ctx := context.Background()
	for i, addr := range []string{"198.51.100.1", "198.51.100.1", "198.51.100.2"} {
		res, err := s.svc.ReportResponse(ctx, a.ID, r1.ResponseID, &schema.ReportInput{Reason: "fraud"}, addr)
		if err != nil || res.Outcome != schema.ReportCounted {
			t.Fatalf("report %d: %+v %v", i, res, err)
		}
	}
	if n := s.count(a.ID); n != 1 {
		t.Fatalf("two reporters hide nothing yet: %d", n)
	}
	code, out := s.do("POST", schema.ResponsesPath(a.ID)+"/"+r1.ResponseID+schema.ReportsSuffix, []byte(`{"reason":"fraud"}`))
	if code != http.StatusAccepted || !strings.Contains(out, schema.ReportHidRecord) {
		t.Fatalf("the third reporter: %d %s", code, out)
	}
	if n := s.count(a.ID); n != 0 {
		t.Fatalf("a hidden response counts: %d", n)
	}
	if _, list, _ := s.responsesOf(a.ID, a.ManageToken); len(list.Items) != 0 {
		t.Fatalf("the publisher sees a hidden response: %+v", list)
	}
	if code, _ := s.do("POST", schema.ResponsesPath(a.ID)+"/"+r1.ResponseID+schema.ReportsSuffix, []byte(`{"reason":"fraud"}`)); code != http.StatusGone {
		t.Fatalf("reporting a hidden response: %d", code)
	}
	if code, _ := s.do("POST", schema.ResponsesPath(a.ID)+"/ffffffffffffffff"+schema.ReportsSuffix, []byte(`{"reason":"fraud"}`)); code != http.StatusNotFound {
		t.Fatalf("reporting an unknown response: %d", code)
	}
}

// TestResponseReportsBreaker: a few addresses cannot hide every response of an emergency: past the
// emergency's breaker (as many response hides an hour as record hides), reports are counted and the
// response stays, until the window has passed.
func TestResponseReportsBreaker(t *testing.T) {
	clk := &fakeClock{at: time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)}
	s := newExpiryServer(t, clk)
	a := s.publish(insulinRequest("a"))
	var rids []string
	ctx := context.Background()
	for i := range 5 { // five helpers, each from a network of their own (a network gives a record 3 at most)
		r, err := s.svc.Respond(ctx, a.ID, &schema.ResponseInput{Message: fmt.Sprintf("Puedo ayudar %d", i)}, "", fmt.Sprintf("198.51.100.%d", 10+i))
		if err != nil {
			t.Fatalf("respond %d: %v", i, err)
		}
		rids = append(rids, r.ResponseID)
	}
	report := func(rid, addr string) string {
		t.Helper()
		res, err := s.svc.ReportResponse(ctx, a.ID, rid, &schema.ReportInput{Reason: "spam"}, addr)
		if err != nil {
			t.Fatalf("report %s from %s: %v", rid, addr, err)
		}
		return res.Outcome
	}
	limit := 3 // responseBreakerLimit of an emergency of a few records
	for i, rid := range rids {
		var last string
		for _, addr := range []string{"198.51.100.1", "198.51.100.2", "198.51.100.3"} {
			last = report(rid, addr)
		}
		want := schema.ReportHidRecord
		if i >= limit {
			want = schema.ReportQueued
		}
		if last != want {
			t.Errorf("response %d, third reporter: %s, want %s", i, last, want)
		}
	}
	if n := s.count(a.ID); n != len(rids)-limit {
		t.Fatalf("after the breaker: %d responses count, want %d", n, len(rids)-limit)
	}
	if _, list, _ := s.responsesOf(a.ID, a.ManageToken); len(list.Items) != len(rids)-limit {
		t.Fatalf("the publisher sees %d responses, want %d", len(list.Items), len(rids)-limit)
	}
	// An hour later the breaker is closed again: the next report of a response already reported by
	// three hides it.
	clk.set(clk.now().Add(time.Hour + time.Minute))
	if got := report(rids[limit], "198.51.100.4"); got != schema.ReportHidRecord {
		t.Fatalf("after the window: %s, want %s", got, schema.ReportHidRecord)
	}
}

// TestMCPRespond: responder_solicitud answers with the responseToken, which acts on the response.
func TestMCPRespond(t *testing.T) {
	s := newExpiryServer(t, &fakeClock{at: time.Now().UTC()})
	a := s.publish(insulinRequest("a"))
	code, body := s.mcpPost("2025-06-18", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"`+schema.ToolRespond+`","arguments":{"id":"`+a.ID+`","message":"Puedo ayudar","contactWhatsapp":"3112223344"}}}`)
	var rpc struct {
		Result struct {
			IsError           bool                   `json:"isError"`
			StructuredContent schema.ResponseCreated `json:"structuredContent"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(body), &rpc); err != nil || code != http.StatusOK || rpc.Result.IsError || rpc.Result.StructuredContent.ResponseToken == "" {
		t.Fatalf("responder_solicitud: %d %s", code, body)
	}
	rc := rpc.Result.StructuredContent
	if code, res := s.responseAct(a.ID, rc.ResponseID, rc.ResponseToken, "withdraw"); code != http.StatusOK || res.Status != schema.ResponseWithdrawn {
		t.Fatalf("the tool's token: %d %+v", code, res)
	}
	_, body = s.mcpPost("2025-06-18", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"`+schema.ToolRespond+`","arguments":{"id":"`+a.ID+`","message":"x","contactWhatsapp":"12"}}}`)
	if !strings.Contains(body, `"isError":true`) || !strings.Contains(body, "contactWhatsapp") {
		t.Fatalf("a bad phone through MCP: %s", body)
	}
}

// TestGestionarShowsResponses: /gestionar without JavaScript lists the responses, each with its wa.me
// link, to the publisher's token only.
func TestGestionarShowsResponses(t *testing.T) {
	s := newExpiryServer(t, &fakeClock{at: time.Now().UTC()})
	a := s.publish(insulinRequest("a"))
	if code, _, _ := s.respond(a.ID, `{"message":"Tengo insulina refrigerada","contactName":"Luis","contactWhatsapp":"311 222 3344"}`); code != http.StatusCreated {
		t.Fatal(code)
	}
	post := func(token string) (int, string) {
		form := "id=" + a.ID + "&token=" + token + "&action=responses"
		r := httptest.NewRequest("POST", "http://ayuda.test/gestionar", strings.NewReader(form))
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		w := httptest.NewRecorder()
		s.h.ServeHTTP(w, r)
		return w.Code, w.Body.String()
	}
	// The same helper again, in other words: one person helping, as the public count says.
	if code, _, _ := s.respond(a.ID, `{"message":"La llevo a las 4","contactWhatsapp":"+57 311 222 3344"}`); code != http.StatusCreated {
		t.Fatal(code)
	}
	code, page := post(a.ManageToken)
	if code != http.StatusOK || !strings.Contains(page, "Tengo insulina refrigerada") || !strings.Contains(page, `href="https://wa.me/573112223344"`) || !strings.Contains(page, "(&#43;57 311 222 3344)") ||
		!strings.Contains(page, "1 persona dice que está ayudando") || !strings.Contains(page, "La llevo a las 4") {
		t.Fatalf("/gestionar with the token: %d\n%s", code, page)
	}
	if code, page := post("nope"); code != http.StatusForbidden || strings.Contains(page, "Tengo insulina") || strings.Contains(page, "573112223344") {
		t.Fatalf("/gestionar with a wrong token: %d", code)
	}
	// Resolved: its response ended; the page lists it as such and does not say that nobody answered.
	if _, err := s.svc.Act(context.Background(), "http://ayuda.test", a.ID, a.ManageToken, schema.ActionResolve); err != nil {
		t.Fatal(err)
	}
	if code, page := post(a.ManageToken); code != http.StatusOK || strings.Contains(page, ">Nadie ha respondido") ||
		!strings.Contains(page, "Una persona respondió; su respuesta ya no está activa") || !strings.Contains(page, "terminada") {
		t.Fatalf("/gestionar of a resolved record with an ended response: %d\n%s", code, page)
	}
}

// TestTokenPathsReadIDsAsTyped: an id read back by a person, upper case or with O for 0 (Crockford's
// base32 reads both), reaches the same record on the paths that check a token as on the reads: the
// publisher's responses and actions, and a response's own actions and reports.
func TestTokenPathsReadIDsAsTyped(t *testing.T) {
	s := newExpiryServer(t, &fakeClock{at: time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)})
	a := s.publish(insulinRequest("typed"))
	typed := func(id string) string { return strings.ReplaceAll(strings.ToUpper(id), "0", "O") }
	if typed(a.ID) == a.ID {
		t.Fatalf("id %s reads the same typed", a.ID)
	}
	code, r, body := s.respond(typed(a.ID), `{"message":"Tengo insulina"}`)
	if code != http.StatusCreated || r.ID != a.ID {
		t.Fatalf("respond to %s: %d %s", typed(a.ID), code, body)
	}
	if code, list, body := s.responsesOf(typed(a.ID), a.ManageToken); code != http.StatusOK || len(list.Items) != 1 {
		t.Fatalf("responses of %s with the manage token: %d %s", typed(a.ID), code, body)
	}
	rid := strings.ToUpper(r.ResponseID) // hexadecimal
	if code, res := s.responseAct(typed(a.ID), rid, r.ResponseToken, "renew"); code != http.StatusOK || res.ExpiresAt == nil {
		t.Fatalf("renew %s/%s with its token: %d", typed(a.ID), rid, code)
	}
	if code, body := s.do("POST", schema.ResponsesPath(typed(a.ID))+"/"+rid+schema.ReportsSuffix, []byte(`{"reason":"spam"}`)); code != http.StatusAccepted {
		t.Fatalf("report %s/%s: %d %s", typed(a.ID), rid, code, body)
	}
	if code, res := s.act(typed(a.ID), a.ManageToken, "resolve"); code != http.StatusOK || res.Status != "resolved" {
		t.Fatalf("resolve %s with its manage token: %d %+v", typed(a.ID), code, res)
	}
}

// TestReporterIsTheClientsNetwork: the addresses of one IPv6 /64 are one client (a host has 2^64 of
// them), and those of one /56 one reporter (a home is commonly given a /56: 256 /64s); an IPv4 address is
// itself, and an IPv4-mapped IPv6 address is its IPv4 one.
func TestReporterIsTheClientsNetwork(t *testing.T) {
	for addr, want := range map[string]string{
		"2001:db8:1:2::1": "2001:db8:1:2::/64", "2001:db8:1:2:ffff:ffff:ffff:ffff": "2001:db8:1:2::/64",
		"2001:db8:1:3::1": "2001:db8:1:3::/64", "fe80::1%eth0": "fe80::/64", "198.51.100.7": "198.51.100.7",
		"::ffff:198.51.100.7": "198.51.100.7", "not an address": "not an address",
	} {
		if got := backend.ClientNet(addr); got != want {
			t.Errorf("ClientNet(%q) = %q, want %q", addr, got, want)
		}
	}
	for addr, want := range map[string]string{
		"2001:db8:1:2::1": "2001:db8:1::/56", "2001:db8:1:ff::1": "2001:db8:1::/56", "2001:db8:1:100::1": "2001:db8:1:100::/56",
		"198.51.100.7": "198.51.100.7", "::ffff:198.51.100.7": "198.51.100.7", "not an address": "not an address",
	} {
		if got := backend.ReporterNet(addr); got != want {
			t.Errorf("ReporterNet(%q) = %q, want %q", addr, got, want)
		}
	}
	s := newExpiryServer(t, &fakeClock{at: time.Now().UTC()})
	a := s.publish(insulinRequest("a"))
	_, r, _ := s.respond(a.ID, `{"message":"Mándeme plata primero"}`)
	ctx := context.Background()
	for i, addr := range []string{"2001:db8:1:2::1", "2001:db8:1:2::2", "2001:db8:1:3::3", "2001:db8:1:ff:aaaa::9"} {
		res, err := s.svc.ReportResponse(ctx, a.ID, r.ResponseID, &schema.ReportInput{Reason: "fraud"}, addr)
		if err != nil || res.Outcome != schema.ReportCounted {
			t.Fatalf("report %d from %s, one /56: %+v %v", i, addr, res, err)
		}
	}
	if n := s.count(a.ID); n != 1 {
		t.Fatalf("four addresses of one /56 hid the response: %d", n)
	}
	for _, addr := range []string{"2001:db8:9:1::1", "2001:db8:9:100::1"} {
		if _, err := s.svc.ReportResponse(ctx, a.ID, r.ResponseID, &schema.ReportInput{Reason: "fraud"}, addr); err != nil {
			t.Fatal(err)
		}
	}
	if n := s.count(a.ID); n != 0 {
		t.Fatalf("three networks did not hide the response: %d", n)
	}
}

// TestResponsesOfOneNetworkCountUpToItsShare: one network's responses add to the public counts up to its
// share within 48 hours; past it a response still reaches its publisher, the record stays in attended=false
// and out of attended=true, and a renewal takes a share like a new response. Other networks count as
// before, and the share comes back once its window has passed.
func TestResponsesOfOneNetworkCountUpToItsShare(t *testing.T) {
	clk := &fakeClock{at: time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)}
	s := newExpiryServer(t, clk)
	const share = 20 // responderCounted
	recs := make([]schema.PublishResult, share+1)
	for i := range recs {
		recs[i] = s.publish(insulinRequest(fmt.Sprint("n", i)))
	}
	// Through the API, from httptest's one address.
	var last schema.ResponseCreated
	for i, rec := range recs {
		code, r, body := s.respond(rec.ID, `{"message":"Llevo insulina esta tarde"}`)
		if code != http.StatusCreated || r.Counted != (i < share) || !strings.Contains(body, `"counted":`) {
			t.Fatalf("response %d: %d %s", i, code, body)
		}
		last = r
	}
	if !strings.Contains(last.Message, "no se suma") {
		t.Errorf("an uncounted response's message: %q", last.Message)
	}
	over := recs[share].ID
	if n := s.count(over); n != 0 {
		t.Fatalf("the response past the share counts: %d", n)
	}
	if n := s.count(recs[0].ID); n != 1 {
		t.Fatalf("a response within the share: %d", n)
	}
	if l := s.list("&attended=false"); l[over] == "" || l[recs[0].ID] != "" {
		t.Fatalf("attended=false: %v", l)
	}
	if l := s.list("&attended=true"); l[over] != "" || len(l) != share {
		t.Fatalf("attended=true: %d records, %v", len(l), l)
	}
	if _, list, _ := s.responsesOf(over, recs[share].ManageToken); len(list.Items) != 1 || list.Items[0].Message != "Llevo insulina esta tarde" {
		t.Fatalf("the publisher does not see the uncounted response: %+v", list)
	}
	// A renewal from the same network takes a share too: none is left, so the response stops counting.
	// (The service's ActOnResponse is what the actions call once the response token is checked.)
	first := recs[0].ID
	_, rs, _ := s.responsesOf(first, recs[0].ManageToken)
	ctx := context.Background()
	in := &schema.ResponseInput{Message: "Tengo agua"}
	other, err := s.svc.Respond(ctx, first, in, "", "198.51.100.7")
	if err != nil || !other.Counted {
		t.Fatalf("another network's response: %+v %v", other, err)
	}
	if n := s.count(first); n != 2 {
		t.Fatalf("after another network's response: %d, want 2", n)
	}
	if _, err := s.svc.ActOnResponse(ctx, first, rs.Items[0].ResponseID, schema.ResponseActionRenew, "192.0.2.1"); err != nil {
		t.Fatal(err)
	}
	if n := s.count(first); n != 1 {
		t.Fatalf("a renewal past the share still counts: %d, want 1", n)
	}
	res, err := s.svc.ActOnResponse(ctx, first, other.ResponseID, schema.ResponseActionRenew, "198.51.100.7")
	if err != nil || !res.Counted {
		t.Fatalf("a renewal within the share: %+v %v", res, err)
	}
	// 48 hours later the share is back: a response from the first network counts again.
	clk.set(clk.now().Add(schema.ResponseTTL + time.Minute))
	fresh := s.publish(insulinRequest("fresh"))
	if code, r, body := s.respond(fresh.ID, `{"message":"Puedo llevarla"}`); code != http.StatusCreated || !r.Counted {
		t.Fatalf("after the window: %d %s", code, body)
	}
	if n := s.count(fresh.ID); n != 1 {
		t.Fatalf("after the window: %d, want 1", n)
	}
}

// TestModeratorsRestoreHiddenResponses: a response that reports hid is in the moderation queue under its
// record, with what it said and its reporters; an operator shows it again (audited), and the reporters
// whose reports were so reviewed cannot hide it again, while new ones can. RestoreByReporter undoes one
// reporter's hides of responses too.
func TestModeratorsRestoreHiddenResponses(t *testing.T) {
	s := newExpiryServer(t, &fakeClock{at: time.Now().UTC()})
	ctx := context.Background()
	a := s.publish(insulinRequest("a"))
	_, r1, _ := s.respond(a.ID, `{"message":"Tengo insulina refrigerada","contactName":"Luis","contactWhatsapp":"311 222 3344"}`)
	_, r2, _ := s.respond(a.ID, `{"message":"Tengo una nevera"}`)
	hide := func(rid string, addrs ...string) string {
		t.Helper()
		var out string
		for _, addr := range addrs {
			res, err := s.svc.ReportResponse(ctx, a.ID, rid, &schema.ReportInput{Reason: "spam"}, addr)
			if err != nil {
				t.Fatalf("report from %s: %v", addr, err)
			}
			out = res.Outcome
		}
		return out
	}
	if got := hide(r1.ResponseID, "198.51.100.1", "198.51.100.2", "198.51.100.3"); got != schema.ReportHidRecord {
		t.Fatalf("three reporters: %s", got)
	}
	q, err := s.svc.ModerationQueue(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(q) != 1 || q[0].Record.ID != a.ID || len(q[0].HiddenResponses) != 1 {
		t.Fatalf("queue: %+v", q)
	}
	hr := q[0].HiddenResponses[0]
	if hr.ID != r1.ResponseID || hr.Message != "Tengo insulina refrigerada" || hr.ContactE164 != "+573112223344" || len(hr.Reporters) != 3 {
		t.Fatalf("the queue's hidden response: %+v", hr)
	}
	if err := s.svc.RestoreResponse(ctx, a.ID, r2.ResponseID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("restoring a response that is not hidden: %v", err)
	}
	if err := s.svc.RestoreResponse(ctx, "nope", "x/y\x00"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("restoring with malformed ids: %v", err)
	}
	if err := s.svc.RestoreResponse(ctx, strings.ToUpper(a.ID), strings.ToUpper(r1.ResponseID)); err != nil {
		t.Fatal(err)
	}
	if n := s.count(a.ID); n != 2 {
		t.Fatalf("after the restore: %d responses count, want 2", n)
	}
	if _, list, _ := s.responsesOf(a.ID, a.ManageToken); len(list.Items) != 2 {
		t.Fatalf("the publisher sees %d responses after the restore, want 2", len(list.Items))
	}
	if q, err := s.svc.ModerationQueue(ctx); err != nil || len(q) != 0 {
		t.Fatalf("queue after the restore: %+v %v", q, err)
	}
	audit, err := s.svc.AuditTrail(ctx, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	if e := audit[len(audit)-1]; e.Action != backend.ActionRestoreResponse || e.RecordID != a.ID || e.Actor != store.ActorOperator ||
		e.From != schema.ResponseHidden || e.To != store.ResponseActive {
		t.Fatalf("audit entry: %+v", e)
	}
	// The reviewed reporters again: counted, nothing hidden. Three new ones hide it.
	if got := hide(r1.ResponseID, "198.51.100.1", "198.51.100.2", "198.51.100.3"); got != schema.ReportCounted {
		t.Fatalf("reviewed reporters again: %s, want %s", got, schema.ReportCounted)
	}
	if n := s.count(a.ID); n != 2 {
		t.Fatalf("reviewed reporters hid the response again: %d", n)
	}
	if got := hide(r1.ResponseID, "198.51.100.4", "198.51.100.5", "198.51.100.6"); got != schema.ReportHidRecord {
		t.Fatalf("three new reporters: %s", got)
	}
	// One reporter's campaign undone: every response it helped hide comes back.
	if got := hide(r2.ResponseID, "198.51.100.4", "198.51.100.7", "198.51.100.8"); got != schema.ReportHidRecord {
		t.Fatalf("r2's reporters: %s", got)
	}
	q, err = s.svc.ModerationQueue(ctx)
	if err != nil || len(q) != 1 || len(q[0].HiddenResponses) != 2 {
		t.Fatalf("queue: %+v %v", q, err)
	}
	var shared string
	for _, rep := range q[0].HiddenResponses[0].Reporters {
		if slices.Contains(q[0].HiddenResponses[1].Reporters, rep) {
			shared = rep
		}
	}
	ids, err := s.svc.RestoreByReporter(ctx, shared)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{a.ID + "/responses/" + r1.ResponseID, a.ID + "/responses/" + r2.ResponseID}
	slices.Sort(ids)
	slices.Sort(want)
	if !slices.Equal(ids, want) {
		t.Fatalf("RestoreByReporter: %v, want %v", ids, want)
	}
	if n := s.count(a.ID); n != 2 {
		t.Fatalf("after RestoreByReporter: %d responses count, want 2", n)
	}
}

// TestRespondRetriesAreOneResponse: the same response (message, name, number) from the same network to the
// same record within 10 minutes is one response, however many retries race: each answers the stored one
// (duplicate, 200 over HTTP) with its token. Another network, other words, a withdrawal or 10 minutes make
// a new one.
func TestRespondRetriesAreOneResponse(t *testing.T) {
	clk := &fakeClock{at: time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)}
	s := newExpiryServer(t, clk)
	a := s.publish(insulinRequest("a"))
	ctx := context.Background()
	in := func(msg string) *schema.ResponseInput {
		return &schema.ResponseInput{Message: msg, ContactName: "Luis"}
	}
	var wg sync.WaitGroup
	results := make([]*schema.ResponseCreated, 12)
	for i := range results {
		wg.Go(func() {
			r, err := s.svc.Respond(ctx, a.ID, in("Tengo insulina"), "+573112223344", "198.51.100.1")
			if err != nil {
				t.Error(err)
			}
			results[i] = r
		})
	}
	wg.Wait()
	created := 0
	for _, r := range results {
		if r == nil {
			t.FailNow()
		}
		if !r.Duplicate {
			created++
		}
		if r.ResponseID != results[0].ResponseID || r.ResponseToken != results[0].ResponseToken {
			t.Fatalf("racing retries got %s/%s and %s/%s", r.ResponseID, r.ResponseToken, results[0].ResponseID, results[0].ResponseToken)
		}
	}
	if created != 1 || s.count(a.ID) != 1 {
		t.Fatalf("12 racing retries: %d created, %d counted; want 1 and 1", created, s.count(a.ID))
	}
	// Over HTTP a retry answers 200 with duplicate.
	body := `{"message":"Voy en moto"}`
	if code, r, out := s.respond(a.ID, body); code != http.StatusCreated || r.Duplicate {
		t.Fatalf("first: %d %s", code, out)
	}
	code, out := s.do("POST", schema.ResponsesPath(a.ID), []byte(body))
	if code != http.StatusOK || !strings.Contains(out, `"duplicate":true`) || !strings.Contains(out, "ya se había enviado") {
		t.Fatalf("retry: %d %s", code, out)
	}
	if n := s.count(a.ID); n != 2 {
		t.Fatalf("after a retry over HTTP: %d responses, want 2", n)
	}
	// Another network, and other words, are new responses.
	if r, err := s.svc.Respond(ctx, a.ID, in("Tengo insulina"), "+573112223344", "198.51.100.2"); err != nil || r.Duplicate {
		t.Fatalf("another network: %+v %v", r, err)
	}
	if r, err := s.svc.Respond(ctx, a.ID, in("Tengo insulina y agujas"), "+573112223344", "198.51.100.1"); err != nil || r.Duplicate {
		t.Fatalf("other words: %+v %v", r, err)
	}
	// Withdrawn, then sent again: a new response.
	if _, err := s.svc.ActOnResponse(ctx, a.ID, results[0].ResponseID, schema.ResponseActionWithdraw, "198.51.100.1"); err != nil {
		t.Fatal(err)
	}
	again, err := s.svc.Respond(ctx, a.ID, in("Tengo insulina"), "+573112223344", "198.51.100.1")
	if err != nil || again.Duplicate || again.ResponseID == results[0].ResponseID {
		t.Fatalf("after the withdrawal: %+v %v", again, err)
	}
	// ... whose retries are that response, not one more each (which spent the network's share).
	stored := s.count(a.ID)
	for range 3 {
		if r, err := s.svc.Respond(ctx, a.ID, in("Tengo insulina"), "+573112223344", "198.51.100.1"); err != nil || !r.Duplicate ||
			r.ResponseID != again.ResponseID || r.ResponseToken != again.ResponseToken {
			t.Fatalf("a retry of the response sent again: %+v %v, want %s", r, err, again.ResponseID)
		}
	}
	if n := s.count(a.ID); n != stored {
		t.Fatalf("retries of the response sent again: %d responses, want %d", n, stored)
	}
	// Ten minutes later, the same words (httptest's address, as the HTTP ones) are a new response.
	if r, err := s.svc.Respond(ctx, a.ID, &schema.ResponseInput{Message: "Voy en moto"}, "", "192.0.2.1"); err != nil || !r.Duplicate {
		t.Fatalf("the HTTP one's retry through the service: %+v %v", r, err)
	}
	// Across the turn of a window: a retry 2 minutes after a response sent a minute before the turn is
	// still that response.
	turn := clk.now().Truncate(10 * time.Minute).Add(10 * time.Minute)
	clk.set(turn.Add(-time.Minute))
	before, err := s.svc.Respond(ctx, a.ID, in("Llego a las 3"), "", "198.51.100.3")
	if err != nil || before.Duplicate {
		t.Fatalf("before the turn: %+v %v", before, err)
	}
	clk.set(turn.Add(time.Minute))
	if after, err := s.svc.Respond(ctx, a.ID, in("Llego a las 3"), "", "198.51.100.3"); err != nil || !after.Duplicate || after.ResponseID != before.ResponseID {
		t.Fatalf("a retry across the turn: %+v %v", after, err)
	}
	clk.set(clk.now().Add(11 * time.Minute))
	if r, err := s.svc.Respond(ctx, a.ID, &schema.ResponseInput{Message: "Voy en moto"}, "", "192.0.2.1"); err != nil || r.Duplicate {
		t.Fatalf("11 minutes later: %+v %v", r, err)
	}
}

// A response ended with its record (resolved) is no retry to answer with: the same words after a reopen
// are a new, active response.
func TestRespondAfterTheRecordReopens(t *testing.T) {
	s := newExpiryServer(t, &fakeClock{at: time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)})
	a := s.publish(insulinRequest("a"))
	body := `{"message":"Llevo la insulina"}`
	_, first, _ := s.respond(a.ID, body)
	for _, action := range []string{"resolve", "reopen"} {
		if code, _ := s.act(a.ID, a.ManageToken, action); code != http.StatusOK {
			t.Fatalf("%s: %d", action, code)
		}
	}
	code, again, out := s.respond(a.ID, body)
	if code != http.StatusCreated || again.Duplicate || again.ResponseID == first.ResponseID || again.Status != schema.ResponseActive {
		t.Fatalf("after the reopen: %d %s", code, out)
	}
	if n := s.count(a.ID); n != 1 {
		t.Fatalf("after the reopen: %d responses count, want 1", n)
	}
}

// TestRespondPastTheRecordsBound: a record holds at most store.MaxResponsesPerRecord responses; the next
// is a 409 too_many_responses that says what to do, a retry of a stored one still answers it, and nothing
// else is stored.
func TestRespondPastTheRecordsBound(t *testing.T) {
	clk := &fakeClock{at: time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)}
	s := newExpiryServer(t, clk)
	a := s.publish(insulinRequest("a"))
	ctx := context.Background()
	for i := range store.MaxResponsesPerRecord {
		if _, err := s.svc.Respond(ctx, a.ID, &schema.ResponseInput{Message: fmt.Sprintf("Puedo llevar %d", i)}, "", fmt.Sprintf("198.51.%d.%d", i/250, i%250+1)); err != nil {
			t.Fatalf("response %d: %v", i, err)
		}
	}
	_, err := s.svc.Respond(ctx, a.ID, &schema.ResponseInput{Message: "Una más"}, "", "203.0.113.9")
	p := backend.AsProblem(err)
	if p.Status != http.StatusConflict || p.Body.Code != schema.CodeTooManyResponses || !strings.Contains(p.Body.Error, "attended=false") {
		t.Fatalf("a response past the bound: %v %+v", err, p.Body)
	}
	if r, err := s.svc.Respond(ctx, a.ID, &schema.ResponseInput{Message: "Puedo llevar 7"}, "", "198.51.0.8"); err != nil || !r.Duplicate {
		t.Fatalf("a retry of a stored response at the bound: %+v %v", r, err)
	}
	// The site's form says it in its words, pointing to the records nobody answered.
	r := httptest.NewRequest("POST", "http://ayuda.test"+schema.RespondFormPath, strings.NewReader("id="+a.ID+"&message=Una+m%C3%A1s"))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	w := httptest.NewRecorder()
	s.h.ServeHTTP(w, r)
	if w.Code != http.StatusConflict || !strings.Contains(w.Body.String(), "«Sin nadie ayudando»") || strings.Contains(w.Body.String(), "attended=false") ||
		!strings.Contains(w.Body.String(), "Lo que usted escribió: «Una más»") {
		t.Fatalf("the site's form past the bound: %d\n%s", w.Code, w.Body.String())
	}
	if rs, err := s.st.RecordResponses(ctx, a.ID); err != nil || len(rs) != store.MaxResponsesPerRecord {
		t.Fatalf("%d responses stored, %v", len(rs), err)
	}
}

// TestResponseCreatedHasNoLocation: a response has no URL of its own to read, so its 201 names none (a
// Location that answered 404 misled clients that follow it).
func TestResponseCreatedHasNoLocation(t *testing.T) {
	s := newExpiryServer(t, &fakeClock{at: time.Now().UTC()})
	a := s.publish(insulinRequest("a"))
	r := httptest.NewRequest("POST", "http://ayuda.test"+schema.ResponsesPath(a.ID), strings.NewReader(`{"message":"Voy con agua"}`))
	r.Header.Set("Content-Type", "application/json")
	w := httptest.NewRecorder()
	s.h.ServeHTTP(w, r)
	if w.Code != http.StatusCreated || w.Header().Get("Location") != "" {
		t.Fatalf("%d Location %q", w.Code, w.Header().Get("Location"))
	}
}

// TestResponseTextsLoseBidiControls: a response's texts, from any door (the API's body, MCP, the site's
// form all normalize with NormalizeResponse), lose the direction controls that reorder what a publisher
// reads, as a publication's do.
func TestResponseTextsLoseBidiControls(t *testing.T) {
	in := &schema.ResponseInput{Message: "Llevo agua, llame al \u202e7654 321 003\u202c", ContactName: "\u2067Ana\u2069", ContactWhatsapp: "\u202a300 123 4567\u202c"}
	out, e164, p := backend.NormalizeResponse(in)
	if p != nil {
		t.Fatalf("refused: %+v", p)
	}
	if out.Message != "Llevo agua, llame al 7654 321 003" || out.ContactName != "Ana" || e164 != "+573001234567" {
		t.Fatalf("kept a control: %q %q %q", out.Message, out.ContactName, e164)
	}
	body := `{"message":"Llevo agua \u202eal norte"}`
	got, _, p := backend.DecodeResponse([]byte(body))
	if p != nil || got.Message != "Llevo agua al norte" {
		t.Fatalf("the API's body: %+v %+v", got, p)
	}
}

// TestRespondShareOfOneNetwork: one network gives one record at most responderPerRecord distinct
// responses in 48 hours (one address filled a record's 300 in a quarter of an hour): the next is 429 with
// the wait, while a retry of an admitted one, another network and another record are answered; 48 hours
// on, the network may respond again.
func TestRespondShareOfOneNetwork(t *testing.T) {
	clk := &fakeClock{at: time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)}
	s := newExpiryServer(t, clk)
	a, b := s.publish(insulinRequest("a")), s.publish(insulinRequest("b"))
	ctx := context.Background()
	respond := func(id, msg, addr string) (*schema.ResponseCreated, error) {
		return s.svc.Respond(ctx, id, &schema.ResponseInput{Message: msg}, "", addr)
	}
	for i := range 3 {
		if _, err := respond(a.ID, fmt.Sprintf("Puedo ayudar %d", i), "198.51.100.1"); err != nil {
			t.Fatalf("response %d within the share: %v", i, err)
		}
	}
	_, err := respond(a.ID, "Otra más", "198.51.100.1")
	p := (*backend.Problem)(nil)
	if !errors.As(err, &p) || p.Status != http.StatusTooManyRequests || p.Body.Code != schema.CodeNetworkShareSpent || p.RetryAfter < 47*3600 || p.RetryAfter > 48*3600 {
		t.Fatalf("the fourth from one network: %+v %v", p, err)
	}
	if r, err := respond(a.ID, "Puedo ayudar 0", "198.51.100.1"); err != nil || !r.Duplicate {
		t.Fatalf("a retry of an admitted response: %+v %v", r, err)
	}
	if _, err := respond(a.ID, "Otra más", "198.51.100.2"); err != nil {
		t.Fatalf("another network: %v", err)
	}
	if _, err := respond(b.ID, "Otra más", "198.51.100.1"); err != nil {
		t.Fatalf("another record: %v", err)
	}
	// Over HTTP (from the test request's address): three, then 429 with the code and the words.
	for i := range 4 {
		code, body := s.do("POST", schema.ResponsesPath(a.ID), fmt.Appendf(nil, `{"message":"Por HTTP %d"}`, i))
		if want := map[bool]int{true: http.StatusCreated, false: http.StatusTooManyRequests}[i < 3]; code != want {
			t.Fatalf("HTTP response %d: %d %s, want %d", i, code, body, want)
		}
		if i == 3 && (!strings.Contains(body, `"code":"network_share_spent"`) || !strings.Contains(body, "respuestas a esta publicación")) {
			t.Fatalf("the 429 over HTTP: %s", body)
		}
	}
	clk.set(clk.now().Add(48 * time.Hour))
	if _, err := respond(a.ID, "Otra más, dos días después", "198.51.100.1"); err != nil {
		t.Fatalf("48 hours on: %v", err)
	}

	// Withdrawing a response and sending its words again is a new response, which takes a place: one
	// address looping on it filled a record's 300 before.
	c := s.publish(insulinRequest("c"))
	n := 0
	for range 10 {
		r, err := respond(c.ID, "spam", "198.51.100.9")
		if err != nil {
			if !errors.As(err, &p) || p.Status != http.StatusTooManyRequests {
				t.Fatalf("withdraw and send again: %v", err)
			}
			break
		}
		n++
		if _, err := s.svc.ActOnResponse(ctx, c.ID, r.ResponseID, schema.ActionWithdraw, "198.51.100.9"); err != nil {
			t.Fatal(err)
		}
	}
	if n != 3 {
		t.Fatalf("withdraw and send the same words again: %d responses stored, want 3", n)
	}
	// Resolved, its responses end; reopened, its publisher needs help again, and the network that had
	// spent its share may answer it.
	for _, action := range []string{schema.ActionResolve, schema.ActionReopen} {
		if _, err := s.svc.Act(ctx, "http://ayuda.test", c.ID, c.ManageToken, action); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := respond(c.ID, "Vuelvo a ofrecer", "198.51.100.9"); err != nil {
		t.Fatalf("a reopened record, from the network whose share it had spent: %v", err)
	}
}

// TestWholeExportPerClientOverHTTP: the HTTP handler counts a whole export against the client's network
// (ClientNet of its address): while one from 127.0.0.2 is being written, another from it is 429 and one
// from 127.0.0.3 is 200.
func TestWholeExportPerClientOverHTTP(t *testing.T) {
	s := newExpiryServer(t, &fakeClock{at: time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)})
	s.publish(insulinRequest("a"))
	path := schema.HelpPath + "?view=list&format=csv&all=true"
	held, release := make(chan struct{}), make(chan struct{})
	go func() {
		r := httptest.NewRequest("GET", "http://ayuda.test"+path, nil)
		r.RemoteAddr = "127.0.0.2:5000"
		s.h.ServeHTTP(&blockingWriter{hd: http.Header{}, held: held, release: release}, r)
	}()
	<-held // the first export writes, its place held
	for addr, want := range map[string]int{"127.0.0.2:5001": http.StatusTooManyRequests, "127.0.0.3:5000": http.StatusOK} {
		r := httptest.NewRequest("GET", "http://ayuda.test"+path, nil)
		r.RemoteAddr = addr
		w := httptest.NewRecorder()
		s.h.ServeHTTP(w, r)
		if w.Code != want || (want == http.StatusTooManyRequests && w.Header().Get("Retry-After") == "") {
			t.Errorf("a whole export from %s while 127.0.0.2's runs: %d %s, want %d", addr, w.Code, w.Body, want)
		}
	}
	close(release)
}

// blockingWriter is a client that takes no byte of a body until release is closed: its first Write
// closes held and waits.
type blockingWriter struct {
	hd            http.Header
	held, release chan struct{}
	once          sync.Once
}

func (w *blockingWriter) Header() http.Header              { return w.hd }
func (w *blockingWriter) WriteHeader(int)                  {}
func (w *blockingWriter) SetWriteDeadline(time.Time) error { return nil } // as http.ResponseController asks
func (w *blockingWriter) Flush()                           {}
func (w *blockingWriter) Write(b []byte) (int, error) {
	w.once.Do(func() { close(w.held) })
	<-w.release
	return len(b), nil
}

// TestWholeExportsBounded: a node runs backend.WholeExports whole exports at once, one client network
// backend.WholeExportsPerClient of them; past either bound an export is refused with a Retry-After (503
// for the node's, 429 for the client's, which leaves the other clients their places), and stopping one
// lets another start.
func TestWholeExportsBounded(t *testing.T) {
	s := newExpiryServer(t, &fakeClock{at: time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)})
	s.publish(insulinRequest("a"))
	ctx := context.Background()
	export := func(client string) (*backend.ExportPager, error) {
		return s.svc.Export(ctx, client, schema.ListQuery{}, "http://ayuda.test", backend.ExportPage)
	}
	refused := func(err error, status int, code string) bool {
		p := (*backend.Problem)(nil)
		return errors.As(err, &p) && p.Status == status && p.RetryAfter > 0 && p.Body.Code == code
	}
	var running []*backend.ExportPager
	for i := range backend.WholeExports {
		if i == 1 {
			// One client, its place held: its next export is refused, another client's is not.
			for range 3 {
				if _, err := export("client-0"); !refused(err, http.StatusTooManyRequests, schema.CodeRateLimited) {
					t.Fatalf("a client's export past its bound: %v", err)
				}
			}
		}
		p, err := export(fmt.Sprint("client-", i))
		if err != nil {
			t.Fatalf("export %d within the bound: %v", i, err)
		}
		running = append(running, p)
	}
	if _, err := export("another"); !refused(err, http.StatusServiceUnavailable, schema.CodeUnavailable) {
		t.Fatalf("an export past the node's bound: %v", err)
	}
	running[0].Stop()
	running[0].Stop() // twice frees one place only
	next, err := export("client-0")
	if err != nil {
		t.Fatalf("an export once one stopped: %v", err)
	}
	if _, err := export("another"); err == nil {
		t.Fatal("a second Stop of one export freed two places")
	}
	for _, p := range append(running[1:], next) {
		p.Stop()
	}
}

// TestResponsesEndWhenTheRecordExpires: a response still within its own 48 hours reads «ended» to the
// publisher once its record expired (read before any sweep), as a resolution's end stores it, and the
// list's active count agrees with its items.
func TestResponsesEndWhenTheRecordExpires(t *testing.T) {
	start := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	clk := &fakeClock{at: start}
	s := newExpiryServer(t, clk)
	a := s.publish(insulinRequest("a"))
	ttl := backend.DefaultRequestTTL // the emergency of insulinRequest has no request_ttl
	clk.set(start.Add(ttl - time.Hour))
	if code, _, _ := s.respond(a.ID, `{"message":"Tengo insulina refrigerada"}`); code != http.StatusCreated {
		t.Fatal(code)
	}
	for at, want := range map[time.Duration]string{ttl - time.Minute: schema.ResponseActive, ttl + time.Hour: schema.ResponseEnded} {
		clk.set(start.Add(at))
		code, list, body := s.responsesOf(a.ID, a.ManageToken)
		active := map[string]int{schema.ResponseActive: 1}[want]
		if code != http.StatusOK || len(list.Items) != 1 || list.Items[0].Status != want || list.Active != active {
			t.Errorf("%v after publishing (the request lives %v): %d %s, want one %s response, active %d", at, ttl, code, body, want, active)
		}
	}
}

// TestSameHelperCountsOnce: a helper who answers a record again in other words with the same number (as
// after a dropped connection) reaches the publisher both times, but the page counts one person helping,
// and is told why; another number counts.
func TestSameHelperCountsOnce(t *testing.T) {
	s := newExpiryServer(t, &fakeClock{at: time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)})
	rec := s.publish(insulinRequest("same-helper"))
	code, first, body := s.respond(rec.ID, `{"message":"Llevo agua esta tarde","contactWhatsapp":"311 555 6677"}`)
	if code != http.StatusCreated || !first.Counted {
		t.Fatalf("the first response: %d %s", code, body)
	}
	code, again, body := s.respond(rec.ID, `{"message":"Llevo el agua a las 4","contactWhatsapp":"+57 311 555 6677"}`)
	if code != http.StatusCreated || again.Counted || again.ResponseID == first.ResponseID || !strings.Contains(again.Message, "Su número ya respondió a esta publicación") {
		t.Fatalf("the same number in other words: %d %s", code, body)
	}
	if n := s.count(rec.ID); n != 1 {
		t.Fatalf("one helper answering twice counts %d", n)
	}
	if _, list, _ := s.responsesOf(rec.ID, rec.ManageToken); list.Active != 2 {
		t.Fatalf("the publisher reads %d active responses, want both", list.Active)
	}
	if code, other, body := s.respond(rec.ID, `{"message":"Tengo un carro","contactWhatsapp":"312 000 1111"}`); code != http.StatusCreated || !other.Counted {
		t.Fatalf("another helper: %d %s", code, body)
	}
	if n := s.count(rec.ID); n != 2 {
		t.Fatalf("two helpers count %d", n)
	}
}
