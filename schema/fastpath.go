package schema

import (
	"math/big"
	"reflect"
	"regexp"
	"regexp/syntax"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/nyaruka/phonenumbers"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Fast paths of Decode, none of them a JSON parser: the validator's regexp engine, the common Colombian
// mobile number without libphonenumber's parser, and the compiled schema's constraints in a form the
// typed decode checks on Go values. Each gives exactly what the general path gives; tests compare them.

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
	if e164, valid, ok := mobiles.get(nn); ok {
		return e164, valid, true
	}
	num := &phonenumbers.PhoneNumber{CountryCode: &colombiaCode, NationalNumber: &nn}
	if !colombianMobile(strconv.FormatUint(nn, 10)) && !phonenumbers.IsValidNumber(num) {
		mobiles.put(nn, "")
		return "", false, true
	}
	e164 = phonenumbers.Format(num, phonenumbers.E164)
	mobiles.put(nn, e164)
	return e164, true, true
}

// colombianMobile reports whether libphonenumber's metadata for CO describes the national number ns as a
// mobile number, in two regular expressions: its general description and its mobile one, each compiled
// once. IsValidNumber asks up to a dozen descriptions in turn, each matched twice (~4 µs for a mobile
// number, the last it asks), and answers valid as soon as one matches after the general one, so a number
// both describe is valid there too. A false here is no answer: the caller asks IsValidNumber. When the
// metadata cannot be read this way (no CO, or mobile and fixed-line numbers sharing one pattern, where
// IsValidNumber never asks the mobile description) it is always false.
func colombianMobile(ns string) bool {
	m := coMobile()
	return m.general != nil && m.general.matches(ns) && m.mobile.matches(ns)
}

type numberDesc struct {
	lengths []int32 // the possible lengths; none: any
	re      *regexp.Regexp
}

// matches is libphonenumber's isNumberMatchingDesc: a possible length, and the whole number matching.
func (d *numberDesc) matches(ns string) bool {
	return (len(d.lengths) == 0 || slices.Contains(d.lengths, int32(len(ns)))) && d.re.MatchString(ns)
}

var coMobile = sync.OnceValue(func() (m struct{ general, mobile *numberDesc }) {
	col, err := phonenumbers.MetadataCollection()
	if err != nil {
		return m
	}
	for _, md := range col.GetMetadata() {
		if md.GetId() != "CO" || md.GetSameMobileAndFixedLinePattern() {
			continue
		}
		gen, mob := compileDesc(md.GetGeneralDesc()), compileDesc(md.GetMobile())
		if gen != nil && mob != nil {
			m.general, m.mobile = gen, mob
		}
	}
	return m
})

func compileDesc(d *phonenumbers.PhoneNumberDesc) *numberDesc {
	if d.GetNationalNumberPattern() == "" {
		return nil
	}
	re, err := regexp.Compile("^(?:" + d.GetNationalNumberPattern() + ")$")
	if err != nil {
		return nil
	}
	return &numberDesc{lengths: d.GetPossibleLength(), re: re}
}

// mobiles remembers libphonenumber's answer for the numbers fastPhone has checked (its regular
// expressions are ~4 µs a number): a publisher's number comes back with each of its publications and
// each retry. Past maxRememberedMobiles numbers it starts over, so that a flood of distinct numbers
// costs a bounded few MB.
var mobiles mobileMemo

const maxRememberedMobiles = 1 << 16

type mobileMemo struct {
	mu sync.RWMutex
	m  map[uint64]string // national number → E.164, "" for an invalid number
}

func (c *mobileMemo) get(nn uint64) (e164 string, valid, ok bool) {
	c.mu.RLock()
	e164, ok = c.m[nn]
	c.mu.RUnlock()
	return e164, e164 != "", ok
}

func (c *mobileMemo) put(nn uint64, e164 string) {
	c.mu.Lock()
	if c.m == nil || len(c.m) >= maxRememberedMobiles {
		c.m = make(map[uint64]string, 1024)
	}
	c.m[nn] = e164
	c.mu.Unlock()
}

// fastSchema is the compiled schema's constraints in the form the typed decode checks them (typed.go),
// for the keywords the publication schemas use: an object with properties, required and no additional
// properties, whose properties are strings (lengths, pattern, enum, const), numbers or integers
// (minimum, maximum) and booleans (const). compileFast returns nil for a schema that uses any other
// keyword; the typed decode then refuses to start (a test catches it).
type fastSchema struct {
	props    map[string]*fastProp
	required []string
}

type fastProp struct {
	kind           string // "string", "number", "integer" or "boolean"
	enum           map[string]bool
	constant       any // string or bool, nil when absent
	minLen, maxLen int // -1 when absent
	pattern        jsonschema.Regexp
	min, max       float64
	minRat, maxRat *big.Rat // the exact bounds, for a value that rounds to one
	hasMin, hasMax bool
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
	if s.Minimum != nil {
		p.min, _ = s.Minimum.Float64()
		p.minRat, p.hasMin = s.Minimum, true
	}
	if s.Maximum != nil {
		p.max, _ = s.Maximum.Float64()
		p.maxRat, p.hasMax = s.Maximum, true
	}
	return p
}

func (p *fastProp) sameBounds(q *fastProp) bool {
	return p.kind == q.kind && p.hasMin == q.hasMin && p.hasMax == q.hasMax &&
		(!p.hasMin || p.minRat.Cmp(q.minRat) == 0) && (!p.hasMax || p.maxRat.Cmp(q.maxRat) == 0)
}
