package e2e

import (
	"encoding/json"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/directaid/directaid/internal/pgtest"
	"github.com/directaid/directaid/internal/testserver"
	"github.com/directaid/directaid/schema"
)

// The records of the Eje Cafetero's towns that the town tests and the people's walk find, by title.
const (
	townInsulin      = "Insulina para mi papá"         // Armenia (Quindío), urgent
	townInsulinOther = "Insulina en Antioquia"         // Armenia (Antioquia): a name two municipios share
	townWater        = "Agua potable en Cuba"          // Pereira; someone says they are helping
	townRescue       = "Persona atrapada en escombros" // Pereira, urgent
	townTransport    = "Transporte desde Pereira"      // Pereira, an offer
)

// seedTowns publishes the towns' records, placed by their DANE code only (no coordinate), and a response
// («yo puedo ayudar») to the water request of Pereira, so that it is the one record there somebody attends.
func seedTowns(t *testing.T, s *testserver.Server) {
	t.Helper()
	place := func(title, code, urgency, category string) map[string]any {
		return with(validRequest(), "title", title, "placeCode", code, "latitude", nil, "longitude", nil,
			"urgency", urgency, "category", category, "neighborhood", nil)
	}
	var water string
	for _, r := range []map[string]any{
		place(townInsulin, "63001", "urgent", "salud"),
		place(townInsulinOther, "05059", "needed", "salud"), // warned, not refused
		place(townWater, "66001", "needed", "alimentos"),
		place(townRescue, "66001", "urgent", "rescate"),
		with(validOffer(), "title", townTransport, "placeCode", "66001", "address", "Av. 30 de Agosto"),
	} {
		resp, body := publish(t, s, r)
		if resp.StatusCode != 201 {
			t.Fatalf("seed %v: %d %v", r["title"], resp.StatusCode, body)
		}
		if r["title"] == townWater {
			water = body["id"].(string)
		}
	}
	resp, body := s.Do("POST", schema.ResponsesPath(water), []byte(`{"message":"Llevo 20 litros esta tarde"}`), "Content-Type", "application/json")
	if resp.StatusCode != 201 {
		t.Fatalf("respond to %s: %d %s", townWater, resp.StatusCode, body)
	}
}

// TestTownSearchBothStores: an emergency's page found by town, as a person types it, on Badger and on
// PostgreSQL (each store answers the API's municipio filter from its own index): «Pereira» or its code in
// «Municipio», a town in the text («insulina armenia», «pereira»), a name two municipios share (the one
// in the emergency's area), the home page's search, and Pereira's records nobody is helping yet. Each
// list holds exactly the records of that town.
func TestTownSearchBothStores(t *testing.T) {
	stores := map[string]func(t *testing.T) testserver.Options{
		"badger": func(*testing.T) testserver.Options { return testserver.Options{} },
		"postgres": func(t *testing.T) testserver.Options {
			return testserver.Options{Postgres: pgtest.Shared(t).NewDatabase(t)}
		},
	}
	for _, name := range []string{"badger", "postgres"} {
		t.Run(name, func(t *testing.T) {
			s := testserver.Start(t, stores[name](t))
			seedTowns(t, s)
			all := []string{townInsulin, townInsulinOther, townWater, townRescue, townTransport}
			pereira := []string{townRescue, townWater, townTransport} // urgent, then requests, then offers
			for _, c := range []struct {
				query string
				want  []string // in this order; the others of all absent
			}{
				{"municipio=Pereira", pereira},
				{"municipio=pereira", pereira},
				{"municipio=66001", pereira},
				{"q=pereira", pereira},
				{"q=Pereira", pereira},
				{"municipio=Armenia", []string{townInsulin}},
				{"municipio=armenia+antioquia", []string{townInsulinOther}},
				{"q=insulina+armenia", []string{townInsulin}},
				{"q=busco+insulina+en+armenia", []string{townInsulin}}, // as a person types it: «busco», «en» are not searched
				{"municipio=Pereira&attended=false", []string{townRescue, townTransport}},
				{"municipio=Pereira&attended=true", []string{townWater}},
				{"municipio=Pereira&type=request", []string{townRescue, townWater}}, // newest first
			} {
				body := mainOf(t, s, "/emergencias/eje-cafetero?"+c.query)
				wantTitles(t, c.query, body, all, c.want)
			}

			if m := mainOf(t, s, "/emergencias/eje-cafetero?q=busco+insulina+en+armenia"); !strings.Contains(m, "No se buscaron las palabras «busco en».") {
				t.Errorf("a search with filler words does not say which were left out:\n%s", m)
			}

			// A municipio with nothing links to what is near its point: Calarcá has no record, Armenia's
			// insulin is about 5 km away (Pereira's, 40 km, are not); a village's link starts from the
			// village, not from its municipio (El Caimo, in Armenia: the list is Armenia's, not empty).
			calarca := mainOf(t, s, "/emergencias/eje-cafetero?municipio=calarca")
			wantTitles(t, "municipio=calarca", calarca, all, nil)
			near := regexp.MustCompile(`<a href="([^"]*latitude=[^"]*)">Ver 1 publicación a menos de 10 km de Calarcá \(Quindío\)</a>`).FindStringSubmatch(calarca)
			if near == nil {
				t.Fatalf("municipio=calarca: no link to what is near:\n%s", calarca)
			}
			nearURL, err := url.Parse(html.UnescapeString(near[1]))
			if err != nil {
				t.Fatal(err)
			}
			if v := nearURL.Query(); v.Has("municipio") || v.Get("radiusKm") != "10" || !strings.HasPrefix(v.Get("latitude"), "4.5") {
				t.Errorf("the link to what is near Calarcá: %s", nearURL)
			}
			nearList := mainOf(t, s, nearURL.RequestURI())
			wantTitles(t, "near calarca", nearList, all, []string{townInsulin})
			// Placed by its town's code: its distance is to the town's point, and says so.
			if !regexp.MustCompile(`a unos \d+,\d km \(ubicación aproximada\)`).MatchString(nearList) {
				t.Errorf("the distance of a record placed by its town does not say it is approximate:\n%s", nearList)
			}
			for _, q := range []string{"municipio=el+caimo", "municipio=Pereira&category=rescate", "municipio=manizales"} {
				if m := mainOf(t, s, "/emergencias/eje-cafetero?"+q); regexp.MustCompile(`>Ver [^<]* a menos de 10 km`).MatchString(m) {
					t.Errorf("%s: a link to what is near, on a list that has records or nothing near:\n%s", q, m)
				}
			}
			if m := mainOf(t, s, "/emergencias/eje-cafetero?municipio=manizales"); !strings.Contains(m, "No hay publicaciones en Manizales (Caldas) ni a menos de 10 km de allí.") {
				t.Errorf("municipio=manizales, with nothing in it nor near: the page does not say which town it read:\n%s", m)
			}

			// The home page's search: «insulina» in «Armenia», no emergency chosen.
			resp, err := modClient.Do(s.NewRequest("GET", "/buscar?q=insulina&municipio=Armenia", nil))
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			loc := resp.Header.Get("Location")
			if resp.StatusCode != http.StatusSeeOther || !strings.HasSuffix(loc, "/emergencias/eje-cafetero?municipio=Armenia&q=insulina") {
				t.Fatalf("/buscar: %d to %q", resp.StatusCode, loc)
			}
			u, _ := url.Parse(loc)
			wantTitles(t, "/buscar", mainOf(t, s, u.RequestURI()), all, []string{townInsulin})

			// The API's own filter, which the pages use, on this store.
			var l schema.HelpList
			if resp, raw := s.Do("GET", schema.HelpPath+"?view=list&emergencySlug=eje-cafetero&municipio=66001&attended=false", nil); resp.StatusCode != 200 {
				t.Fatalf("view=list by municipio: %d %s", resp.StatusCode, raw)
			} else if err := json.Unmarshal(raw, &l); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, it := range l.Items {
				got = append(got, it.Title)
			}
			if strings.Join(got, "|") != townTransport+"|"+townRescue { // newest first
				t.Errorf("view=list municipio=66001 attended=false: %q", got)
			}
		})
	}
}

// mainOf GETs an HTML page of the site and returns its <main>.
func mainOf(t *testing.T, s *testserver.Server, path string) string {
	t.Helper()
	resp, body := s.Do("GET", path, nil)
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %d\n%s", path, resp.StatusCode, body)
	}
	html := string(body)
	start, end := strings.Index(html, "<main"), strings.Index(html, "</main>")
	if start < 0 || end < start {
		t.Fatalf("GET %s: no <main>", path)
	}
	return html[start:end]
}

// wantTitles: of the titles in all, main holds those of want, in that order, and no other.
func wantTitles(t *testing.T, what, main string, all, want []string) {
	t.Helper()
	for _, title := range all {
		switch shown := strings.Contains(main, title); {
		case slices.Contains(want, title) && !shown:
			t.Errorf("%s: the list lacks %q", what, title)
		case !slices.Contains(want, title) && shown:
			t.Errorf("%s: the list shows %q, which is not of that town", what, title)
		}
	}
	last := -1
	for _, w := range want {
		i := strings.Index(main, w)
		if i >= 0 && i < last {
			t.Errorf("%s: %q comes too early; want the order %q", what, w, want)
		}
		last = max(last, i)
	}
}

// TestEmptyTownListNamesTheTown: a search for a town with nothing in it or near it («bogota», written
// without its accent; «Calarcá» typed in «Municipio» far from any publication) says which town it read,
// so that a person knows the name was understood and the list is really empty.
func TestEmptyTownListNamesTheTown(t *testing.T) {
	t.Parallel()
	s := testserver.Start(t, testserver.Options{})
	if resp, out := publish(t, s, validRequest()); resp.StatusCode != 201 {
		t.Fatalf("publish: %d %v", resp.StatusCode, out)
	}
	for q, want := range map[string]string{
		"q=bogota":          "No hay publicaciones en Bogotá, D.C. ni a menos de 10 km de allí.",
		"q=agua+en+bogota":  "No hay publicaciones con «agua» en Bogotá, D.C. ni a menos de 10 km de allí.",
		"municipio=Leticia": "No hay publicaciones en Leticia (Amazonas) ni a menos de 10 km de allí.",
	} {
		_, md := s.Do("GET", "/emergencias/eje-cafetero.md?"+q, nil)
		if !strings.Contains(string(md), want) {
			t.Errorf("%s: the page does not say %q:\n%s", q, want, md)
		}
	}
	// Words that nothing in a town holds, where the town has a record: the words are said, and the
	// town's records are one link away (the town is not said to be empty).
	_, md := s.Do("GET", "/emergencias/eje-cafetero.md?q=linternas+armenia", nil)
	for _, want := range []string{"No hay publicaciones con «linternas» en Armenia (Quindío) ni a menos de 10 km de allí.",
		"[Ver la publicación de Armenia (Quindío)](" + s.URL + "/emergencias/eje-cafetero?municipio=63001)"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("q=linternas+armenia: the page does not say %q:\n%s", want, md)
		}
	}
	// A word that is no place keeps the plain words.
	if _, md := s.Do("GET", "/emergencias/eje-cafetero.md?q=zzzz", nil); strings.Contains(string(md), "No hay publicaciones en") {
		t.Errorf("q=zzzz names a place:\n%s", md)
	}
}
