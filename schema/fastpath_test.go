package schema

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/nyaruka/phonenumbers"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// The fast paths must never change an answer: every test here compares them with the general path.

const fastBody = `{"type":"request","source":"bench","externalId":"new64-12345","emergencySlug":"eje-cafetero",` +
	`"title":"Agua potable para familias","description":"Sin agua desde el sismo, niños y adultos mayores.",` +
	`"category":"salud","contactName":"María Rodríguez","contactWhatsapp":"+57 303 4567890","publishContact":true,` +
	`"address":"Calle 12 # 34-56","latitude":4.53390,"longitude":-75.68110,"neighborhood":"Centro","urgency":"urgent","neededPeople":12}`

func decodeBoth(t *testing.T, body []byte, forced string) {
	t.Helper()
	p1, e1 := Decode(body, forced)
	noFastPaths.Store(true)
	p2, e2 := Decode(body, forced)
	noFastPaths.Store(false)
	// Unknown fields come out in map order on both paths; compare them as sets.
	for _, e := range []*ErrorBody{e1, e2} {
		if e != nil {
			slices.SortFunc(e.Details, func(a, b FieldError) int { return strings.Compare(a.Field+a.Message, b.Field+b.Message) })
		}
	}
	if !reflect.DeepEqual(p1, p2) || !reflect.DeepEqual(e1, e2) {
		t.Fatalf("fast and general paths differ on %q (forced %q):\nfast:    %+v %+v\ngeneral: %+v %+v", body, forced, p1, e1, p2, e2)
	}
	if v, ok := fastParse(body); ok && utf8.Valid(body) { // Decode refuses invalid UTF-8 before parsing
		if err := checkStructure(body); err != nil {
			t.Fatalf("fastParse accepted %q, checkStructure refuses it: %v", body, err)
		}
		want, err := jsonschema.UnmarshalJSON(bytes.NewReader(body))
		if err != nil || !reflect.DeepEqual(v, want) {
			t.Fatalf("fastParse(%q) = %#v, the standard decoder gives %#v (%v)", body, v, want, err)
		}
	}
}

func TestFastPathsMatchGeneral(t *testing.T) {
	r := func(old, new string) string { return strings.Replace(fastBody, old, new, 1) }
	corpus := []string{
		fastBody, ` ` + fastBody + "\n\t", fastBody + `x`, fastBody + `{}`, `{}`, `[]`, `null`, `true`, `"x"`, `1`, ``, ` `,
		r(`"title"`, `"t\u0069tle"`), r(`Agua`, `Ag\u00faa \"fría\" \/ \n`), r(`Agua`, `\ud800`), r(`Agua`, `\x`),
		r(`4.53390`, `4.5339e0`), r(`4.53390`, `45339E-4`), r(`4.53390`, `1e9999999`), r(`4.53390`, `04.5`), r(`4.53390`, `-0`),
		r(`4.53390`, `4.`), r(`4.53390`, `.5`), r(`4.53390`, `-`), r(`4.53390`, `"4.5"`), r(`4.53390`, `null`), r(`12}`, `12.0}`),
		r(`12}`, `1e1}`), r(`12}`, `-1}`), r(`12}`, `10001}`), r(`true`, `tru`), r(`true`, `truex`), r(`true`, `false`),
		r(`"type":"request",`, `"type":"request","type":"offer",`), r(`"type":"request",`, `"type":"request","t\u0079pe":"x",`),
		r(`"type":"request",`, `"type":" request ",`), r(`"type":"request",`, `"type":"offer",`), r(`"type":"request",`, ``),
		r(`"urgency":"urgent",`, `"urgency":"  ",`), r(`"urgency":"urgent",`, `"lat":1,`), r(`"urgency":"urgent",`, `"x":{"a":[1,{"b":[[[[[[1]]]]]]}]},`),
		r(`"urgency":"urgent",`, `"x":[[[[[[[1]]]]]]],`), r(`"urgency":"urgent",`, `"x":[],"y":{},`), r(`Centro`, "Cen\ttro"),
		r(`Centro`, "Cen\u0085tro"), r(`Centro`, `Cen\u0085tro`), r(`Centro`, `Cen\u007ftro`), r(`"publishContact":true`, `"publishContact":false`),
		r(`+57 303 4567890`, `3034567890`), r(`+57 303 4567890`, `(303) 456-7890`), r(`+57 303 4567890`, `+57 (303) 456.7890`),
		r(`+57 303 4567890`, `606 7412345`), r(`+57 303 4567890`, `+1 202 555 0143`), r(`+57 303 4567890`, `393 4567890`),
		r(`+57 303 4567890`, `3034567890x`), r(`+57 303 4567890`, `57 303 4567890`), r(`+57 303 4567890`, `+57+3034567890`),
		r(`,"neededPeople":12`, ``), r(`"request"`, `"offer"`), `{"a":1,"a":2}`, `{"a" 1}`, `{"a":1,}`, `[1,]`, `{,}`, `{"a":1}}`,
		`[[[[[[[[1]]]]]]]]`, `[[[[[[[[[1]]]]]]]]]`, `{"a":"` + "\x01" + `"}`,
		// Bounds, lengths and kinds, where a fast validator could go wrong.
		r(`4.53390`, `13.6`), r(`4.53390`, `13.600000000000001`), r(`4.53390`, `13.5999999999999`), r(`4.53390`, `-4.3`),
		r(`4.53390`, `-4.30000000000000001`), r(`-75.68110`, `-66.8`), r(`-75.68110`, `-79.1000001`), r(`12}`, `0}`),
		r(`12}`, `10000}`), r(`12}`, `-0}`), r(`12}`, `"12"}`), r(`12}`, `true}`), r(`"salud"`, `"Salud"`), r(`"salud"`, `1`),
		r(`"urgent"`, `"urgente"`), r(`"publishContact":true`, `"publishContact":"true"`), r(`"publishContact":true`, `"publishContact":1`),
		r(`Agua potable para familias`, strings.Repeat("ñ", 100)), r(`Agua potable para familias`, strings.Repeat("ñ", 101)),
		r(`Agua potable para familias`, strings.Repeat("a", 99)+"é"), r(`Agua potable para familias`, "x\u0085"),
		r(`"bench"`, `["bench"]`), r(`"bench"`, `{"a":1}`), r(`"bench"`, `null`), r(`"type":"request",`, `"type":1,`),
	}
	for _, body := range corpus {
		for _, forced := range []string{"", TypeRequest} {
			decodeBoth(t, []byte(body), forced)
		}
	}
	// Mutations of a valid body: bytes dropped, duplicated or replaced by JSON punctuation.
	rng := rand.New(rand.NewPCG(1, 2))
	punct := []byte(`{}[],:"\ 0-.eE+tfn`)
	for range 3000 {
		b := []byte(fastBody)
		for range 1 + rng.IntN(3) {
			i := rng.IntN(len(b))
			switch rng.IntN(3) {
			case 0:
				b = append(b[:i:i], b[i+1:]...)
			case 1:
				b = append(b[:i+1:i+1], b[i:]...)
			default:
				b[i] = punct[rng.IntN(len(punct))]
			}
		}
		decodeBoth(t, b, "")
	}
}

func TestFastValidatorCoversThePublicationSchemas(t *testing.T) {
	for typ, c := range validators() {
		if c.fast == nil {
			t.Errorf("%s: the schema uses a keyword the fast validator does not know; every body takes the full validator", typ)
		}
	}
}

func TestFastPhoneMatchesLibphonenumber(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	seps := []string{"", "", " ", "-", ".", "(", ")", "  "}
	for range 20000 {
		var b strings.Builder
		if rng.IntN(2) == 0 {
			b.WriteString("+57")
		}
		digits := fmt.Sprintf("3%02d%07d", rng.IntN(100), rng.IntN(10000000))
		switch rng.IntN(10) {
		case 0:
			digits = digits[:9]
		case 1:
			digits += "7"
		}
		for i, d := range digits {
			if i == 0 || rng.IntN(3) == 0 {
				b.WriteString(seps[rng.IntN(len(seps))])
			}
			b.WriteRune(d)
		}
		if rng.IntN(4) == 0 {
			b.WriteString(seps[rng.IntN(len(seps))])
		}
		s := b.String()
		e164, valid, ok := fastPhone(s)
		if !ok {
			continue
		}
		num, err := phonenumbers.Parse(s, "CO")
		wantValid := err == nil && phonenumbers.IsValidNumber(num)
		if valid != wantValid || (valid && e164 != phonenumbers.Format(num, phonenumbers.E164)) {
			t.Fatalf("%q: fast path %q valid=%v; libphonenumber valid=%v (%v)", s, e164, valid, wantValid, err)
		}
	}
}

func TestFastRegexpMatchesRegexp(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	patterns := []string{`^[^\x00-\x1f\x7f-\x9f]*$`, `^[^\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]*$`, `^[^\x00-\x1f\x7f]*$`,
		`^[a-z0-9-]*$`, `(?i)^[a-k]*$`, `^[a-z]+$`, `[^\x00]*`, `^a*$`}
	for _, p := range patterns {
		fast, err := fastRegexp(p)
		if err != nil {
			t.Fatal(err)
		}
		std := regexp.MustCompile(p)
		if fast.String() != p {
			t.Fatalf("String() = %q, want %q", fast.String(), p)
		}
		for i := range 5000 {
			var b strings.Builder
			for range rng.IntN(6) {
				switch rng.IntN(4) {
				case 0:
					b.WriteRune(rune(rng.IntN(0x200)))
				case 1:
					b.WriteByte(byte(rng.IntN(256))) // invalid UTF-8 too
				case 2:
					b.WriteRune(rune(rng.IntN(0x10ffff)))
				default:
					b.WriteByte(byte('a' + rng.IntN(26)))
				}
			}
			s := b.String()
			if i < 0x200 {
				s = string(rune(i))
			}
			if fast.MatchString(s) != std.MatchString(s) {
				t.Fatalf("%s on %q: fast %v, regexp %v", p, s, fast.MatchString(s), std.MatchString(s))
			}
		}
	}
}

func BenchmarkDecode(b *testing.B) {
	body := []byte(fastBody)
	for _, general := range []bool{false, true} {
		b.Run(map[bool]string{false: "fast", true: "general"}[general], func(b *testing.B) {
			noFastPaths.Store(general)
			defer noFastPaths.Store(false)
			b.ReportAllocs()
			for b.Loop() {
				if _, eb := Decode(body, ""); eb != nil {
					b.Fatal(eb)
				}
			}
		})
	}
}

// FuzzFastPaths compares the fast and general paths of Decode on arbitrary bytes.
func FuzzFastPaths(f *testing.F) {
	f.Add([]byte(fastBody))
	f.Add([]byte(`{"a":[1,{"b":"\u00e9"}],"c":-0.5}`))
	f.Fuzz(func(t *testing.T, body []byte) { decodeBoth(t, body, "") })
}
