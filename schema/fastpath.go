package schema

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"
	"regexp"
	"regexp/syntax"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"github.com/nyaruka/phonenumbers"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Fast paths of Decode. Publishing is CPU-bound on a small server and the general path (a token walk, the
// standard decoder, a JSON round trip into the struct, libphonenumber's parser) costs ~80 µs a body. Each
// fast path below either gives exactly what the general path would, or declines (ok == false) and lets
// the general path decide: they can only make Decode faster, never change an answer.

// noFastPaths makes Decode take the general path everywhere; tests compare the two.
var noFastPaths atomic.Bool

// fastParse parses body in one pass when it is a plain document that checkStructure accepts: valid JSON,
// nesting within maxDepth, no repeated key, no escaped key, no number with an exponent. The value is what
// jsonschema.UnmarshalJSON gives (maps, slices, strings, json.Number, bool, nil).
func fastParse(body []byte) (v any, ok bool) {
	p := parser{b: body}
	p.ws()
	v, ok = p.value(0)
	if !ok {
		return nil, false
	}
	p.ws()
	return v, p.i == len(p.b)
}

type parser struct {
	b []byte
	i int
}

func (p *parser) ws() {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *parser) value(depth int) (any, bool) {
	if p.i >= len(p.b) {
		return nil, false
	}
	switch c := p.b[p.i]; {
	case c == '{':
		return p.object(depth + 1)
	case c == '[':
		return p.array(depth + 1)
	case c == '"':
		raw, escaped, ok := p.str()
		if !ok {
			return nil, false
		}
		if !escaped {
			return string(raw[1 : len(raw)-1]), true
		}
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return nil, false
		}
		return s, true
	case c == '-' || (c >= '0' && c <= '9'):
		return p.number()
	default:
		for _, lit := range literals {
			if bytes.HasPrefix(p.b[p.i:], lit.s) {
				p.i += len(lit.s)
				return lit.v, true
			}
		}
		return nil, false
	}
}

var literals = []struct {
	s []byte
	v any
}{{[]byte("true"), true}, {[]byte("false"), false}, {[]byte("null"), nil}}

func (p *parser) object(depth int) (any, bool) {
	if depth > maxDepth {
		return nil, false
	}
	p.i++ // {
	m := map[string]any{}
	p.ws()
	if p.i < len(p.b) && p.b[p.i] == '}' {
		p.i++
		return m, true
	}
	for {
		if p.i >= len(p.b) || p.b[p.i] != '"' {
			return nil, false
		}
		raw, escaped, ok := p.str()
		if !ok || escaped {
			return nil, false
		}
		k := string(raw[1 : len(raw)-1])
		if _, dup := m[k]; dup {
			return nil, false
		}
		p.ws()
		if p.i >= len(p.b) || p.b[p.i] != ':' {
			return nil, false
		}
		p.i++
		p.ws()
		v, ok := p.value(depth)
		if !ok {
			return nil, false
		}
		m[k] = v
		if more, ok := p.next('}'); !ok || !more {
			return m, ok
		}
	}
}

func (p *parser) array(depth int) (any, bool) {
	if depth > maxDepth {
		return nil, false
	}
	p.i++ // [
	a := []any{}
	p.ws()
	if p.i < len(p.b) && p.b[p.i] == ']' {
		p.i++
		return a, true
	}
	for {
		v, ok := p.value(depth)
		if !ok {
			return nil, false
		}
		a = append(a, v)
		if more, ok := p.next(']'); !ok || !more {
			return a, ok
		}
	}
}

// next consumes what follows a member: a comma (more == true) or the closing byte.
func (p *parser) next(closing byte) (more, ok bool) {
	p.ws()
	if p.i >= len(p.b) {
		return false, false
	}
	switch p.b[p.i] {
	case ',':
		p.i++
		p.ws()
		return true, true
	case closing:
		p.i++
		return false, true
	}
	return false, false
}

// str scans a string token (quotes included); body is known to be valid UTF-8.
func (p *parser) str() (raw []byte, escaped, ok bool) {
	start := p.i
	p.i++
	for p.i < len(p.b) {
		c := p.b[p.i]
		switch {
		case c == '"':
			p.i++
			return p.b[start:p.i], escaped, true
		case c < 0x20:
			return nil, false, false
		case c == '\\':
			escaped = true
			if p.i+1 >= len(p.b) {
				return nil, false, false
			}
			switch p.b[p.i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				p.i += 2
			case 'u':
				if p.i+6 > len(p.b) {
					return nil, false, false
				}
				for _, h := range p.b[p.i+2 : p.i+6] {
					if !(h >= '0' && h <= '9' || h >= 'a' && h <= 'f' || h >= 'A' && h <= 'F') {
						return nil, false, false
					}
				}
				p.i += 6
			default:
				return nil, false, false
			}
		default:
			p.i++
		}
	}
	return nil, false, false
}

// number scans -?(0|[1-9][0-9]*)(\.[0-9]+)?; an exponent declines (checkStructure bounds exponents).
func (p *parser) number() (any, bool) {
	start := p.i
	if p.b[p.i] == '-' {
		p.i++
	}
	digits := func() int {
		n := 0
		for p.i < len(p.b) && p.b[p.i] >= '0' && p.b[p.i] <= '9' {
			p.i++
			n++
		}
		return n
	}
	if p.i < len(p.b) && p.b[p.i] == '0' {
		p.i++
	} else if digits() == 0 {
		return nil, false
	}
	if p.i < len(p.b) && p.b[p.i] == '.' {
		p.i++
		if digits() == 0 {
			return nil, false
		}
	}
	if p.i < len(p.b) {
		switch p.b[p.i] {
		case 'e', 'E':
			return nil, false
		case '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
			return nil, false // a leading zero followed by digits
		}
	}
	return json.Number(p.b[start:p.i]), true
}

// fastRegexp is the validator's regexp engine. The schema's patterns are all "only these characters"
// (^[^\x00-\x1f…]*$); Go's regexp takes ~1 µs per field for that, a loop over the runes a few ns.
// Any other pattern is compiled by regexp as usual.
func fastRegexp(s string) (jsonschema.Regexp, error) {
	re, err := regexp.Compile(s) // also checks the pattern exactly as the default engine does
	if err != nil {
		return nil, err
	}
	if class := anchoredClassStar(s); class != nil {
		return runeClassRegexp{src: s, class: class}, nil
	}
	return re, nil
}

// anchoredClassStar returns the ranges of C when s parses (as regexp.Compile parses it) to ^C*$ for one
// character class C, and nil otherwise.
func anchoredClassStar(s string) []rune {
	re, err := syntax.Parse(s, syntax.Perl)
	if err != nil {
		return nil
	}
	re = re.Simplify()
	if re.Op != syntax.OpConcat || len(re.Sub) != 3 || re.Sub[0].Op != syntax.OpBeginText || re.Sub[2].Op != syntax.OpEndText {
		return nil
	}
	star := re.Sub[1]
	if star.Op != syntax.OpStar || len(star.Sub) != 1 || star.Sub[0].Op != syntax.OpCharClass {
		return nil
	}
	return star.Sub[0].Rune
}

type runeClassRegexp struct {
	src   string
	class []rune // sorted [lo, hi] pairs
}

func (r runeClassRegexp) String() string { return r.src }

// MatchString reports whether every rune of s is in the class; like regexp, an invalid UTF-8 byte reads
// as U+FFFD.
func (r runeClassRegexp) MatchString(s string) bool {
	for i := 0; i < len(s); {
		c, n := rune(s[i]), 1
		if c >= utf8.RuneSelf {
			c, n = utf8.DecodeRuneInString(s[i:])
		}
		i += n
		in := false
		for j := 0; j+1 < len(r.class); j += 2 {
			if c < r.class[j] {
				break
			}
			if c <= r.class[j+1] {
				in = true
				break
			}
		}
		if !in {
			return false
		}
	}
	return true
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

// fillPublication sets p from a validated body, as json.Unmarshal(json.Marshal(m), p) would for the value
// kinds a valid body holds (strings, booleans, numbers); anything else declines.
func fillPublication(p *Publication, m map[string]any) bool {
	fields := pubFields()
	rv := reflect.ValueOf(p).Elem()
	for k, val := range m {
		idx := fields[k]
		if idx == nil {
			return false
		}
		f := rv.FieldByIndex(idx)
		switch x := val.(type) {
		case string:
			if f.Kind() != reflect.String {
				return false
			}
			f.SetString(x)
		case bool:
			if f.Kind() != reflect.Bool {
				return false
			}
			f.SetBool(x)
		case json.Number:
			if f.Type() != reflect.TypeFor[*float64]() {
				return false
			}
			n, err := strconv.ParseFloat(string(x), 64)
			if err != nil {
				return false
			}
			f.Set(reflect.ValueOf(&n))
		case int64:
			if f.Type() != reflect.TypeFor[*int]() || int64(int(x)) != x {
				return false
			}
			n := int(x)
			f.Set(reflect.ValueOf(&n))
		default:
			return false
		}
	}
	return true
}

// colombiaCode is +57, the default region's calling code.
var colombiaCode int32 = 57

// fastPhone handles the commonest shape of contactWhatsapp, a Colombian mobile number (3xx xxx xxxx) with
// or without a leading +57 and with spaces, hyphens, dots or parentheses between digits, without
// libphonenumber's parser (~10 µs of regular expressions). For these inputs Parse(s, "CO") yields
// country code 57 and the 10 digits as national number, and nothing else that validity or E.164
// formatting reads, so the number is built directly and checked by the same library. Any other shape
// declines.
func fastPhone(s string) (e164 string, valid, ok bool) {
	i := 0
	if strings.HasPrefix(s, "+57") {
		i = 3
	}
	var nn uint64
	digits := 0
	for ; i < len(s); i++ {
		switch c := s[i]; {
		case c >= '0' && c <= '9':
			if digits == 0 && c != '3' {
				return "", false, false
			}
			nn = nn*10 + uint64(c-'0')
			digits++
		case c == ' ' || c == '-' || c == '.' || c == '(' || c == ')':
		default:
			return "", false, false
		}
	}
	if digits != 10 {
		return "", false, false
	}
	num := &phonenumbers.PhoneNumber{CountryCode: &colombiaCode, NationalNumber: &nn}
	if !phonenumbers.IsValidNumber(num) {
		return "", false, true
	}
	return phonenumbers.Format(num, phonenumbers.E164), true, true
}

// fastSchema accepts, without the full validator, the bodies that the compiled schema accepts for the
// keywords the publication schemas use: an object with properties, required and no additional
// properties, whose properties are strings (lengths, pattern, enum, const), numbers or integers
// (minimum, maximum) and booleans (const). It answers only "valid" or "ask the validator": a body it
// does not accept goes to the full validator, which also writes the messages. compileFast returns nil
// for a schema that uses any other keyword, and the full validator then checks every body.
type fastSchema struct {
	props    map[string]*fastProp
	required []string
}

type fastProp struct {
	kind               string // "string", "number", "integer" or "boolean"
	enum               map[string]bool
	constant           any // string or bool, nil when absent
	minLen, maxLen     int // -1 when absent
	pattern            jsonschema.Regexp
	min, max           float64
	hasMin, hasMax     bool
	boundMin, boundMax float64 // min and max moved inwards by a margin, see number
}

// Fields of jsonschema.Schema that do not constrain a value, or that compileFast reads itself; any other
// field set makes compileFast decline.
var fastAllowed = map[string]bool{"DraftVersion": true, "Location": true, "Types": true, "Enum": true, "Const": true,
	"Required": true, "Properties": true, "AdditionalProperties": true, "MinLength": true, "MaxLength": true,
	"Pattern": true, "Minimum": true, "Maximum": true, "Title": true, "Description": true, "Default": true,
	"Comment": true, "ReadOnly": true, "WriteOnly": true, "Examples": true, "Deprecated": true}

func onlyAllowed(s *jsonschema.Schema) bool {
	v := reflect.ValueOf(s).Elem()
	for i := range v.NumField() {
		if f := v.Type().Field(i); f.IsExported() && !fastAllowed[f.Name] && !v.Field(i).IsZero() {
			return false
		}
	}
	return true
}

func compileFast(s *jsonschema.Schema) *fastSchema {
	if !onlyAllowed(s) || s.Types == nil || !slices.Equal(s.Types.ToStrings(), []string{"object"}) ||
		s.Enum != nil || s.Const != nil || s.AdditionalProperties != false || s.MinLength != nil || s.MaxLength != nil ||
		s.Pattern != nil || s.Minimum != nil || s.Maximum != nil {
		return nil
	}
	f := &fastSchema{props: map[string]*fastProp{}, required: s.Required}
	for name, ps := range s.Properties {
		p := compileProp(ps)
		if p == nil {
			return nil
		}
		f.props[name] = p
	}
	return f
}

func compileProp(s *jsonschema.Schema) *fastProp {
	if !onlyAllowed(s) || s.Types == nil || len(s.Types.ToStrings()) != 1 || s.Required != nil || s.Properties != nil ||
		s.AdditionalProperties != nil {
		return nil
	}
	p := &fastProp{kind: s.Types.ToStrings()[0], minLen: -1, maxLen: -1, pattern: s.Pattern}
	isString := p.kind == "string"
	isNumber := p.kind == "number" || p.kind == "integer"
	switch {
	case !isString && (s.MinLength != nil || s.MaxLength != nil || s.Pattern != nil || s.Enum != nil):
		return nil
	case !isNumber && (s.Minimum != nil || s.Maximum != nil):
		return nil
	case !isString && !isNumber && p.kind != "boolean":
		return nil
	}
	if s.MinLength != nil {
		p.minLen = *s.MinLength
	}
	if s.MaxLength != nil {
		p.maxLen = *s.MaxLength
	}
	if s.Enum != nil {
		p.enum = map[string]bool{}
		for _, e := range s.Enum.Values {
			str, ok := e.(string)
			if !ok {
				return nil
			}
			p.enum[str] = true
		}
	}
	if s.Const != nil {
		switch (*s.Const).(type) {
		case string:
			if !isString {
				return nil
			}
		case bool:
			if p.kind != "boolean" {
				return nil
			}
		default:
			return nil
		}
		p.constant = *s.Const
	}
	// A number is accepted only when it is inside its bounds by far more than float64's rounding, so
	// that comparing floats gives what the validator's exact comparison gives; a value at a bound
	// (latitude 13.6 exactly) goes to the validator.
	margin := func(x float64) float64 { return 1e-9 * max(1, math.Abs(x)) }
	if s.Minimum != nil {
		p.min, _ = s.Minimum.Float64()
		p.hasMin, p.boundMin = true, p.min+margin(p.min)
	}
	if s.Maximum != nil {
		p.max, _ = s.Maximum.Float64()
		p.hasMax, p.boundMax = true, p.max-margin(p.max)
	}
	return p
}

// validate runs the full validator unless the fast one accepts m.
func (c *compiled) validate(m map[string]any) error {
	if c.fast != nil && !noFastPaths.Load() && c.fast.valid(m) {
		return nil
	}
	return c.schema.Validate(m)
}

// valid reports whether the full validator would surely accept v; false means "ask it".
func (f *fastSchema) valid(v any) bool {
	m, ok := v.(map[string]any)
	if !ok {
		return false
	}
	for _, r := range f.required {
		if _, ok := m[r]; !ok {
			return false
		}
	}
	for k, val := range m {
		p := f.props[k]
		if p == nil || !p.valid(val) {
			return false
		}
	}
	return true
}

func (p *fastProp) valid(v any) bool {
	switch p.kind {
	case "string":
		s, ok := v.(string)
		if !ok || (p.enum != nil && !p.enum[s]) || (p.constant != nil && p.constant != any(s)) {
			return false
		}
		if p.minLen >= 0 || p.maxLen >= 0 {
			n := utf8.RuneCountInString(s)
			if (p.minLen >= 0 && n < p.minLen) || (p.maxLen >= 0 && n > p.maxLen) {
				return false
			}
		}
		return p.pattern == nil || p.pattern.MatchString(s)
	case "boolean":
		b, ok := v.(bool)
		return ok && (p.constant == nil || p.constant == any(b))
	}
	n, ok := v.(json.Number)
	if !ok {
		return false
	}
	if p.kind == "integer" && strings.ContainsAny(string(n), ".eE") {
		return false // 12.0 is an integer too: the validator decides
	}
	x, err := strconv.ParseFloat(string(n), 64)
	return err == nil && (!p.hasMin || x >= p.boundMin) && (!p.hasMax || x <= p.boundMax)
}
