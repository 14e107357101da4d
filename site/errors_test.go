package site

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"

	"golang.org/x/net/html"

	"github.com/directaid/directaid/schema"
	"github.com/directaid/directaid/site/sitetest"
)

// serveErr calls ServeError as the Caddy layer does inside handle_errors: Retry-After already set.
func serveErr(t *testing.T, h http.Handler, r *http.Request, status int, retryAfter, zone string) *httptest.ResponseRecorder {
	t.Helper()
	rec := httptest.NewRecorder()
	if retryAfter != "" {
		rec.Header().Set("Retry-After", retryAfter)
	}
	if !ServeError(h, rec, r, status, zone) {
		t.Fatal("ServeError refused the site's own handler")
	}
	return rec
}

// testLimits stand for the zones' words, which the site is given (Options.LimitPages).
var testLimits = map[string]LimitPage{
	"detail": {Explain: "Este sitio limita las páginas con número de teléfono.", Advice: "Espere {espera} y vuelva a cargar esta página."},
	"manage": {Explain: "Este sitio limita las acciones.", Advice: "Espere {espera} y vuelva a [gestionar]({inicio}/gestionar)."},
}

// People get pages in Spanish saying what to do next, never an error body; a 429 page says what the
// zone that refused limits, and what to do, with the wait and links filled in.
func TestErrorPages(t *testing.T) {
	h, err := New(Options{Emergencies: emergencies(eje, mojana), LimitPages: testLimits})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		path   string
		status int
		retry  string
		zone   string
		want   []string
	}{
		{"/ayudas/06h0esgyp8jkswec", 429, "17", "detail", []string{"Hay muchas consultas desde su red; intente en 17 segundos", "teléfono",
			"Espere 17 segundos y vuelva a cargar"}},
		{"/emergencias/eje-cafetero", 429, "", "detail", []string{"intente en un minuto"}},
		{"/gestionar", 429, "3", "manage", []string{"limita las acciones", `Espere 3 segundos y vuelva a <a href="http://example.com/gestionar">gestionar</a>`}},
		{"/ayudas/06h0esgyp8jkswec", 410, "", "", []string{"ya no está", "retirada"}},
		{"/", 503, "30", "", []string{"no está disponible", "en 30 segundos"}},
		{"/no-existe", 404, "", "", []string{"Página no encontrada"}},
		{"/pedir", 500, "", "", []string{"Algo falló"}},
	} {
		rec := serveErr(t, h, httptest.NewRequest("GET", c.path, nil), c.status, c.retry, c.zone)
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
	rec := serveErr(t, h, httptest.NewRequest("GET", "/ayudas/x.md", nil), 429, "5", "detail")
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
	rec := serveErr(t, h, r, 429, "42", "publish")
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

// A response over the respond limit comes back as written, with the wait, ready to send again.
func TestRespondOverItsLimit(t *testing.T) {
	h, err := New(Options{Emergencies: emergencies(eje, mojana)})
	if err != nil {
		t.Fatal(err)
	}
	vals := url.Values{"id": {"06h0esgyp8jkswec"}, "tipo": {"request"}, "message": {"Tengo agua; la llevo a las 4"},
		"contactName": {"Luis"}, "contactWhatsapp": {"311 222 3344"}}
	r := httptest.NewRequest("POST", "/responder", strings.NewReader(vals.Encode()))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	rec := serveErr(t, h, r, 429, "25", "respond")
	body := rec.Body.String()
	if rec.Code != 429 || !strings.HasPrefix(rec.Header().Get("Content-Type"), "text/html") {
		t.Fatalf("%d %q", rec.Code, rec.Header().Get("Content-Type"))
	}
	for _, w := range []string{"Hay muchas respuestas desde su red; intente en 25 segundos", ">Tengo agua; la llevo a las 4</textarea>",
		`value="Luis"`, `value="311 222 3344"`, `name="id" value="06h0esgyp8jkswec"`, `action="/responder"`} {
		if !strings.Contains(body, w) {
			t.Errorf("no %q in the page:\n%s", w, body)
		}
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

// Without JavaScript, a refused form comes back with its error summary first (before the form's first
// field), in the order of the fields on the page, the emergency named by its title, not its slug.
func TestFormErrorSummaryOrder(t *testing.T) {
	f := &fakePublish{status: 400, resp: schema.ErrorBody{Code: "invalid_body", Error: "x", Details: []schema.FieldError{
		{Field: "/publishContact", Message: "«publishContact» debe ser true"},
		{Field: "/contactWhatsapp", Message: "«contactWhatsapp» no es un número de teléfono"},
		{Field: "/title", Message: "«title» es obligatorio"},
		{Field: "/emergencySlug", Message: "«emergencySlug» es obligatorio porque hay varias emergencias activas: eje-cafetero, inundaciones-la-mojana"},
	}}}
	c := newSite(t, Options{Emergencies: emergencies(eje, mojana), Service: &funcs{publish: f.publish}})
	vals := formValues("web-1")
	vals.Del("emergencySlug")
	res, body := sitetest.Do(t, c, "POST", testBase+"/pedir", strings.NewReader(vals.Encode()), "Content-Type: application/x-www-form-urlencoded")
	page := string(body)
	if res.StatusCode != 400 {
		t.Fatalf("%d", res.StatusCode)
	}
	list := page[strings.Index(page, `<ul id="errores-lista">`):]
	list = list[:strings.Index(list, "</ul>")]
	var order []int
	for _, id := range []string{"f-emergencySlug", "f-title", "f-contactWhatsapp", "f-publishContact"} {
		i := strings.Index(list, `href="#`+id+`"`)
		if i < 0 {
			t.Fatalf("no %s in the summary: %s", id, list)
		}
		order = append(order, i)
	}
	if !slices.IsSorted(order) {
		t.Errorf("summary not in field order: %s", list)
	}
	if !strings.Contains(list, "«Terremoto en el Eje Cafetero» o «Inundaciones en La Mojana»") || strings.Contains(list, "inundaciones-la-mojana") {
		t.Errorf("the emergency is not named by its title: %s", list)
	}
	if s, first := strings.Index(page, `id="errores"`), strings.Index(page, `id="f-emergencySlug"`); s < 0 || s > first {
		t.Errorf("the summary comes after the first field")
	}
}
