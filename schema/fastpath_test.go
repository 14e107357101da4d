package schema

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	json2 "github.com/go-json-experiment/json"
	"github.com/nyaruka/phonenumbers"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// The typed decode and the fast paths must never change an answer: the tests here compare them with the
// general path (the JSON Schema validator over the standard decoder).

const fastBody = `{"type":"request","source":"bench","externalId":"new64-12345","emergencySlug":"eje-cafetero",` +
	`"title":"Agua potable para familias","description":"Sin agua desde el sismo, niños y adultos mayores.",` +
	`"category":"salud","contactName":"María Rodríguez","contactWhatsapp":"+57 303 4567890","publishContact":true,` +
	`"address":"Calle 12 # 34-56","latitude":4.53390,"longitude":-75.68110,"neighborhood":"Centro","urgency":"urgent","neededPeople":12}`

var general = Decoder{General: true}

func decodeBoth(t *testing.T, body []byte, forced string) {
	t.Helper()
	p1, e1 := Decode(body, forced)
	p2, e2 := general.Decode(body, forced)
	// Unknown fields come out in map order on both paths; compare them as sets.
	for _, e := range []*ErrorBody{e1, e2} {
		if e != nil {
			slices.SortFunc(e.Details, func(a, b FieldError) int { return strings.Compare(a.Field+a.Message, b.Field+b.Message) })
		}
	}
	if !reflect.DeepEqual(p1, p2) || !reflect.DeepEqual(e1, e2) {
		t.Fatalf("typed decode and general path differ on %q (forced %q):\ntyped:   %+v %+v\ngeneral: %+v %+v", body, forced, p1, e1, p2, e2)
	}
}

func TestTypedMatchesGeneral(t *testing.T) {
	t.Parallel()
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
		// Lone surrogates, blank members that are not texts, and escapes in names.
		r(`new64-12345`, `a\ud800`), r(`new64-12345`, `a\udbff`), r(`new64-12345`, `a\udc00\ud800`), r(`new64-12345`, `a\ufffd`),
		r(`new64-12345`, `a\ud83d\ude00`), r(`new64-12345`, `a\uD83D\uDE00`), r(`new64-12345`, `a\uD800x`), r(`"bench"`, `"b\ud800"`),
		r(`"type"`, `"\ud800type"`), r(`12}`, `12,"x\udfff":1}`), r(`4.53390`, `""`), r(`-75.68110`, `" "`), r(`12}`, `""}`),
		r(`"urgent"`, `""`), r(`"urgent"`, `" "`), r(`"salud"`, `""`), r(`"Centro"`, `""`), r(`"Centro"`, `" "`),
		r(`"eje-cafetero"`, `""`), r(`"Sin agua desde el sismo, niños y adultos mayores."`, `"  "`), r(`"type":"request"`, `"type":""`),
		r(`true`, `""`), r(`"urgency":"urgent",`, `"collectionCenterStatus":"",`), r(`"urgency":"urgent",`, `"contactE164":"+573034567890",`),
		r(`"request"`, `"offer"`) + ` `, strings.Replace(r(`"request"`, `"offer"`), `"neighborhood":"Centro"`, `"neighborhood":""`, 1),
		strings.Replace(r(`"request"`, `"offer"`), `"urgency":"urgent"`, `"collectionCenterStatus":"full"`, 1),
		strings.Replace(strings.Replace(strings.Replace(r(`"request"`, `"offer"`), `"urgency":"urgent",`, ``, 1), `,"neededPeople":12`, ``, 1), `,"neighborhood":"Centro"`, ``, 1),
		strings.Replace(strings.Replace(strings.Replace(r(`"request"`, `"offer"`), `"urgency":"urgent",`, `"collectionCenterStatus":" full ",`, 1), `,"neededPeople":12`, ``, 1), `,"neighborhood":"Centro"`, ``, 1),
		// A request with none of the members offers refuse, and one that only offers have.
		strings.Replace(strings.Replace(strings.Replace(fastBody, `"urgency":"urgent",`, `"collectionCenterStatus":"full",`, 1), `,"neededPeople":12`, ``, 1), `,"neighborhood":"Centro"`, ``, 1),
		r(`4.53390`, `13.60000000000000000001`), r(`4.53390`, `13.59999999999999999999`), r(`4.53390`, `-4.30000000000000000001`),
		r(`4.53390`, `4.533901234567891234`), r(`4.53390`, `1e-1001`), r(`4.53390`, `1e-999`), r(`12}`, `12.00000000000000000001}`),
		r(`12}`, `1.2e1}`), r(`12}`, `10000.0}`), r(`12}`, `1e4}`), r(`12}`, `10000.000000000000001}`), r(`12}`, `9223372036854775808}`),
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

// TestTypedChecksCoverThePublicationSchemas: the typed decode knows every keyword of both schemas, and its
// wire types refuse exactly the members of Publication that a type lacks (typedChecks panics otherwise).
func TestTypedChecksCoverThePublicationSchemas(t *testing.T) {
	ts := typedChecks()
	for _, typ := range []string{TypeRequest, TypeOffer} {
		if ts.types[typ] == nil || len(ts.types[typ].required) == 0 {
			t.Errorf("%s: no typed checks", typ)
		}
	}
}

func TestFastPhoneMatchesLibphonenumber(t *testing.T) {
	t.Parallel()
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
		// Asked again, the number's remembered answer is the same.
		if again, againValid, againOK := fastPhone(s); !againOK || againValid != valid || again != e164 {
			t.Fatalf("%q again: %q valid=%v ok=%v, first %q valid=%v", s, again, againValid, againOK, e164, valid)
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
	for _, d := range []Decoder{{}, general} {
		b.Run(map[bool]string{false: "typed", true: "general"}[d.General], func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, eb := d.Decode(body, ""); eb != nil {
					b.Fatal(eb)
				}
			}
		})
	}
}

// BenchmarkDecodeParts measures what each fast path saves: the typed checks against the validator on
// the same body, and fastPhone against libphonenumber.
func BenchmarkDecodeParts(b *testing.B) {
	body := []byte(fastBody)
	b.Run("unmarshal", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var w requestWire
			if err := json2.Unmarshal(body, &w, decodeOptions...); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("validator", func(b *testing.B) {
		b.ReportAllocs()
		c := validators()[TypeRequest]
		for b.Loop() {
			v, err := jsonschema.UnmarshalJSON(bytes.NewReader(body))
			if err != nil {
				b.Fatal(err)
			}
			if err := c.schema.Validate(v); err != nil {
				b.Fatal(err)
			}
		}
	})
	for _, fast := range []bool{true, false} {
		b.Run(map[bool]string{true: "phone-fast", false: "phone-libphonenumber"}[fast], func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, fe := parsePhone("+57 303 4567890", fast); fe != nil {
					b.Fatal(fe)
				}
			}
		})
	}
	// A new number each time, as a flood of publishers sends them: the memo does not have it.
	b.Run("phone-fast-new", func(b *testing.B) {
		b.ReportAllocs()
		nn := 3_030_000_000 + uint64(time.Now().UnixNano()%9_000_000) // 303 xxx xxxx
		for b.Loop() {
			nn++
			if _, fe := parsePhone("+57 "+strconv.FormatUint(nn, 10), true); fe != nil {
				b.Fatal(fe)
			}
		}
	})
}

// FuzzTypedMatchesGeneral compares the typed decode with the general path on arbitrary bytes.
func FuzzTypedMatchesGeneral(f *testing.F) {
	f.Add([]byte(fastBody))
	f.Add([]byte(`{"a":[1,{"b":"\u00e9"}],"c":-0.5}`))
	f.Add([]byte(strings.Replace(fastBody, `new64-12345`, `a\ud800`, 1)))
	f.Add([]byte(strings.Replace(fastBody, `4.53390`, `""`, 1)))
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, forced := range []string{"", TypeRequest, TypeOffer} {
			decodeBoth(t, body, forced)
		}
	})
}

// The memo of checked numbers stays bounded and keeps answering right past its bound.
func TestMobileMemoBounded(t *testing.T) {
	var c mobileMemo
	for nn := range uint64(maxRememberedMobiles + 10) {
		c.put(3000000000+nn, fmt.Sprint(nn))
		if len(c.m) > maxRememberedMobiles {
			t.Fatalf("%d numbers remembered, bound %d", len(c.m), maxRememberedMobiles)
		}
	}
	if e164, valid, ok := c.get(3000000000 + maxRememberedMobiles + 9); !ok || !valid || e164 != fmt.Sprint(maxRememberedMobiles+9) {
		t.Fatalf("the last number: %q %v %v", e164, valid, ok)
	}
	if _, _, ok := c.get(3000000000); ok {
		t.Fatal("the first number survived the start-over")
	}
	c.put(3000000001, "")
	if _, valid, ok := c.get(3000000001); !ok || valid {
		t.Fatal("an invalid number is remembered as invalid")
	}
}

// colombianMobile answers from CO's metadata, never says valid where IsValidNumber does not (7-digit
// prefixes of 3xx numbers at a random stride of 1 to 12, about 150,000 of the million, each with a
// random suffix; numbers of other lengths and first digits), and covers the valid 3xx numbers among
// them: otherwise every new number would pay for IsValidNumber again.
func TestColombianMobileAsLibphonenumber(t *testing.T) {
	if coMobile().general == nil {
		t.Fatal("CO's general and mobile descriptions are not read from libphonenumber's metadata")
	}
	rng := rand.New(rand.NewPCG(7, 8))
	valid, fast := 0, 0
	check := func(ns string) {
		nn, err := strconv.ParseUint(ns, 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		lib := phonenumbers.IsValidNumber(&phonenumbers.PhoneNumber{CountryCode: &colombiaCode, NationalNumber: &nn})
		got := colombianMobile(ns)
		if got && !lib {
			t.Fatalf("%s: the CO mobile description matches, IsValidNumber says invalid", ns)
		}
		if lib && ns[0] == '3' && len(ns) == 10 {
			valid++
			if got {
				fast++
			}
		}
	}
	for prefix := 3000000; prefix < 4000000; prefix += 1 + rng.IntN(12) {
		check(fmt.Sprintf("%d%03d", prefix, rng.IntN(1000)))
	}
	for range 5000 {
		n := 7 + rng.IntN(6)
		check(fmt.Sprintf("%d%0*d", 1+rng.IntN(9), n-1, rng.Int64N(int64(math.Pow10(n-1)))))
	}
	if valid < 1000 || fast != valid {
		t.Fatalf("of %d valid 3xx numbers the mobile description matched %d", valid, fast)
	}
}
