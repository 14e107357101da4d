package site

import (
	"context"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/directaid/directaid/backend/places"
	"github.com/directaid/directaid/schema"
	"github.com/directaid/directaid/site/sitetest"
)

// What people meet on the emergency pages, the record pages and the forms: a town instead of
// coordinates, urgent requests first, pages fresh after an action, the manage link kept.

// matches applies the text and municipio filters as the service does: every word of q in the title, the
// municipio by code or by a name that only one municipio has.
func (s *records) matches(r schema.PublicHelpDetail, q schema.ListQuery) bool {
	for _, w := range strings.Fields(places.Fold(q.Q)) {
		if !strings.Contains(" "+places.Fold(r.Title+" "+r.Description), " "+w) {
			return false
		}
	}
	if q.Municipio == "" {
		return true
	}
	ms := places.Municipios(q.Municipio)
	return len(ms) == 1 && r.Location != nil && r.Location.MunicipioCode == ms[0].Code
}

// ejeArea is the Eje Cafetero with its departamentos (Quindío, Risaralda, Caldas) and its lines.
var ejeArea = func() schema.EmergencyInfo {
	e := eje
	e.Area = []string{"63", "66", "17"}
	e.Lines = []schema.PhoneLine{{Name: "Línea de emergencias", Number: "123"}, {Name: "Cruz Roja", Number: "132"}}
	return e
}()

// place puts record id in a municipio.
func (s *records) place(id, code string) {
	m, _ := places.Lookup(code)
	for i := range s.all {
		if s.all[i].ID == id {
			s.all[i].Location = &schema.PublicLocation{MunicipioCode: code, Municipio: places.Label(m), PlaceCode: code, PlaceName: places.Label(m),
				Place: schema.Place{Latitude: ptr(m.Lat), Longitude: ptr(m.Lon)}}
		}
	}
}

func (s *records) set(id string, f func(*schema.PublicHelpDetail)) {
	for i := range s.all {
		if s.all[i].ID == id {
			f(&s.all[i])
		}
	}
}

// The default list: open urgent requests, then the other requests, then offers, newest first in each,
// with a red «Urgente»; a list filtered by type keeps the API's newest-first order.
func TestEmergencyPageUrgentFirst(t *testing.T) {
	s := &records{}
	urgent := s.add(eje.Slug, schema.TypeRequest, "Rescate bajo escombros")
	needed := s.add(eje.Slug, schema.TypeRequest, "Pañales")
	s.set(needed, func(r *schema.PublicHelpDetail) { r.Urgency = "needed" })
	offer := s.add(eje.Slug, schema.TypeOffer, "Transporte")
	s.set(offer, func(r *schema.PublicHelpDetail) { r.Urgency = "" })
	c := newSite(t, s.options(eje))
	res, md := sitetest.Get(t, c, testBase+"/emergencias/eje-cafetero.md")
	page := string(md)
	if res.Header.Get("Cache-Control") != "no-cache" {
		t.Errorf("Cache-Control %q, want no-cache", res.Header.Get("Cache-Control"))
	}
	order := []string{"### Solicitudes urgentes (1)", "Rescate bajo escombros", "**Urgente**", "### Otras solicitudes (1)", "Pañales", "### Ofrecimientos (1)", "Transporte"}
	at := 0
	for _, w := range order {
		i := strings.Index(page[at:], w)
		if i < 0 {
			t.Fatalf("%q missing or out of order in\n%s", w, page)
		}
		at += i
	}
	_, html := sitetest.Get(t, c, testBase+"/emergencias/eje-cafetero")
	if !strings.Contains(string(html), "<strong>Urgente</strong>") {
		t.Errorf("no urgency badge in the HTML page")
	}
	_, md = sitetest.Get(t, c, testBase+"/emergencias/eje-cafetero.md?type=request")
	if strings.Contains(string(md), "Solicitudes urgentes") || strings.Index(string(md), "Pañales") > strings.Index(string(md), "Rescate bajo") {
		t.Errorf("a list by type is not newest first:\n%s", md)
	}
	_ = urgent

	// With more than a part shows: its «Ver todas» link counts what it opens. «Ver todas las solicitudes»
	// lists the urgent ones too (it said «(11)», the other requests alone, and opened 13).
	for i := range 12 {
		id := s.add(eje.Slug, schema.TypeRequest, fmt.Sprintf("Cobijas %d", i))
		s.set(id, func(r *schema.PublicHelpDetail) { r.Urgency = "needed" })
	}
	s.add(eje.Slug, schema.TypeRequest, "Otro rescate")
	_, md = sitetest.Get(t, c, testBase+"/emergencias/eje-cafetero.md")
	for _, want := range []string{"### Otras solicitudes (13)", "[Ver todas las solicitudes (15)](" + testBase + "/emergencias/eje-cafetero?type=request)"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("the default list lacks %q:\n%s", want, md)
		}
	}
	_, md = sitetest.Get(t, c, testBase+"/emergencias/eje-cafetero.md?type=request")
	if !strings.Contains(string(md), "15 publicaciones") {
		t.Errorf("the link's list does not hold what it said:\n%s", md)
	}
}

// A town instead of coordinates: ?municipio= by code or name (the emergency's Armenia for «armenia»),
// place words in the text search, each item's place linking to its municipio's list.
func TestEmergencyPageByTown(t *testing.T) {
	s := &records{}
	pereira := s.add(eje.Slug, schema.TypeRequest, "Agua en Pereira centro")
	s.place(pereira, "66001")
	armenia := s.add(eje.Slug, schema.TypeRequest, "Insulina para mi madre")
	s.place(armenia, "63001")
	antioquia := s.add(eje.Slug, schema.TypeRequest, "Insulina en Antioquia")
	s.place(antioquia, "05059") // Armenia (Antioquia)
	other := s.add(eje.Slug, schema.TypeRequest, "Comida para Victoria")
	s.place(other, "17001") // Manizales: «victoria» is a person here, and a municipio of Caldas too
	for title, code := range map[string]string{"Agua potable para 5 personas": "63130", "Carpas y cobijas": "66682",
		"Agua para albergue": "17873", "Pañales para bebé": "63401"} { // Calarcá, Santa Rosa de Cabal, Villamaría, La Tebaida
		s.place(s.add(eje.Slug, schema.TypeRequest, title), code)
	}
	trapped := s.add(eje.Slug, schema.TypeRequest, "Persona atrapada bajo escombros")
	s.place(trapped, "66001")
	s.set(trapped, func(r *schema.PublicHelpDetail) { r.Category = "rescate" })
	c := newSite(t, s.options(ejeArea))
	for _, tc := range []struct {
		query string
		want  []string
		note  string
	}{
		{"municipio=66001", []string{"Agua en Pereira centro", "Persona atrapada bajo escombros"}, ""},
		{"municipio=pereira", []string{"Agua en Pereira centro", "Persona atrapada bajo escombros"}, ""},
		{"municipio=armenia", []string{"Insulina para mi madre"}, ""},
		{"municipio=el+caimo", []string{"Insulina para mi madre"}, "Se muestran las publicaciones de Armenia (Quindío), el municipio de El Caimo."},
		{"municipio=63001001", []string{"Insulina para mi madre"}, "Se muestran las publicaciones de Armenia (Quindío), el municipio de El Caimo."}, // its DANE code
		{"q=pereira", []string{"Agua en Pereira centro", "Persona atrapada bajo escombros"}, "Se muestran las publicaciones en Pereira (Risaralda)."},
		{"q=insulina+armenia", []string{"Insulina para mi madre"}, "Se buscó «insulina» en las publicaciones de Armenia (Quindío)."},
		{"q=insulina", []string{"Insulina para mi madre", "Insulina en Antioquia"}, ""},
		{"q=victoria", []string{"Comida para Victoria"}, ""}, // nothing in Victoria (Caldas): the words, as typed
		// A village of the emergency's area named in the text search, its article with it: its municipio.
		{"q=insulina+en+el+caimo", []string{"Insulina para mi madre"}, "Se buscó «insulina» en las publicaciones de Armenia (Quindío), el municipio de El Caimo. No se buscaron las palabras «en»."},
		{"q=el+caimo+armenia", []string{"Insulina para mi madre"}, "Se muestran las publicaciones de Armenia (Quindío), el municipio de El Caimo."},
		{"q=busco+insulina+en+armenia", []string{"Insulina para mi madre"}, "Se buscó «insulina» en las publicaciones de Armenia (Quindío). No se buscaron las palabras «busco en»."},
		// «San José» is a village of several municipios of the area: not a place, the words as typed.
		{"q=insulina+san+jose", nil, ""},
		// «agua» is no town (not Agua de Dios, far from the area, by its shorter name): a word.
		{"q=calarca+agua", []string{"Agua potable para 5 personas"}, "Se buscó «agua» en las publicaciones de Calarcá (Quindío)."},
		{"q=agua", []string{"Agua en Pereira centro", "Agua potable para 5 personas", "Agua para albergue"}, ""},
		// The area's towns as people say and write them: Santa Rosa de Cabal, Villamaría, La Tebaida.
		{"municipio=santa+rosa", []string{"Carpas y cobijas"}, ""},
		{"q=cobijas+santa+rosa", []string{"Carpas y cobijas"}, "Se buscó «cobijas» en las publicaciones de Santa Rosa de Cabal (Risaralda)."},
		{"municipio=villa+maria", []string{"Agua para albergue"}, ""},
		{"q=pañales+la+tebaida", []string{"Pañales para bebé"}, "Se buscó «pañales» en las publicaciones de La Tebaida (Quindío)."},
		{"q=la+tebaida", []string{"Pañales para bebé"}, "Se muestran las publicaciones en La Tebaida (Quindío)."},
		{"q=tebaida", []string{"Pañales para bebé"}, "Se muestran las publicaciones en La Tebaida (Quindío)."},                                                  // as people say it
		{"q=el+caimo+insulina", []string{"Insulina para mi madre"}, "Se buscó «insulina» en las publicaciones de Armenia (Quindío), el municipio de El Caimo."}, // not a municipio's name after it
		{"q=insulina+caimo", []string{"Insulina para mi madre"}, "Se buscó «insulina» en las publicaciones de Armenia (Quindío), el municipio de El Caimo."},
		// A category's name among the words is the category (texts seldom name their own).
		{"q=rescate+pereira", []string{"Persona atrapada bajo escombros"}, "Se muestran las publicaciones en Pereira (Risaralda). Solo las de la categoría «Rescate»."},
		{"q=rescate", []string{"Persona atrapada bajo escombros"}, "Solo las de la categoría «Rescate»."},
		{"q=salud+armenia", []string{"Insulina para mi madre"}, "Solo las de la categoría «Salud»."},
		// Words people use for a category, and «urgente»; a place amid filler words.
		{"q=albergue+pereira", nil, "No hay publicaciones de la categoría «Refugio» en Pereira (Risaralda) ni a menos de 10 km de allí."},
		{"q=insulina+urgente+armenia", []string{"Insulina para mi madre"}, "Se buscó «insulina» en las publicaciones de Armenia (Quindío). Solo las solicitudes urgentes."},
		{"q=insulina+armenia+ya", []string{"Insulina para mi madre"}, "Se buscó «insulina» en las publicaciones de Armenia (Quindío). No se buscaron las palabras «ya»."},
		// Nothing with the words in a town that has records: the words are said, not an empty town.
		{"q=linternas+armenia", nil, "No hay publicaciones con «linternas» en Armenia (Quindío) ni a menos de 10 km de allí."},
		// A village typed in «Municipio» whose municipio has nothing: its municipio's empty list, not the
		// words as typed (which name no municipio: an error).
		{"municipio=pueblo+tapao", nil, "Se muestran las publicaciones de Montenegro (Quindío), el municipio de Pueblo Tapado."},
	} {
		_, md := sitetest.Get(t, c, testBase+"/emergencias/eje-cafetero.md?"+tc.query)
		page := string(md)
		for _, r := range s.all {
			if want := contains(tc.want, r.Title); strings.Contains(page, "["+r.Title+"]") != want {
				t.Errorf("?%s: record %q listed %v, want %v\n%s", tc.query, r.Title, !want, want, page)
			}
		}
		if tc.note != "" && !strings.Contains(page, tc.note) {
			t.Errorf("?%s: no note %q\n%s", tc.query, tc.note, page)
		}
		if strings.Contains(page, "no es el código DIVIPOLA") {
			t.Errorf("?%s: an error\n%s", tc.query, page)
		}
		if strings.Contains(page, "[Compartir esta lista por WhatsApp](https://wa.me/?text=") != (len(tc.want) > 0) {
			t.Errorf("?%s: a share link on an empty list, or none on a list", tc.query)
		}
	}
	// Names that are the area's but no municipio of it: a departamento («risaralda», not Risaralda,
	// Caldas), villages of several municipios («la florida», not La Florida, Nariño).
	for _, q := range []string{"q=risaralda", "q=linternas+la+florida", "municipio=la+florida"} {
		_, md := sitetest.Get(t, c, testBase+"/emergencias/eje-cafetero.md?"+q)
		if strings.Contains(string(md), "Risaralda (Caldas)") || strings.Contains(string(md), "Nariño") {
			t.Errorf("?%s read a place outside what was meant:\n%s", q, md)
		}
	}
	// ... and what the town has is one link away.
	_, md := sitetest.Get(t, c, testBase+"/emergencias/eje-cafetero.md?q=linternas+armenia")
	if !strings.Contains(string(md), "[Ver la publicación de Armenia (Quindío)]("+testBase+"/emergencias/eje-cafetero?municipio=63001)") {
		t.Errorf("no link to the town's records:\n%s", md)
	}
	// A town's list links to what is near it when that is more (records near its edge are often filed
	// under the next municipio).
	_, md = sitetest.Get(t, c, testBase+"/emergencias/eje-cafetero.md?municipio=pereira")
	if !strings.Contains(string(md), " publicaciones a menos de 10 km de Pereira (Risaralda)]("+testBase+"/emergencias/eje-cafetero?latitude=") {
		t.Errorf("a town's list does not link to what is near it:\n%s", md)
	}
	// ... a category read from the words too: the town's records, of every category.
	_, md = sitetest.Get(t, c, testBase+"/emergencias/eje-cafetero.md?q=albergue+pereira")
	if !strings.Contains(string(md), "[Ver las 2 publicaciones de Pereira (Risaralda)]("+testBase+"/emergencias/eje-cafetero?municipio=66001)") {
		t.Errorf("no link to the town's records of every category:\n%s", md)
	}
	_, md = sitetest.Get(t, c, testBase+"/emergencias/eje-cafetero.md")
	if !strings.Contains(string(md), "[Pereira (Risaralda)]("+testBase+"/emergencias/eje-cafetero?municipio=66001)") {
		t.Errorf("an item's place does not link to its municipio's list:\n%s", md)
	}
	// The filter form has the municipio, and «Usar mi ubicación» failing points to it.
	_, page := sitetest.Get(t, c, testBase+"/emergencias/eje-cafetero?municipio=pereira")
	for _, want := range []string{`id="filtro-municipio" name="municipio" value="pereira"`, "Escriba el nombre de su municipio en «Municipio»"} {
		if !strings.Contains(string(page), want) {
			t.Errorf("filter form lacks %q", want)
		}
	}
	if strings.Contains(string(page), "Escriba la latitud y la longitud") {
		t.Errorf("the failing location still asks for coordinates")
	}
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// A record's page: revalidated every time, the phone grouped with a call link, a share link; once
// resolved or expired, a banner first and no WhatsApp button.
func TestRecordPageStatus(t *testing.T) {
	s := &records{}
	id := s.add(eje.Slug, schema.TypeRequest, "Agua")
	s.set(id, func(r *schema.PublicHelpDetail) { r.Category = "rescate"; r.Status = "open" })
	c := newSite(t, s.options(ejeArea))
	res, page := sitetest.Get(t, c, testBase+"/ayudas/"+id)
	if cc := res.Header.Get("Cache-Control"); cc != "private, no-cache" {
		t.Errorf("Cache-Control %q", cc)
	}
	for _, want := range []string{`href="https://wa.me/573000000001"`, `<a href="tel:+573000000001">+57 300 000 0001</a>`,
		`href="https://wa.me/?text=`, "Cruz Roja", `href="tel:132"`} {
		if !strings.Contains(string(page), want) {
			t.Errorf("open record page lacks %q", want)
		}
	}
	if strings.Contains(string(page), "Ya resuelta") {
		t.Errorf("an open record says it is resolved")
	}
	for status, banner := range map[string]string{"resolved": "Ya resuelta: no hace falta escribir.", "expired": "Vencida:"} {
		s.set(id, func(r *schema.PublicHelpDetail) { r.Status = status })
		_, page := sitetest.Get(t, c, testBase+"/ayudas/"+id)
		p := string(page)
		h1 := strings.Index(p, "</h1>")
		if i := strings.Index(p, banner); i < 0 || i < h1 || i > strings.Index(p, "<blockquote>") {
			t.Errorf("%s: the banner %q is not first after the title", status, banner)
		}
		if strings.Contains(p, `href="https://wa.me/57`) || strings.Contains(p, `href="tel:+57`) {
			t.Errorf("%s: the record still has its WhatsApp button or a call link", status)
		}
	}
}

func TestPhoneText(t *testing.T) {
	for in, want := range map[string]string{"+573001234567": "+57 300 123 4567", "+14155550100": "+14155550100", "": "", "+57abc": "+57abc"} {
		if got := phoneText(in); got != want {
			t.Errorf("phoneText(%q) = %q, want %q", in, got, want)
		}
	}
}

// Emergency lines: the configured ones, else 123.
func TestEmergencyLines(t *testing.T) {
	c := newSite(t, Options{Emergencies: emergencies(ejeArea, mojana)})
	_, page := sitetest.Get(t, c, testBase+"/emergencias/eje-cafetero.md")
	if !strings.Contains(string(page), "Línea de emergencias [123](tel:123), Cruz Roja [132](tel:132)") {
		t.Errorf("eje-cafetero lines:\n%s", page)
	}
	_, page = sitetest.Get(t, c, testBase+"/emergencias/inundaciones-la-mojana.md")
	if !strings.Contains(string(page), "Línea de emergencias [123](tel:123).") {
		t.Errorf("default line:\n%s", page)
	}
}

// The home page's search lands on the list of the emergency whose area holds the place.
func TestHomeSearch(t *testing.T) {
	mojanaArea := mojana
	mojanaArea.Area = []string{"70"}
	c := newSite(t, Options{Emergencies: emergencies(ejeArea, mojanaArea)})
	_, home := sitetest.Get(t, c, testBase+"/")
	for _, want := range []string{`<form id="buscar" class="buscar" method="get" action="/buscar">`, "¿Qué necesita?", "¿Dónde?", `id="mias"`} {
		if !strings.Contains(string(home), want) {
			t.Errorf("home lacks %q", want)
		}
	}
	for query, want := range map[string]string{
		"q=insulina&municipio=pereira":   "/emergencias/eje-cafetero?municipio=pereira&q=insulina",
		"q=agua&municipio=sincelejo":     "/emergencias/inundaciones-la-mojana?municipio=sincelejo&q=agua",
		"q=agua&emergencia=eje-cafetero": "/emergencias/eje-cafetero?q=agua",
		// The place in the words, without «¿Dónde?»: the emergency whose area holds it.
		"q=agua+en+sincelejo":                   "/emergencias/inundaciones-la-mojana?q=agua+en+sincelejo",
		"q=insulina+en+el+caimo":                "/emergencias/eje-cafetero?q=insulina+en+el+caimo",
		"q=insulina+majagual":                   "/emergencias/inundaciones-la-mojana?q=insulina+majagual",
		"municipio=santa+rosa":                  "/emergencias/eje-cafetero?municipio=santa+rosa", // Santa Rosa de Cabal
		"q=agua+en+sincelejo&municipio=pereira": "/emergencias/eje-cafetero?municipio=pereira&q=agua+en+sincelejo",
		"":                                      "/emergencias/eje-cafetero",
		// A village goes as typed to the emergency whose area holds it: the list reads it (its municipio,
		// and the records near its own point), and says so.
		"q=agua&municipio=el+caimo":         "/emergencias/eje-cafetero?municipio=el+caimo&q=agua",
		"q=agua&municipio=El+Caimo+Armenia": "/emergencias/eje-cafetero?municipio=El+Caimo+Armenia&q=agua",
		"q=agua&municipio=pueblo+tapao":     "/emergencias/eje-cafetero?municipio=pueblo+tapao&q=agua", // Pueblo Tapado, as it is said
		// What names no place goes on as typed: the list says why.
		"q=agua&municipio=calarka": "/emergencias/eje-cafetero?municipio=calarka&q=agua",
	} {
		res, _ := sitetest.Get(t, c, testBase+"/buscar?"+query)
		if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != want {
			t.Errorf("/buscar?%s: %d %q, want 303 %q", query, res.StatusCode, res.Header.Get("Location"), want)
		}
	}
}

// The manage link survives without JavaScript: the confirmation's «Gestionar» posts id and token, which
// open /gestionar filled in; «Retirar» asks first.
func TestManageWithoutJS(t *testing.T) {
	var acted []string
	s := &records{}
	id := s.add(eje.Slug, schema.TypeRequest, "Agua")
	s.set(id, func(r *schema.PublicHelpDetail) { r.Status = "open" })
	o := s.options(eje)
	o.Service.(*funcs).act = func(_ context.Context, _, gotID, token, action string) (int, []byte) {
		acted = append(acted, action)
		return 200, []byte(`{"ok":true,"id":"` + gotID + `","action":"` + action + `","status":"withdrawn","changed":true}`)
	}
	c := newSite(t, o)
	res, page := postForm(t, c, "/gestionar", url.Values{"id": {id}, "token": {"tok"}})
	if res.StatusCode != 200 || len(acted) != 0 || !strings.Contains(string(page), `value="`+id+`"`) || !strings.Contains(string(page), "«Agua» — Estado: vigente.") {
		t.Fatalf("Gestionar: %d acted %v\n%s", res.StatusCode, acted, page)
	}
	// Enter in a field submits with the form's first submit button: one that only shows the publication,
	// on the page with the actions and on the withdrawal's question (it marked the record resolved, or
	// withdrew it). No responses are said before they are asked for.
	firstButton := func(page []byte) string {
		form := string(page)[strings.Index(string(page), `<form id="gestion-formulario"`):]
		return regexp.MustCompile(`<button type="submit"[^>]*>`).FindString(form)
	}
	if b := firstButton(page); b != `<button type="submit" class="por-defecto" tabindex="-1" aria-hidden="true" data-abrir>` {
		t.Errorf("the form's default button: %s", b)
	}
	if strings.Contains(string(page), "<li>Nadie ha respondido") {
		t.Errorf("«Nadie ha respondido» before the responses were asked for")
	}
	_, page = postForm(t, c, "/gestionar", url.Values{"id": {id}, "token": {"tok"}, "action": {"withdraw"}})
	if len(acted) != 0 || !strings.Contains(string(page), "¿Retirar la publicación?") || !strings.Contains(string(page), `name="confirmar" value="si"`) {
		t.Fatalf("withdraw asked nothing: acted %v\n%s", acted, page)
	}
	if b := firstButton(page); !strings.Contains(b, "data-abrir") {
		t.Errorf("the withdrawal's question: Enter would send %s", b)
	}
	// A mistyped publication code: said, and no buttons to act on nothing.
	if _, page = postForm(t, c, "/gestionar", url.Values{"id": {"06h2zzzzzzzzzzzz"}, "token": {"tok"}}); !strings.Contains(string(page), "No hay ninguna publicación con ese código") ||
		strings.Contains(string(page), `value="reopen"`) || strings.Contains(string(page), `value="resolve"`) {
		t.Errorf("an unknown publication code:\n%s", page)
	}
	// What the default button sends (the question's hidden confirmar with it): nothing is done.
	if _, page = postForm(t, c, "/gestionar", url.Values{"id": {id}, "token": {"tok"}, "confirmar": {"si"}}); len(acted) != 0 || !strings.Contains(string(page), "«Agua» — Estado: vigente.") {
		t.Fatalf("Enter on the withdrawal's question: acted %v\n%s", acted, page)
	}
	_, page = postForm(t, c, "/gestionar", url.Values{"id": {id}, "token": {"tok"}, "action": {"withdraw"}, "confirmar": {"si"}})
	if len(acted) != 1 || acted[0] != "withdraw" || !strings.Contains(string(page), "quedó retirada") {
		t.Fatalf("confirmed withdraw: acted %v\n%s", acted, page)
	}
	// The manage link pasted whole in either field (the page cannot read its fragment without JavaScript):
	// its codes, the token kept as a password field's value.
	link := schema.ManageURL("http://ayuda.test", id, "tok")
	escaped := strings.NewReplacer("=", "%3D", "&", "%26").Replace(link) // as some apps pass a link on
	for _, sent := range []url.Values{{"id": {link}}, {"id": {" " + link + " "}, "token": {"otro"}}, {"token": {link}}, {"id": {escaped}}} {
		res, page := postForm(t, c, "/gestionar", sent)
		if res.StatusCode != 200 || !strings.Contains(string(page), `value="`+id+`"`) || !strings.Contains(string(page), `value="tok"`) ||
			!strings.Contains(string(page), "«Agua» — Estado:") {
			t.Errorf("the link pasted as %v: %d\n%s", sent, res.StatusCode, page)
		}
	}
}

// The confirmation of a publication keeps the manage link: «Ver mi publicación», a «Gestionar» form with
// id and token, the link sent to WhatsApp, the opt-in to remember it here; an offer's words are an offer's.
func TestConfirmationKeepsManageLink(t *testing.T) {
	fake := &fakePublish{status: 201, resp: schema.PublishResult{OK: true, ID: "0000000000000001", Type: "offer", PublicURL: testBase + "/ayudas/0000000000000001",
		ManageToken: "tok", ManageURL: testBase + "/gestionar#id=0000000000000001&token=tok",
		Warnings: []schema.Warning{{Code: schema.CodeFarFromEmergency, Field: "/placeCode", Message: "El lugar está a unos 180 km."}}}}
	c := newSite(t, Options{Emergencies: emergencies(eje), Service: &funcs{publish: fake.publish}})
	vals := formValues("web-1")
	vals.Del("urgency")
	_, page := postForm(t, c, "/ofrecer", vals)
	p := string(page)
	for _, want := range []string{`id="resultado-ver" class="boton" href="` + testBase + `/ayudas/0000000000000001">Ver mi publicación`,
		`<form id="gestionar-ahora" method="post" action="/gestionar">`, `name="id" id="gestionar-id" value="0000000000000001"`,
		`name="token" id="gestionar-token" value="tok"`, `id="enviar-gestion" href="https://wa.me/?text=`, "marcar el ofrecimiento como resuelto",
		`id="recordar-aqui"`, "El lugar está a unos 180 km."} {
		if !strings.Contains(p, want) {
			t.Errorf("confirmation lacks %q", want)
		}
	}
	if strings.Contains(p, "marcar la solicitud como resuelta") {
		t.Errorf("an offer's confirmation speaks of a request")
	}
	// The acopio status is only for collection centres.
	_, form := sitetest.Get(t, c, testBase+"/ofrecer")
	if !strings.Contains(string(form), `data-solo-categoria="acopio"`) {
		t.Errorf("the acopio field is not marked for its category")
	}
}

// Enter in the place search searches (the form's default button), and the steps land at #lugar, with
// the emergency's places first; with the search box empty, Enter publishes.
func TestPickerEnterSearches(t *testing.T) {
	fake := &fakePublish{status: 400, resp: schema.ErrorBody{Code: "invalid_body", Error: "x"}}
	c := newSite(t, Options{Emergencies: emergencies(ejeArea), Service: &funcs{publish: fake.publish}})
	_, form := sitetest.Get(t, c, testBase+"/pedir")
	if !strings.Contains(string(form), `name="paso" value="buscar" formaction="/pedir#lugar"`) ||
		!strings.Contains(string(form), `<button type="submit" name="paso" value="defecto" class="por-defecto"`) {
		t.Errorf("the picker's buttons:\n%s", form)
	}
	vals := url.Values{"title": {"Insulina"}, "lugar-buscar": {"armenia"}, "paso": {"defecto"}}
	_, page := postForm(t, c, "/pedir", vals)
	if len(fake.bodies) != 0 {
		t.Fatalf("Enter in the place search published")
	}
	q, a := strings.Index(string(page), "Armenia (Quindío)"), strings.Index(string(page), "Armenia (Antioquia)")
	if q < 0 || a < 0 || q > a {
		t.Errorf("Armenia (Quindío) not before Armenia (Antioquia): %d %d", q, a)
	}
	// The default button posts to the form's own address, with no #lugar: the first result takes the
	// focus, so that the page opens at the results, not at the top of the form.
	if strings.Count(string(page), " autofocus") != 1 || !regexp.MustCompile(`value="63001" formaction="/pedir#lugar" class="enlace" formnovalidate autofocus>`).Match(page) {
		t.Errorf("the search results do not take the focus:\n%s", page)
	}
	// A result chosen (its button posts to the form's address too): the chosen place takes the focus.
	if _, chosen := postForm(t, c, "/pedir", url.Values{"lugar-elegir": {"63001001"}}); !strings.Contains(string(chosen), `id="lugar-elegido" role="status" tabindex="-1" autofocus>Lugar: <strong>El Caimo, Armenia (Quindío)</strong>`) {
		t.Errorf("the chosen place does not take the focus:\n%s", chosen)
	}
	_, none := postForm(t, c, "/pedir", url.Values{"lugar-buscar": {"springfield"}, "paso": {"defecto"}})
	if !strings.Contains(string(none), `aria-describedby="f-lugar-buscar-ayuda" autofocus>`) {
		t.Errorf("a search with no results does not give the focus back to the search box")
	}
	// A typo is answered with the names like it, as the lists guess them; the words before a name are
	// left out.
	for typed, want := range map[string]string{"armenai": "Armenia (Quindío)", "vereda el kaimo": "El Caimo, Armenia (Quindío)"} {
		_, guess := postForm(t, c, "/pedir", url.Values{"lugar-buscar": {typed}, "paso": {"buscar"}})
		if !strings.Contains(string(guess), "<p>No hay un lugar con ese nombre. ¿Quiso decir…?</p>") || !strings.Contains(string(guess), ">"+want+"</button>") {
			t.Errorf("«%s»: no guess of %s:\n%s", typed, want, guess)
		}
	}
	_, caimo := postForm(t, c, "/pedir", url.Values{"lugar-buscar": {"vereda el caimo"}, "paso": {"buscar"}})
	if !strings.Contains(string(caimo), "<p>Elija su lugar:</p>") || !strings.Contains(string(caimo), ">El Caimo, Armenia (Quindío)</button>") {
		t.Errorf("«vereda el caimo» did not find El Caimo:\n%s", caimo)
	}
	vals.Del("lugar-buscar")
	postForm(t, c, "/pedir", vals)
	if len(fake.bodies) != 1 {
		t.Errorf("Enter with no place search did not publish")
	}
}

// The people's pages: no developer links in the menu or the footer; the integration guide keeps them.
func TestPeoplesChrome(t *testing.T) {
	c := newSite(t, Options{Emergencies: emergencies(eje)})
	for _, p := range []string{"/", "/pedir", "/emergencias/eje-cafetero", "/privacidad"} {
		_, page := sitetest.Get(t, c, testBase+p)
		for _, bad := range []string{`<a href="/integraciones">Integraciones</a>`, `href="/llms.txt"`, `href="/sitemap.xml"`} {
			if strings.Contains(string(page), bad) {
				t.Errorf("%s has %s", p, bad)
			}
		}
	}
	_, page := sitetest.Get(t, c, testBase+"/integraciones")
	if !strings.Contains(string(page), `href="/llms.txt"`) || !strings.Contains(string(page), `href="/integraciones.md"`) {
		t.Errorf("/integraciones lost its developer links")
	}
}

// «Sin nadie ayudando» («Sin nadie interesado» of offers), in sight above the list (the filter is folded
// on a phone): the same list with attended=false, its other filters kept, on the list and on the map;
// that list links back. An emergency with no records has no such link.
func TestEmergencyPageNobodyHelpingLink(t *testing.T) {
	s := &records{}
	s.place(s.add(eje.Slug, schema.TypeRequest, "Agua en Pereira centro"), "66001")
	s.add(eje.Slug, schema.TypeOffer, "Carpas") // of an offer, a response is someone interested
	c := newSite(t, s.options(ejeArea, mojana))
	for _, tc := range []struct{ page, want string }{
		{"/emergencias/eje-cafetero.md", "[Sin nadie ayudando](" + testBase + "/emergencias/eje-cafetero?attended=false)"},
		{"/emergencias/eje-cafetero.md?municipio=66001", "[Sin nadie ayudando](" + testBase + "/emergencias/eje-cafetero?attended=false&municipio=66001)"},
		{"/emergencias/eje-cafetero.md?municipio=66001&attended=false", "[Ver también las que tienen ayuda](" + testBase + "/emergencias/eje-cafetero?municipio=66001)"},
		{"/emergencias/eje-cafetero.md?type=offer", "[Sin nadie interesado](" + testBase + "/emergencias/eje-cafetero?attended=false&type=offer)"},
		{"/emergencias/eje-cafetero.md?type=offer&attended=false", "[Ver también las que tienen interesados](" + testBase + "/emergencias/eje-cafetero?type=offer)"},
		{"/emergencias/eje-cafetero/mapa.md?municipio=66001", "[Sin nadie ayudando](" + testBase + "/emergencias/eje-cafetero/mapa?attended=false&municipio=66001)"},
	} {
		if _, md := sitetest.Get(t, c, testBase+tc.page); !strings.Contains(string(md), tc.want) {
			t.Errorf("%s lacks %s:\n%s", tc.page, tc.want, md)
		}
	}
	if _, md := sitetest.Get(t, c, testBase+"/emergencias/"+mojana.Slug+".md"); strings.Contains(string(md), "attended=") {
		t.Errorf("an emergency with no records links to those nobody helps:\n%s", md)
	}
}

// /gestionar shows only the actions that change the record in its status, «Retirar» in the danger style;
// once withdrawn, no action and no responses are left, whichever button the form last sent.
func TestManageFollowsStatus(t *testing.T) {
	s := &records{}
	id := s.add(eje.Slug, schema.TypeRequest, "Agua")
	o := s.options(eje)
	f := o.Service.(*funcs)
	f.detail = func(ctx context.Context, base, id string) (*schema.PublicHelpDetail, error) {
		d, err := s.detail(ctx, base, id)
		if err == nil && d.Status == schema.StatusWithdrawn {
			return nil, ErrGone
		}
		return d, err
	}
	f.act = func(_ context.Context, _, gotID, _, action string) (int, []byte) {
		s.set(gotID, func(r *schema.PublicHelpDetail) { r.Status = schema.StatusWithdrawn })
		return 200, []byte(`{"ok":true,"id":"` + gotID + `","action":"` + action + `","status":"withdrawn","changed":true}`)
	}
	c := newSite(t, o)
	button := func(action string) string { return `name="action" value="` + action + `"` }
	for status, want := range map[string][]string{
		schema.StatusOpen:     {schema.ActionResolve, schema.ActionRenew, schema.ActionWithdraw},
		schema.StatusResolved: {schema.ActionReopen, schema.ActionWithdraw},
		schema.StatusExpired:  {schema.ActionResolve, schema.ActionReopen, schema.ActionRenew, schema.ActionWithdraw},
	} {
		s.set(id, func(r *schema.PublicHelpDetail) { r.Status = status })
		_, page := postForm(t, c, "/gestionar", url.Values{"id": {id}, "token": {"tok"}})
		// Every button is on the page (the script shows «Reabrir» once the record is resolved), those the
		// status does not take hidden, which a browser without JavaScript does not show either.
		for _, a := range []string{schema.ActionResolve, schema.ActionReopen, schema.ActionRenew, schema.ActionWithdraw} {
			m := regexp.MustCompile(regexp.QuoteMeta(button(a)) + `[^>]*>`).FindString(string(page))
			if got := m != "" && !strings.Contains(m, " hidden>"); m == "" || got != slices.Contains(want, a) {
				t.Errorf("%s: button %s shown %v (%q), want %v", status, a, got, m, slices.Contains(want, a))
			}
		}
		if !strings.Contains(string(page), button(schema.ActionWithdraw)+` class="peligro"`) {
			t.Errorf("%s: «Retirar» is not in the danger style:\n%s", status, page)
		}
		if !strings.Contains(string(page), `data-acciones="{`) {
			t.Errorf("%s: the form does not tell its script which actions fit each status", status)
		}
	}
	s.set(id, func(r *schema.PublicHelpDetail) { r.Status = schema.StatusOpen })
	_, page := postForm(t, c, "/gestionar", url.Values{"id": {id}, "token": {"tok"}, "action": {"withdraw"}, "confirmar": {"si"}})
	for _, sent := range []string{"withdraw", "responses", ""} {
		if sent != "withdraw" {
			_, page = postForm(t, c, "/gestionar", url.Values{"id": {id}, "token": {"tok"}, "action": {sent}})
		}
		text := string(page)
		if !strings.Contains(text, "Esta publicación ya no está") || strings.Contains(text, `name="action"`) ||
			strings.Contains(text, "Nadie ha respondido") || strings.Contains(text, `id="gestion-respuestas"`) {
			t.Errorf("a withdrawn record, after %q: actions or responses still shown\n%s", sent, page)
		}
	}
}

// TestNearOutsideColombia: a point typed in the nearby filter outside Colombia is said, with the usual
// slip (a longitude without its minus sign, the two swapped); a point in Colombia says nothing.
func TestNearOutsideColombia(t *testing.T) {
	s := &records{}
	c := newSite(t, s.options(eje))
	for _, tc := range []struct{ query, want string }{
		{"latitude=4.5&longitude=75.6", "El punto 4,5, 75,6 no está en Colombia. ¿Le faltó el signo menos a la longitud? En Colombia es negativa: -75,6."},
		{"latitude=-75.6&longitude=4.5", "¿Están invertidas la latitud y la longitud?"},
		{"latitude=45&longitude=-75.6", "El punto 45, -75,6 no está en Colombia."},
		{"latitude=4,5339&longitude=-75,6811", ""},
	} {
		_, md := sitetest.Get(t, c, testBase+"/emergencias/eje-cafetero.md?"+tc.query)
		if tc.want == "" && strings.Contains(string(md), "no está en Colombia") || tc.want != "" && !strings.Contains(string(md), tc.want) {
			t.Errorf("?%s: want %q in\n%s", tc.query, tc.want, md)
		}
	}
}

// TestSearchWords: the filler words a person puts around a search leave it, in a sorted list (the search
// is binary), and a search made only of them stays as typed.
func TestSearchWords(t *testing.T) {
	if !slices.IsSorted(fillerWords) {
		t.Fatal("fillerWords is not sorted")
	}
	for q, want := range map[string][2]string{
		"busco insulina en armenia":        {"insulina armenia", "busco en"},
		"necesito ayuda en Pereira":        {"Pereira", "necesito ayuda en"},
		"¿Dónde hay insulina cerca de mí?": {"insulina", "¿Dónde hay cerca de mí?"},
		"de la":                            {"de la", ""},
		"insulina":                         {"insulina", ""},
	} {
		if w, l := searchWords(q); w != want[0] || l != want[1] {
			t.Errorf("searchWords(%q) = %q, %q; want %q, %q", q, w, l, want[0], want[1])
		}
	}
}

// TestJSLines: a script's whole-line comments leave it; code, and a comment after code, stay.
func TestJSLines(t *testing.T) {
	in := "var a = 1;\n  // a note\n\t//another\nvar u = 'http://x'; // after code\n"
	if got := string(jsLines([]byte(in))); got != "var a = 1;\nvar u = 'http://x'; // after code\n" {
		t.Errorf("jsLines: %q", got)
	}
}

// TestGestionarSaysWhatAStatusMeans: /gestionar without JavaScript says of a resolved publication that
// its number still shows (and how to remove it), and of an expired one what it is and what each action
// does to it.
func TestGestionarSaysWhatAStatusMeans(t *testing.T) {
	s := &records{}
	resolved, expired := s.add(eje.Slug, schema.TypeRequest, "Agua"), s.add(eje.Slug, schema.TypeRequest, "Carpas")
	s.set(resolved, func(r *schema.PublicHelpDetail) { r.Status = "resolved" })
	s.set(expired, func(r *schema.PublicHelpDetail) { r.Status = "expired" })
	c := newSite(t, s.options(eje))
	for id, want := range map[string]string{
		resolved: "Su número sigue en la página de la publicación, para quien la abra; si quiere quitarlo, use «Retirar».",
		expired:  "Venció sin que nadie la renovara: ya no está en las listas y su número no se muestra.",
	} {
		if _, page := postForm(t, c, "/gestionar", url.Values{"id": {id}, "token": {"tok"}}); !strings.Contains(html.UnescapeString(string(page)), want) {
			t.Errorf("%s: /gestionar does not say %q:\n%s", id, want, page)
		}
	}
}
