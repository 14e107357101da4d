package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/nyaruka/phonenumbers"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
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
)

type compiled struct {
	schema *jsonschema.Schema
	fast   *fastSchema // accepts the common valid body without the full validator; nil: always validate
	order  []string    // property order, for stable details
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
		out[typ] = &compiled{schema: sch, fast: compileFast(sch), order: slices.Collect(s.Properties.KeysFromOldest())}
	}
	return out
})

func invalidJSON(msg string) *ErrorBody {
	return &ErrorBody{Code: CodeInvalidJSON, Error: "El cuerpo no es JSON válido: " + msg}
}

// Decode parses and validates a publish body. forcedType, when not empty, is the type an MCP tool sets
// (the body must then not carry `type`). It returns the normalized publication, or an ErrorBody that lists
// every violated constraint at once.
func Decode(body []byte, forcedType string) (*Publication, *ErrorBody) {
	if !utf8.Valid(body) {
		return nil, invalidJSON("no es UTF-8 válido.")
	}
	v, fast := fastParse(body)
	if !fast || noFastPaths.Load() {
		if err := checkStructure(body); err != nil {
			return nil, invalidJSON(err.Error() + ".")
		}
		var err error
		if v, err = jsonschema.UnmarshalJSON(bytes.NewReader(body)); err != nil {
			return nil, invalidJSON("no se pudo leer.")
		}
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, &ErrorBody{Code: CodeInvalidBody, Error: "El cuerpo debe ser un objeto JSON con los campos de una solicitud o un ofrecimiento.",
			Details: []FieldError{{Field: "", Message: "se esperaba un objeto JSON"}}}
	}
	if forcedType != "" {
		if _, has := m["type"]; has {
			return nil, &ErrorBody{Code: CodeInvalidBody, Error: "Datos inválidos.",
				Details: []FieldError{{Field: "/type", Message: "«type» no se envía: la herramienta lo fija"}}}
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
		return nil, &ErrorBody{Code: CodeInvalidBody, Error: "Datos inválidos: " + fe.Message + ".", Details: []FieldError{fe}}
	}
	// Strings are trimmed; one empty after trimming counts as absent. An unknown field stays, so that it
	// is refused by name even when blank.
	for k, val := range m {
		if s, ok := val.(string); ok {
			if s = strings.TrimSpace(s); s == "" && slices.Contains(c.order, k) {
				delete(m, k)
			} else {
				m[k] = s
			}
		}
	}
	var details []FieldError
	if err := c.validate(m); err != nil {
		var ve *jsonschema.ValidationError
		if !errors.As(err, &ve) {
			return nil, &ErrorBody{Code: CodeInvalidBody, Error: "Datos inválidos."}
		}
		details = collect(ve, details)
	}
	var e164 string
	if s, ok := m["contactWhatsapp"].(string); ok && !hasDetail(details, "/contactWhatsapp") {
		var fe *FieldError
		if e164, fe = parsePhone(s); fe != nil {
			details = append(details, *fe)
		}
	}
	if len(details) > 0 {
		rank := func(f string) int {
			if i := slices.Index(c.order, strings.TrimPrefix(f, "/")); i >= 0 {
				return i
			}
			return len(c.order)
		}
		slices.SortStableFunc(details, func(a, b FieldError) int { return rank(a.Field) - rank(b.Field) })
		code, msg := CodeInvalidBody, "Datos inválidos: revise los campos indicados en details."
		if pc, present := m["publishContact"]; !present || pc == false {
			code, msg = CodeConsentRequired, "Falta el consentimiento: publishContact debe ser true para publicar el teléfono de contacto."
		}
		if len(details) == 1 {
			msg = strings.TrimSuffix(msg, " revise los campos indicados en details.") + " " + details[0].Message + "."
			if code == CodeConsentRequired {
				msg = "Falta el consentimiento: " + details[0].Message + "."
			}
		}
		return nil, &ErrorBody{Code: code, Error: msg, Details: details}
	}
	if n, ok := m["neededPeople"].(json.Number); ok {
		r, _ := new(big.Rat).SetString(string(n)) // validated: an integer within 0..10000
		m["neededPeople"] = r.Num().Int64()
	}
	p := &Publication{}
	if noFastPaths.Load() || !fillPublication(p, m) {
		*p = Publication{}
		b, err := json.Marshal(m)
		if err != nil {
			return nil, invalidJSON("no se pudo leer.")
		}
		if err := json.Unmarshal(b, p); err != nil {
			return nil, invalidJSON("no se pudo leer.")
		}
	}
	p.Type = typ
	p.ContactE164 = e164
	if typ == TypeRequest {
		if p.Urgency == "" {
			p.Urgency = DefaultUrgency
		}
		if p.NeededPeople == nil {
			n := DefaultNeededPeople
			p.NeededPeople = &n
		}
	}
	return p, nil
}

func hasDetail(d []FieldError, field string) bool {
	return slices.ContainsFunc(d, func(f FieldError) bool { return f.Field == field })
}

// checkStructure walks the tokens once: a single JSON value, no duplicate keys (no parser differential
// between us and whoever reads the record later), nesting bounded.
func checkStructure(body []byte) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	type frame struct {
		keys     map[string]struct{}
		isObject bool
		wantKey  bool
	}
	var stack []*frame
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			if len(stack) != 0 {
				return errors.New("termina antes de tiempo")
			}
			return nil
		}
		if err != nil {
			var se *json.SyntaxError
			if errors.As(err, &se) {
				return fmt.Errorf("error de sintaxis cerca del byte %d", se.Offset)
			}
			return errors.New("error de sintaxis")
		}
		top := (*frame)(nil)
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if top != nil && top.isObject && top.wantKey {
			if k, ok := tok.(string); ok {
				if _, dup := top.keys[k]; dup {
					return fmt.Errorf("la clave %q está repetida", k)
				}
				top.keys[k] = struct{}{}
				top.wantKey = false
				continue
			}
		}
		switch t := tok.(type) {
		case json.Number:
			if !boundedExponent(string(t)) {
				return fmt.Errorf("el número %.20s está fuera de rango", t)
			}
		case json.Delim:
			switch t {
			case '{', '[':
				if len(stack) >= maxDepth {
					return fmt.Errorf("anidamiento demasiado profundo (máximo %d niveles)", maxDepth)
				}
				f := &frame{isObject: t == '{', wantKey: t == '{'}
				if f.isObject {
					f.keys = map[string]struct{}{}
				}
				stack = append(stack, f)
				continue
			default:
				stack = stack[:len(stack)-1]
			}
		}
		if len(stack) == 0 {
			if dec.More() {
				return errors.New("hay datos después del objeto")
			}
			if _, err := dec.Token(); err != io.EOF {
				return errors.New("hay datos después del objeto")
			}
			return nil
		}
		if top := stack[len(stack)-1]; top.isObject {
			top.wantKey = true
		}
	}
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
	case *kind.Pattern:
		add(fmt.Sprintf("%s contiene caracteres de control no permitidos", name))
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
		if utf8.RuneCountInString(v) > 40 {
			v = string([]rune(v)[:40]) + "…"
		}
		return fmt.Sprintf("%q", v)
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

// parsePhone accepts what people type for a phone number (digits, spaces, +, -, dots, parentheses),
// with Colombia as the default region; anything else, or a number that cannot exist, is refused.
func parsePhone(s string) (string, *FieldError) {
	bad := &FieldError{Field: "/contactWhatsapp", Message: "«contactWhatsapp» no es un número de teléfono válido (ejemplo: +57 300 123 4567 o 3001234567)"}
	for _, r := range s {
		if !(r >= '0' && r <= '9') && !strings.ContainsRune(" +-.()", r) {
			return "", bad
		}
	}
	if e164, valid, ok := fastPhone(s); ok && !noFastPaths.Load() {
		if !valid {
			return "", bad
		}
		return e164, nil
	}
	num, err := phonenumbers.Parse(s, "CO")
	if err != nil || !phonenumbers.IsValidNumber(num) {
		return "", bad
	}
	return phonenumbers.Format(num, phonenumbers.E164), nil
}
