package e2e

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/directaid/directaid/internal/testserver"
)

// TestSiteErrorPagesForPeople: past the rate limits, through the real Caddy and caddy-ratelimit (whose
// 429 has no body and reaches us in handle_errors), a person gets a page in Spanish with the seconds
// of Retry-After — the no-JavaScript form back as they filled it — while the API and clients that ask
// for JSON get the error body.
func TestSiteErrorPagesForPeople(t *testing.T) {
	t.Parallel()
	s := testserver.Start(t, testserver.Options{PublishEvents: 1, DetailEvents: 1})
	_, res := publish(t, s, validRequest())
	id := res["id"].(string)
	browser := []string{"Accept", "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"}
	if resp, _ := s.Do("GET", "/ayudas/"+id, nil, browser...); resp.StatusCode != 200 {
		t.Fatalf("first record page: %d", resp.StatusCode)
	}
	// Over the limit, the record's page shows the record without its phone, and says when it shows.
	resp, body := s.Do("GET", "/ayudas/"+id, nil, browser...)
	ra := resp.Header.Get("Retry-After")
	if resp.StatusCode != 429 || ra == "" || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") || resp.Header.Get("Cache-Control") != "no-store" ||
		!strings.Contains(string(body), "vuelva a cargar esta página en "+ra+" segundo") || !strings.Contains(string(body), validRequest()["title"].(string)) ||
		strings.Contains(string(body), "rate_limited") {
		t.Errorf("record page over the limit: %d %q Retry-After %q\n%s", resp.StatusCode, resp.Header.Get("Content-Type"), ra, body)
	}
	for _, path := range []string{"/ayudas/" + id, "/ayudas/" + id + ".md"} {
		_, body := s.Do("GET", path, nil, browser...)
		for _, phone := range []string{"3001234567", "300 123 4567", "300&nbsp;123", "wa.me/57", "tel:+57"} {
			if strings.Contains(string(body), phone) {
				t.Errorf("%s over the limit shows the phone (%q):\n%s", path, phone, body)
			}
		}
	}
	// A record that shows no phone anyway (someone said the number is theirs) says why, not «vuelva a cargar».
	resp, err := fromAddr("127.0.0.2").Do(s.NewRequest("POST", "/api/public/v1/help", mustJSON(t, with(validRequest(), "externalId", "sin-numero")), "Content-Type", "application/json"))
	if err != nil {
		t.Fatal(err)
	}
	var other map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&other)
	resp.Body.Close()
	otherID, _ := other["id"].(string)
	if resp, out := report(t, s, "127.0.0.3", otherID, map[string]any{"reason": "not_my_number"}); resp.StatusCode != 202 {
		t.Fatalf("report: %d %v", resp.StatusCode, out)
	}
	if resp, body := s.Do("GET", "/ayudas/"+otherID, nil, browser...); resp.StatusCode != 429 || !strings.Contains(string(body), "alguien informó que el número no es de quien publicó") ||
		strings.Contains(string(body), "vuelva a cargar esta página en") {
		t.Errorf("a record without its phone, over the limit: %d\n%s", resp.StatusCode, body)
	}
	if resp, body := s.Do("GET", "/ayudas/"+id, nil, "Accept", "application/json"); resp.StatusCode != 429 || !strings.Contains(string(body), `"code":"rate_limited"`) {
		t.Errorf("a client that asks for JSON gets JSON: %d %s", resp.StatusCode, body)
	}
	if resp, body := s.Do("GET", "/api/public/v1/help?view=detail&id="+id, nil, browser...); resp.StatusCode != 429 || !strings.Contains(string(body), `"code":"rate_limited"`) {
		t.Errorf("the API answers JSON whatever Accept says: %d %s", resp.StatusCode, body)
	}

	// The publish budget (1) is spent: the no-JavaScript form comes back with what was written.
	form := url.Values{"emergencySlug": {"eje-cafetero"}, "title": {"Agua para la vereda"}, "category": {"alimentos"},
		"externalId": {"web-limite-1"}, "contactName": {"Rosa"}, "contactWhatsapp": {"3001234567"}, "publishContact": {"true"}}
	resp, body = s.Do("POST", "/pedir", []byte(form.Encode()), append([]string{"Content-Type", "application/x-www-form-urlencoded"}, browser...)...)
	page := string(body)
	if resp.StatusCode != http.StatusTooManyRequests || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") ||
		!strings.Contains(page, "Hay muchas publicaciones desde su red; intente en "+resp.Header.Get("Retry-After")+" segundo") ||
		!strings.Contains(page, `value="Agua para la vereda"`) || !strings.Contains(page, `value="web-limite-1"`) {
		t.Fatalf("form over the publish limit: %d %q\n%s", resp.StatusCode, resp.Header.Get("Content-Type"), page)
	}
	if strings.Contains(page, `{"error"`) || strings.Contains(page, "rate_limited") || strings.Contains(visible(page), "externalId") {
		t.Errorf("a person reads JSON or developer words:\n%s", page)
	}
}

// visible drops the tags and attributes of an HTML page (and its scripts), leaving what a person reads.
func visible(page string) string {
	var b strings.Builder
	in := false
	for _, r := range page {
		switch {
		case r == '<':
			in = true
		case r == '>':
			in = false
		case !in:
			b.WriteRune(r)
		}
	}
	return b.String()
}
