package e2e

import (
	"fmt"
	"io"
	"net/url"
	"strings"
	"testing"

	"github.com/directaid/directaid/internal/testserver"
	"github.com/directaid/directaid/schema"
)

// TestCrossSiteFormsRefused: another site's page posting to the site's forms (as each of its visitors,
// each from a network of their own) is refused with 403 and changes nothing: no report hides the phone,
// no response counts, nothing is published. The same posts from the site's own pages work.
func TestCrossSiteFormsRefused(t *testing.T) {
	t.Parallel()
	s := testserver.Start(t, testserver.Options{})
	_, rec := publish(t, s, validRequest())
	id := rec["id"].(string)
	form := func(path string, v url.Values, headers ...string) int {
		t.Helper()
		h := append([]string{"Content-Type", "application/x-www-form-urlencoded"}, headers...)
		resp, body := s.Do("POST", path, []byte(v.Encode()), h...)
		if resp.StatusCode == 403 && !strings.Contains(string(body), "no se envió desde este sitio") {
			t.Errorf("POST %s refused without saying why: %s", path, body)
		}
		return resp.StatusCode
	}
	report := url.Values{"id": {id}, "reason": {"not_my_number"}}
	respond := url.Values{"id": {id}, "message": {"Puedo llevar agua"}}
	publishForm := url.Values{"type": {"request"}, "emergencySlug": {"eje-cafetero"}, "title": {"Agua desde otro sitio"},
		"description": {"Prueba"}, "category": {"agua"}, "placeCode": {"63001"}, "contactName": {"Ana"},
		"contactWhatsapp": {"3001234567"}, "publishContact": {"true"}, "externalId": {"web-otro-sitio"}}
	for _, h := range [][]string{
		{"Sec-Fetch-Site", "cross-site", "Origin", "https://evil.example"},
		{"Sec-Fetch-Site", "same-site", "Origin", "https://sub." + strings.TrimPrefix(s.URL, "http://")},
		{"Origin", "https://evil.example"}, // a browser that sends no Sec-Fetch-Site
		{"Origin", "null"},
	} {
		for path, v := range map[string]url.Values{schema.ReportFormPath: report, schema.RespondFormPath: respond, "/pedir": publishForm} {
			if code := form(path, v, h...); code != 403 {
				t.Errorf("POST %s with %v: %d, want 403", path, h, code)
			}
		}
	}
	code, detail := detailStatus(t, s, id)
	contact, _ := detail["contact"].(map[string]any)
	if code != 200 || contact["whatsapp"] == nil {
		t.Fatalf("after the cross-site posts the record's phone: %d %v", code, detail["contact"])
	}
	if n, _ := detail["responses"].(float64); n != 0 {
		t.Errorf("a cross-site response counted: %v", detail["responses"])
	}
	if _, l := call(t, s, "GET", schema.HelpPath+"?view=list&q=otro+sitio", nil); l["total"] != float64(0) {
		t.Errorf("a cross-site publication was stored: %v", l)
	}
	// From the site's own page: the report hides the phone.
	if code := form(schema.ReportFormPath, report, "Sec-Fetch-Site", "same-origin", "Origin", s.URL); code != 200 {
		t.Fatalf("the site's own report form: %d", code)
	}
	if _, detail := detailStatus(t, s, id); detail["contact"].(map[string]any)["whatsapp"] != nil {
		t.Errorf("the site's own not_my_number report did not hide the phone")
	}
}

// TestFormRetryFromAnotherNetwork: a person whose first send's answer was lost sends the form again from
// another network (the phone went from wifi to mobile data): the page says the publication exists, and
// why this phone got no manage link and how to get it; from the first network the link comes.
func TestFormRetryFromAnotherNetwork(t *testing.T) {
	t.Parallel()
	s := testserver.Start(t, testserver.Options{})
	form := url.Values{"type": {"request"}, "emergencySlug": {"eje-cafetero"}, "title": {"Agua para la vereda"},
		"description": {"Sin agua desde ayer."}, "category": {"alimentos"}, "latitude": {"4.5339"}, "longitude": {"-75.6811"},
		"address": {"Vereda El Caimo"}, "contactName": {"Ana"}, "contactWhatsapp": {"3001234567"}, "publishContact": {"true"},
		"externalId": {"web-reintento-otra-red"}}
	send := func(ip string) string {
		t.Helper()
		req := s.NewRequest("POST", "/pedir", []byte(form.Encode()), "Content-Type", "application/x-www-form-urlencoded")
		resp, err := fromAddr(ip).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var b strings.Builder
		if _, err := io.Copy(&b, resp.Body); err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != 200 && resp.StatusCode != 201 {
			t.Fatalf("POST /pedir from %s: %d\n%s", ip, resp.StatusCode, b.String())
		}
		return b.String()
	}
	noLink, hiddenNote := "Este teléfono no recibió el enlace para gestionarla", `id="resultado-sin-gestion" class="aviso" hidden`
	first := send("127.0.0.1")
	if !strings.Contains(first, hiddenNote) || !strings.Contains(first, "/gestionar#id=") {
		t.Fatalf("the first send: no manage link, or the note of a missing one\n%s", first)
	}
	other := send("127.0.0.3")
	if !strings.Contains(other, "Esta solicitud ya estaba publicada") || strings.Contains(other, "/gestionar#id=") {
		t.Fatalf("the retry from another network: not told it exists, or given the manage link")
	}
	if strings.Contains(other, hiddenNote) || !strings.Contains(other, `id="resultado-sin-gestion" class="aviso">`+noLink) {
		t.Errorf("the retry from another network does not say why it has no manage link")
	}
	if again := send("127.0.0.1"); !strings.Contains(again, "/gestionar#id=") || !strings.Contains(again, hiddenNote) {
		t.Errorf("the retry from the first network: no manage link, or the note of a missing one shown")
	}
}

// TestManageHiddenRecord: a record hidden by reports tells its publisher so at /gestionar (its data are
// kept while it is reviewed) and offers only «Retirar», which erases them; not «se retiró».
func TestManageHiddenRecord(t *testing.T) {
	t.Parallel()
	s := testserver.Start(t, testserver.Options{})
	_, rec := publish(t, s, validRequest())
	id, token := rec["id"].(string), rec["manageToken"].(string)
	for _, ip := range []string{"127.0.0.41", "127.0.0.42", "127.0.0.43"} {
		report(t, s, ip, id, map[string]any{"reason": "spam"})
	}
	if code, body := detailStatus(t, s, id); code != 410 || body["recordStatus"] != "hidden" {
		t.Fatalf("the hidden record's detail: %d %v", code, body)
	}
	manage := func(v url.Values) string {
		t.Helper()
		resp, body := s.Do("POST", "/gestionar", []byte(v.Encode()), "Content-Type", "application/x-www-form-urlencoded")
		if resp.StatusCode != 200 {
			t.Fatalf("/gestionar %v: %d\n%s", v.Get("action"), resp.StatusCode, body)
		}
		return string(body)
	}
	page := manage(url.Values{"id": {id}, "token": {token}})
	if !strings.Contains(page, `<p id="gestion-publicacion" role="status">Esta publicación está oculta mientras quien opera el sitio revisa reportes`) {
		t.Errorf("/gestionar of a hidden record does not say it is hidden:\n%s", page)
	}
	for _, b := range []string{`value="resolve"`, `value="reopen"`, `value="renew"`} {
		if strings.Contains(page, b+">") || (strings.Contains(page, b) && !strings.Contains(page, b+" hidden>")) {
			t.Errorf("/gestionar of a hidden record offers %s", b)
		}
	}
	if !strings.Contains(page, `value="withdraw" class="peligro">`) {
		t.Errorf("/gestionar of a hidden record does not offer «Retirar»")
	}
	if page := manage(url.Values{"id": {id}, "token": {token}, "action": {"withdraw"}, "confirmar": {"si"}}); !strings.Contains(page, "quedó retirada") {
		t.Errorf("withdrawing the hidden record:\n%s", page)
	}
	if code, body := detailStatus(t, s, id); code != 410 || body["recordStatus"] != "withdrawn" {
		t.Fatalf("after the withdrawal: %d %v", code, body)
	}
}

// TestRespondFormShareSpent: the site's «Yo puedo ayudar» form, past a network's three responses to one
// record, says that the 48 hours are spent (not «intente en un minuto»).
func TestRespondFormShareSpent(t *testing.T) {
	t.Parallel()
	s := testserver.Start(t, testserver.Options{})
	_, rec := publish(t, s, validRequest())
	id := rec["id"].(string)
	for i := range 4 {
		v := url.Values{"id": {id}, "message": {fmt.Sprintf("Puedo llevar agua, viaje %d", i)}}
		resp, body := s.Do("POST", schema.RespondFormPath, []byte(v.Encode()), "Content-Type", "application/x-www-form-urlencoded")
		if i < 3 && resp.StatusCode != 200 {
			t.Fatalf("response %d: %d\n%s", i, resp.StatusCode, body)
		}
		if i == 3 && (resp.StatusCode != 429 || !strings.Contains(string(body), "respuestas a esta publicación en las últimas 48 horas") || strings.Contains(string(body), "un minuto")) {
			t.Fatalf("the fourth response from one network: %d\n%s", resp.StatusCode, body)
		}
	}
}
