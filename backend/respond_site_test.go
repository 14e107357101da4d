package backend_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/directaid/directaid/internal/testserver"
	"github.com/directaid/directaid/schema"
	"github.com/directaid/directaid/site/sitetest"
)

// The «Yo puedo ayudar» form of the record pages, without JavaScript: POST /responder responds through
// the same decoder and Service.Respond as POST help/{id}/responses, and its page's buttons renew and
// withdraw the response with its token (POST /mi-respuesta).

// postForm sends a form as a browser does and returns the answer and its visible text.
func postForm(s *contractServer, path string, vals url.Values) (*http.Response, string, string) {
	s.t.Helper()
	resp, raw := s.Do("POST", path, []byte(vals.Encode()), "Content-Type", "application/x-www-form-urlencoded")
	text := strings.Join(strings.Fields(sitetest.VisibleText(sitetest.ParseHTML(s.t, raw))), " ")
	return resp, string(raw), text
}

func TestRespondFormOnRecordPages(t *testing.T) {
	s := newContractServer(t)
	_, a := s.publish(string(testserver.MustJSON(t, testserver.ValidRequest())))
	_, b := s.publish(string(testserver.MustJSON(t, testserver.ValidOffer())))
	idA, idB := a["id"].(string), b["id"].(string)
	for id, want := range map[string][]string{idA: {"¿Puede ayudar?", "Avisar que puedo ayudar"}, idB: {"¿Le sirve esta ayuda?", "Avisar que me interesa"}} {
		_, page := s.Do("GET", schema.RecordPath(id), nil)
		doc := sitetest.ParseHTML(t, page)
		form := sitetest.ByID(doc, "responder-formulario")
		if form == nil || sitetest.Attr(form, "method") != "post" || sitetest.Attr(form, "action") != schema.RespondFormPath {
			t.Fatalf("no POST %s form on %s's page", schema.RespondFormPath, id)
		}
		text := sitetest.VisibleText(doc) + string(page)
		for _, w := range want {
			if !strings.Contains(text, w) {
				t.Errorf("%s's page lacks %q", id, w)
			}
		}
		names := map[string]bool{}
		for _, tag := range []string{"input", "textarea"} {
			for _, in := range elements(form, tag) {
				names[sitetest.Attr(in, "name")] = true
			}
		}
		for _, n := range []string{"id", "message", "contactName", "contactWhatsapp"} {
			if !names[n] {
				t.Errorf("%s's form lacks the field %q", id, n)
			}
		}
		// The twin tells apps how to respond through the API.
		_, twin := s.Do("GET", schema.RecordPath(id)+".md", nil)
		if !strings.Contains(string(twin), "POST "+s.URL+schema.ResponsesPath(id)) {
			t.Errorf("%s's twin lacks the API's way to respond:\n%s", id, twin)
		}
	}
	// A resolved record takes no response: no form.
	if resp, _, _ := s.call("POST", schema.HelpPath+"/"+idB+schema.ActionsSuffix, []byte(`{"action":"resolve"}`), "Authorization", "Bearer "+b["manageToken"].(string), "Content-Type", "application/json"); resp.StatusCode != http.StatusOK {
		t.Fatalf("resolve: %d", resp.StatusCode)
	}
	if _, page := s.Do("GET", schema.RecordPath(idB), nil); strings.Contains(string(page), `action="`+schema.RespondFormPath+`"`) {
		t.Error("a resolved record's page has the form")
	}
}

func TestRespondFormPost(t *testing.T) {
	s := newContractServer(t)
	_, a := s.publish(string(testserver.MustJSON(t, testserver.ValidRequest())))
	id, token := a["id"].(string), a["manageToken"].(string)
	count := func() float64 {
		t.Helper()
		_, _, d := s.call("GET", schema.HelpPath+"?view=detail&id="+id, nil)
		n, _ := d["responses"].(float64)
		return n
	}

	// Refused: the service's messages with the form's labels, what was typed kept, nothing stored.
	resp, raw, text := postForm(s, schema.RespondFormPath, url.Values{"id": {id}, "message": {""}, "contactWhatsapp": {"12"}})
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(text, "«Qué puede hacer y cuándo»") || !strings.Contains(text, "«Su WhatsApp»") || !strings.Contains(text, "No se pudo enviar su respuesta") ||
		!strings.Contains(raw, `value="12"`) {
		t.Fatalf("refused form: %d %s", resp.StatusCode, text)
	}
	// Each message under its field, the field marked invalid and described by it, the summary linking to it.
	for _, field := range []string{"responder-mensaje", "responder-whatsapp"} {
		if !strings.Contains(raw, `<p class="error" id="`+field+`-error">`) || !strings.Contains(raw, `<a href="#`+field+`">`) {
			t.Errorf("refused form: no message under or link to %s:\n%s", field, raw)
		}
	}
	refused := sitetest.ParseHTML(t, []byte(raw))
	for _, el := range append(elements(refused, "input"), elements(refused, "textarea")...) {
		id := sitetest.Attr(el, "id")
		wantInvalid := id == "responder-mensaje" || id == "responder-whatsapp"
		if got := sitetest.Attr(el, "aria-invalid") == "true"; got != wantInvalid || (wantInvalid && !strings.Contains(sitetest.Attr(el, "aria-describedby"), id+"-error")) {
			t.Errorf("refused form: %s aria-invalid %q aria-describedby %q", id, sitetest.Attr(el, "aria-invalid"), sitetest.Attr(el, "aria-describedby"))
		}
	}
	if n := count(); n != 0 {
		t.Fatalf("a refused form stored a response: %v", n)
	}
	// Unknown and malformed ids: the site's 404.
	for _, bad := range []string{"01k2x3y4z5a6b7c8", "nope", ""} {
		if resp, _, _ := postForm(s, schema.RespondFormPath, url.Values{"id": {bad}, "message": {"Voy"}}); resp.StatusCode != http.StatusNotFound {
			t.Errorf("id %q: %d, want 404", bad, resp.StatusCode)
		}
	}
	for _, path := range []string{schema.RespondFormPath, schema.ResponseFormPath, schema.ReportFormPath} {
		// A person who opens the form's address gets a page that says where the form is.
		if resp, body := s.Do("GET", path, nil); resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != "POST" ||
			!strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") || !strings.Contains(string(body), "solo recibe un formulario") || !strings.Contains(string(body), `<html lang="es`) {
			t.Errorf("GET %s: %d %q %q\n%s", path, resp.StatusCode, resp.Header.Get("Allow"), resp.Header.Get("Content-Type"), body)
		}
	}

	// Stored: the service's message, the response counts, the publisher reads it, and the page carries
	// the buttons with the response token.
	resp, raw, text = postForm(s, schema.RespondFormPath, url.Values{"id": {strings.ToUpper(id)}, "message": {"Tengo agua; la llevo a las 4"},
		"contactName": {"Luis"}, "contactWhatsapp": {"311 222 3344"}})
	if resp.StatusCode != http.StatusOK || !strings.Contains(text, "Respuesta enviada") || !strings.Contains(text, "quien pidió ayuda verá su mensaje y su WhatsApp cuando abra el enlace que recibió al publicar") || !strings.Contains(text, "escríbale también") ||
		resp.Header.Get("Cache-Control") != "no-store" {
		t.Fatalf("stored: %d %q %s", resp.StatusCode, resp.Header.Get("Cache-Control"), text)
	}
	if n := count(); n != 1 {
		t.Fatalf("after the form: %v responses, want 1", n)
	}
	_, _, list := s.call("GET", schema.ResponsesPath(id), nil, "Authorization", "Bearer "+token)
	items, _ := list["items"].([]any)
	if len(items) != 1 || items[0].(map[string]any)["contactWhatsapp"] != "311 222 3344" {
		t.Fatalf("the publisher's list: %v", list)
	}
	rid := items[0].(map[string]any)["responseId"].(string)
	doc := sitetest.ParseHTML(t, []byte(raw))
	hidden := map[string]string{}
	for _, in := range elements(doc, "input") {
		hidden[sitetest.Attr(in, "name")] = sitetest.Attr(in, "value")
	}
	if hidden["id"] != id || hidden["response"] != rid || hidden["token"] == "" || !strings.Contains(raw, `action="`+schema.ResponseFormPath+`"`) {
		t.Fatalf("the buttons' form: %v", hidden)
	}
	// A wrong token changes nothing; renew, then withdraw.
	if resp, _, text := postForm(s, schema.ResponseFormPath, url.Values{"id": {id}, "response": {rid}, "token": {"x" + hidden["token"]}, "action": {"withdraw"}}); resp.StatusCode != http.StatusForbidden ||
		!strings.Contains(text, "No se pudo enviar su respuesta") {
		t.Fatalf("a wrong token: %d %s", resp.StatusCode, text)
	}
	if n := count(); n != 1 {
		t.Fatalf("a wrong token withdrew the response: %v", n)
	}
	if resp, raw, text := postForm(s, schema.ResponseFormPath, url.Values{"id": {id}, "response": {rid}, "token": {hidden["token"]}, "action": {"renew"}}); resp.StatusCode != http.StatusOK ||
		!strings.Contains(text, "cuenta otras 48 horas") || !strings.Contains(raw, "Retirar mi respuesta") {
		t.Fatalf("renew: %d %s", resp.StatusCode, text)
	}
	if resp, raw, text := postForm(s, schema.ResponseFormPath, url.Values{"id": {id}, "response": {rid}, "token": {hidden["token"]}, "action": {"withdraw"}}); resp.StatusCode != http.StatusOK ||
		!strings.Contains(text, "Respuesta retirada") || strings.Contains(raw, "Retirar mi respuesta") {
		t.Fatalf("withdraw: %d %s", resp.StatusCode, text)
	}
	if n := count(); n != 0 {
		t.Fatalf("after the withdrawal: %v responses, want 0", n)
	}
	// A record that takes no response: the service's reason, no form.
	if resp, _, _ := s.call("POST", schema.HelpPath+"/"+id+schema.ActionsSuffix, []byte(`{"action":"resolve"}`), "Authorization", "Bearer "+token, "Content-Type", "application/json"); resp.StatusCode != http.StatusOK {
		t.Fatalf("resolve: %d", resp.StatusCode)
	}
	resp, raw, text = postForm(s, schema.RespondFormPath, url.Values{"id": {id}, "message": {"Voy"}})
	if resp.StatusCode != http.StatusGone || !strings.Contains(text, "ya no recibe respuestas") || strings.Contains(raw, "<textarea") {
		t.Fatalf("a resolved record: %d %s", resp.StatusCode, text)
	}
}

// With attended, the emergency page's counts are upper bounds, and say so («hasta 12»), never a bare
// number that is not the count.
func TestAttendedPageSaysUpperBounds(t *testing.T) {
	s := newContractServer(t)
	var first string
	for i := range 12 {
		offer := testserver.ValidOffer()
		offer["externalId"] = fmt.Sprintf("offer-%d", i)
		_, rec := s.publish(string(testserver.MustJSON(t, offer)))
		if i == 0 {
			first = rec["id"].(string)
		}
	}
	if resp, _, _ := s.call("POST", schema.ResponsesPath(first), []byte(`{"message":"Me interesa"}`), "Content-Type", "application/json"); resp.StatusCode != http.StatusCreated {
		t.Fatalf("respond: %d", resp.StatusCode)
	}
	_, page := s.Do("GET", "/emergencias/eje-cafetero?attended=false", nil)
	text := strings.Join(strings.Fields(sitetest.VisibleText(sitetest.ParseHTML(t, page))), " ")
	if !strings.Contains(text, "Ofrecimientos (hasta 12)") || strings.Contains(text, "Ofrecimientos (12)") || !strings.Contains(text, "Hasta 12 publicaciones") {
		t.Fatalf("the attended=false page:\n%s", text)
	}
	_, page = s.Do("GET", "/emergencias/eje-cafetero", nil)
	if text := sitetest.VisibleText(sitetest.ParseHTML(t, page)); !strings.Contains(text, "Ofrecimientos (12)") {
		t.Fatalf("the page without attended:\n%s", text)
	}
}

// The map of a search that names a town reads the same records as the list: its data URL carries the
// municipio the words named («agua armenia»: q=agua in Armenia (Quindío)), as the list read them, and so
// does a municipio filter given by name.
func TestMapReadsTheListsPlace(t *testing.T) {
	s := newContractServer(t)
	for i, place := range []string{"63001", "63001", "66001"} {
		req := testserver.ValidRequest()
		req["externalId"], req["title"], req["placeCode"] = fmt.Sprintf("agua-%d", i), "Agua potable para la familia", place
		delete(req, "latitude")
		delete(req, "longitude")
		if resp, body := s.publish(string(testserver.MustJSON(t, req))); resp.StatusCode != http.StatusCreated {
			t.Fatalf("publish: %d %v", resp.StatusCode, body)
		}
	}
	for query, want := range map[string][]string{
		"q=agua+armenia":     {"municipio=63001", "q=agua&"},
		"municipio=armenia":  {"municipio=63001"},
		"q=agua":             {"q=agua&"},
		"q=agua+inexistente": {"q=agua+inexistente"},
	} {
		_, page := s.Do("GET", "/emergencias/eje-cafetero/mapa?"+query, nil)
		box := sitetest.ByID(sitetest.ParseHTML(t, page), "mapa")
		if box == nil {
			t.Fatalf("%s: no map", query)
		}
		data := sitetest.Attr(box, "data-datos")
		for _, w := range want {
			if !strings.Contains(data+"&", w) {
				t.Errorf("%s: the map reads %q, want %q in it", query, data, w)
			}
		}
		if strings.Contains(data, "armenia") {
			t.Errorf("%s: the map sends the town's name to the API: %q", query, data)
		}
		// The API answers the map's URL with the list's records.
		resp, geo := s.Do("GET", data, nil)
		var fc struct{ Features []any }
		if err := json.Unmarshal(geo, &fc); resp.StatusCode != http.StatusOK || err != nil {
			t.Errorf("%s: the map's data: %d %s", query, resp.StatusCode, geo)
		}
		if n := map[string]int{"q=agua+armenia": 2, "municipio=armenia": 2, "q=agua": 3}[query]; n > 0 && len(fc.Features) != n {
			t.Errorf("%s: the map has %d points, the list %d", query, len(fc.Features), n)
		}
	}
}

// The list's point filter takes the decimal comma, as the publishing forms do (a phone keyboard or a
// Colombian habit writes it): the same records as with the point.
func TestListFilterTakesTheDecimalComma(t *testing.T) {
	s := newContractServer(t)
	req := testserver.ValidRequest()
	req["latitude"], req["longitude"] = 4.5339, -75.6811
	if resp, body := s.publish(string(testserver.MustJSON(t, req))); resp.StatusCode != http.StatusCreated {
		t.Fatalf("publish: %d %v", resp.StatusCode, body)
	}
	comma, dot := "latitude=4%2C5339&longitude=-75%2C6811&radiusKm=5", "latitude=4.5339&longitude=-75.6811&radiusKm=5"
	r1, p1 := s.Do("GET", "/emergencias/eje-cafetero?"+comma, nil)
	r2, p2 := s.Do("GET", "/emergencias/eje-cafetero?"+dot, nil)
	t1, t2 := sitetest.VisibleText(sitetest.ParseHTML(t, p1)), sitetest.VisibleText(sitetest.ParseHTML(t, p2))
	if r1.StatusCode != http.StatusOK || r2.StatusCode != http.StatusOK || !strings.Contains(t1, "1 publicación") || !strings.Contains(t2, "1 publicación") {
		t.Fatalf("with the comma: %d %s\nwith the dot: %d %s", r1.StatusCode, t1, r2.StatusCode, t2)
	}
}
