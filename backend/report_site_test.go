package backend_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"

	"github.com/directaid/directaid/backend"
	"github.com/directaid/directaid/backend/httpapi"
	"github.com/directaid/directaid/backend/mcpserver"
	"github.com/directaid/directaid/internal/testserver"
	"github.com/directaid/directaid/schema"
	"github.com/directaid/directaid/site/sitetest"
)

// The «Reportar» form of the record pages (issue 13 item 10), without JavaScript: POST /reportar
// reports through the same decoder and Service.Report as POST help/{id}/reports, and answers pages.

// newReportServer is newContractServer with hide_after_reports set.
func newReportServer(t *testing.T, hideAfter int) *contractServer {
	t.Helper()
	st := testserver.Badger(t)
	svc := backend.NewService(st, backend.Config{Emergencies: twoEmergencies, HideAfterReports: hideAfter,
		RateLimits: map[string]backend.Limit{backend.ZonePublish: {100000, time.Minute}, backend.ZoneDetail: {100000, time.Minute}}})
	h, err := httpapi.NewHandler(svc, httpapi.Options{MCP: mcpserver.New(svc)})
	if err != nil {
		t.Fatal(err)
	}
	return &contractServer{Server: testserver.Serve(t, h), t: t}
}

// postReport sends the form as a browser does.
func postReport(s *contractServer, vals url.Values) (*http.Response, string) {
	s.t.Helper()
	resp, raw := s.Do("POST", "/reportar", []byte(vals.Encode()), "Content-Type", "application/x-www-form-urlencoded")
	return resp, string(raw)
}

// detailContact is the contact of a record's view=detail, and its status code.
func detailContact(s *contractServer, id string) (int, map[string]any) {
	s.t.Helper()
	resp, _, body := s.call("GET", schema.HelpPath+"?view=detail&id="+id, nil)
	c, _ := body["contact"].(map[string]any)
	return resp.StatusCode, c
}

// elements lists the elements of doc named tag.
func elements(doc *html.Node, tag string) []*html.Node {
	var out []*html.Node
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode && n.Data == tag {
			out = append(out, n)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
	return out
}

func TestReportFormOnRecordPage(t *testing.T) {
	s := newContractServer(t)
	_, rec := s.publish(string(testserver.MustJSON(t, testserver.ValidRequest())))
	id := rec["id"].(string)
	resp, page := s.Do("GET", schema.RecordPath(id), nil)
	if resp.StatusCode != 200 {
		t.Fatalf("record page: %d", resp.StatusCode)
	}
	doc := sitetest.ParseHTML(t, page)
	form := sitetest.ByID(doc, "reporte-formulario")
	if form == nil || sitetest.Attr(form, "method") != "post" || sitetest.Attr(form, "action") != "/reportar" {
		t.Fatalf("no POST /reportar form on the record page:\n%s", page)
	}
	var radios []string
	hidden := map[string]string{}
	for _, in := range elements(form, "input") {
		switch sitetest.Attr(in, "type") {
		case "hidden":
			hidden[sitetest.Attr(in, "name")] = sitetest.Attr(in, "value")
		case "radio":
			if sitetest.Attr(in, "name") != "reason" {
				t.Errorf("radio named %q", sitetest.Attr(in, "name"))
			}
			radios = append(radios, sitetest.Attr(in, "value"))
			label := ""
			for _, l := range elements(form, "label") {
				if sitetest.Attr(l, "for") == sitetest.Attr(in, "id") {
					label = sitetest.Text(l)
				}
			}
			if label == "" || strings.Contains(label, "_") {
				t.Errorf("reason %s: label %q", sitetest.Attr(in, "value"), label)
			}
			if sitetest.Attr(in, "value") == "not_my_number" && label != "Es mi número y no quiero que se muestre" {
				t.Errorf("not_my_number is labelled %q", label)
			}
		}
	}
	if hidden["id"] != id {
		t.Errorf("hidden id %q, want %q", hidden["id"], id)
	}
	if len(radios) != len(schema.ReportReasons) || radios[0] != "not_my_number" {
		t.Errorf("reasons %v: want every one of %v, not_my_number first", radios, schema.ReportReasons)
	}
	notes := elements(form, "textarea")
	if len(notes) != 1 || sitetest.Attr(notes[0], "name") != "note" || sitetest.Attr(notes[0], "maxlength") != "300" {
		t.Errorf("note: %d textareas", len(notes))
	}
	if b := elements(form, "button"); len(b) != 1 || sitetest.Attr(b[0], "type") != "submit" {
		t.Errorf("submit button: %d buttons", len(b))
	}
	// The twin tells apps how to report through the API.
	_, twin := s.Do("GET", schema.RecordPath(id)+".md", nil)
	for _, want := range []string{"## Reportar esta publicación", "POST " + s.URL + schema.ReportsPath(id), "`not_my_number`: Es mi número y no quiero que se muestre"} {
		if !strings.Contains(string(twin), want) {
			t.Errorf("the twin lacks %q:\n%s", want, twin)
		}
	}
}

func TestReportFormPost(t *testing.T) {
	s := newReportServer(t, 2)
	_, a := s.publish(string(testserver.MustJSON(t, testserver.ValidRequest())))
	_, b := s.publish(string(testserver.MustJSON(t, testserver.ValidOffer())))
	idA, idB := a["id"].(string), b["id"].(string)

	// A refused form comes back with the service's message naming the field in Spanish (no reason chosen:
	// in the form's words, not the API's codes), what was typed kept, and nothing recorded.
	for _, c := range []struct {
		vals url.Values
		want string
	}{
		{url.Values{"id": {idA}, "reason": {"aburrida"}, "note": {"una nota"}}, "Elija por qué la reporta"},
		{url.Values{"id": {idA}, "note": {"una nota"}}, "Elija por qué la reporta"},
		{url.Values{"id": {idA}, "reason": {"spam"}, "note": {strings.Repeat("ñ", schema.MaxReportNoteRunes+1)}}, "«Nota»"},
	} {
		resp, page := postReport(s, c.vals)
		if resp.StatusCode != 400 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") || resp.Header.Get("Cache-Control") != "no-store" {
			t.Errorf("%v: %d %q %q", c.vals, resp.StatusCode, resp.Header.Get("Content-Type"), resp.Header.Get("Cache-Control"))
		}
		doc := sitetest.ParseHTML(t, []byte(page))
		errs := sitetest.ByID(doc, "reporte-errores")
		if errs == nil || sitetest.HasAttr(errs, "hidden") || !strings.Contains(sitetest.Text(errs), c.want) {
			t.Errorf("%v: no error naming %s:\n%s", c.vals, c.want, page)
		}
		if text := sitetest.VisibleText(doc) + sitetest.Text(errs); strings.Contains(text, "reason") || strings.Contains(text, "note") || strings.Contains(page, `"code"`) ||
			strings.Contains(sitetest.Text(errs), "not_my_number") {
			t.Errorf("%v: English field names or an error body shown to a person:\n%s", c.vals, page)
		}
		if !strings.Contains(page, "una nota") && c.vals.Get("note") == "una nota" {
			t.Errorf("%v: the note typed is gone", c.vals)
		}
	}
	if _, c := detailContact(s, idA); c["available"] != true {
		t.Fatalf("a refused report changed the record: %v", c)
	}

	// not_my_number hides the phone at once.
	resp, page := postReport(s, url.Values{"id": {idA}, "reason": {"not_my_number"}, "note": {"  "}})
	if resp.StatusCode != 200 || resp.Header.Get("Cache-Control") != "no-store" || !strings.Contains(page, "el teléfono de esta publicación ya no se muestra") ||
		!strings.Contains(page, s.URL+schema.RecordPath(idA)) {
		t.Fatalf("not_my_number: %d %q\n%s", resp.StatusCode, resp.Header.Get("Cache-Control"), page)
	}
	if st, c := detailContact(s, idA); st != 200 || c["available"] != false || c["whatsapp"] != nil {
		t.Errorf("after not_my_number: %d %v", st, c)
	}
	_, recPage := s.Do("GET", schema.RecordPath(idA), nil)
	if strings.Contains(string(recPage), "wa.me/5") || strings.Contains(string(recPage), "tel:+") {
		t.Errorf("the record page still links to the number (WhatsApp or a call)")
	}

	// The form and the API tell reporters apart by the same address: with hide_after_reports 2, a report
	// through each from one client is one reporter, and the record stays.
	if resp, page := postReport(s, url.Values{"id": {idB}, "reason": {"spam"}, "note": {strings.Repeat("ñ", schema.MaxReportNoteRunes)}}); resp.StatusCode != 200 ||
		!strings.Contains(page, "el reporte quedó registrado") {
		t.Fatalf("spam with a 300-character note: %d\n%s", resp.StatusCode, page)
	}
	r, _, _ := s.call("POST", schema.ReportsPath(idB), []byte(`{"reason":"fraud"}`), "Content-Type", "application/json")
	if r.StatusCode != 202 {
		t.Fatalf("API report: %d", r.StatusCode)
	}
	if st, _ := detailContact(s, idB); st != 200 {
		t.Fatalf("one client reporting through the form and the API counted twice: detail %d", st)
	}

	// Unknown and malformed ids are the 404 page; a withdrawn record is the 410 page, with no form.
	for _, id := range []string{"06h0esgyp8jkswec", "no-es-un-id"} {
		if resp, page := postReport(s, url.Values{"id": {id}, "reason": {"spam"}}); resp.StatusCode != 404 || !strings.Contains(page, "Página no encontrada") {
			t.Errorf("report of %q: %d\n%s", id, resp.StatusCode, page)
		}
	}
	r, _, _ = s.call("POST", schema.HelpPath+"/"+idB+"/actions", []byte(`{"action":"withdraw"}`),
		"Content-Type", "application/json", "Authorization", "Bearer "+b["manageToken"].(string))
	if r.StatusCode != 200 {
		t.Fatalf("withdraw: %d", r.StatusCode)
	}
	for _, p := range []string{schema.RecordPath(idB), schema.RecordPath(idB) + ".md"} {
		resp, page := s.Do("GET", p, nil)
		if resp.StatusCode != 410 || strings.Contains(string(page), "reporte-formulario") || strings.Contains(string(page), "Reportar esta") {
			t.Errorf("GET %s of a withdrawn record: %d\n%s", p, resp.StatusCode, page)
		}
	}
	if resp, page := postReport(s, url.Values{"id": {idB}, "reason": {"spam"}}); resp.StatusCode != 410 || !strings.Contains(page, "ya no está") {
		t.Errorf("report of a withdrawn record: %d\n%s", resp.StatusCode, page)
	}

	// GET is no page: the form's target only.
	if resp, _ := s.Do("GET", "/reportar", nil); resp.StatusCode != 405 || resp.Header.Get("Allow") != "POST" {
		t.Errorf("GET /reportar: %d Allow %q", resp.StatusCode, resp.Header.Get("Allow"))
	}
	if resp, _ := s.Do("GET", "/reportar.md", nil); resp.StatusCode != 404 {
		t.Errorf("GET /reportar.md: %d", resp.StatusCode)
	}
}

// Reports by distinct clients hide a record; its page answers 410 without the form, and the form then
// answers the 410 page.
func TestReportFormHiddenRecord(t *testing.T) {
	s := newReportServer(t, 1)
	_, a := s.publish(string(testserver.MustJSON(t, testserver.ValidRequest())))
	id := a["id"].(string)
	if resp, _ := postReport(s, url.Values{"id": {id}, "reason": {"offensive"}}); resp.StatusCode != 200 {
		t.Fatalf("report: %d", resp.StatusCode)
	}
	if st, _ := detailContact(s, id); st != 410 {
		t.Fatalf("hide_after_reports 1: detail %d after one report", st)
	}
	resp, page := s.Do("GET", schema.RecordPath(id), nil)
	if resp.StatusCode != 410 || resp.Header.Get("Cache-Control") != "no-store" || strings.Contains(string(page), "reporte-formulario") {
		t.Errorf("hidden record page: %d %q\n%s", resp.StatusCode, resp.Header.Get("Cache-Control"), page)
	}
	if resp, page := postReport(s, url.Values{"id": {id}, "reason": {"spam"}}); resp.StatusCode != 410 || !strings.Contains(page, "ya no está") {
		t.Errorf("report of a hidden record: %d\n%s", resp.StatusCode, page)
	}
}

// A phone hidden by a not_my_number report: the record's page says why no number shows (and no longer
// that the person authorized showing it), and its publisher's /gestionar says so too.
func TestPhoneReportedIsSaid(t *testing.T) {
	s := newContractServer(t)
	_, a := s.publish(string(testserver.MustJSON(t, testserver.ValidRequest())))
	id, token := a["id"].(string), a["manageToken"].(string)
	if _, page := s.Do("GET", schema.RecordPath(id), nil); !strings.Contains(string(page), "La persona autorizó publicar su nombre y su número") {
		t.Fatal("before the report, the page lacks the consent sentence")
	}
	if resp, _, body := s.call("POST", schema.ReportsPath(id), []byte(`{"reason":"not_my_number"}`), "Content-Type", "application/json"); resp.StatusCode != http.StatusAccepted || body["outcome"] != schema.ReportHidPhone {
		t.Fatalf("report: %d %v", resp.StatusCode, body)
	}
	for _, p := range []string{schema.RecordPath(id), schema.RecordPath(id) + ".md"} {
		_, page := s.Do("GET", p, nil)
		text := strings.Join(strings.Fields(string(page)), " ")
		if !strings.Contains(text, "alguien informó que el número no es de quien publicó") || strings.Contains(text, "La persona autorizó publicar su nombre y su número") {
			t.Errorf("%s after the report:\n%s", p, text)
		}
	}
	resp, raw := s.Do("POST", schema.ManagePath, []byte(url.Values{"id": {id}, "token": {token}, "action": {"responses"}}.Encode()),
		"Content-Type", "application/x-www-form-urlencoded")
	if text := sitetest.VisibleText(sitetest.ParseHTML(t, raw)); resp.StatusCode != http.StatusOK || !strings.Contains(text, "Su número no se muestra: alguien informó que no es suyo") {
		t.Errorf("/gestionar after the report: %d %s", resp.StatusCode, text)
	}
}
