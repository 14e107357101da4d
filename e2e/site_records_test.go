package e2e

import (
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/directaid/directaid/internal/testserver"
	"github.com/directaid/directaid/site/sitetest"
)

// The published records on the site, through the real binary: each record's page with its phone number,
// and each emergency's page listing its records — filtered, paged, and without any phone number.

// seedSite publishes what the site tests read: the eight known records of seedKnown (phones +57 300 555
// 0001…0008), one with markup in every text field (…0009), and 20 offers without coordinates
// (…0010…0029), so that the eje-cafetero list has two pages. It returns the ids of eje-cafetero's
// records, newest first, and of the others.
func seedSite(t *testing.T, s *testserver.Server) (known []seeded, hostile string, offers []string) {
	t.Helper()
	known = seedKnown(t, s)
	body := with(validRequest(), "contactWhatsapp", phoneOf(9))
	for k, v := range hostileText {
		body[k] = v
	}
	resp, out := publish(t, s, body)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("hostile record: %d %v", resp.StatusCode, out)
	}
	hostile = out["id"].(string)
	for i := range 20 {
		resp, out := publish(t, s, with(validOffer(), "title", fmt.Sprintf("Ofrecimiento número %d", i+1), "contactWhatsapp", phoneOf(10+i)))
		if resp.StatusCode != http.StatusCreated {
			t.Fatalf("offer %d: %d %v", i, resp.StatusCode, out)
		}
		offers = append(offers, out["id"].(string))
	}
	return known, hostile, offers
}

// phoneNeedles are the seeded phone numbers in every spelling a page could show them, and the WhatsApp and
// call links that would carry one (a wa.me/?text= share link carries none).
var phoneNeedles = []string{"3005550", "300 555 0", "wa.me/5", "tel:+"}

func assertNoSeededPhone(t *testing.T, what string, body []byte) {
	t.Helper()
	for _, n := range phoneNeedles {
		if strings.Contains(string(body), n) {
			t.Errorf("%s shows a phone number (%q)", what, n)
		}
	}
}

var recordLink = regexp.MustCompile(`/ayudas/([0-9a-z]{16})\b`)

// listed fetches an emergency page (path plus query) and its twin with the same query, checks that
// neither shows a phone number, and returns the records both list, in order, the page's link to the
// next page, and whether it links back to the first.
func listed(t *testing.T, s *testserver.Server, path, query string, wantStatus int) (ids []string, next string, later bool) {
	t.Helper()
	u := path
	if query != "" {
		u += "?" + query
	}
	resp, page := s.Do("GET", u, nil)
	if resp.StatusCode != wantStatus || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
		t.Fatalf("GET %s: %d %s, want %d HTML", u, resp.StatusCode, resp.Header.Get("Content-Type"), wantStatus)
	}
	assertNoSeededPhone(t, u, page)
	twinURL := path + ".md"
	if query != "" {
		twinURL += "?" + query
	}
	resp, twin := s.Do("GET", twinURL, nil)
	if resp.StatusCode != wantStatus || resp.Header.Get("Content-Type") != "text/markdown; charset=utf-8" {
		t.Fatalf("GET %s: %d %s, want %d Markdown", twinURL, resp.StatusCode, resp.Header.Get("Content-Type"), wantStatus)
	}
	assertNoSeededPhone(t, twinURL, twin)
	doc := sitetest.ParseHTML(t, page)
	main := sitetest.ByID(doc, "contenido")
	for _, l := range sitetest.HTMLLinks(main) {
		if m := recordLink.FindStringSubmatch(l); m != nil {
			ids = append(ids, m[1])
		}
		if ref, err := url.Parse(l); err == nil && ref.Path == path && ref.Query().Has("cursor") {
			next = l
		}
	}
	var twinIDs []string
	for _, l := range sitetest.MarkdownLinks(twin) {
		if m := recordLink.FindStringSubmatch(l); m != nil {
			twinIDs = append(twinIDs, m[1])
		}
	}
	if !slices.Equal(ids, twinIDs) {
		t.Errorf("%s lists %v, its twin %v", u, ids, twinIDs)
	}
	return ids, next, strings.Contains(string(page), "Volver a las más recientes")
}

const ejePage = "/emergencias/eje-cafetero"

func TestSiteRecordPage(t *testing.T) {
	t.Parallel()
	s := testserver.Start(t, testserver.Options{})
	known, _, _ := seedSite(t, s)
	rec := known[0] // a request: salud, urgent, 1 km north of Armenia, phone +57 300 555 0001
	resp, page := s.Do("GET", "/ayudas/"+rec.id, nil)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Cache-Control") != "private, no-cache" || resp.Header.Get("ETag") == "" {
		t.Fatalf("record page: %d, Cache-Control %q, ETag %q", resp.StatusCode, resp.Header.Get("Cache-Control"), resp.Header.Get("ETag"))
	}
	doc := sitetest.ParseHTML(t, page)
	text := strings.Join(strings.Fields(sitetest.VisibleText(doc)), " ")
	for _, want := range []string{"Médico para adultos mayores", "Tipo: Solicitud", "Categoría: Salud", "Urgencia: Urgente",
		"Terremoto en el Eje Cafetero", "Nombre: Ana Gómez", "WhatsApp: +57 300 555 0001", "Escribir por WhatsApp", "Cra 14 # 20-31", "Centro"} {
		if !strings.Contains(text, want) {
			t.Errorf("the record page does not show %q:\n%s", want, text)
		}
	}
	links := sitetest.HTMLLinks(doc)
	for _, want := range []string{"https://wa.me/573005550001", s.URL + ejePage} {
		if !slices.Contains(links, want) {
			t.Errorf("the record page does not link to %s: %v", want, links)
		}
	}
	if !slices.ContainsFunc(links, func(l string) bool { return strings.HasPrefix(l, "https://www.openstreetmap.org/?mlat=") }) {
		t.Errorf("the record page has no map link: %v", links)
	}
	resp, twin := s.Do("GET", "/ayudas/"+rec.id+".md", nil)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/markdown; charset=utf-8" {
		t.Fatalf("record twin: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	sitetest.CheckTwinHeader(t, "record twin", twin, s.URL+"/ayudas/"+rec.id)
	if !strings.Contains(string(twin), "+573005550001") || !slices.Contains(sitetest.MarkdownLinks(twin), "https://wa.me/573005550001") {
		t.Errorf("the record twin lacks the phone or its wa.me link:\n%s", twin)
	}
	// The publicUrl the API gives is this page.
	_, detail := call(t, s, "GET", "/api/public/v1/help?view=detail&id="+rec.id, nil)
	if detail["publicUrl"] != s.URL+"/ayudas/"+rec.id {
		t.Errorf("publicUrl %v is not the record page", detail["publicUrl"])
	}
	for _, p := range []string{"/ayudas/0000000000000000", "/ayudas/0000000000000000.md", "/ayudas/no-es-un-id", // an id in capitals is the same record (TestIDsCaseInsensitive)
		"/ayudas/", "/ayudas/" + rec.id + "/x", "/ayudas/%3Cscript%3E.md"} {
		resp, body := s.Do("GET", p, nil)
		if resp.StatusCode != http.StatusNotFound || !strings.Contains(string(body), "Página no encontrada") {
			t.Errorf("GET %s: %d, want the 404 page", p, resp.StatusCode)
		}
	}
}

func TestSiteEmergencyLists(t *testing.T) {
	t.Parallel()
	s := testserver.Start(t, testserver.Options{})
	known, hostile, offers := seedSite(t, s)
	id := func(i int) string { return known[i].id }

	// newest orders ids as lists without a point do: newest first. An id starts with its creation time
	// in milliseconds, so records created within the same millisecond come in the order of their ids.
	newest := func(ids ...string) []string {
		return slices.SortedFunc(slices.Values(ids), func(a, b string) int { return strings.Compare(b, a) })
	}

	// byParts orders ids as the default list does: open urgent requests, then the other requests, then
	// offers, each newest first.
	urgent, others := []string{hostile, id(7), id(0)}, []string{id(2), id(1)}
	byParts := func(ids ...string) []string {
		var parts [3][]string
		for _, i := range ids {
			switch {
			case slices.Contains(urgent, i):
				parts[0] = append(parts[0], i)
			case slices.Contains(others, i):
				parts[1] = append(parts[1], i)
			default:
				parts[2] = append(parts[2], i)
			}
		}
		return slices.Concat(newest(parts[0]...), newest(parts[1]...), newest(parts[2]...))
	}
	// The default page: ten of each part, with a link to all of them.
	all := newest(append(slices.Clone(offers), id(4), id(3))...) // the offers
	grouped := slices.Concat(newest(urgent...), newest(others...), all[:10])
	if got, next, _ := listed(t, s, ejePage, "", http.StatusOK); !slices.Equal(got, grouped) || next != "" {
		t.Errorf("default page: %v (next %q), want %v", got, next, grouped)
	}
	// A list by type: 20 a page, newest first, then the rest through the "Ver más" link.
	first, next, _ := listed(t, s, ejePage, "type=offer", http.StatusOK)
	if !slices.Equal(first, all[:20]) || next == "" {
		t.Fatalf("first page: %v (next %q), want %v", first, next, all[:20])
	}
	nextURL, err := url.Parse(next)
	if err != nil {
		t.Fatal(err)
	}
	second, after, later := listed(t, s, ejePage, nextURL.RawQuery, http.StatusOK)
	if !slices.Equal(second, all[20:]) || after != "" || !later {
		t.Errorf("second page: %v (next %q, back link %v), want %v", second, after, later, all[20:])
	}

	for _, tc := range []struct {
		query string
		want  []string
	}{
		{"type=request", newest(hostile, id(7), id(2), id(1), id(0))},
		{"category=salud", byParts(id(7), id(4), id(0))}, // without a type or urgency chosen, in parts
		{"type=request&category=salud", newest(id(7), id(0))},
		{"urgency=urgent", newest(hostile, id(7), id(0))},
		{"q=medic", byParts(id(7), id(4), id(3), id(0))}, // médico, médica, MEDICINAS, medicamentos
		// Nearest first; 4.95 km (known[1]) is inside 5 km, 5.05 km (known[2]) outside; the offers have no place.
		{fmt.Sprintf("latitude=%v&longitude=%v&radiusKm=5", centerLat, centerLon), []string{hostile, id(0), id(4), id(7), id(1)}},
		{fmt.Sprintf("latitude=%v&longitude=%v&radiusKm=5&type=offer", centerLat, centerLon), []string{id(4)}},
		// What a GET form without JavaScript sends: every field, the empty ones too.
		{"type=request&category=&urgency=&q=&latitude=&longitude=&radiusKm=", newest(hostile, id(7), id(2), id(1), id(0))},
		{"category=rescate", nil},
	} {
		if got, next, _ := listed(t, s, ejePage, tc.query, http.StatusOK); !slices.Equal(got, tc.want) || next != "" {
			t.Errorf("?%s lists %v (next %q), want %v", tc.query, got, next, tc.want)
		}
	}
	// The other emergency lists its own.
	if got, _, _ := listed(t, s, "/emergencias/inundaciones-la-mojana", "", http.StatusOK); !slices.Equal(got, []string{id(5), id(6)}) { // the request, then the offer
		t.Errorf("La Mojana lists %v, want %v", got, []string{id(5), id(6)})
	}

	// Invalid parameters: 400, the page still renders, and says what is wrong in Spanish.
	for query, want := range map[string]string{
		"latitude=abc": "«Latitud» debe ser un número",
		"type=nada":    "«Tipo» no admite",
		"latitude=4.5": "«Longitud» es obligatorio",
		"latitude=4.5&longitude=-75&radiusKm=500": "«Radio en kilómetros» debe ser mayor que 0",
		"cursor=basura": "El enlace «Ver más» ya no sirve",
	} {
		listed(t, s, ejePage, query, http.StatusBadRequest)
		for _, p := range []string{ejePage + "?" + query, ejePage + ".md?" + query} {
			_, body := s.Do("GET", p, nil)
			if !strings.Contains(string(body), "No se pudo aplicar el filtro") || !strings.Contains(string(body), want) {
				t.Errorf("GET %s does not explain %q:\n%s", p, want, body)
			}
		}
	}

	// A municipio's name cut short: the page links the lists of the municipios it begins, the other
	// filters kept, and leaves the API's «(municipio=…)» out of its words.
	for _, p := range []string{ejePage, ejePage + ".md"} {
		_, body := s.Do("GET", p+"?municipio=armeni&category=salud", nil)
		link := s.URL + ejePage + "?category=salud&municipio=63001"
		if p == ejePage {
			link = `<a href="` + strings.ReplaceAll(link, "&", "&amp;") + `">Armenia (Quindío)</a>`
		} else {
			link = "[Armenia (Quindío)](" + link + ")"
		}
		if !strings.Contains(string(body), "¿Quiso decir "+link) || strings.Contains(string(body), "(municipio=") {
			t.Errorf("GET %s?municipio=armeni does not link Armenia's list, or shows the API's parameter:\n%s", p, body)
		}
	}
	// A typo: the town a typo away, a village too, as a link and without the API's jargon.
	_, body := s.Do("GET", ejePage+".md?municipio=el+kaimo", nil)
	if !strings.Contains(string(body), "¿Quiso decir [El Caimo, Armenia (Quindío)]("+s.URL+ejePage+"?municipio=63001001)?") ||
		strings.Contains(string(body), "DIVIPOLA") || strings.Contains(string(body), "quiso decir") {
		t.Errorf("GET %s.md?municipio=el+kaimo does not guess El Caimo as a link:\n%s", ejePage, body)
	}

	// The sitemap lists every record's page, llms.txt the pattern of their twins.
	_, sm := s.Do("GET", "/sitemap.xml", nil)
	for _, r := range append(append([]string{hostile}, offers...), id(0), id(5)) {
		if !strings.Contains(string(sm), "<loc>"+s.URL+"/ayudas/"+r+"</loc>") {
			t.Errorf("sitemap.xml does not list the page of %s", r)
		}
	}
	_, llms := s.Do("GET", "/llms.txt", nil)
	for _, want := range []string{s.URL + "/ayudas/{id}.md", "buscar_ayudas", "ver_ayuda", "consultar_panorama", "view=list", "view=detail", "format=csv"} {
		if !strings.Contains(string(llms), want) {
			t.Errorf("llms.txt does not mention %s", want)
		}
	}
}

// TestSiteTownOfAnotherEmergency: a town of another emergency's area, typed on one emergency's page or in
// the home search, leads to that emergency's list: a name cut short is guessed there, the search goes
// there, and the town's empty list here links its list there.
func TestSiteTownOfAnotherEmergency(t *testing.T) {
	t.Parallel()
	s := testserver.Start(t, testserver.Options{Emergencies: `
		emergency eje-cafetero {
			title "Terremoto en el Eje Cafetero"
			area 63 66 17
		}
		emergency inundaciones-la-mojana {
			title "Inundaciones en La Mojana"
			area 70 13 23
		}`})
	// A town of the other emergency's area: a name cut short is guessed in its list, a search goes there,
	// and its empty list here links its list there.
	if _, body := s.Do("GET", "/emergencias/eje-cafetero"+".md?municipio=guarand", nil); !strings.Contains(string(body), "[Guaranda (Sucre)]("+s.URL+"/emergencias/inundaciones-la-mojana?municipio=70265)") {
		t.Errorf("«guarand» on the earthquake's page does not guess Guaranda in La Mojana's list:\n%s", body)
	}
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	if resp, err := noFollow.Get(s.URL + "/buscar?q=lancha&municipio=guarand"); err != nil {
		t.Fatal(err)
	} else if resp.Body.Close(); resp.Header.Get("Location") != "/emergencias/inundaciones-la-mojana?municipio=guarand&q=lancha" {
		t.Errorf("/buscar with «guarand» goes to %q", resp.Header.Get("Location"))
	}
	if _, body := s.Do("GET", "/emergencias/eje-cafetero"+".md?municipio=70265", nil); !strings.Contains(string(body), "[Guaranda (Sucre) está en la zona de «Inundaciones en La Mojana»: ver sus publicaciones allí]("+s.URL+"/emergencias/inundaciones-la-mojana?municipio=70265)") {
		t.Errorf("Guaranda's empty list on the earthquake's page does not link La Mojana's:\n%s", body)
	}

}
