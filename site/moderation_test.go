package site

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/directaid/directaid/site/sitetest"
)

// fakeModeration is a queue of two records and a log of the actions applied; the moderator is the
// X-Test-User header (Caddy's authenticated user in the real server).
type fakeModeration struct {
	acts []string
}

const (
	hashA = "aaaaaaaa11112222333344445555666"
	hashB = "bbbbbbbb99990000111122223333444"
	hashC = "cccccccc99990000111122223333444"
)

func (f *fakeModeration) options() *Moderation {
	at := time.Date(2026, 8, 12, 15, 4, 0, 0, time.UTC)
	return &Moderation{
		Moderator: func(r *http.Request) string { return r.Header.Get("X-Test-User") },
		Queue: func(context.Context) ([]ModerationItem, error) {
			return []ModerationItem{
				{ID: "01k2x3y4z5a6b7c8", Type: "request", EmergencySlug: "eje-cafetero", Status: "hidden", Title: "Agua para 5 personas",
					Category: "alimentos", Urgency: "urgent", Address: "Finca La Esperanza", Neighborhood: "Vereda El Caimo", PlaceCode: "63001001",
					ContactName: "Ana", Phone: "+573001234567", CreatedAt: at, Reports: []ModerationReport{
						{Reason: "spam", Reporter: hashA, At: at, Note: "repetido <b>x</b>"},
						{Reason: "fraud", Reporter: hashB, At: at}}},
				{ID: "01k2x3y4z5a6b7c9", Type: "offer", EmergencySlug: "eje-cafetero", Status: "open", Title: "Transporte", ContactHidden: true,
					CreatedAt: at, Reports: []ModerationReport{{Reason: "not_my_number", Reporter: hashA, At: at}}},
				{ID: "01k2x3y4z5a6b7ca", Type: "request", EmergencySlug: "eje-cafetero", Status: "open", Title: "Insulina", CreatedAt: at,
					HiddenResponses: []ModerationResponse{{ID: "3f9a1c0b7d2e4a61", Message: "Tengo insulina, la llevo hoy", ContactName: "Luis",
						Phone: "+573105550101", CreatedAt: at, Reporters: []string{hashA, hashB, hashC}}}},
			}, nil
		},
		Act: func(_ context.Context, id, action, status string) error {
			if id == "0000000000000000" {
				return ErrNotFound
			}
			f.acts = append(f.acts, action+" "+id+" "+status)
			return nil
		},
		RestoreReporter: func(_ context.Context, reporter string) (int, int, error) {
			f.acts = append(f.acts, "restore_reporter "+reporter)
			return 2, 1, nil
		},
		RestoreResponse: func(_ context.Context, id, rid string) error {
			if rid != "3f9a1c0b7d2e4a61" {
				return ErrNotFound
			}
			f.acts = append(f.acts, "restore_response "+id+" "+rid)
			return nil
		},
		Key: func(context.Context) ([]byte, error) { return []byte("test key"), nil },
	}
}

func TestModerationRefusedWithoutUser(t *testing.T) {
	f := &fakeModeration{}
	c := newSite(t, Options{Emergencies: emergencies(eje), Moderation: f.options()})
	for _, method := range []string{"GET", "POST"} {
		resp, body := sitetest.Do(t, c, method, testBase+"/moderacion", strings.NewReader("action=hide&id=01k2x3y4z5a6b7c8"),
			"Content-Type: application/x-www-form-urlencoded")
		if resp.StatusCode != http.StatusUnauthorized || resp.Header.Get("WWW-Authenticate") != `Basic realm="moderacion", charset="UTF-8"` {
			t.Fatalf("%s without a user: %d, WWW-Authenticate %q", method, resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
		}
		if !strings.Contains(string(body), "Acceso solo para moderación") || strings.Contains(string(body), "Agua para 5") {
			t.Errorf("%s 401 page:\n%s", method, body)
		}
		if resp.Header.Get("Cache-Control") != "no-store" || !strings.Contains(resp.Header.Get("X-Robots-Tag"), "noindex") {
			t.Errorf("%s 401 headers: %v", method, resp.Header)
		}
	}
	if len(f.acts) != 0 {
		t.Errorf("acted without a user: %v", f.acts)
	}
	// No Moderation: no page at all.
	c = newSite(t, Options{Emergencies: emergencies(eje)})
	if resp, _ := sitetest.Get(t, c, testBase+"/moderacion", "X-Test-User: ana"); resp.StatusCode != http.StatusNotFound {
		t.Errorf("without Moderation: %d, want 404", resp.StatusCode)
	}
}

func TestModerationPage(t *testing.T) {
	f := &fakeModeration{}
	c := newSite(t, Options{Emergencies: emergencies(eje), Moderation: f.options()})
	resp, body := sitetest.Get(t, c, testBase+"/moderacion", "X-Test-User: ana")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET: %d\n%s", resp.StatusCode, body)
	}
	if resp.Header.Get("Cache-Control") != "no-store" || !strings.Contains(resp.Header.Get("X-Robots-Tag"), "noindex") ||
		resp.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("headers: %v", resp.Header)
	}
	doc := sitetest.ParseHTML(t, body)
	sitetest.CheckStructure(t, "/moderacion", doc)
	text := strings.Join(strings.Fields(sitetest.VisibleText(doc)), " ")
	for _, want := range []string{"Usuario de moderación: ana", "Publicaciones por revisar (3)", "Agua para 5 personas", "Oculta mientras se revisa",
		"teléfono oculto", "+573001234567", "Es publicidad", "Parece un engaño", "Es mi número y no quiero que se muestre", "«repetido <b>x</b>»",
		"12 de agosto, 10:04", "aaaaaaaa : 3 reportes", "bbbbbbbb : 2 reportes", "cccccccc : 1 reporte",
		"Respuestas ocultas por reportes: 1", "«Tengo insulina, la llevo hoy»", "Luis · +573105550101 · la reportaron: aaaaaaaa , bbbbbbbb , cccccccc",
		// What a moderator needs to judge a report: the category and urgency, where, and the record's page.
		"Alimentos · Urgente", "Dónde: Finca La Esperanza · Vereda El Caimo · El Caimo, Armenia (Quindío)", "su página"} {
		if !strings.Contains(text, want) {
			t.Errorf("page lacks %q:\n%s", want, text)
		}
	}
	if n := strings.Count(string(body), ">Restaurar todo lo que ocultó</button>"); n != 3 {
		t.Errorf("%d «Restaurar todo lo que ocultó» buttons, want 3", n)
	}
	if n := strings.Count(string(body), ">Mostrar de nuevo</button>"); n != 1 {
		t.Errorf("%d «Mostrar de nuevo» buttons, want 1", n)
	}
	// Withdrawing erases: only «Borrar datos personales…», which asks first, does it from the page.
	// «Ocultar solo el teléfono» where a phone shows: the first record's (hidden, phone shown), not the
	// second's (phone hidden already).
	if n := strings.Count(string(body), `value="hide_phone"`); n != 1 {
		t.Errorf("%d «Ocultar solo el teléfono» buttons, want 1", n)
	}
	if !strings.Contains(string(body), `<a href="/ayudas/01k2x3y4z5a6b7c8">su página</a>`) {
		t.Error("a queued record has no link to its page")
	}
	if strings.Contains(string(body), `<option value="withdrawn"`) {
		t.Error("the status list offers «Retirada», which would erase without asking")
	}
	// A record in the queue for its hidden response alone does not claim the team hid it.
	if n := strings.Count(text, "Sin reportes: la ocultó el equipo."); n != 0 {
		t.Errorf("«Sin reportes: la ocultó el equipo.» %d times", n)
	}
	if strings.Contains(text, hashA) {
		t.Error("the page shows a reporter's whole hash")
	}
	// Not listed anywhere.
	for _, p := range []string{"/sitemap.xml", "/llms.txt", "/"} {
		if _, b := sitetest.Get(t, c, testBase+p); strings.Contains(string(b), "moderacion") {
			t.Errorf("%s mentions /moderacion", p)
		}
	}
	if resp, _ := sitetest.Get(t, c, testBase+"/moderacion.md", "X-Test-User: ana"); resp.StatusCode != http.StatusNotFound {
		t.Errorf("/moderacion.md: %d, want 404", resp.StatusCode)
	}
}

// post sends the moderation form with the page's token (unless vals has one) as user ana.
func modPost(t *testing.T, c *http.Client, vals url.Values, header ...string) (*http.Response, []byte) {
	t.Helper()
	if !vals.Has("token") {
		vals.Set("token", modToken([]byte("test key"), "ana", time.Now()))
	}
	return sitetest.Do(t, c, "POST", testBase+"/moderacion", strings.NewReader(vals.Encode()),
		append([]string{"Content-Type: application/x-www-form-urlencoded", "X-Test-User: ana"}, header...)...)
}

func TestModerationActions(t *testing.T) {
	f := &fakeModeration{}
	c := newSite(t, Options{Emergencies: emergencies(eje), Moderation: f.options()})
	id := "01k2x3y4z5a6b7c8"
	for _, tc := range []struct {
		vals     url.Values
		location string
		message  string
	}{
		{url.Values{"action": {"hide"}, "id": {id}}, "/moderacion?hecho=hide&id=" + id, "Listo: la publicación " + id + " quedó oculta."},
		{url.Values{"action": {"hide_phone"}, "id": {id}}, "/moderacion?hecho=hide_phone&id=" + id, "Listo: el teléfono de la publicación " + id + " ya no se muestra"},
		{url.Values{"action": {"restore"}, "id": {id}}, "/moderacion?hecho=restore&id=" + id, "se muestra de nuevo"},
		{url.Values{"action": {"set_status"}, "id": {id}, "status": {"resolved"}}, "/moderacion?estado=resolved&hecho=set_status&id=" + id, "quedó en estado «Resuelta»"},
		{url.Values{"action": {"erase"}, "id": {id}}, "/moderacion?borrar=" + id + "#confirmar", "¿Borrar los datos personales?"},
		// «Retirada» erases: a form that still posts it (a page opened before) goes through the confirmation.
		{url.Values{"action": {"set_status"}, "id": {id}, "status": {"withdrawn"}}, "/moderacion?borrar=" + id + "#confirmar", "¿Borrar los datos personales?"},
		{url.Values{"action": {"erase"}, "id": {id}, "confirmar": {"si"}}, "/moderacion?hecho=erase&id=" + id, "se borraron los datos personales"},
		{url.Values{"action": {"restore_reporter"}, "reporter": {hashA}}, "/moderacion?hecho=restore_reporter&n=2&nr=1&reporte=aaaaaaaa", "se restauraron 2 publicaciones y 1 respuesta"},
		{url.Values{"action": {"restore_response"}, "id": {"01k2x3y4z5a6b7ca"}, "response": {"3F9A1C0B7D2E4A61"}}, "/moderacion?hecho=restore_response&id=01k2x3y4z5a6b7ca&respuesta=3f9a1c0b7d2e4a61",
			"la respuesta 3f9a1c0b7d2e4a61 de la publicación 01k2x3y4z5a6b7ca se muestra de nuevo"},
		{url.Values{"action": {"restore_response"}, "id": {"01k2x3y4z5a6b7ca"}, "response": {"0000000000000000"}}, "/moderacion?error=sin_respuesta&id=01k2x3y4z5a6b7ca",
			"ya no está oculta"},
		{url.Values{"action": {"hide"}, "id": {"0000000000000000"}}, "/moderacion?error=no_existe&id=0000000000000000", "No existe la publicación"},
	} {
		resp, body := modPost(t, c, tc.vals, "Sec-Fetch-Site: same-origin", "Origin: "+testBase)
		if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != tc.location {
			t.Errorf("%v: %d to %q, want 303 to %q\n%s", tc.vals, resp.StatusCode, resp.Header.Get("Location"), tc.location, body)
			continue
		}
		resp, body = sitetest.Get(t, c, testBase+strings.Split(tc.location, "#")[0], "X-Test-User: ana")
		if resp.StatusCode != http.StatusOK || !strings.Contains(sitetest.VisibleText(sitetest.ParseHTML(t, body)), tc.message) {
			t.Errorf("%v: page after the redirect (%d) lacks %q", tc.vals, resp.StatusCode, tc.message)
		}
	}
	want := []string{"hide " + id + " ", "hide_phone " + id + " ", "restore " + id + " ", "set_status " + id + " resolved", "erase " + id + " ", "restore_reporter " + hashA,
		"restore_response 01k2x3y4z5a6b7ca 3f9a1c0b7d2e4a61"}
	if strings.Join(f.acts, "|") != strings.Join(want, "|") {
		t.Errorf("actions applied:\n%q\nwant\n%q", f.acts, want)
	}
}

// A POST from another site (CSRF), or without the page's token, changes nothing.
func TestModerationRefusesCrossSite(t *testing.T) {
	f := &fakeModeration{}
	c := newSite(t, Options{Emergencies: emergencies(eje), Moderation: f.options()})
	hide := func() url.Values { return url.Values{"action": {"hide"}, "id": {"01k2x3y4z5a6b7c8"}} }
	noToken := hide()
	noToken.Set("token", "")
	oldToken := hide()
	oldToken.Set("token", modToken([]byte("test key"), "ana", time.Now().Add(-3*time.Hour)))
	otherUser := hide()
	otherUser.Set("token", modToken([]byte("test key"), "beto", time.Now()))
	for name, tc := range map[string]struct {
		vals   url.Values
		header []string
	}{
		"cross-site":   {hide(), []string{"Sec-Fetch-Site: cross-site"}},
		"same-site":    {hide(), []string{"Sec-Fetch-Site: same-site"}},
		"other origin": {hide(), []string{"Origin: https://malo.example"}},
		"null origin":  {hide(), []string{"Origin: null"}},
		"no token":     {noToken, nil},
		"old token":    {oldToken, nil},
		"other user":   {otherUser, nil},
	} {
		resp, body := modPost(t, c, tc.vals, tc.header...)
		if resp.StatusCode != http.StatusForbidden || !strings.Contains(string(body), `id="mod-error"`) {
			t.Errorf("%s: %d, want 403 with the page's error\n%s", name, resp.StatusCode, body)
		}
	}
	if len(f.acts) != 0 {
		t.Errorf("a refused POST acted: %v", f.acts)
	}
	// The previous hour's token still works (a page opened a while ago).
	prev := hide()
	prev.Set("token", modToken([]byte("test key"), "ana", time.Now().Add(-time.Hour)))
	if resp, _ := modPost(t, c, prev); resp.StatusCode != http.StatusSeeOther {
		t.Errorf("previous hour's token: %d, want 303", resp.StatusCode)
	}
}
