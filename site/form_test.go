package site

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"

	"github.com/directaid/directaid/schema"
	"github.com/directaid/directaid/site/sitetest"
)

// fakePublish records what the form sent and answers with a canned API response.
type fakePublish struct {
	bodies []map[string]any
	status int
	resp   any
}

func (f *fakePublish) publish(_ context.Context, body []byte) (int, []byte) {
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		panic(err)
	}
	f.bodies = append(f.bodies, m)
	b, _ := json.Marshal(f.resp)
	return f.status, b
}

// formValues is what a person fills in /pedir.
func formValues(externalID string) url.Values {
	return url.Values{
		"type": {"offer"}, "source": {"intruso"}, // ignored: the page decides both
		"externalId": {externalID}, "emergencySlug": {"eje-cafetero"},
		"title": {"Agua para 4 familias"}, "category": {"alimentos"}, "description": {"Sin agua desde ayer"},
		"urgency": {"urgent"}, "neededPeople": {"12"}, "address": {"Calle 10 # 5-20"}, "neighborhood": {""},
		"latitude": {"4,5339"}, "longitude": {"-75.6811"}, "contactName": {"Ana"}, "contactWhatsapp": {"300 123 4567"},
		"publishContact": {"true"},
	}
}

func element(t *testing.T, doc *html.Node, id string) *html.Node {
	t.Helper()
	n := sitetest.ByID(doc, id)
	if n == nil {
		t.Fatalf("no element #%s", id)
	}
	return n
}

func TestFormPublishes(t *testing.T) {
	yes := false
	for _, tc := range []struct {
		name   string
		status int
		res    schema.PublishResult
		shown  []string // ids of the messages that must be visible
		hidden []string
	}{
		{"created", 201, schema.PublishResult{OK: true, ID: "abc", PublicURL: "http://ayuda.test/ayudas/abc"},
			[]string{"resultado-nuevo"}, []string{"resultado-duplicado", "resultado-distinto"}},
		{"retry", 200, schema.PublishResult{OK: true, Duplicate: true, ID: "abc", PublicURL: "http://ayuda.test/ayudas/abc"},
			[]string{"resultado-duplicado"}, []string{"resultado-nuevo", "resultado-distinto"}},
		{"changed", 200, schema.PublishResult{OK: true, Duplicate: true, ContentMatches: &yes, ID: "abc", PublicURL: "http://ayuda.test/ayudas/abc"},
			[]string{"resultado-duplicado", "resultado-distinto"}, []string{"resultado-nuevo"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.res.Type, tc.res.EmergencySlug, tc.res.CreatedAt = schema.TypeRequest, "eje-cafetero", time.Now()
			fake := &fakePublish{status: tc.status, resp: tc.res}
			c := newSite(t, Options{Emergencies: emergencies(eje, mojana), Service: &funcs{publish: fake.publish}})
			res, body := postForm(t, c, "/pedir", formValues("web-123"))
			if res.StatusCode != http.StatusOK || res.Header.Get("Cache-Control") != formCache {
				t.Fatalf("POST /pedir: %d, Cache-Control %q", res.StatusCode, res.Header.Get("Cache-Control"))
			}
			if len(fake.bodies) != 1 {
				t.Fatalf("published %d times", len(fake.bodies))
			}
			got := fake.bodies[0]
			want := map[string]any{"type": "request", "source": Source, "externalId": "web-123", "emergencySlug": "eje-cafetero",
				"title": "Agua para 4 familias", "category": "alimentos", "description": "Sin agua desde ayer", "urgency": "urgent",
				"neededPeople": 12.0, "address": "Calle 10 # 5-20", "latitude": 4.5339, "longitude": -75.6811,
				"contactName": "Ana", "contactWhatsapp": "300 123 4567", "publishContact": true}
			for k, v := range want {
				if got[k] != v {
					t.Errorf("published %s = %#v, want %#v", k, got[k], v)
				}
			}
			if len(got) != len(want) {
				t.Errorf("published %v, want exactly %v", got, want)
			}
			doc := sitetest.ParseHTML(t, body)
			if sitetest.HasAttr(element(t, doc, "resultado"), "hidden") || !sitetest.HasAttr(element(t, doc, "formulario"), "hidden") {
				t.Error("the success box must show and the form hide")
			}
			for _, id := range tc.shown {
				if sitetest.HasAttr(element(t, doc, id), "hidden") {
					t.Errorf("#%s hidden", id)
				}
			}
			for _, id := range tc.hidden {
				if !sitetest.HasAttr(element(t, doc, id), "hidden") {
					t.Errorf("#%s shown", id)
				}
			}
			if a := element(t, doc, "resultado-enlace"); sitetest.Attr(a, "href") != tc.res.PublicURL {
				t.Errorf("link to the record: %q", sitetest.Attr(a, "href"))
			}
		})
	}
}

func TestFormShowsErrors(t *testing.T) {
	fake := &fakePublish{status: 400, resp: schema.ErrorBody{Code: "consent_required", Error: "Falta el consentimiento.",
		Details: []schema.FieldError{
			{Field: "/title", Message: "«title» es obligatorio"},
			{Field: "/latitude", Message: "«latitude» debe ser un número (se recibió texto)"},
			{Field: "/publishContact", Message: "«publishContact» debe ser true"},
			{Field: "/externalId", Message: "«externalId» admite como máximo 200 caracteres"},
		}}}
	c := newSite(t, Options{Emergencies: emergencies(eje), Service: &funcs{publish: fake.publish}})
	vals := formValues("web-456")
	vals.Set("title", "  ")
	vals.Set("latitude", "cerca del río")
	vals.Set("description", `</textarea><script>alert(1)</script>`)
	vals.Del("publishContact")
	res, body := postForm(t, c, "/pedir", vals)
	if res.StatusCode != http.StatusBadRequest {
		t.Fatalf("POST /pedir: %d, want 400", res.StatusCode)
	}
	sent := fake.bodies[0]
	if _, has := sent["title"]; has || sent["latitude"] != "cerca del río" || sent["publishContact"] != false {
		t.Errorf("sent %v: an empty title is absent, a bad number goes as text, the unticked box as false", sent)
	}
	doc := sitetest.ParseHTML(t, body)
	sitetest.CheckStructure(t, "/pedir (errors)", doc)
	for id, want := range map[string]string{
		"f-title-error":          "«Título» es obligatorio",
		"f-latitude-error":       "«Latitud» debe ser un número (se recibió texto)",
		"f-publishContact-error": msg.Consent,
		"errores-mensaje":        msg.Fields,
	} {
		n := element(t, doc, id)
		if got := sitetest.Text(n); got != want || sitetest.HasAttr(n, "hidden") {
			t.Errorf("#%s reads %q (hidden %v), want %q", id, got, sitetest.HasAttr(n, "hidden"), want)
		}
	}
	if n := element(t, doc, "f-title"); sitetest.Attr(n, "aria-invalid") != "true" {
		t.Error("the title input is not marked invalid")
	}
	if n := element(t, doc, "f-contactName-error"); !sitetest.HasAttr(n, "hidden") {
		t.Error("a field without error shows one")
	}
	// The summary lists every error, linked to its field when it has one.
	list := sitetest.Text(element(t, doc, "errores-lista"))
	if !strings.Contains(list, "«externalId» admite como máximo 200 caracteres") || !strings.Contains(string(body), `<a href="#f-title">`) {
		t.Errorf("error summary: %s", list)
	}
	// What the person typed is kept, escaped, and the same externalId makes a resend idempotent.
	if v := sitetest.Attr(element(t, doc, "f-latitude"), "value"); v != "cerca del río" {
		t.Errorf("latitude kept as %q", v)
	}
	if v := sitetest.Text(element(t, doc, "f-description")); v != `</textarea><script>alert(1)</script>` || strings.Contains(string(body), "<script>alert") {
		t.Errorf("description kept as %q", v)
	}
	if !strings.Contains(string(body), `name="externalId" value="web-456"`) {
		t.Error("the externalId changed between the post and the page that shows its errors")
	}
	if n := element(t, doc, "f-publishContact"); sitetest.HasAttr(n, "checked") {
		t.Error("the consent box was ticked for the person")
	}
}

func TestFormSummaries(t *testing.T) {
	for _, tc := range []struct {
		status int
		resp   any
		want   string
	}{
		{429, schema.ErrorBody{Code: "rate_limited", Error: "Límite temporal."}, msg.Limit},
		{503, schema.ErrorBody{Code: "unavailable", Error: "No disponible."}, msg.Server},
		{400, schema.ErrorBody{Code: "no_active_emergency", Error: "No hay ninguna emergencia activa."}, "No hay ninguna emergencia activa."},
		{200, "not a result", msg.Server},
	} {
		fake := &fakePublish{status: tc.status, resp: tc.resp}
		c := newSite(t, Options{Emergencies: emergencies(eje), Service: &funcs{publish: fake.publish}})
		res, body := postForm(t, c, "/ofrecer", formValues("web-1"))
		doc := sitetest.ParseHTML(t, body)
		if got := sitetest.Text(element(t, doc, "errores-mensaje")); got != tc.want || res.StatusCode < 400 {
			t.Errorf("API %d: page %d says %q, want %q", tc.status, res.StatusCode, got, tc.want)
		}
		if fake.bodies[0]["type"] != "offer" {
			t.Errorf("/ofrecer published type %v", fake.bodies[0]["type"])
		}
	}
	// A body that is not a form never reaches the API.
	fake := &fakePublish{status: 201}
	c := newSite(t, Options{Emergencies: emergencies(eje), Service: &funcs{publish: fake.publish}})
	res, _ := sitetest.Do(t, c, http.MethodPost, testBase+"/pedir", strings.NewReader(`{"title":"x"}`), "Content-Type: application/json")
	if res.StatusCode != http.StatusUnsupportedMediaType || len(fake.bodies) != 0 {
		t.Errorf("JSON posted to /pedir: %d, published %d", res.StatusCode, len(fake.bodies))
	}
	res, _ = postForm(t, c, "/pedir", url.Values{"title": {strings.Repeat("x", schema.MaxBodyBytes)}})
	if res.StatusCode != http.StatusRequestEntityTooLarge || len(fake.bodies) != 0 {
		t.Errorf("huge form: %d, published %d", res.StatusCode, len(fake.bodies))
	}
}

func TestFormRender(t *testing.T) {
	// Several emergencies: a required choice, preselected from an emergency's page.
	c := newSite(t, Options{Emergencies: emergencies(eje, mojana)})
	_, body := sitetest.Get(t, c, testBase+"/pedir?emergencia=inundaciones-la-mojana")
	doc := sitetest.ParseHTML(t, body)
	sel := element(t, doc, "f-emergencySlug")
	if !sitetest.HasAttr(sel, "required") || !strings.Contains(string(body), `<option value="inundaciones-la-mojana" selected>`) {
		t.Errorf("emergency choice: %s", sitetest.Text(sel))
	}
	for id, want := range map[string]map[string]string{
		"f-contactWhatsapp": {"type": "tel", "autocomplete": "tel"},
		// Text, not number: a number input drops the decimal comma («4,5339» became 45339).
		"f-latitude":  {"type": "text", "inputmode": "decimal"},
		"f-longitude": {"type": "text", "inputmode": "decimal"},
		// Text with a numeric keyboard: a number input reads «1.000» (one thousand) as 1.
		"f-neededPeople":   {"type": "text", "inputmode": "numeric", "value": "1"},
		"f-title":          {"type": "text", "maxlength": "100", "required": ""},
		"f-publishContact": {"type": "checkbox", "value": "true", "required": ""},
	} {
		n := element(t, doc, id)
		for k, v := range want {
			if sitetest.Attr(n, k) != v || !sitetest.HasAttr(n, k) {
				t.Errorf("#%s %s=%q, want %q", id, k, sitetest.Attr(n, k), v)
			}
		}
	}
	if !strings.Contains(string(body), `<option value="needed" selected>Necesaria</option>`) {
		t.Error("urgency does not default to the schema's default")
	}
	// Each category says what it holds: a person who needs water finds it under food.
	for _, c := range schema.Categories {
		if !strings.Contains(string(body), `<option value="`+c+`">`+schema.CategoryChoices[c]+`</option>`) || schema.CategoryChoices[c] == "" ||
			!strings.HasPrefix(schema.CategoryChoices[c], schema.EnumLabels[c]) {
			t.Errorf("category %s: no option «%s» beginning with its label", c, schema.CategoryChoices[c])
		}
	}
	if !strings.Contains(string(body), "Alimentos y agua potable") {
		t.Error("water is not said under food")
	}
	form := element(t, doc, "formulario")
	if sitetest.Attr(form, "method") != "post" || sitetest.Attr(form, "action") != "/pedir" || sitetest.Attr(form, "data-api") != schema.HelpPath {
		t.Errorf("form attributes: %v", form.Attr)
	}
	// One externalId per render.
	_, again := sitetest.Get(t, c, testBase+"/pedir")
	if a, b := externalID(t, body), externalID(t, again); a == "" || a == b {
		t.Errorf("externalId %q then %q: want a fresh one per render", a, b)
	}

	// One emergency: implicit, named, sent in a hidden field.
	c = newSite(t, Options{Emergencies: emergencies(eje)})
	_, body = sitetest.Get(t, c, testBase+"/ofrecer")
	if sitetest.ByID(sitetest.ParseHTML(t, body), "f-emergencySlug") != nil ||
		!strings.Contains(string(body), `<input type="hidden" name="emergencySlug" value="eje-cafetero">`) ||
		!strings.Contains(string(body), "Terremoto en el Eje Cafetero") {
		t.Error("with one emergency the choice must be implicit and named")
	}
	if strings.Contains(string(body), `id="f-neighborhood"`) || !strings.Contains(string(body), `id="f-collectionCenterStatus"`) {
		t.Error("the offer form must follow the offer schema")
	}

	// None: no form, and the page says why.
	c = newSite(t, Options{})
	_, body = sitetest.Get(t, c, testBase+"/pedir")
	if strings.Contains(string(body), `id="formulario"`) || !strings.Contains(string(body), `id="sin-emergencia"`) {
		t.Error("with no active emergency the form must not show")
	}
}

func externalID(t *testing.T, page []byte) string {
	t.Helper()
	var id string
	for _, part := range strings.Split(string(page), `name="externalId" value="`)[1:] {
		id, _, _ = strings.Cut(part, `"`)
	}
	return id
}

// TestFormWholeNumberAsPeopleTypeIt: «1.000» personas is one thousand, as Colombians write it, not one;
// a decimal is sent as typed, for the API to say it must be whole.
func TestFormWholeNumberAsPeopleTypeIt(t *testing.T) {
	fake := &fakePublish{status: 201, resp: schema.PublishResult{OK: true, ID: "abc", PublicURL: "http://ayuda.test/ayudas/abc"}}
	c := newSite(t, Options{Emergencies: emergencies(eje), Service: &funcs{publish: fake.publish}})
	for typed, want := range map[string]any{"1.000": 1000.0, "12.500": 12500.0, "12": 12.0, "2,5": 2.5} {
		vals := formValues("web-" + typed)
		vals.Set("neededPeople", typed)
		postForm(t, c, "/pedir", vals)
		if got := fake.bodies[len(fake.bodies)-1]["neededPeople"]; got != want {
			t.Errorf("«%s» personas sent as %#v, want %#v", typed, got, want)
		}
	}
}

// TestFormPointAsPeopleTypeIt: a point pasted whole in «Latitud» («4.5339, -75.6811», as a map copies it)
// fills both fields; a number in Go's syntax («4_5») is no number; and a longitude without its minus
// sign is said, as the lists' nearby filter says it.
func TestFormPointAsPeopleTypeIt(t *testing.T) {
	fake := &fakePublish{status: 201, resp: schema.PublishResult{OK: true, ID: "abc", PublicURL: "http://ayuda.test/ayudas/abc"}}
	c := newSite(t, Options{Emergencies: emergencies(eje), Service: &funcs{publish: fake.publish}})
	vals := formValues("web-789")
	vals.Set("latitude", " 4.5339, -75.6811 ")
	vals.Set("longitude", "")
	postForm(t, c, "/pedir", vals)
	if got := fake.bodies[0]; got["latitude"] != 4.5339 || got["longitude"] != -75.6811 {
		t.Errorf("a pasted point: sent latitude %#v, longitude %#v", got["latitude"], got["longitude"])
	}
	vals.Set("latitude", "4_5")
	vals.Set("longitude", "-75.6811")
	postForm(t, c, "/pedir", vals)
	if got := fake.bodies[1]; got["latitude"] != "4_5" {
		t.Errorf("«4_5» was sent as %#v, not as the text typed", got["latitude"])
	}
	// «4,5339» with «Longitud» empty is a latitude with a decimal comma (the hint's way), not a point.
	vals.Set("latitude", "4,5339")
	vals.Set("longitude", "")
	postForm(t, c, "/pedir", vals)
	if got := fake.bodies[2]; got["latitude"] != 4.5339 || got["longitude"] != nil {
		t.Errorf("«4,5339» alone: sent latitude %#v, longitude %#v", got["latitude"], got["longitude"])
	}
	// A point pasted whole with decimal commas, as a phone set to Spanish copies it: both fields.
	for _, pasted := range []string{"4,5339, -75,6811", "4,5339; -75,6811", "4,5339 -75,6811"} {
		vals.Set("latitude", pasted)
		vals.Set("longitude", "")
		postForm(t, c, "/pedir", vals)
		if got := fake.bodies[len(fake.bodies)-1]; got["latitude"] != 4.5339 || got["longitude"] != -75.6811 {
			t.Errorf("%q pasted: sent latitude %#v, longitude %#v", pasted, got["latitude"], got["longitude"])
		}
	}
	vals.Set("latitude", "4,5339")
	vals.Set("longitude", "")
	// …and the missing longitude is said at «Longitud», not as «Diga dónde» at the place picker.
	lacks := &fakePublish{status: 400, resp: schema.ErrorBody{Code: "invalid_body", Error: "Datos inválidos.",
		Details: []schema.FieldError{{Field: "/longitude", Message: "«longitude» es obligatorio cuando se da «latitude»: las coordenadas van juntas"}}}}
	c2 := newSite(t, Options{Emergencies: emergencies(eje), Service: &funcs{publish: lacks.publish}})
	if _, body := postForm(t, c2, "/pedir", vals); !strings.Contains(string(body), `<a href="#f-longitude">«Longitud» es obligatorio cuando se da «Latitud»`) ||
		strings.Contains(string(body), `<a href="#f-placeCode">`) {
		t.Errorf("a latitude without its longitude is not said at «Longitud»:\n%s", body)
	}

	refuse := &fakePublish{status: 400, resp: schema.ErrorBody{Code: "invalid_body", Error: "Datos inválidos.",
		Details: []schema.FieldError{{Field: "/longitude", Message: "«longitude» debe ser menor o igual que -66.8"}}}}
	c = newSite(t, Options{Emergencies: emergencies(eje), Service: &funcs{publish: refuse.publish}})
	vals.Set("latitude", "4.5339")
	vals.Set("longitude", "75,6811")
	_, body := postForm(t, c, "/pedir", vals)
	if !strings.Contains(string(body), "¿Le faltó el signo menos a la longitud? En Colombia es negativa: -75,6811.") ||
		!strings.Contains(string(body), "-66.8. El punto") {
		t.Errorf("a longitude without its minus sign is not said:\n%s", body)
	}
	// Pasted whole, the minus sign missing: said of the fields as split.
	vals.Set("latitude", "4.5339, 75.6811")
	vals.Set("longitude", "")
	_, body = postForm(t, c, "/pedir", vals)
	if !strings.Contains(string(body), "¿Le faltó el signo menos a la longitud?") || !strings.Contains(string(body), `value="75.6811"`) {
		t.Errorf("a pasted point without its minus sign is not said, or not split:\n%s", body)
	}
}
