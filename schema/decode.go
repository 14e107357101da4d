package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/big"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
	invjs "github.com/invopop/jsonschema"
	"github.com/nyaruka/phonenumbers"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/unicode/norm"
)

// MaxBodyBytes bounds a publish body (DESIGN.md: over 64 KiB → 413).
const MaxBodyBytes = 64 << 10

// maxDepth bounds JSON nesting; a publish body is flat, so anything deeper is garbage.
const maxDepth = 8

// Error codes of ErrorBody.
const (
	CodeInvalidBody       = "invalid_body"
	CodeInvalidJSON       = "invalid_json"
	CodeConsentRequired   = "consent_required"
	CodeEmergencyRequired = "emergency_required"
	CodeUnknownEmergency  = "unknown_emergency"
	CodeNoActiveEmergency = "no_active_emergency"
	CodeUnknownPlace      = "unknown_place"
)

type compiled struct {
	schema *jsonschema.Schema
	order  []string        // property order, for stable details
	texts  map[string]bool // free-text properties: empty after trimming counts as absent (freeText)
}

// freeText reports whether p is a free text, whose value empty after trimming counts as absent: a string
// that is not a choice (enum, const) nor a code whose pattern refuses the empty text (placeCode: "" is
// no code, and is refused). A required string is one too, so that empty it is missing, not malformed.
func freeText(p *invjs.Schema, required bool) bool {
	if p.Type != "string" || p.Enum != nil || p.Const != nil {
		return false
	}
	if required || p.Pattern == "" {
		return true
	}
	re, err := regexp.Compile(p.Pattern)
	return err != nil || re.MatchString("")
}

var validators = sync.OnceValue(func() map[string]*compiled {
	out := map[string]*compiled{}
	for typ, name := range map[string]string{TypeRequest: "HelpRequest", TypeOffer: "HelpOffer"} {
		s := reflectSchema(wireTypes[name])
		c := jsonschema.NewCompiler()
		c.UseRegexpEngine(fastRegexp)
		c.DefaultDraft(jsonschema.Draft2020)
		url := "directaid:" + name
		if err := c.AddResource(url, toMap(s)); err != nil {
			panic(err)
		}
		sch, err := c.Compile(url)
		if err != nil {
			panic(fmt.Sprintf("schema %s: %v", name, err)) // a reflected schema always compiles
		}
		texts := map[string]bool{}
		for k, p := range s.Properties.FromOldest() {
			texts[k] = freeText(p, slices.Contains(s.Required, k))
		}
		out[typ] = &compiled{schema: sch, order: slices.Collect(s.Properties.KeysFromOldest()), texts: texts}
	}
	return out
})

// InvalidUTF8 is the answer to text that is not UTF-8, naming the member (a JSON pointer) when known; the
// site's forms give it too, rather than let an encoder turn the bytes into U+FFFD.
func InvalidUTF8(field string) *ErrorBody {
	eb := invalidJSON("no es UTF-8 válido.")
	if field != "" {
		name := fieldName(slices.Collect(jsontext.Pointer(field).Tokens()))
		eb.Details = []FieldError{{Field: field, Message: name + " contiene bytes que no son UTF-8 válido"}}
	}
	return eb
}

func invalidJSON(msg string) *ErrorBody {
	return &ErrorBody{Code: CodeInvalidJSON, Error: "El cuerpo no es JSON válido: " + msg}
}

// Decoder decodes publish bodies; the zero value is what the service uses.
type Decoder struct {
	// General judges every body with the general path alone: the JSON Schema validator over the
	// standard decoder, libphonenumber, and a JSON round trip into the Publication. It is the slow
	// reference that tests hold the typed decode to.
	General bool
	// MunicipioLater leaves the municipio of a publication located by coordinates alone (a search of the
	// places) for the caller to fill with FillMunicipio, once it knows the publication is not a retry.
	MunicipioLater bool
}

// Decode parses and validates a publish body. forcedType, when not empty, is the type an MCP tool sets
// (the body must then not carry `type`). It returns the normalized publication, or an ErrorBody that lists
// every violated constraint at once.
func Decode(body []byte, forcedType string) (*Publication, *ErrorBody) {
	return Decoder{}.Decode(body, forcedType)
}

// Decode is the package's Decode with d's options.
func (d Decoder) Decode(body []byte, forcedType string) (*Publication, *ErrorBody) {
	var p *Publication
	if !d.General {
		var ok bool
		if p, ok = decodeTyped(body, forcedType); ok && locate(p, d.MunicipioLater) == nil {
			return applyDefaults(p), nil
		}
	}
	// The general path: refused by the typed decode, so it only writes the details (or, with General,
	// judges everything).
	m, eb := d.general(body, forcedType)
	if eb != nil {
		return nil, eb
	}
	if !d.General {
		// The typed decode and the validator disagree: a bug, which the differential tests look for.
		return nil, &ErrorBody{Code: CodeInvalidBody, Error: "Datos inválidos."}
	}
	if n, ok := m["neededPeople"].(json.Number); ok {
		r, _ := new(big.Rat).SetString(string(n)) // validated: an integer within 0..10000
		m["neededPeople"] = r.Num().Int64()
	}
	e164 := m["contactE164"].(string)
	delete(m, "contactE164")
	p = &Publication{}
	b, err := json.Marshal(m)
	if err == nil {
		err = json.Unmarshal(b, p)
	}
	if err != nil {
		return nil, invalidJSON("no se pudo leer.")
	}
	p.ContactE164 = e164
	if fe := locate(p, d.MunicipioLater); fe != nil {
		return nil, &ErrorBody{Code: CodeInvalidBody, Error: "Datos inválidos.", Details: fe} // general() saw it first
	}
	return applyDefaults(p), nil
}

func applyDefaults(p *Publication) *Publication {
	if p.Type == TypeRequest {
		if p.Urgency == "" {
			p.Urgency = DefaultUrgency
		}
		if p.NeededPeople == nil {
			n := DefaultNeededPeople
			p.NeededPeople = &n
		}
	}
	return p
}

// general validates body with the JSON Schema validator. It returns the error body, or when the body is
// valid the normalized members with the E.164 phone under contactE164.
func (d Decoder) general(body []byte, forcedType string) (map[string]any, *ErrorBody) {
	if eb := CheckJSON(body); eb != nil {
		return nil, eb
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(body))
	if err != nil {
		return nil, invalidJSON("no se pudo leer.")
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, &ErrorBody{Code: CodeInvalidBody, Error: "El cuerpo debe ser un objeto JSON con los campos de una solicitud o un ofrecimiento.",
			Details: []FieldError{{Field: "", Message: "se esperaba un objeto JSON"}}}
	}
	// Every fault is reported at once, the type's too: an agent that sends a tool's type, or none, learns
	// in one answer what else is missing (the consent among it).
	var typeFault []FieldError
	if forcedType != "" {
		if _, has := m["type"]; has {
			typeFault = []FieldError{{Field: "/type", Message: "«type» no se envía: la herramienta lo fija"}}
		}
		m["type"] = forcedType
	}
	typ, _ := m["type"].(string)
	typ = strings.TrimSpace(typ)
	c := validators()[typ]
	if c == nil {
		fe := FieldError{Field: "/type", Message: "«type» es obligatorio y debe ser \"request\" (solicitud de ayuda) u \"offer\" (ofrecimiento)", Allowed: []string{TypeRequest, TypeOffer}}
		if _, has := m["type"]; has {
			fe.Message = fmt.Sprintf("«type» no admite %s: debe ser \"request\" (solicitud de ayuda) u \"offer\" (ofrecimiento)", display(m["type"]))
		}
		return nil, d.withoutType(m, fe)
	}
	details, e164, eb := d.faults(c, m)
	if eb != nil {
		return nil, eb
	}
	details = append(typeFault, details...)
	lp := &Publication{Type: typ}
	_, hasLat := m["latitude"]
	_, hasLon := m["longitude"]
	if hasLat {
		lp.Latitude = new(float64)
	}
	if hasLon {
		lp.Longitude = new(float64)
	}
	_, hasCode := m["placeCode"]
	if lp.PlaceCode, _ = m["placeCode"].(string); hasCode && lp.PlaceCode == "" {
		lp.PlaceCode = "?" // a value of the wrong kind, reported already: still a location given
	}
	lookup := hasCode && !hasDetail(details, "/placeCode")
	lp.LocationPrecision, _ = m["locationPrecision"].(string)
	placeFaults := locationFaults(lp, lookup)
	unknownPlaceOnly := len(details) == 0 && len(placeFaults) == 1 && placeFaults[0].Field == "/placeCode"
	details = append(details, placeFaults...)
	if len(details) > 0 {
		rank := func(f string) int {
			if i := slices.Index(c.order, strings.TrimPrefix(f, "/")); i >= 0 {
				return i
			}
			return len(c.order)
		}
		slices.SortStableFunc(details, func(a, b FieldError) int { return rank(a.Field) - rank(b.Field) })
		code, msg := CodeInvalidBody, "Datos inválidos: revise los campos indicados en details."
		// The missing consent is the top code when it is at least half of what is wrong (alone, or with one
		// other field): it is what the person must decide. A body that lacks more answers invalid_body, the
		// consent still among its details.
		if pc, present := m["publishContact"]; (!present || pc == false) && len(details) <= 2 {
			code, msg = CodeConsentRequired, "Falta el consentimiento: publishContact debe ser true para publicar el teléfono de contacto."
		} else if unknownPlaceOnly {
			code, msg = CodeUnknownPlace, "Lugar desconocido: revise los campos indicados en details."
		}
		if len(details) == 1 {
			msg = strings.TrimSuffix(msg, " revise los campos indicados en details.") + " " + details[0].Message + "."
			if code == CodeConsentRequired {
				msg = "Falta el consentimiento: " + details[0].Message + "."
			}
		}
		return nil, &ErrorBody{Code: code, Error: msg, Details: details}
	}
	m["type"] = typ
	m["contactE164"] = e164
	return m, nil
}

// faults cleans the members of m (strings trimmed, texts cleaned by cleanMember; a free text empty after
// trimming counts as absent; any other member stays, so that it is refused by name even when blank: an
// unknown field, an empty enum, a number as text) and checks them against c's schema and the phone
// rules. e164 is the phone's, when it has no fault; eb a refusal that names no field.
func (d Decoder) faults(c *compiled, m map[string]any) (details []FieldError, e164 string, eb *ErrorBody) {
	for k, val := range m {
		if s, ok := val.(string); ok {
			if s = cleanMember(k, s); s == "" && c.texts[k] {
				delete(m, k)
			} else {
				m[k] = s
			}
		}
	}
	if err := c.schema.Validate(m); err != nil {
		var ve *jsonschema.ValidationError
		if !errors.As(err, &ve) {
			return nil, "", &ErrorBody{Code: CodeInvalidBody, Error: "Datos inválidos."}
		}
		details = collect(ve, details)
	}
	if s, ok := m["contactWhatsapp"].(string); ok && !hasDetail(details, "/contactWhatsapp") {
		var fe *FieldError
		if e164, fe = parsePhone(s, !d.General); fe != nil {
			details = append(details, *fe)
		}
	}
	return details, e164, nil
}

// withoutType is the refusal of a body m whose type is missing or unknown (fe): that fault, and those
// the body has as a request and as an offer alike (a common field's), which it has whatever type it
// meant.
func (d Decoder) withoutType(m map[string]any, fe FieldError) *ErrorBody {
	var per [2][]FieldError
	for i, t := range []string{TypeRequest, TypeOffer} {
		as := maps.Clone(m)
		as["type"] = t
		per[i], _, _ = d.faults(validators()[t], as)
	}
	details := []FieldError{fe}
	for _, x := range per[0] {
		if slices.ContainsFunc(per[1], func(y FieldError) bool { return y.Field == x.Field && y.Message == x.Message }) {
			details = append(details, x)
		}
	}
	order := validators()[TypeRequest].order
	rank := func(f string) int {
		if i := slices.Index(order, strings.TrimPrefix(f, "/")); i >= 0 {
			return i
		}
		return len(order)
	}
	slices.SortStableFunc(details[1:], func(a, b FieldError) int { return rank(a.Field) - rank(b.Field) })
	if len(details) == 1 {
		return &ErrorBody{Code: CodeInvalidBody, Error: "Datos inválidos: " + fe.Message + ".", Details: details}
	}
	return &ErrorBody{Code: CodeInvalidBody, Error: "Datos inválidos: revise los campos indicados en details.", Details: details}
}

func hasDetail(d []FieldError, field string) bool {
	return slices.ContainsFunc(d, func(f FieldError) bool { return f.Field == field })
}

// CheckJSON applies to body the structural rules of every JSON body the service reads, publications'
// included: valid UTF-8, one JSON value, no repeated member, no escaped lone surrogate, numbers within
// range, nesting bounded. It returns nil, or the refusal (invalid_json) naming the member at fault, so
// that no other reader of the same bytes (a gateway, a log) can see something else than we do.
func CheckJSON(body []byte) *ErrorBody {
	err := checkStructure(body)
	if !utf8.Valid(body) {
		var field string
		if err != nil {
			field = err.field
		}
		return InvalidUTF8(field)
	}
	if err == nil {
		return nil
	}
	eb := invalidJSON(err.msg + ".")
	if err.detail != "" {
		eb.Details = []FieldError{{Field: err.field, Message: err.detail}}
	}
	return eb
}

// RepeatedMember returns the JSON pointer of the first member that body repeats within one object
// ("" when none does, or body is no JSON): the one rule of CheckJSON that an MCP message must meet before
// any parser reads it, since the parser keeps one copy and the tool would never see the other. Invalid
// UTF-8 and lone surrogates are let through here: the tools refuse them by name.
func RepeatedMember(body []byte) string {
	dec := jsontext.NewDecoder(bytes.NewReader(body), jsontext.AllowInvalidUTF8(true))
	for {
		if _, err := dec.ReadToken(); err != nil {
			var se *jsontext.SyntacticError
			if errors.As(err, &se) && errors.Is(se.Err, jsontext.ErrDuplicateName) {
				return string(se.JSONPointer)
			}
			return ""
		}
	}
}

// structError is a body that is not one acceptable JSON value; field and detail name the member at fault
// when there is one.
type structError struct{ msg, field, detail string }

// checkStructure walks the tokens once: a single JSON value, no duplicate keys (no parser differential
// between us and whoever reads the record later), no escaped lone surrogate (two different texts must
// not read as the same U+FFFD), numbers within range, nesting bounded.
func checkStructure(body []byte) *structError {
	dec := jsontext.NewDecoder(bytes.NewReader(body))
	for {
		tok, err := dec.ReadToken()
		if err != nil {
			return syntaxError(body, err)
		}
		switch tok.Kind() {
		case '0':
			if n := tok.String(); !boundedExponent(n) {
				return &structError{msg: fmt.Sprintf("el número %.20s está fuera de rango", n)}
			}
		case '{', '[':
			if dec.StackDepth() > maxDepth {
				return &structError{msg: fmt.Sprintf("anidamiento demasiado profundo (máximo %d niveles)", maxDepth)}
			}
		}
		if dec.StackDepth() == 0 {
			if len(bytes.TrimLeft(body[dec.InputOffset():], " \t\r\n")) > 0 {
				return &structError{msg: "hay datos después del objeto"}
			}
			return nil
		}
	}
}

func syntaxError(body []byte, err error) *structError {
	var se *jsontext.SyntacticError
	switch {
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		return &structError{msg: "termina antes de tiempo"}
	case !errors.As(err, &se):
		return &structError{msg: "error de sintaxis"}
	}
	field, name := string(se.JSONPointer), fieldName(slices.Collect(se.JSONPointer.Tokens()))
	switch rest := body[min(se.ByteOffset, int64(len(body))):]; {
	case errors.Is(se.Err, jsontext.ErrDuplicateName):
		return &structError{msg: fmt.Sprintf("la clave %s está repetida", Quote(se.JSONPointer.LastToken())), field: field,
			detail: name + " está repetido"}
	case !utf8.Valid(body):
		return &structError{msg: "no es UTF-8 válido", field: field}
	case loneSurrogate(rest):
		return &structError{msg: fmt.Sprintf("%s contiene el escape %s, media pareja sustituta UTF-16 que sola no es ningún carácter", name, rest[:6]),
			field: field, detail: fmt.Sprintf("%s contiene el escape %s, media pareja sustituta UTF-16: envíe el carácter mismo, o la pareja completa", name, rest[:6])}
	}
	return &structError{msg: fmt.Sprintf("error de sintaxis cerca del byte %d", se.ByteOffset)}
}

// loneSurrogate reports whether b starts with the escape of a UTF-16 surrogate (\ud800 to \udfff).
func loneSurrogate(b []byte) bool {
	if len(b) < 6 || b[0] != '\\' || b[1] != 'u' {
		return false
	}
	n, err := strconv.ParseUint(string(b[2:6]), 16, 16)
	return err == nil && n >= 0xd800 && n <= 0xdfff
}

// maxExponent bounds the exponent of a JSON number. The validator compares numbers as big.Rat, whose
// SetString refuses exponents beyond about a million (the validator then dereferences nil and panics) and
// takes ~20 ms near that limit; no coordinate or count needs more than float64's ±308.
const maxExponent = 1000

func boundedExponent(n string) bool {
	i := strings.IndexAny(n, "eE")
	if i < 0 {
		return true
	}
	e, err := strconv.Atoi(n[i+1:])
	return err == nil && e >= -maxExponent && e <= maxExponent
}

// Pointer is the JSON pointer (RFC 6901) of the member at tokens: Pointer("query", "a/b") is /query/a~1b.
func Pointer(tokens ...string) string { return pointer(tokens) }

func pointer(loc []string) string {
	if len(loc) == 0 {
		return ""
	}
	var b strings.Builder
	for _, s := range loc {
		b.WriteByte('/')
		b.WriteString(strings.NewReplacer("~", "~0", "/", "~1").Replace(s))
	}
	return b.String()
}

func fieldName(loc []string) string {
	if len(loc) == 0 {
		return "el cuerpo"
	}
	return "«" + strings.Join(loc, "/") + "»"
}

// collect turns the leaves of a validation error tree into Spanish field errors.
func collect(ve *jsonschema.ValidationError, out []FieldError) []FieldError {
	if len(ve.Causes) > 0 {
		for _, c := range ve.Causes {
			out = collect(c, out)
		}
		return out
	}
	loc := ve.InstanceLocation
	name := fieldName(loc)
	add := func(msg string, allowed ...string) {
		out = append(out, FieldError{Field: pointer(loc), Message: msg, Allowed: allowed})
	}
	switch k := ve.ErrorKind.(type) {
	case *kind.Required:
		for _, p := range k.Missing {
			l := append(slices.Clone(loc), p)
			msg := fmt.Sprintf("%s es obligatorio", fieldName(l))
			if p == "publishContact" {
				msg = "«publishContact» es obligatorio y debe ser true: confirma que la persona aceptó que su teléfono se publique"
			}
			out = append(out, FieldError{Field: pointer(l), Message: msg})
		}
	case *kind.AdditionalProperties:
		for _, p := range k.Properties {
			l := append(slices.Clone(loc), p)
			msg := fmt.Sprintf("el campo %s no existe", fieldName(l))
			if s := suggest(p); s != "" {
				msg += fmt.Sprintf(" (¿quiso decir «%s»?)", s)
			}
			out = append(out, FieldError{Field: pointer(l), Message: msg})
		}
	case *kind.Type:
		if len(loc) == 1 && loc[0] == "publishContact" {
			add("«publishContact» debe ser el valor booleano true, sin comillas")
			break
		}
		if k.Got == "number" && slices.Equal(k.Want, []string{"integer"}) {
			add(fmt.Sprintf("%s debe ser un número entero, sin decimales", name)) // not «(se recibió un número)»
			break
		}
		add(fmt.Sprintf("%s debe ser %s (se recibió %s)", name, typeName(k.Want), typeName([]string{k.Got})))
	case *kind.Const:
		if len(loc) == 1 && loc[0] == "publishContact" {
			add("«publishContact» debe ser true: sin el consentimiento de la persona para mostrar su teléfono no se puede publicar")
			break
		}
		add(fmt.Sprintf("%s debe ser %s", name, display(k.Want)))
	case *kind.Enum:
		var allowed []string
		for _, w := range k.Want {
			allowed = append(allowed, fmt.Sprint(w))
		}
		add(fmt.Sprintf("%s no admite %s; valores permitidos: %s", name, display(k.Got), strings.Join(allowed, ", ")), allowed...)
	case *kind.MaxLength:
		add(fmt.Sprintf("%s admite como máximo %d caracteres (tiene %d)", name, k.Want, k.Got))
	case *kind.MinLength:
		add(fmt.Sprintf("%s no puede estar vacío", name))
	case *kind.Minimum:
		add(fmt.Sprintf("%s debe ser mayor o igual que %s", name, ratString(k.Want)))
	case *kind.Maximum:
		add(fmt.Sprintf("%s debe ser menor o igual que %s", name, ratString(k.Want)))
	case *kind.ExclusiveMinimum:
		add(fmt.Sprintf("%s debe ser mayor que %s", name, ratString(k.Want)))
	case *kind.ExclusiveMaximum:
		add(fmt.Sprintf("%s debe ser menor que %s", name, ratString(k.Want)))
	case *kind.Pattern:
		if strings.HasPrefix(k.Want, `^[^\x00`) { // the texts' "no control characters"
			add(fmt.Sprintf("%s contiene caracteres de control no permitidos", name))
			break
		}
		if k.Want == PhonePattern {
			add(phoneRefusal(k.Got).Message)
			break
		}
		if k.Got == "" { // a code (placeCode) is no free text: empty, it is not taken as absent
			add(fmt.Sprintf("%s está vacío: envíe un valor con el formato esperado (%s), u omita el campo", name, k.Want))
			break
		}
		add(fmt.Sprintf("%s no tiene el formato esperado (%s)", name, k.Want))
	default:
		add(fmt.Sprintf("%s no es válido", name))
	}
	return out
}

var typeNames = map[string]string{
	"string": "texto", "number": "un número", "integer": "un número entero", "boolean": "true o false",
	"object": "un objeto", "array": "una lista", "null": "null",
}

func typeName(ts []string) string {
	var out []string
	for _, t := range ts {
		if n, ok := typeNames[t]; ok {
			out = append(out, n)
		} else {
			out = append(out, t)
		}
	}
	return strings.Join(out, " o ")
}

func ratString(r *big.Rat) string {
	if r.IsInt() {
		return r.RatString()
	}
	return strings.TrimRight(r.FloatString(6), "0")
}

func display(v any) string {
	switch v := v.(type) {
	case string:
		return Quote(v)
	case nil:
		return "null"
	case json.Number:
		return string(v)
	case map[string]any:
		return "un objeto"
	case []any:
		return "una lista"
	}
	return fmt.Sprint(v)
}

// Common misspellings of field names, so that the error says what was meant.
var aliases = map[string]string{
	"lat": "latitude", "latitud": "latitude", "lng": "longitude", "lon": "longitude", "long": "longitude", "longitud": "longitude",
	"phone": "contactWhatsapp", "whatsapp": "contactWhatsapp", "telefono": "contactWhatsapp", "teléfono": "contactWhatsapp",
	"name": "contactName", "nombre": "contactName", "titulo": "title", "título": "title", "descripcion": "description",
	"descripción": "description", "categoria": "category", "categoría": "category", "urgencia": "urgency",
	"direccion": "address", "dirección": "address", "barrio": "neighborhood", "consent": "publishContact",
	"emergency": "emergencySlug", "slug": "emergencySlug", "externalID": "externalId", "external_id": "externalId",
	"people": "neededPeople", "personas": "neededPeople",
}

func suggest(p string) string {
	if s, ok := aliases[p]; ok {
		return s
	}
	if s, ok := aliases[strings.ToLower(p)]; ok {
		return s
	}
	return ""
}

var badPhone = FieldError{Field: "/contactWhatsapp", Message: "«contactWhatsapp» no es un número de teléfono válido (ejemplo: +57 300 123 4567 o 3001234567)"}

// parsePhone accepts what people type for a phone number (digits, spaces, +, -, dots, parentheses),
// with Colombia as the default region; anything else, or a number that cannot exist, is refused. fast
// lets fastPhone answer for the commonest shape.
func parsePhone(s string, fast bool) (string, *FieldError) {
	for _, r := range s {
		if !(r >= '0' && r <= '9') && !strings.ContainsRune(" +-.()", r) {
			return "", phoneRefusal(s)
		}
	}
	if e164, valid, ok := fastPhone(s); ok && fast {
		if !valid {
			return "", phoneRefusal(s)
		}
		return e164, nil
	}
	e164, ok := validPhone(s)
	if digits := onlyDigits(s); strings.HasPrefix(digits, "00") && !strings.Contains(s, "+") {
		// «0058 412 123 4567»: 00 is how many write the international prefix, but libphonenumber reads
		// Colombia's carrier prefixes (005, 007, 009) in it, here +84 (Viet Nam). Read both ways: one valid
		// number is taken, two different ones are refused, showing both, rather than stored wrong.
		plus, okPlus := validPhone("+" + digits[2:])
		// «00 58 …», the 00 written apart, and «0057 …», Colombia's own code, mean the international prefix.
		t := strings.TrimLeft(strings.TrimSpace(s), "(")
		apart := len(t) > 2 && strings.ContainsRune(" -.)", rune(t[2]))
		switch {
		case okPlus && (apart || strings.HasPrefix(plus, "+57")):
			return plus, nil
		case okPlus && ok && plus != e164:
			bad := badPhone
			bad.Message = fmt.Sprintf("«contactWhatsapp» se puede leer como %s o como %s: escríbalo con + y el indicativo del país", intlFormat(plus), intlFormat(e164))
			return "", &bad
		case okPlus:
			return plus, nil
		}
	}
	if !ok {
		return "", phoneRefusal(s)
	}
	return e164, nil
}

// validPhone is s in E.164 when libphonenumber reads a valid number in it, Colombia the default region.
func validPhone(s string) (string, bool) {
	num, err := phonenumbers.Parse(s, "CO")
	if err != nil || !phonenumbers.IsValidNumber(num) {
		return "", false
	}
	return phonenumbers.Format(num, phonenumbers.E164), true
}

// intlFormat is a valid E.164 number as people read it: +58 412-1234567.
func intlFormat(e164 string) string {
	num, err := phonenumbers.Parse(e164, "")
	if err != nil {
		return e164
	}
	return phonenumbers.Format(num, phonenumbers.INTERNATIONAL)
}

// onlyDigits is s without what is not an ASCII digit.
func onlyDigits(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= '0' && r <= '9' {
			return r
		}
		return -1
	}, s)
}

// phoneRefusal is badPhone for s, which says what is wrong when it can tell: «0310 555 1234», a mobile
// number with a 0 before it that it does not take.
func phoneRefusal(s string) *FieldError {
	bad := badPhone
	digits := onlyDigits(s)
	if strings.IndexFunc(s, unicode.IsLetter) >= 0 {
		bad.Message = "«contactWhatsapp» lleva solo el número, sin palabras como «Cel:» ni nombres (ejemplo: +57 300 123 4567 o 3001234567)"
		return &bad
	}
	if len(digits) == 11 && strings.HasPrefix(digits, "03") {
		bad.Message = fmt.Sprintf("«contactWhatsapp» no es un número de teléfono válido: un celular de Colombia no lleva el 0 del comienzo (escriba %s %s %s)",
			digits[1:4], digits[4:7], digits[7:])
	}
	return &bad
}

// TrimText trims what a person cannot see around a string: white space and format characters (zero-width
// spaces and joiners, a byte order mark, direction marks). A string with nothing visible left (only
// those, or combining marks on nothing) is empty: a title of zero-width spaces is no title.
func TrimText(s string) string {
	s = strings.TrimFunc(s, invisible)
	for _, r := range s {
		if !invisible(r) && !unicode.In(r, unicode.Mn, unicode.Me) {
			return s
		}
	}
	return ""
}

// CleanText is TrimText for a text that people read (every string but the idempotency key's source and
// externalId, which are an application's own identifiers and are kept as sent): it also removes the
// bidirectional controls anywhere in it: embeddings, overrides and isolates (U+202A to U+202E, U+2066 to
// U+2069), and the direction marks (U+200E, U+200F, U+061C). They are invisible, and they make a text
// show in another order than it is written: a mark between two groups of digits shows «311 222 3344» as
// «222 311 3344», a title hides what follows it. The text is then in Unicode's composed form (NFC): «é»
// typed or pasted as «e» and a combining accent is one character, as people count it (the limits count
// characters), and the same words compare alike however a keyboard wrote them.
func CleanText(s string) string {
	if !composed(s) {
		s = norm.NFC.String(s)
	}
	if strings.IndexFunc(s, bidiControl) >= 0 {
		s = strings.Map(func(r rune) rune {
			if bidiControl(r) {
				return -1
			}
			return r
		}, s)
	}
	return TrimText(s)
}

// composed reports whether s is certainly in Unicode's composed form (NFC), by the quick check, which
// allocates nothing (IsNormalString does): false may still be composed, and NFC.String then gives s.
func composed(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return norm.NFC.QuickSpanString(s) == len(s)
		}
	}
	return true
}

// identifiers are the members that CleanText leaves as sent (trimmed only).
var identifiers = map[string]bool{"source": true, "externalId": true}

// cleanMember cleans the string value of the member named name: TrimText for an identifier, CleanText
// for any other.
func cleanMember(name, s string) string {
	if identifiers[name] {
		return TrimText(s)
	}
	return CleanText(s)
}

func bidiControl(r rune) bool {
	return (r >= 0x202A && r <= 0x202E) || (r >= 0x2066 && r <= 0x2069) || r == 0x200E || r == 0x200F || r == 0x061C
}

// invisible reports whether r is white space or a format character (Unicode's Cf).
func invisible(r rune) bool { return unicode.IsSpace(r) || unicode.Is(unicode.Cf, r) }
