package site

import (
	"golang.org/x/net/html"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

// serveErr calls ServeError as the Caddy layer does inside handle_errors: Retry-After already set.
func serveErr(t *testing.T, h http.Handler, r *http.Request, status int, retryAfter string) *httptest.ResponseRecorder {
	t.Helper()
	rec := httptest.NewRecorder()
	if retryAfter != "" {
		rec.Header().Set("Retry-After", retryAfter)
	}
	if !ServeError(h, rec, r, status) {
		t.Fatal("ServeError refused the site's own handler")
	}
	return rec
}

// People get pages in Spanish saying what to do next, never an error body.
func TestErrorPages(t *testing.T) {
	h, err := New(Options{Emergencies: emergencies(eje, mojana)})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		path   string
		status int
		retry  string
		want   []string
	}{
		{"/ayudas/06h0esgyp8jkswec", 429, "17", []string{"Hay muchas consultas desde su red; intente en 17 segundos", "teléfono"}},
		{"/emergencias/eje-cafetero", 429, "", []string{"intente en un minuto"}},
		{"/ayudas/06h0esgyp8jkswec", 410, "", []string{"ya no está", "retirada"}},
		{"/", 503, "30", []string{"no está disponible", "en 30 segundos"}},
		{"/no-existe", 404, "", []string{"Página no encontrada"}},
		{"/pedir", 500, "", []string{"Algo falló"}},
	} {
		rec := serveErr(t, h, httptest.NewRequest("GET", c.path, nil), c.status, c.retry)
		body := rec.Body.String()
		if rec.Code != c.status || !strings.HasPrefix(rec.Header().Get("Content-Type"), "text/html") || rec.Header().Get("Cache-Control") != "no-store" {
			t.Errorf("%s %d: got %d %q %q", c.path, c.status, rec.Code, rec.Header().Get("Content-Type"), rec.Header().Get("Cache-Control"))
		}
		for _, w := range c.want {
			if !strings.Contains(body, w) {
				t.Errorf("%s %d: no %q in\n%s", c.path, c.status, w, body)
			}
		}
		if strings.Contains(body, `"code"`) || strings.Contains(body, "rate_limited") {
			t.Errorf("%s %d: an error body shown to a person:\n%s", c.path, c.status, body)
		}
	}
	// A twin's error is Markdown.
	rec := serveErr(t, h, httptest.NewRequest("GET", "/ayudas/x.md", nil), 429, "5")
	if !strings.HasPrefix(rec.Header().Get("Content-Type"), "text/markdown") || !strings.Contains(rec.Body.String(), "# Hay muchas consultas") {
		t.Errorf("twin 429: %q\n%s", rec.Header().Get("Content-Type"), rec.Body.String())
	}
}

// Over the publish limit, the no-JavaScript form comes back as the person filled it, with the wait at
// the top: no JSON, no "externalId" in what they read, and the same externalId so a resend is safe.
func TestFormOverPublishLimit(t *testing.T) {
	h, err := New(Options{Emergencies: emergencies(eje, mojana)})
	if err != nil {
		t.Fatal(err)
	}
	vals := url.Values{"emergencySlug": {"eje-cafetero"}, "title": {"Agua para 12 familias"}, "externalId": {"web-abc"},
		"contactName": {"Ana"}, "contactWhatsapp": {"3001234567"}, "publishContact": {"true"}}
	r := httptest.NewRequest("POST", "/pedir", strings.NewReader(vals.Encode()))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	rec := serveErr(t, h, r, 429, "42")
	body := rec.Body.String()
	if rec.Code != 429 || !strings.HasPrefix(rec.Header().Get("Content-Type"), "text/html") {
		t.Fatalf("%d %q", rec.Code, rec.Header().Get("Content-Type"))
	}
	for _, w := range []string{"Hay muchas publicaciones desde su red; intente en 42 segundos", `value="Agua para 12 familias"`,
		`name="externalId" value="web-abc"`, "checked"} {
		if !strings.Contains(body, w) {
			t.Errorf("no %q in the form page", w)
		}
	}
	if text := visibleText(body); strings.Contains(text, "externalId") || strings.Contains(text, "{") {
		t.Errorf("the person reads a developer's words: %s", text)
	}
}

// visibleText is the text of an HTML page as a person reads it (no tags, no attributes, no script).
func visibleText(page string) string {
	z := html.NewTokenizer(strings.NewReader(page))
	var b strings.Builder
	skip := false
	for {
		switch z.Next() {
		case html.ErrorToken:
			return b.String()
		case html.StartTagToken:
			n, _ := z.TagName()
			skip = string(n) == "script" || string(n) == "style" || string(n) == "title"
		case html.EndTagToken:
			skip = false
		case html.TextToken:
			if !skip {
				b.Write(z.Text())
				b.WriteByte(' ')
			}
		}
	}
}
