package site

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/directaid/directaid/backend/places"
	"github.com/directaid/directaid/schema"
)

// searchPath answers the home page's «¿Qué necesita? ¿Dónde?» form: it sends the person to the list of the
// right emergency, filtered by the words and the municipio.
const searchPath = "/buscar"

// searchView is what the home page's search form sees.
type searchView struct {
	Action    string
	Emergency *input // the emergency choice, when several are active (optional: the place decides)
}

func newSearchView(ems []schema.EmergencyInfo) *searchView {
	sv := &searchView{Action: searchPath}
	if len(ems) > 1 {
		in := input{Name: "emergencia", ID: "buscar-emergencia", Label: "Emergencia", Kind: "select",
			Hint: "Si no la elige, se busca en la del municipio.", Options: []option{{Label: "La del municipio"}}}
		for _, e := range ems {
			in.Options = append(in.Options, option{Value: e.Slug, Label: e.Title})
		}
		sv.Emergency = &in
	}
	return sv
}

// serveSearch redirects a search to the list of the emergency it means: the one chosen, else the one whose
// area holds the municipio, else the first active one. With none active, the home page says so.
func (h *handler) serveSearch(w http.ResponseWriter, r *http.Request, v *view) {
	if !allowMethods(w, r, false) {
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	q := r.URL.Query()
	if len(v.ems) == 0 {
		http.Redirect(w, r, "/", http.StatusSeeOther)
		return
	}
	// A village's municipio picks the emergency; the list gets the place as typed, and says which
	// municipio it read and links the records near the village's own point.
	typed := strings.TrimSpace(q.Get("municipio"))
	e := searchEmergency(v.ems, q.Get("emergencia"), villageMunicipio(v.ems, q.Get("emergencia"), typed), q.Get("q"))
	to := url.Values{}
	for name, s := range map[string]string{"q": q.Get("q"), "municipio": typed} {
		if s = strings.TrimSpace(s); s != "" {
			to.Set(name, s)
		}
	}
	target := schema.EmergencyPath(e.Slug)
	if len(to) > 0 {
		target += "?" + to.Encode()
	}
	http.Redirect(w, r, target, http.StatusSeeOther)
}

// villageMunicipio is where a search's «¿Dónde?» means: what was typed when it names a municipio (or
// nothing resolves it: the list then says why), else the municipio of the centro poblado it names
// («el caimo» is in Armenia), those of the chosen emergency's area, or of any active one's, first.
func villageMunicipio(ems []schema.EmergencyInfo, slug, typed string) string {
	var area []string
	for _, e := range ems {
		if slug == "" || e.Slug == slug {
			area = append(area, e.Area...)
		}
	}
	if p, ok := village(typed, area); ok {
		return p.MunicipioCode()
	}
	return typed
}

// village is the centro poblado that typed names («el caimo», «El Caimo Armenia»), those of area first,
// when typed names no municipio.
func village(typed string, area []string) (places.Place, bool) {
	if typed = strings.TrimSpace(typed); typed == "" {
		return places.Place{}, false
	}
	if p, ok := places.Lookup(typed); ok && p.Kind() == places.CentroPoblado { // its DANE code (8 digits)
		return p, true
	}
	// A municipio of the area so named is the municipio; a village of the area comes before a municipio
	// elsewhere («la florida» in the Eje Cafetero is a village of Pereira, not La Florida, Nariño).
	if ms := places.Municipios(typed, area...); len(ms) > 0 && places.InArea(ms[0].Code, area) {
		return places.Place{}, false
	}
	found := places.Search(typed, 5, area...)
	for _, p := range found {
		if p.Kind() == places.CentroPoblado && places.NamedBy(p, typed) && places.InArea(p.Code, area) {
			return p, true
		}
	}
	if len(places.Municipios(typed)) > 0 {
		return places.Place{}, false
	}
	for _, p := range found {
		if p.Kind() == places.CentroPoblado && places.NamedBy(p, typed) {
			return p, true
		}
	}
	return places.Place{}, false
}

// searchEmergency is the emergency a search means (see serveSearch): the one chosen, else the one whose
// area holds the municipio (or the municipio its name cut short begins), else (no municipio typed) the
// one whose area holds a place the words name («agua en sincelejo», as its list reads them), else the
// first.
func searchEmergency(ems []schema.EmergencyInfo, slug, municipio, words string) schema.EmergencyInfo {
	for _, e := range ems {
		if e.Slug == slug {
			return e
		}
	}
	if municipio != "" {
		for _, e := range ems {
			if ms := places.Municipios(municipio, e.Area...); len(ms) > 0 && places.InArea(ms[0].Code, e.Area) {
				return e
			}
		}
		for _, e := range ems { // a name cut short («guarand»): the emergency of the municipio it begins
			if ms := places.MunicipiosBeginning(municipio, 1, e.Area...); len(ms) > 0 && places.InArea(ms[0].Code, e.Area) {
				return e
			}
		}
		return ems[0]
	}
	for _, e := range ems {
		if p, _, ok := placeInText(words, e.Area); ok && places.InArea(p.Code, e.Area) {
			return e
		}
	}
	return ems[0]
}
