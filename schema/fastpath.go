package schema

import (
	"bytes"
	"encoding/json"
	"reflect"
	"regexp"
	"regexp/syntax"
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
