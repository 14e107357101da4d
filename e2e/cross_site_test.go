package e2e

import (
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
