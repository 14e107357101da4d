package schema

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/dlclark/regexp2/v2"
	"github.com/nyaruka/phonenumbers"
)

// contactWhatsapp's documented pattern must hold every number the server accepts, read as JSON Schema
// reads it (ECMA-262, here regexp2's ECMAScript mode) and as our validator reads it (Go's regexp), and
// must refuse what is plainly not a phone number.

// documentedSchema is a component schema of the OpenAPI document, its properties as they are written.
type documentedSchema struct {
	Properties map[string]json.RawMessage `json:"properties"`
}

// documentedSchemas are the component schemas of the OpenAPI document, by name.
func documentedSchemas(t testing.TB) map[string]documentedSchema {
	t.Helper()
	doc, err := OpenAPI("")
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Components struct {
			Schemas map[string]documentedSchema `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(doc, &d); err != nil {
		t.Fatal(err)
	}
	return d.Components.Schemas
}

// documentedPhone is contactWhatsapp's schema in every place it is published: the OpenAPI document's
// HelpRequest and HelpOffer, and the MCP publishing tools' input schemas.
func documentedPhone(t testing.TB) (pattern string, examples []string) {
	t.Helper()
	schemas := documentedSchemas(t)
	var props []json.RawMessage
	for _, name := range []string{"HelpRequest", "HelpOffer"} {
		props = append(props, schemas[name].Properties["contactWhatsapp"])
	}
	for _, typ := range []string{TypeRequest, TypeOffer} {
		var tool struct {
			Properties map[string]json.RawMessage `json:"properties"`
		}
		if err := json.Unmarshal(ToolInputSchema(typ), &tool); err != nil {
			t.Fatal(err)
		}
		props = append(props, tool.Properties["contactWhatsapp"])
	}
	for i, raw := range props {
		var p struct {
			Pattern     string   `json:"pattern"`
			Description string   `json:"description"`
			Examples    []string `json:"examples"`
		}
		if err := json.Unmarshal(raw, &p); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			pattern, examples = p.Pattern, p.Examples
		} else if p.Pattern != pattern {
			t.Fatalf("contactWhatsapp's pattern differs between the published schemas: %q and %q", pattern, p.Pattern)
		}
		if !strings.Contains(p.Description, "+57") || len(p.Examples) == 0 {
			t.Fatalf("contactWhatsapp is documented without its rule (description %q) or without examples (%q)", p.Description, p.Examples)
		}
	}
	return pattern, examples
}

type phoneMatcher struct{ ecma, re2 func(string) bool }

func phoneMatchers(t testing.TB, pattern string) phoneMatcher {
	t.Helper()
	ecma, err := regexp2.Compile(pattern, regexp2.ECMAScript)
	if err != nil {
		t.Fatalf("ECMA-262 cannot read %q: %v", pattern, err)
	}
	re := regexp.MustCompile(pattern)
	return phoneMatcher{
		ecma: func(s string) bool {
			ok, err := ecma.MatchString(s)
			if err != nil {
				t.Fatal(err)
			}
			return ok
		},
		re2: re.MatchString,
	}
}

// phoneAccepted is the server's rule for a contactWhatsapp value, as it was before the pattern: trimmed,
// at most 40 characters, and a number libphonenumber parses and finds valid.
func phoneAccepted(raw string) bool {
	s := strings.TrimSpace(raw)
	if !utf8.ValidString(raw) || s == "" || utf8.RuneCountInString(s) > 40 {
		return false
	}
	_, fe := parsePhone(s, false)
	return fe == nil
}

func phoneBody(phone string) []byte {
	b, _ := json.Marshal(map[string]any{"type": "offer", "source": "t", "externalId": "1", "title": "Agua",
		"category": "otro", "contactName": "Ana", "contactWhatsapp": phone, "publishContact": true})
	return b
}

// checkPhone fails when raw is accepted but does not match the documented pattern, or when the server
// (both decode paths) does not accept a value that the phone rule accepts.
func checkPhone(t *testing.T, m phoneMatcher, raw string) bool {
	t.Helper()
	if !phoneAccepted(raw) {
		return false
	}
	if !m.ecma(raw) || !m.re2(raw) {
		t.Fatalf("%q is an accepted phone number, but the documented pattern refuses it (ECMA-262 %v, Go %v)", raw, m.ecma(raw), m.re2(raw))
	}
	for _, d := range []Decoder{{}, {General: true}} {
		if _, eb := d.Decode(phoneBody(raw), ""); eb != nil {
			t.Fatalf("%q: the phone rule accepts it, the decode (General %v) refuses it: %+v", raw, d.General, eb)
		}
	}
	return true
}

// phoneCandidates are ways people and programs write the example numbers of every region and type of
// libphonenumber's metadata, and the shortest valid numbers, with random punctuation and spaces.
func phoneCandidates(rng *rand.Rand) []string {
	var nums []*phonenumbers.PhoneNumber
	for region := range phonenumbers.GetSupportedRegions() {
		for typ := phonenumbers.FIXED_LINE; typ <= phonenumbers.VOICEMAIL; typ++ {
			if n := phonenumbers.GetExampleNumberForType(region, typ); n != nil {
				nums = append(nums, n)
			}
		}
	}
	for cc := range phonenumbers.GetSupportedGlobalNetworkCallingCodes() {
		if n := phonenumbers.GetExampleNumberForNonGeoEntity(cc); n != nil {
			nums = append(nums, n)
		}
	}
	var out []string
	seps := []string{"", " ", "-", ".", "(", ")", "  ", " - ", ") ", " ("}
	spaces := []string{"", " ", "\t", "\n", "\u00a0", "\u3000", "\u2007", "\u0085", "\r\n "}
	punctuate := func(s string) string {
		var b strings.Builder
		for _, r := range s {
			b.WriteRune(r)
			if rng.IntN(3) == 0 {
				b.WriteString(seps[rng.IntN(len(seps))])
			}
		}
		return b.String()
	}
	for _, n := range nums {
		e164 := phonenumbers.Format(n, phonenumbers.E164)
		forms := []string{e164, phonenumbers.Format(n, phonenumbers.INTERNATIONAL), "++" + e164[1:], "(" + e164 + ")",
			"00" + []string{"5", "7", "9", "414", "444", "456"}[rng.IntN(6)] + e164[1:]}
		if n.GetCountryCode() == 57 {
			national := phonenumbers.Format(n, phonenumbers.NATIONAL)
			forms = append(forms, national, "57"+national, "0"+[]string{"3", "5", "7", "9", "444"}[rng.IntN(5)]+national)
		}
		f := forms[rng.IntN(len(forms))]
		out = append(out, forms[0], punctuate(f), spaces[rng.IntN(len(spaces))]+punctuate(f)+spaces[rng.IntN(len(spaces))])
	}
	// The shortest valid numbers (Austria's +43 1xxx) and Colombia's 8-digit ones.
	for range 500 {
		out = append(out, punctuate(fmt.Sprintf("+43%04d", rng.IntN(10000))), punctuate(fmt.Sprintf("46%06d", rng.IntN(1000000))))
	}
	// Colombian mobiles, the commonest case, in every shape the fast path reads.
	for range 1000 {
		out = append(out, punctuate(fmt.Sprintf("%s3%09d", []string{"", "+57", "57", "+57 "}[rng.IntN(4)], rng.IntN(1000000000))))
	}
	return out
}

func TestPhonePatternHoldsEveryAcceptedNumber(t *testing.T) {
	t.Parallel()
	pattern, examples := documentedPhone(t)
	m := phoneMatchers(t, pattern)
	for _, e := range examples {
		if !checkPhone(t, m, e) {
			t.Errorf("documented example %q is refused", e)
		}
	}
	rng := rand.New(rand.NewPCG(12, 3))
	accepted, tried := 0, 0
	for _, raw := range phoneCandidates(rng) {
		tried++
		if checkPhone(t, m, raw) {
			accepted++
		}
	}
	if accepted < tried/4 {
		t.Fatalf("only %d of %d candidates are accepted: the generator no longer exercises the rule", accepted, tried)
	}
	t.Logf("%d of %d generated numbers accepted, all matching %s", accepted, tried, pattern)
}

// TestPhonePatternRefusesWhatIsNoPhone is the converse, as far as a pattern can go: shapes that cannot be
// a valid number are refused by the pattern itself, so a client learns it before sending.
func TestPhonePatternRefusesWhatIsNoPhone(t *testing.T) {
	pattern, _ := documentedPhone(t)
	m := phoneMatchers(t, pattern)
	for _, s := range []string{"x", "1", "llamar al 3001234567", "300 123 4567 ext 2", "300123456#", "12345", "+12345",
		"1234567", "+57 +3001234567", "300+1234567", "3001234567+", "+", "++", "()", "-", "+57 300 123 4567 / 310 987 6543",
		"3001234567\t3009876543", "tel:+573001234567", "+57 ３００ 123 4567"} {
		if phoneAccepted(s) {
			t.Fatalf("%q is accepted by the server: not an example of what the pattern must refuse", s)
		}
		if m.ecma(s) || m.re2(s) {
			t.Errorf("the documented pattern lets %q through (ECMA-262 %v, Go %v)", s, m.ecma(s), m.re2(s))
		}
	}
	// How tight the pattern is: among numbers of its shape (8 to 12 digits, random), how many exist.
	rng := rand.New(rand.NewPCG(5, 7))
	shaped, ok := 0, 0
	for range 2000 {
		s := fmt.Sprintf("%0*d", 8+rng.IntN(5), rng.Int64N(1e12))
		if m.re2(s) {
			shaped++
			if phoneAccepted(s) {
				ok++
			}
		}
	}
	t.Logf("%d of %d random digit strings of the pattern's shape are valid numbers", ok, shaped)
}

// TestPhonePatternBounds holds the pattern's digit counts to libphonenumber's metadata: with +, a calling
// code and the shortest possible national number; without, Colombia's shortest. A metadata update that
// adds shorter numbers fails here before a client is refused. (National-prefix transforms can only shorten
// what is typed for NF, SM and MG, whose numbers stay longer; an exhaustive run over every digit string
// up to 7 digits, with and without +, found no accepted one under 6 and 8.)
func TestPhonePatternBounds(t *testing.T) {
	coll, err := phonenumbers.MetadataCollection()
	if err != nil {
		t.Fatal(err)
	}
	minPlus, minCO := 100, 100
	for _, md := range coll.Metadata {
		cc := len(fmt.Sprint(md.GetCountryCode()))
		for _, d := range []*phonenumbers.PhoneNumberDesc{md.FixedLine, md.Mobile, md.TollFree, md.PremiumRate, md.SharedCost,
			md.PersonalNumber, md.Voip, md.Pager, md.Uan, md.Voicemail} {
			if d == nil || d.GetNationalNumberPattern() == "" || d.GetNationalNumberPattern() == "NA" {
				continue
			}
			lengths := d.PossibleLength
			if len(lengths) == 0 {
				lengths = md.GeneralDesc.PossibleLength
			}
			for _, l := range lengths {
				if l > 0 {
					minPlus = min(minPlus, cc+int(l))
					if md.GetId() == "CO" {
						minCO = min(minCO, int(l))
					}
				}
			}
		}
	}
	if minPlus < 6 || minCO < 8 {
		t.Fatalf("libphonenumber now has valid numbers of %d digits with + and %d in Colombia: lower PhonePattern's bounds", minPlus, minCO)
	}
	for _, s := range []string{"+431110", "+43 1110", "46123456", "4612 3456"} {
		if !phoneAccepted(s) {
			t.Fatalf("%q, a number at the pattern's bound, is no longer accepted", s)
		}
	}
	pattern, _ := documentedPhone(t)
	m := phoneMatchers(t, pattern)
	for _, s := range []string{"+43111", "4612345"} {
		if m.re2(s) || phoneAccepted(s) {
			t.Fatalf("%q, one digit under the bound: pattern %v, server %v", s, m.re2(s), phoneAccepted(s))
		}
	}
}

// FuzzPhonePattern: whatever string the server accepts as contactWhatsapp matches the documented pattern.
func FuzzPhonePattern(f *testing.F) {
	for _, s := range append(PhoneExamples, "++573001234567", " (+57) 300.123.4567 \u3000", "0053001234567", "+431234", "46123456",
		"03 3001234567", "+800 1234 5678", "x", "") {
		f.Add(s)
	}
	pattern, _ := documentedPhone(f)
	m := phoneMatchers(f, pattern)
	f.Fuzz(func(t *testing.T, s string) {
		checkPhone(t, m, s)
	})
}

// TestPhoneDescriptionsSayWhoSeesTheNumber: every contactWhatsapp of the OpenAPI document gets the phone
// rules, and says who sees the number: a publication's is published, a response's never is.
func TestPhoneDescriptionsSayWhoSeesTheNumber(t *testing.T) {
	schemas := documentedSchemas(t)
	for name, want := range map[string]string{"HelpRequest": "se publica", "HelpOffer": "se publica", "ResponseInput": "nunca se muestra en público"} {
		var p struct {
			Description string `json:"description"`
		}
		if err := json.Unmarshal(schemas[name].Properties["contactWhatsapp"], &p); err != nil {
			t.Fatalf("%s.contactWhatsapp: %v", name, err)
		}
		desc := p.Description
		if !strings.Contains(desc, want) || !strings.Contains(desc, phoneRules) {
			t.Errorf("%s.contactWhatsapp: %q, want %q and the rules", name, desc, want)
		}
		if name == "ResponseInput" && strings.Contains(desc, "se publica") {
			t.Errorf("%s.contactWhatsapp says the number is published: %q", name, desc)
		}
	}
}

// TestPhoneWithALeadingZeroSaidSo: «0310 555 1234» (a mobile with a 0 before it, which it does not take)
// is refused saying to drop the 0, on both decode paths; words around a number are said to be the
// trouble; a 00 that reads as two different numbers is refused showing both; other bad numbers get the
// example. A 00 that reads one valid number way is that number.
func TestPhoneWithALeadingZeroSaidSo(t *testing.T) {
	for phone, want := range map[string]string{
		"0310 555 1234": "un celular de Colombia no lleva el 0 del comienzo (escriba 310 555 1234)",
		"0310-555-12":   "(ejemplo: +57 300 123 4567 o 3001234567)",
		// Words around the number.
		"Cel: 300 123 4567":   "lleva solo el número, sin palabras como «Cel:» ni nombres (ejemplo: +57 300 123 4567 o 3001234567)",
		"300 123 4567 (Mamá)": "lleva solo el número, sin palabras como «Cel:» ni nombres (ejemplo: +57 300 123 4567 o 3001234567)",
		// 00 as the international prefix, where Colombia's carrier prefixes read another country.
		"0058 412 1234567": "se puede leer como +58 412-1234567 o como +84 12 123 45 67: escríbalo con + y el indicativo del país",
	} {
		body := []byte(strings.Replace(validReq, `"300 123 4567"`, `"`+phone+`"`, 1))
		for _, d := range []Decoder{{}, {General: true}} {
			_, e := d.Decode(body, "")
			if e == nil || len(e.Details) != 1 || e.Details[0].Field != "/contactWhatsapp" || !strings.HasSuffix(e.Details[0].Message, want) {
				t.Errorf("%q (general %v): %+v, want a refusal ending %q", phone, d.General, e, want)
			}
		}
	}
	for phone, want := range map[string]string{"0057 300 123 4567": "+573001234567", "00573001234567": "+573001234567", "009 57 300 123 4567": "+573001234567",
		"005 57 3001234567": "+573001234567",
		// Colombia's own code after 00, where 005 would read Russia (+7 301…); the 00 written apart.
		"0057 301 234 5678": "+573012345678", "00 58 412 1234567": "+584121234567"} {
		if got, e := NormalizePhone(phone); e != nil || got != want {
			t.Errorf("%q: %q %+v, want %s", phone, got, e, want)
		}
	}
}
