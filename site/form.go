package site

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"maps"
	"mime"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/directaid/directaid/schema"
)

// labels are the short Spanish names of the fields in the forms; the rest (types, limits, hints,
// choices) comes from the schema.
var labels = map[string]string{
	"emergencySlug": "Emergencia", "title": "Título", "description": "Descripción", "category": "Categoría",
	"contactName": "Nombre de contacto", "contactWhatsapp": "WhatsApp de contacto", "address": "Dirección",
	"neighborhood": "Barrio o vereda", "latitude": "Latitud", "longitude": "Longitud", "urgency": "Urgencia",
	"neededPeople": "Personas que necesitan la ayuda", "collectionCenterStatus": "Estado del centro de acopio",
	"placeCode": "Municipio", "locationPrecision": "Origen de las coordenadas",
	"publishContact": "Acepto que mi nombre y mi número de WhatsApp se publiquen en este sitio",
	// The filters of the emergency pages' lists.
	"type": "Tipo", "q": "Texto", "radiusKm": "Radio en kilómetros", "municipio": "Municipio",
}

// enumLabels name the schema's enumeration values for people (schema.EnumLabels).
var enumLabels = schema.EnumLabels

// formHints replace the schema's description where it speaks to apps (the coordinates name placeCode,
// which the form's picker stands for).
var formHints = map[string]string{
	"latitude": "Grados decimales, p. ej. 4.5339 o 4,5339.", "longitude": "Grados decimales, p. ej. -75.6811 o -75,6811.",
	// Where there is no street address (a vereda), directions are what a helper needs.
	"address": "La calle y el número o, si no hay, cómo llegar: p. ej. «vereda El Caimo, casa azul junto a la escuela».",
}

var autocomplete = map[string]string{"contactName": "name", "contactWhatsapp": "tel", "address": "street-address"}

// fieldGroup puts the place and the contact fields in their own fieldsets; the others go in the first.
var fieldGroup = map[string]int{"address": 1, "neighborhood": 1, "latitude": 1, "longitude": 1,
	"contactName": 2, "contactWhatsapp": 2}

// formTexts are the words that differ between the request and the offer forms.
type formTexts struct{ What, Submit, Created, Duplicate, Again, Resolve string }

var formWords = map[string]formTexts{
	schema.TypeRequest: {What: "Qué necesita", Submit: "Publicar solicitud", Created: "Listo: su solicitud quedó publicada.",
		Duplicate: "Esta solicitud ya estaba publicada: no se creó otra.", Again: "Publicar otra solicitud",
		Resolve: "marcar la solicitud como resuelta"},
	schema.TypeOffer: {What: "Qué ofrece", Submit: "Publicar ofrecimiento", Created: "Listo: su ofrecimiento quedó publicado.",
		Duplicate: "Este ofrecimiento ya estaba publicado: no se creó otro.", Again: "Publicar otro ofrecimiento",
		Resolve: "marcar el ofrecimiento como resuelto"},
}

// messages are what a person reads when a publication fails. The page carries them (data attributes),
// so the script and the server say the same thing.
type messages struct{ Fields, Limit, Server, Network, Changed, NoManage, Consent, Saved string }

var msg = messages{
	Fields:  "No se pudo publicar: corrija los campos marcados.",
	Limit:   "Se alcanzó el límite temporal de publicaciones. Espere un minuto y vuelva a enviar: no se duplicará.",
	Server:  "El servidor no pudo guardar la publicación. Vuelva a enviar en un momento: no se duplicará.",
	Network: "No hubo respuesta del servidor. Revise su conexión y vuelva a enviar: no se duplicará.",
	Changed: "Lo que envió ahora es distinto de lo ya publicado, y no se aplicó.",
	// A retry from another network than the first send's: the manage link goes only to that network.
	NoManage: "Este teléfono no recibió el enlace para gestionarla: la primera vez se envió desde otra red " +
		"(otro wifi o los datos móviles). Para recibirlo, vuelva a su formulario (la página anterior), con los mismos " +
		"datos, y envíelo de nuevo cuando esté en la red desde la que la envió la primera vez: no se publicará dos veces. " +
		"Sin ese enlace no podrá retirar su número ni marcarla como resuelta.",
	Consent: "Marque la casilla de autorización: sin ella no se puede publicar.",
	// With JavaScript and no signal (assets/form.js keeps the fill in the outbox).
	Saved: "Sin señal: quedó guardada en este teléfono — se enviará cuando vuelva la señal, sin duplicarse. " +
		"No hace falta enviarla otra vez.",
}

// formSpec is a publish form derived from a wire type's schema.
type formSpec struct {
	typ     string
	texts   formTexts
	groups  [3][]field
	consent field
	place   bool // the schema has placeCode: the «¿Dónde?» picker replaces it
}

func newFormSpec(typ string) (*formSpec, error) {
	name := "HelpRequest"
	if typ == schema.TypeOffer {
		name = "HelpOffer"
	}
	fields, err := schemaFields(name)
	if err != nil {
		return nil, err
	}
	s := &formSpec{typ: typ, texts: formWords[typ]}
	for _, f := range fields {
		switch f.Name {
		case "type", "source", "externalId", "emergencySlug", "locationPrecision":
			// Set by the page, not typed by the person (locationPrecision: by «Usar mi ubicación»).
		case "placeCode":
			s.place = true // chosen with the picker
		case "publishContact":
			s.consent = f
		default:
			g := fieldGroup[f.Name]
			s.groups[g] = append(s.groups[g], f)
		}
	}
	if s.consent.Name == "" {
		return nil, errors.New("site: the publish schema has no publishContact")
	}
	return s, nil
}

// formView is what the form template sees.
type formView struct {
	Action, API, Type, Source, ExternalID string
	Texts                                 formTexts
	Msg                                   messages
	NoEmergency                           bool
	Single                                *schema.EmergencyInfo // the only active emergency (implicit choice)
	Emergency                             *input                // the emergency choice, when several are active
	Groups                                []groupView
	Consent                               input
	Summary                               string
	Errors                                []errorItem
	Picker                                *placePicker
	Result                                *schema.PublishResult
	Matches                               *matchesView // after a publication: who can answer it
	MatchesHeading                        string       // the heading of Matches for this form's type
	MatchesLimit                          int          // how many the confirmation shows (siteMatches)
}

type groupView struct {
	Legend string
	Inputs []input
	Geo    bool         // the group has latitude and longitude: offer "use my location"
	Picker *placePicker // the «¿Dónde?» picker, in the place group
}

type input struct {
	Name, ID, Label, Kind, Hint, Value, Error string
	// Missing is what form.js shows when the API says the field is missing, instead of the API's words
	// (the emergency's: the titles of the active ones, where the API names their slugs).
	Missing string
	// Only is the category the field applies to ("" for every one): with JavaScript it shows only then.
	Only                         string
	Step, Min, Max, Autocomplete string
	// InputMode is the keyboard a phone shows for a text input («decimal» for a coordinate).
	InputMode         string
	MaxLength         uint64
	Required, Checked bool
	Options           []option
}

type option struct {
	Value, Label string
	Selected     bool
	// Area is an emergency's area (departamento and municipio codes, separated by spaces): lugares.js
	// searches it first once the emergency is chosen.
	Area string
}

type errorItem struct{ Anchor, Message string }

// Expires is when the publication stops showing unless it is renewed, in Colombian words; "" when the
// answer does not say (a retry of a record that is not open).
func (fv *formView) Expires() string {
	if fv.Result == nil || fv.Result.ExpiresAt == nil {
		return ""
	}
	return spanishDateTime(*fv.Result.ExpiresAt)
}

// Months are the months' names, for the script that writes Expires from an answer it fetched.
func (fv *formView) Months() string { return monthNames() }

// Approximate is how an approximate distance reads, {d} the distance in words: for the script that lists
// the matches.
func (fv *formView) Approximate() string { return approximate("{d}") }

// ShareManage is a WhatsApp link that sends the manage link to a chat the publisher chooses (their own).
func (fv *formView) ShareManage() string {
	if fv.Result == nil || fv.Result.ManageURL == "" {
		return ""
	}
	return shareURL("Mi enlace para gestionar mi publicación (no lo comparta):", fv.Result.ManageURL)
}

// Created, Duplicate and Changed tell which success message applies.
func (fv *formView) Created() bool   { return fv.Result != nil && !fv.Result.Duplicate }
func (fv *formView) Duplicate() bool { return fv.Result != nil && fv.Result.Duplicate }
func (fv *formView) Changed() bool {
	return fv.Duplicate() && fv.Result.ContentMatches != nil && !*fv.Result.ContentMatches
}

// NoManage: the same publication again, from a network that does not get its manage link.
func (fv *formView) NoManage() bool {
	return fv.Duplicate() && !fv.Changed() && fv.Result.ManageURL == ""
}

func newInput(f field) input {
	in := input{Name: f.Name, ID: "f-" + f.Name, Label: labels[f.Name], Required: f.Required, MaxLength: f.MaxLength,
		Autocomplete: autocomplete[f.Name], Kind: "text"}
	if in.Label == "" {
		in.Label = f.Name
	}
	var hint []string
	if len(f.Enum) == 0 {
		// An enumeration's description explains its codes; the options already name them.
		hint = append(hint, cmp.Or(formHints[f.Name], f.Description))
		if l := strings.Join(f.limits(func(s string) string { return s }), "; "); l != "" {
			hint = append(hint, strings.ToUpper(l[:1])+l[1:]+".")
		}
	}
	in.Hint = strings.TrimSpace(strings.Join(hint, " "))
	switch {
	case len(f.Enum) > 0:
		in.Kind = "select"
		first := "Sin indicar"
		if f.Required && f.Default == "" {
			first = "Elija una opción"
		}
		if f.Default == "" {
			in.Options = append(in.Options, option{Label: first})
		}
		for _, e := range f.Enum {
			l := enumLabels[e]
			if c := schema.CategoryChoices[e]; c != "" && f.Name == "category" {
				l = c
			}
			if l == "" {
				l = e
			}
			in.Options = append(in.Options, option{Value: e, Label: l})
		}
	case f.Type == "number":
		// A coordinate, as text: a number input drops the decimal comma people write here («4,5339» becomes
		// 45339) and sends nothing for what it cannot read; the server reads either separator, and says
		// what is wrong with the rest.
		in.Kind, in.InputMode = "text", "decimal"
	case f.Type == "integer":
		// As text with a numeric keyboard: a number input reads «1.000», one thousand as Colombians write
		// it, as 1; the server reads the thousands' dots (formThousands) and bounds it.
		in.Kind, in.InputMode = "text", "numeric"
	case f.Name == "contactWhatsapp":
		in.Kind = "tel"
	case f.MaxLength > 300:
		in.Kind = "textarea"
	}
	return in
}

// withLabel is an API message about in's field, naming the field as the form labels it.
func withLabel(message string, in *input) string {
	return strings.ReplaceAll(message, "«"+in.Name+"»", "«"+in.Label+"»")
}

func (in *input) setValue(v string) {
	in.Value = v
	for i := range in.Options {
		in.Options[i].Selected = in.Options[i].Value == v
	}
}

// build fills the view's inputs with vals (the posted form) or, on a fresh form, the schema's defaults.
func (fv *formView) build(s *formSpec, ems []schema.EmergencyInfo, vals url.Values, fresh bool, placesURL string) {
	if len(ems) == 1 {
		fv.Single = &ems[0]
	} else {
		in := input{Name: "emergencySlug", ID: "f-emergencySlug", Label: labels["emergencySlug"], Kind: "select", Required: true,
			Hint: "Hay varias emergencias activas: elija a cuál corresponde.", Options: []option{{Label: "Elija la emergencia"}}}
		for _, e := range ems {
			in.Options = append(in.Options, option{Value: e.Slug, Label: e.Title, Area: strings.Join(e.Area, " ")})
		}
		in.setValue(vals.Get("emergencySlug"))
		fv.Emergency = &in
		in.Missing = fv.emergencyMessage()
	}
	legends := [3]string{s.texts.What, "¿Dónde?", "Cómo contactarle"}
	if s.place {
		var area []string
		for _, e := range ems {
			if sel := vals.Get("emergencySlug"); len(ems) == 1 || sel == "" || sel == e.Slug {
				area = append(area, e.Area...)
			}
		}
		fv.Picker = newPlacePicker(vals, s.typ == schema.TypeRequest, placesURL, fv.Action, area)
	}
	for g, fields := range s.groups {
		gv := groupView{Legend: legends[g]}
		for _, f := range fields {
			in := newInput(f)
			if fresh {
				in.setValue(f.Default)
			} else {
				in.setValue(vals.Get(f.Name))
			}
			if f.Name == "collectionCenterStatus" {
				in.Only = "acopio"
				in.Label += " (solo si ofrece un centro de acopio)"
			}
			gv.Inputs = append(gv.Inputs, in)
			gv.Geo = gv.Geo || f.Name == "longitude"
		}
		if gv.Geo {
			gv.Picker = fv.Picker
		}
		if len(gv.Inputs) > 0 {
			fv.Groups = append(fv.Groups, gv)
		}
	}
	fv.Consent = newInput(s.consent)
	fv.Consent.Kind = "checkbox"
	fv.Consent.Hint = "Su nombre y su número de WhatsApp quedarán a la vista de cualquiera que vea la publicación, " +
		"para que quien pueda ayudar le escriba directamente. Sin esta autorización no se puede publicar."
	fv.Consent.Checked = vals.Get(s.consent.Name) == "true"
}

// inputs indexes the view's inputs by field name, to place the API's errors.
func (fv *formView) inputs() map[string]*input {
	out := map[string]*input{fv.Consent.Name: &fv.Consent}
	if fv.Emergency != nil {
		out[fv.Emergency.Name] = fv.Emergency
	}
	for g := range fv.Groups {
		for i := range fv.Groups[g].Inputs {
			in := &fv.Groups[g].Inputs[i]
			out[in.Name] = in
		}
	}
	return out
}

// emergencyMessage asks for the emergency by the titles of the active ones.
func (fv *formView) emergencyMessage() string {
	var titles []string
	for _, o := range fv.Emergency.Options {
		if o.Value != "" {
			titles = append(titles, "«"+o.Label+"»")
		}
	}
	m := "Elija la emergencia a la que corresponde su publicación"
	if len(titles) > 1 {
		m += ": " + strings.Join(titles[:len(titles)-1], ", ") + " o " + titles[len(titles)-1]
	}
	return m + "."
}

// sortErrors puts the error summary in the order of the fields on the page (the emergency first, the
// consent last); errors that name no field come after.
func (fv *formView) sortErrors() {
	order := map[string]int{}
	if fv.Emergency != nil {
		order[fv.Emergency.ID] = len(order) + 1
	}
	for _, g := range fv.Groups {
		if g.Picker != nil {
			order[g.Picker.Municipio.ID] = len(order) + 1
		}
		for _, in := range g.Inputs {
			order[in.ID] = len(order) + 1
		}
	}
	order[fv.Consent.ID] = len(order) + 1
	rank := func(e errorItem) int {
		if n := order[e.Anchor]; n > 0 {
			return n
		}
		return len(order) + 1
	}
	slices.SortStableFunc(fv.Errors, func(a, b errorItem) int { return rank(a) - rank(b) })
}

// notUTF8 is a posted value that is not UTF-8: the encoder would turn it into U+FFFD, making two
// different texts (two idempotency keys) one, so the form refuses it by name instead.
type notUTF8 string

func (n notUTF8) Error() string { return "form field " + string(n) + " is not UTF-8" }

// body is the JSON publication of a posted form. Numbers that do not parse are sent as text, so that
// the API names the field in its error.
func (s *formSpec) body(vals url.Values, externalID string) ([]byte, error) {
	if !utf8.ValidString(externalID) {
		return nil, notUTF8("externalId")
	}
	m := map[string]any{"type": s.typ, "source": Source, "externalId": externalID,
		s.consent.Name: vals.Get(s.consent.Name) == "true"}
	if e := strings.TrimSpace(vals.Get("emergencySlug")); e != "" {
		if !utf8.ValidString(e) {
			return nil, notUTF8("emergencySlug")
		}
		m["emergencySlug"] = e
	}
	if p, ok := chosenPlace(vals); ok && s.place {
		m["placeCode"] = p.Code
	}
	if lp := strings.TrimSpace(vals.Get("locationPrecision")); lp != "" && utf8.ValidString(lp) {
		m["locationPrecision"] = lp
	}
	for _, fields := range s.groups {
		for _, f := range fields {
			v := strings.TrimSpace(vals.Get(f.Name))
			if v == "" {
				continue
			}
			if !utf8.ValidString(v) {
				return nil, notUTF8(f.Name)
			}
			m[f.Name] = v
			if f.Type == "integer" && formThousands.MatchString(v) {
				v = strings.ReplaceAll(v, ".", "") // «1.000» personas: one thousand, not one
			}
			if f.Type == "number" || f.Type == "integer" {
				// A phone keyboard or a Colombian habit may write the decimal comma. Only plain decimals:
				// ParseFloat would read «4_5» as 45.
				if formDecimal.MatchString(v) {
					if n, err := strconv.ParseFloat(strings.Replace(v, ",", ".", 1), 64); err == nil {
						m[f.Name] = n
					}
				}
			}
		}
	}
	return json.Marshal(m)
}

// pointSlip says what a point typed in the form that is not in Colombia got wrong, as the lists' nearby
// filter says it (a longitude without its minus sign, the two swapped); "" when nothing is to say.
func pointSlip(inputs map[string]*input) string {
	num := func(name string) (float64, bool) {
		in := inputs[name]
		if in == nil || !formDecimal.MatchString(strings.TrimSpace(in.Value)) {
			return 0, false
		}
		f, err := strconv.ParseFloat(strings.Replace(strings.TrimSpace(in.Value), ",", ".", 1), 64)
		return f, err == nil
	}
	lat, ok1 := num("latitude")
	lon, ok2 := num("longitude")
	if !ok1 || !ok2 {
		return ""
	}
	return outsideColombia(lat, lon)
}

// formThousands is a whole number written with dots between its thousands («1.000», «12.500»).
var formThousands = regexp.MustCompile(`^[0-9]{1,3}(\.[0-9]{3})+$`)

// formDecimal is a number as a form takes it: digits with an optional sign and a decimal point or comma.
var formDecimal = regexp.MustCompile(`^[+-]?([0-9]+([.,][0-9]*)?|[.,][0-9]+)$`)

// pointPair is a point pasted whole («4.5339, -75.6811», as a map copies it): a latitude, a comma,
// semicolon or spaces, a longitude (decimal points).
var pointPair = regexp.MustCompile(`^\s*([+-]?[0-9]+(?:\.[0-9]+)?)\s*[,; ]\s*([+-]?[0-9]+(?:\.[0-9]+)?)\s*$`)

// commaPointPair is a point pasted whole with decimal commas («4,5339, -75,6811», as a phone set to
// Spanish copies it): a latitude, then «, », «;» or spaces, then a longitude.
var commaPointPair = regexp.MustCompile(`^\s*([+-]?[0-9]+,[0-9]+)\s*(?:;\s*|,\s+|\s+)([+-]?[0-9]+,[0-9]+)\s*$`)

// oneDecimalComma is one number written with a decimal comma («4,5339», as the form's hint says it may be):
// no point pasted whole, though pointPair reads one in it.
var oneDecimalComma = regexp.MustCompile(`^\s*[+-]?[0-9]+,[0-9]+\s*$`)

// pastedPoint is vals with a point pasted whole in «Latitud» split into its two fields, when «Longitud» is
// empty.
func pastedPoint(vals url.Values) url.Values {
	if strings.TrimSpace(vals.Get("longitude")) != "" {
		return vals
	}
	m := pointPair.FindStringSubmatch(vals.Get("latitude"))
	if m == nil || oneDecimalComma.MatchString(vals.Get("latitude")) {
		if m = commaPointPair.FindStringSubmatch(vals.Get("latitude")); m == nil {
			return vals
		}
	}
	out := maps.Clone(vals)
	out.Set("latitude", m[1])
	out.Set("longitude", m[2])
	return out
}

// newExternalID identifies one filling of a form, so that resending it cannot publish twice.
func newExternalID() string { return "web-" + strings.ToLower(rand.Text()) }

// handle builds the form of a GET, or publishes a POST through publish and shows the outcome. It
// returns the view and the HTTP status of the page.
func (s *formSpec) handle(w http.ResponseWriter, r *http.Request, v *view, action string,
	publish func(context.Context, []byte) (int, []byte)) (*formView, int) {
	fv := &formView{Action: action, API: schema.HelpPath, Type: s.typ, Source: Source, Texts: s.texts, Msg: msg, MatchesHeading: matchesHeadings[s.typ], MatchesLimit: siteMatches}
	if len(v.ems) == 0 {
		fv.NoEmergency = true
		return fv, http.StatusOK
	}
	if r.Method != http.MethodPost {
		fv.ExternalID = newExternalID()
		// Links from an emergency's page preselect it.
		fv.build(s, v.ems, url.Values{"emergencySlug": {r.URL.Query().Get("emergencia")}}, true, v.h.placesURL)
		return fv, http.StatusOK
	}
	vals, status := readForm(w, r)
	vals = pastedPoint(vals) // the fields show the point as it is read, and its slips are said of them
	if fv.ExternalID = strings.TrimSpace(vals.Get("externalId")); fv.ExternalID == "" {
		fv.ExternalID = newExternalID()
	}
	fv.build(s, v.ems, vals, false, v.h.placesURL)
	if status != http.StatusOK {
		fv.Summary = "No se pudo leer el formulario enviado. Vuelva a intentarlo."
		return fv, status
	}
	if pickerStep(vals) {
		return fv, http.StatusOK // the «¿Dónde?» moved a step: the same form again, nothing published
	}
	body, err := s.body(vals, fv.ExternalID)
	var bad notUTF8
	if errors.As(err, &bad) {
		if bad == "externalId" {
			fv.ExternalID = newExternalID() // so that the page can be sent again
		}
		eb, _ := json.Marshal(schema.InvalidUTF8("/" + string(bad)))
		return fv, fv.apply(http.StatusBadRequest, eb)
	}
	if err != nil {
		fv.Summary = msg.Server
		return fv, http.StatusInternalServerError
	}
	status = fv.apply(publish(r.Context(), body))
	if res := fv.Result; res != nil && res.Status == "open" {
		// The publication stands whether or not its matches can be read now: without them, the
		// confirmation still gives its links (the record's page lists them).
		// Without typed coordinates, the record's point is its place's (the service's precision place).
		approx := strings.TrimSpace(vals.Get("latitude")) == ""
		fv.Matches, _ = v.matches(r.Context(), res.ID, res.Type, res.EmergencySlug, approx)
	}
	return fv, status
}

// readForm reads a url-encoded form of at most schema.MaxBodyBytes.
func readForm(w http.ResponseWriter, r *http.Request) (url.Values, int) {
	if len(r.Header.Values("Content-Type")) > 1 {
		return url.Values{}, http.StatusBadRequest // ambiguous framing: not guessed
	}
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/x-www-form-urlencoded" {
		return url.Values{}, http.StatusUnsupportedMediaType
	}
	r.Body = http.MaxBytesReader(w, r.Body, schema.MaxBodyBytes)
	if err := r.ParseForm(); err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return url.Values{}, http.StatusRequestEntityTooLarge
		}
		return url.Values{}, http.StatusBadRequest
	}
	return r.PostForm, http.StatusOK
}

// apply shows the API's answer: the success message, or each error next to its field. It returns the
// HTTP status of the page.
func (fv *formView) apply(status int, resp []byte) int {
	if status == http.StatusOK || status == http.StatusCreated {
		var res schema.PublishResult
		if err := json.Unmarshal(resp, &res); err == nil && res.OK {
			fv.Result = &res
			return http.StatusOK
		}
		status = http.StatusBadGateway
	}
	var eb schema.ErrorBody
	_ = json.Unmarshal(resp, &eb)
	inputs := fv.inputs()
	slip := pointSlip(inputs) // said once, with the first of the two fields' errors
	noPoint := inputs["latitude"] != nil && inputs["latitude"].Value == "" && inputs["longitude"] != nil && inputs["longitude"].Value == ""
	for _, d := range eb.Details {
		name := strings.TrimPrefix(d.Field, "/")
		if pk := fv.Picker; pk != nil && (name == "placeCode" || ((name == "latitude" || name == "longitude") && noPoint)) {
			// No place and no coordinates, or a place not on the list: said once, at the picker. One
			// coordinate without the other is said at the field that lacks it.
			m := pickerMessages.Missing
			if name == "placeCode" {
				m = pickerMessages.Unknown
			}
			if pk.Error == "" {
				pk.Error = m
				fv.Errors = append(fv.Errors, errorItem{Anchor: pk.Municipio.ID, Message: m})
			}
			continue
		}
		in := inputs[name]
		if in == nil {
			fv.Errors = append(fv.Errors, errorItem{Message: d.Message})
			continue
		}
		m := withLabel(d.Message, in)
		for _, other := range inputs { // another field the message names («… cuando se da «latitude»»)
			if other != in && other.Label != "" {
				m = withLabel(m, other)
			}
		}
		if (name == "latitude" || name == "longitude") && slip != "" {
			m, slip = strings.TrimSuffix(m, ".")+". "+slip, ""
		}
		switch in {
		case &fv.Consent:
			m = msg.Consent
		case fv.Emergency:
			m = fv.emergencyMessage() // the API names slugs; a person knows the titles
		}
		if in.Error != "" {
			in.Error += " "
		}
		in.Error += m
		fv.Errors = append(fv.Errors, errorItem{Anchor: in.ID, Message: m})
	}
	fv.sortErrors()
	switch {
	case status == http.StatusTooManyRequests:
		fv.Summary = msg.Limit
	case status < 400 || status >= 500:
		fv.Summary = msg.Server
	case len(fv.Errors) > 0:
		fv.Summary = msg.Fields
	case eb.Error != "":
		fv.Summary = eb.Error
	default:
		fv.Summary = msg.Server
	}
	if status < 400 {
		status = http.StatusBadGateway
	}
	return status
}

// EnumLabel names an enumeration value of the schema for people (the value itself when it has no label).
func EnumLabel(v string) string { return schema.EnumLabel(v) }
