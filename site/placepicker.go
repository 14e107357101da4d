package site

import (
	"net/url"
	"strings"

	"github.com/directaid/directaid/backend/places"
)

// The «¿Dónde?» of the publish forms: departamento → municipio → centro poblado, or a search by name,
// from DANE's DIVIPOLA list (backend/places). Without JavaScript each step is a submit button that
// re-renders the form with everything typed kept; with it, lugares.js does the same on the phone from
// the list served once at a content-hashed URL (placesAsset), with no network service.

// Names of the picker's form fields: none is a field of the API, which gets placeCode.
const (
	pickDepartamento = "lugar-departamento"
	pickMunicipio    = "lugar-municipio"
	pickCentro       = "lugar-centro"
	pickSearch       = "lugar-buscar"
	pickChoose       = "lugar-elegir" // a search result's button: its value is the code
	pickStep         = "paso"         // the step buttons: re-render, do not publish
	// stepDefault is the form's default button (Enter in a field): a search when the search box holds
	// words and no place is chosen yet, else the publication.
	stepDefault    = "defecto"
	maxPickResults = 12
)

// pickerMessages are what a person reads about the place.
var pickerMessages = struct{ Missing, Unknown, NoResults, Guess, Loading, Offline string }{
	Missing: "Diga dónde: busque su municipio, corregimiento o vereda por el nombre, o elija el departamento y el municipio, o escriba la latitud y la longitud.",
	Unknown: "Ese lugar no está en la lista de municipios y centros poblados: elíjalo de nuevo.",
	Guess:   "No hay un lugar con ese nombre. ¿Quiso decir…?",
	// With JavaScript, typed before the place list came (a slow signal).
	Loading:   "Cargando la lista de lugares… Si tarda, pulse Enter o «Buscar»: el servidor busca el nombre.",
	NoResults: "No se encontró ningún municipio ni centro poblado con ese nombre. Revise la escritura o elija el departamento y el municipio.",
	// With JavaScript and no signal, before the place list ever came to the phone (it comes on first use).
	Offline: "Sin señal, y la lista de lugares todavía no está en este teléfono (se guarda la primera vez que se usa con señal): pulse «Usar mi ubicación» (abajo; funciona sin señal), o escriba la latitud y la longitud, o inténtelo de nuevo cuando vuelva la señal.",
}

// placePicker is what the form template sees of the picker.
type placePicker struct {
	Departamento, Municipio, Centro input
	Search                          string
	Searched                        bool
	Guessed                         bool     // nothing had the name: Results are names like it
	Results                         []option // search results: code and label
	Chosen                          string   // label of the place the form will send
	JustChosen                      bool     // chosen by this POST (a search result's button)
	Code                            string   // its DIVIPOLA code
	Required                        bool
	Error                           string
	ListURL                         string   // the place list for lugares.js
	Area                            []string // the active emergencies' areas: their places come first
	Action                          string   // the form's action, which the steps post to (#lugar)
}

// pickerStep reports whether a POST only moves the picker (a step or search button, or Enter in the
// search box), so that the form is shown again instead of published.
func pickerStep(vals url.Values) bool {
	if vals.Get(pickStep) == stepDefault {
		return searchOnEnter(vals)
	}
	return vals.Has(pickStep) || vals.Has(pickChoose)
}

// searchOnEnter reports whether the default button (Enter) asks for a search: words in the search box
// and no place chosen yet.
func searchOnEnter(vals url.Values) bool {
	_, chosen := chosenPlace(vals)
	return strings.TrimSpace(vals.Get(pickSearch)) != "" && !chosen
}

// chosenPlace is the most precise place the posted picker names consistently: a search result, else
// the centro poblado of the chosen municipio, else the municipio of the chosen departamento.
func chosenPlace(vals url.Values) (places.Place, bool) {
	if p, ok := places.Lookup(vals.Get(pickChoose)); ok && p.Kind() != places.Departamento {
		return p, true
	}
	d, m, c := strings.TrimSpace(vals.Get(pickDepartamento)), strings.TrimSpace(vals.Get(pickMunicipio)), strings.TrimSpace(vals.Get(pickCentro))
	if len(m) != 5 || !strings.HasPrefix(m, d) {
		return places.Place{}, false
	}
	if len(c) == 8 && strings.HasPrefix(c, m) {
		if p, ok := places.Lookup(c); ok {
			return p, true
		}
	}
	p, ok := places.Lookup(m)
	return p, ok && p.Kind() == places.Municipio
}

func placeOptions(ps []places.Place, first string) []option {
	out := []option{{Label: first}}
	for _, p := range ps {
		out = append(out, option{Value: p.Code, Label: p.Name})
	}
	return out
}

// newPlacePicker builds the picker from the posted values (none on a fresh form).
func newPlacePicker(vals url.Values, required bool, listURL, action string, area []string) *placePicker {
	pk := &placePicker{Required: required, ListURL: listURL, Search: strings.TrimSpace(vals.Get(pickSearch)), Action: action, Area: area}
	pk.Departamento = input{Name: pickDepartamento, ID: "f-" + pickDepartamento, Label: "Departamento", Kind: "select",
		Options: placeOptions(places.Departamentos(), "Elija el departamento")}
	pk.Municipio = input{Name: pickMunicipio, ID: "f-placeCode", Label: "Municipio", Kind: "select", Required: required,
		Options: []option{{Label: "Elija primero el departamento"}}}
	pk.Centro = input{Name: pickCentro, ID: "f-" + pickCentro, Label: "Centro poblado o vereda (si no es la cabecera)", Kind: "select",
		Options: []option{{Label: "Elija primero el municipio"}}}
	dep := strings.TrimSpace(vals.Get(pickDepartamento))
	if p, ok := chosenPlace(vals); ok {
		pk.Code, pk.Chosen, dep = p.Code, places.Label(p), p.Code[:2]
		// Chosen by a result's button (posted to the form's address, which opens at its top): the chosen
		// place takes the focus, which brings the picker into view.
		pk.JustChosen = vals.Has(pickChoose)
	}
	if _, ok := places.Lookup(dep); ok && len(dep) == 2 {
		pk.Departamento.setValue(dep)
		pk.Municipio.Options = placeOptions(places.Children(dep), "Elija el municipio")
	}
	if pk.Code != "" {
		pk.Municipio.setValue(pk.Code[:5])
		pk.Centro.Options = placeOptions(places.Children(pk.Code[:5]), "La cabecera municipal, o no sé")
		pk.Centro.setValue(pk.Code)
	}
	if step := vals.Get(pickStep); pk.Search != "" && (step == "buscar" || (step == stepDefault && searchOnEnter(vals))) {
		pk.Searched = true
		found := places.Search(pk.Search, maxPickResults, area...)
		if len(found) == 0 {
			// A typo («armenai», «pereria»): the names a letter or two away, as the lists guess them.
			found, pk.Guessed = places.NamesLike(pk.Search, maxPickResults, area...), true
		}
		for _, p := range found {
			pk.Results = append(pk.Results, option{Value: p.Code, Label: places.Label(p)})
		}
	}
	return pk
}

// KindWords are places.KindWords for lugares.js, separated by spaces.
func (*placePicker) KindWords() string { return strings.Join(places.KindWords, " ") }

// AreaCodes are the area's codes for lugares.js, separated by spaces.
func (pk *placePicker) AreaCodes() string { return strings.Join(pk.Area, " ") }

// NoResultsText and MissingText give the template the picker's messages.
func (*placePicker) NoResultsText() string { return pickerMessages.NoResults }
func (*placePicker) GuessText() string     { return pickerMessages.Guess }
func (*placePicker) LoadingText() string   { return pickerMessages.Loading }
func (*placePicker) MissingText() string   { return pickerMessages.Missing }
func (*placePicker) OfflineText() string   { return pickerMessages.Offline }
