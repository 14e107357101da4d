package schema

import (
	"errors"
	"fmt"
	"math/big"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// The typed decode: a strict unmarshal straight into a Publication (go-json-experiment/json rejects
// unknown and repeated names, invalid UTF-8 and escaped lone surrogates), then the constraints of the
// compiled schema checked on the typed values. It accepts exactly the bodies the JSON Schema validator
// accepts and gives the same Publication; it refuses without saying why, and Decode then asks the
// validator for the details. TestTypedMatchesGeneral and FuzzTypedMatchesGeneral hold the two together.

// refused is a member that a Publication has but a publication of this type must not carry: decoding
// it fails, and the validator then names it as an unknown field.
type refused struct{}

var errRefused = errors.New("not a member of this type")

func (*refused) UnmarshalJSONFrom(*jsontext.Decoder) error { return errRefused }

// requestWire and offerWire are the decode targets: the members of HelpRequest and HelpOffer. Which
// members of Publication each must refuse is checked against the schemas when the validators are built.
type requestWire struct {
	Publication
	CollectionCenterStatus refused `json:"collectionCenterStatus"`
	ContactE164            refused `json:"contactE164"`
	MunicipioCode          refused `json:"municipioCode"`
}

type offerWire struct {
	Publication
	Neighborhood  refused `json:"neighborhood"`
	Urgency       refused `json:"urgency"`
	NeededPeople  refused `json:"neededPeople"`
	ContactE164   refused `json:"contactE164"`
	MunicipioCode refused `json:"municipioCode"`
}

var errKind = errors.New("wrong kind of JSON value")

// unmarshalers make the decode as strict as the schema: a value of the wrong kind (null included, which
// the default unmarshal takes as "absent") fails; strings are trimmed, and one empty after trimming
// counts as absent only for a free text; numbers are checked exactly against their bounds.
var unmarshalers = json.WithUnmarshalers(json.JoinUnmarshalers(
	json.UnmarshalFromFunc(func(dec *jsontext.Decoder, v *string) error {
		if dec.PeekKind() != '"' {
			return errKind
		}
		tok, err := dec.ReadToken()
		if err != nil {
			return err
		}
		// The member's name (a walk of the decoder's stack) only when it decides: a text with a direction
		// control or not composed (kept in an identifier: CleanText), or one empty once trimmed.
		s := tok.String()
		if strings.IndexFunc(s, bidiControl) >= 0 || !composed(s) {
			s = cleanMember(dec.StackPointer().LastToken(), s)
		} else {
			s = TrimText(s)
		}
		if s == "" && !typedChecks().texts[dec.StackPointer().LastToken()] {
			return errKind
		}
		*v = s
		return nil
	}),
	json.UnmarshalFromFunc(func(dec *jsontext.Decoder, v *bool) error {
		if k := dec.PeekKind(); k != 't' && k != 'f' {
			return errKind
		}
		tok, err := dec.ReadToken()
		if err != nil {
			return err
		}
		*v = tok.Bool()
		return nil
	}),
	json.UnmarshalFromFunc(func(dec *jsontext.Decoder, v **float64) error {
		raw, prop, err := readNumber(dec)
		if err != nil {
			return err
		}
		f, ok := prop.number(raw)
		if !ok {
			return errKind
		}
		*v = &f
		return nil
	}),
	json.UnmarshalFromFunc(func(dec *jsontext.Decoder, v **int) error {
		raw, prop, err := readNumber(dec)
		if err != nil {
			return err
		}
		n, ok := prop.integer(raw)
		if !ok {
			return errKind
		}
		*v = &n
		return nil
	}),
))

var decodeOptions = []json.Options{json.RejectUnknownMembers(true), unmarshalers}

// readNumber reads a number and finds the constraints of the member it is the value of.
func readNumber(dec *jsontext.Decoder) (string, *fastProp, error) {
	if dec.PeekKind() != '0' {
		return "", nil, errKind
	}
	raw, err := dec.ReadValue()
	if err != nil {
		return "", nil, err
	}
	prop := typedChecks().numbers[dec.StackPointer().LastToken()]
	if prop == nil {
		return "", nil, errKind
	}
	return string(raw), prop, nil
}

// number parses raw as the validator judges it: exactly, not as a float64 would. A float64 strictly
// inside the bounds is inside them exactly too (rounding is monotonic); only a value that rounds to a
// bound is compared as a rational.
func (p *fastProp) number(raw string) (float64, bool) {
	if !boundedExponent(raw) {
		return 0, false // the general path calls it invalid JSON
	}
	f, err := strconv.ParseFloat(raw, 64)
	if err != nil {
		return 0, false
	}
	if (p.hasMin && f < p.min) || (p.hasMax && f > p.max) {
		return 0, false
	}
	if (p.hasMin && f == p.min) || (p.hasMax && f == p.max) {
		r, ok := new(big.Rat).SetString(raw)
		if !ok || (p.hasMin && r.Cmp(p.minRat) < 0) || (p.hasMax && r.Cmp(p.maxRat) > 0) {
			return 0, false
		}
	}
	return f, true
}

// integer is number for a JSON Schema integer, which 3.0 and 1e1 are too.
func (p *fastProp) integer(raw string) (int, bool) {
	f, ok := p.number(raw)
	if !ok {
		return 0, false
	}
	if !strings.ContainsAny(raw, ".eE") {
		n, err := strconv.Atoi(raw)
		return n, err == nil
	}
	r, ok := new(big.Rat).SetString(raw)
	if !ok || !r.IsInt() || !r.Num().IsInt64() || float64(int(f)) != f {
		return 0, false
	}
	return int(r.Num().Int64()), true
}

// typedSchema is what the typed decode checks after the unmarshal, for one type.
type typedSchema struct {
	strings  []typedField // string members: enum, const, lengths, pattern
	bools    []typedField // boolean members with a const
	required [][]int      // field indexes of the required members (false, "" and nil are missing)
}

type typedField struct {
	index []int
	prop  *fastProp
}

type typedCheckSet struct {
	types   map[string]*typedSchema
	texts   map[string]bool      // free texts of any type: empty after trimming is absent
	numbers map[string]*fastProp // numbers and integers of any type, by name
}

// typedChecks compiles the checks from the validators' schemas, and checks that the wire types decode
// exactly the members of each schema.
var typedChecks = sync.OnceValue(func() *typedCheckSet {
	fields := pubFields()
	out := &typedCheckSet{types: map[string]*typedSchema{}, texts: map[string]bool{}, numbers: map[string]*fastProp{}}
	wires := map[string]reflect.Type{TypeRequest: reflect.TypeFor[requestWire](), TypeOffer: reflect.TypeFor[offerWire]()}
	for typ, c := range validators() {
		f := compileFast(c.schema)
		if f == nil {
			panic("schema " + typ + ": a keyword the typed decode does not check")
		}
		ts := &typedSchema{}
		for _, name := range c.order {
			p, idx := f.props[name], fields[name]
			if idx == nil {
				panic("schema " + typ + ": Publication has no member " + name)
			}
			switch p.kind {
			case "string":
				ts.strings = append(ts.strings, typedField{idx, p})
				if c.texts[name] {
					out.texts[name] = true
				}
			case "boolean":
				if p.constant != nil {
					ts.bools = append(ts.bools, typedField{idx, p})
				}
			case "number", "integer":
				if q := out.numbers[name]; q != nil && !q.sameBounds(p) {
					panic("schema: the bounds of " + name + " differ between types")
				}
				out.numbers[name] = p
			}
		}
		for _, name := range f.required {
			ts.required = append(ts.required, fields[name])
		}
		var wireNames []string
		for i := range wires[typ].NumField() {
			if fl := wires[typ].Field(i); !fl.Anonymous {
				wireNames = append(wireNames, strings.Split(fl.Tag.Get("json"), ",")[0])
			}
		}
		for name := range fields {
			if slices.Contains(c.order, name) == slices.Contains(wireNames, name) {
				panic(fmt.Sprintf("schema %s: the wire type must refuse exactly the members the schema lacks (%s)", typ, name))
			}
		}
		out.types[typ] = ts
	}
	return out
})

// decodeTyped is the typed decode; ok is false when the body is refused.
func decodeTyped(body []byte, forcedType string) (p *Publication, ok bool) {
	typ := forcedType
	switch typ {
	case TypeRequest:
		var w requestWire
		p, ok = &w.Publication, json.Unmarshal(body, &w, decodeOptions...) == nil
	case TypeOffer:
		var w offerWire
		p, ok = &w.Publication, json.Unmarshal(body, &w, decodeOptions...) == nil
	default:
		// Most bodies are requests; an offer reads as one until its type (or a member only offers have).
		var w requestWire
		p, ok = &w.Publication, json.Unmarshal(body, &w, decodeOptions...) == nil
		if !ok || p.Type != TypeRequest {
			var w offerWire
			p, ok = &w.Publication, json.Unmarshal(body, &w, decodeOptions...) == nil
			// A request that requestWire refused (it carries a member only offers have) is no offer.
			ok = ok && p.Type != TypeRequest
		}
		typ = p.Type
	}
	if !ok || (forcedType != "" && p.Type != "") {
		return nil, false
	}
	p.Type = typ
	ts := typedChecks().types[typ]
	if ts == nil {
		return nil, false
	}
	v := reflect.ValueOf(p).Elem()
	for _, idx := range ts.required {
		if v.FieldByIndex(idx).IsZero() {
			return nil, false
		}
	}
	for _, f := range ts.strings {
		if s := v.FieldByIndex(f.index).String(); s != "" && !f.prop.validString(s) {
			return nil, false
		}
	}
	for _, f := range ts.bools {
		if v.FieldByIndex(f.index).Bool() != f.prop.constant {
			return nil, false
		}
	}
	e164, fe := parsePhone(p.ContactWhatsapp, true)
	if fe != nil {
		return nil, false
	}
	p.ContactE164 = e164
	return p, true
}

// validString checks a trimmed, non-empty string.
func (p *fastProp) validString(s string) bool {
	if (p.enum != nil && !p.enum[s]) || (p.constant != nil && p.constant != any(s)) {
		return false
	}
	if p.minLen >= 0 || p.maxLen >= 0 {
		n := utf8.RuneCountInString(s)
		if (p.minLen >= 0 && n < p.minLen) || (p.maxLen >= 0 && n > p.maxLen) {
			return false
		}
	}
	return p.pattern == nil || p.pattern.MatchString(s)
}

// pubFields maps each JSON name of Publication (embedded structs included) to its field index.
var pubFields = sync.OnceValue(func() map[string][]int {
	out := map[string][]int{}
	var walk func(t reflect.Type, index []int)
	walk = func(t reflect.Type, index []int) {
		for i := range t.NumField() {
			f := t.Field(i)
			idx := append(append([]int{}, index...), i)
			if f.Anonymous && f.Type.Kind() == reflect.Struct {
				walk(f.Type, idx)
				continue
			}
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "" || name == "-" || !f.IsExported() {
				continue
			}
			if _, dup := out[name]; dup {
				out[name] = nil // ambiguous: leave it to encoding/json
				continue
			}
			out[name] = idx
		}
	}
	walk(reflect.TypeFor[Publication](), nil)
	return out
})
