package e2e

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/directaid/directaid/internal/testserver"
	"github.com/directaid/directaid/schema"
	"github.com/directaid/directaid/site/sitetest"
)

// TestSiteThroughBinary crawls the real site with records published (one with markup in every text
// field, and enough for the lists to page): every sitemap page and its twin — the records' pages among
// them —, every link, llms.txt; then fetches the links that leave the site for the API and MCP.
func TestSiteThroughBinary(t *testing.T) {
	t.Parallel()
	s := testserver.Start(t, testserver.Options{})
	known, hostile, offers := seedSite(t, s)
	res := sitetest.Check(t, http.DefaultClient, s.URL)
	if want := 10 + len(known) + 1 + len(offers); len(res.Pages) != want { // home, 2 emergencies and their maps, 5 pages, records
		t.Fatalf("sitemap lists %d pages, want %d: %v", len(res.Pages), want, res.Pages)
	}
	if !slices.Contains(res.Pages, s.URL+"/ayudas/"+hostile) || !slices.Contains(res.Outside, "https://wa.me/573005550009") {
		t.Errorf("the crawl missed the records' pages: pages %v, outside links %v", res.Pages, res.Outside)
	}
	for _, want := range []string{"/emergencias/eje-cafetero", "/emergencias/inundaciones-la-mojana", "/integraciones", "/privacidad", "/pedir", "/ofrecer"} {
		found := false
		for _, p := range res.Pages {
			found = found || strings.HasSuffix(p, want)
		}
		if !found {
			t.Errorf("sitemap misses %s", want)
		}
	}
	if len(res.External) == 0 {
		t.Fatal("the pages link to neither the API nor MCP")
	}
	for _, u := range res.External {
		if strings.HasSuffix(u, schema.EventsPath) { // a stream that does not end: its head is enough
			ctx, cancel := context.WithCancel(context.Background())
			resp, err := http.DefaultClient.Do(s.NewRequest("GET", u, nil).WithContext(ctx))
			if err != nil || resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
				t.Errorf("GET %s: %v %v", u, resp, err)
			}
			if err == nil {
				resp.Body.Close()
			}
			cancel()
			continue
		}
		resp, _ := s.Do("GET", u, nil)
		// GET /mcp answers 405 by design (no server-initiated stream); everything else must be 200.
		want := http.StatusOK
		if strings.HasSuffix(u, "/mcp") {
			want = http.StatusMethodNotAllowed
		}
		if resp.StatusCode != want {
			t.Errorf("GET %s: %d, want %d", u, resp.StatusCode, want)
		}
	}
}

// TestSiteFormWithoutJavaScript posts the request form as a browser without JavaScript does.
func TestSiteFormWithoutJavaScript(t *testing.T) {
	t.Parallel()
	s := testserver.Start(t, testserver.Options{})
	form := "type=request&source=directaid-web&externalId=web-e2e-1&emergencySlug=eje-cafetero&title=Agua&category=alimentos" +
		"&address=Cra+1&latitude=4.5&longitude=-75.6&contactName=Ana&contactWhatsapp=3001234567&publishContact=true"
	resp, body := s.Do("POST", "/pedir", []byte(form), "Content-Type", "application/x-www-form-urlencoded")
	if resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusOK {
		t.Fatalf("form post: %d\n%s", resp.StatusCode, body)
	}
	if !strings.Contains(string(body), "/ayudas/") {
		t.Errorf("the success page should link to the record:\n%s", body)
	}
	// The same fill again is an idempotent retry: the API sees the same pair.
	r2, out := publish(t, s, map[string]any{"type": "request", "source": "directaid-web", "externalId": "web-e2e-1", "emergencySlug": "eje-cafetero",
		"title": "Agua", "category": "alimentos", "address": "Cra 1", "latitude": 4.5, "longitude": -75.6, "contactName": "Ana",
		"contactWhatsapp": "3001234567", "publishContact": true})
	if r2.StatusCode != 200 || out["duplicate"] != true {
		t.Errorf("form record not found by its pair: %d %v", r2.StatusCode, out)
	}
	// Missing consent: the page shows the field's error and nothing is stored.
	resp, body = s.Do("POST", "/pedir", []byte(strings.Replace(strings.Replace(form, "&publishContact=true", "", 1), "web-e2e-1", "web-e2e-2", 1)), "Content-Type", "application/x-www-form-urlencoded")
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), "f-publishContact-error") {
		t.Errorf("form without consent: %d\n%s", resp.StatusCode, body)
	}
}
