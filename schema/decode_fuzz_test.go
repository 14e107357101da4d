package schema

import (
	"bytes"
	"encoding/json"
	"math"
	"math/big"
	"reflect"
	"slices"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// The fuzz targets check Decode against an oracle written from SPEC.md and DESIGN.md, not from the
// validator: whatever Decode accepts must satisfy every rule, and must decode again to the same thing.
// Seeds live in testdata/fuzz/; `make fuzz-smoke` runs each target briefly, `make soak` longer.

var forcedTypes = []string{"", TypeRequest, TypeOffer}

// FuzzDecode feeds raw bytes: syntax, structure, duplicate keys, numbers, encodings.
func FuzzDecode(f *testing.F) {
	offer := `{"type":"offer","source":"s","externalId":"e","title":"T","category":"acopio","contactName":"N",` +
		`"contactWhatsapp":"+57 310 987 6543","publishContact":true,"collectionCenterStatus":"full"}`
	for _, s := range []string{
		validReq, offer, `{}`, `[]`, `null`, `"x"`, `{"type":"request","type":"offer"}`,
		strings.Replace(validReq, `"latitude":4.5`, `"latitude":1e9999999`, 1),
		strings.Replace(validReq, `"latitude":4.5`, `"latitude":"4.5"`, 1),
		strings.Replace(validReq, `" Agua "`, `"Agua\u009b31m"`, 1),
		strings.Replace(validReq, `"title"`, `"t\u0069tle"`, 1),
		strings.Replace(validReq, `" Agua "`, `"Agua\ud800"`, 1), strings.Replace(validReq, `"latitude":4.5`, `"latitude":""`, 1),
	} {
		f.Add([]byte(s), uint8(0))
	}
	f.Add([]byte(strings.Replace(validReq, `"type":"request",`, "", 1)), uint8(1))
	f.Fuzz(func(t *testing.T, body []byte, forced uint8) {
		ft := forcedTypes[int(forced)%len(forcedTypes)]
		p, e := Decode(body, ft)
		if (p == nil) == (e == nil) {
			t.Fatalf("Decode must return exactly one of a publication and an error: %v %v", p, e)
		}
		if e != nil {
			checkErrorBody(t, e)
			return
		}
		checkAccepted(t, body, ft, p)
		checkRoundTrip(t, p, ft)
	})
}

// FuzzDecodeFields builds well-formed bodies from fuzzed values, so that the fuzzer spends its time on
// the rules rather than on JSON syntax, and checks both ways: what breaks a rule is refused, and what
// keeps every rule is accepted (the phone, which only libphonenumber can judge, excepted).
func FuzzDecodeFields(f *testing.F) {
	f.Add(true, "app", "ext-1", "Agua potable", "Sin agua\ndesde ayer", "alimentos", "Ana Gómez", "300 123 4567", "Cra 1 # 2-3", "needed", 4.53, -75.68, int64(12))
	f.Add(false, " app ", "ext-2", strings.Repeat("ñ", 100), "", "acopio", "Luis", "+573109876543", "", "full", 13.6, -66.8, int64(-1))
	f.Add(true, "app", "ext-3", "<script>alert(1)</script>", "**x** [a](javascript:1)", "salud", "N\u0085N", "3001234567", "x", "stable", -4.3, -79.1, int64(10000))
	f.Add(true, "a", "b", "t\x00", "d\x01", "comida", " ", "12", " ", "alta", 13.61, -79.11, int64(10001))
	f.Fuzz(func(t *testing.T, request bool, source, externalID, title, description, category, name, phone, address, enum string, lat, lon float64, people int64) {
		typ := TypeOffer
		if request {
			typ = TypeRequest
		}
		m := map[string]any{"type": typ, "source": source, "externalId": externalID, "title": title, "category": category,
			"contactName": name, "contactWhatsapp": phone, "publishContact": true}
		if description != "" {
			m["description"] = description
		}
		if address != "" {
			m["address"] = address
		}
		if !math.IsNaN(lat) && !math.IsInf(lat, 0) {
			m["latitude"] = lat
		}
		if !math.IsNaN(lon) && !math.IsInf(lon, 0) {
			m["longitude"] = lon
		}
		if request {
			m["urgency"], m["neededPeople"] = enum, people
		} else if enum != "" {
			m["collectionCenterStatus"] = enum
		}
		body, err := json.Marshal(m)
		if err != nil {
			t.Skip(err)
		}
		p, e := Decode(body, "")
		if e != nil {
			checkErrorBody(t, e)
			// json.Marshal turned invalid UTF-8 into U+FFFD, so the oracle judges what was sent.
			var sent map[string]json.RawMessage
			if err := json.Unmarshal(body, &sent); err != nil {
				t.Fatal(err)
			}
			if e.Code == CodeInvalidJSON {
				t.Fatalf("json.Marshal's output refused as invalid JSON: %+v\n%s", e, body)
			}
			// Every violation is reported, and nothing else (the phone only libphonenumber can judge).
			bad := violations(sent, typ)
			reported := map[string]bool{}
			for _, d := range e.Details {
				reported[d.Field] = true
				if !bad[d.Field] && d.Field != "/contactWhatsapp" {
					t.Fatalf("refused %s, which keeps every rule (oracle found %v): %+v\n%s", d.Field, bad, e, body)
				}
			}
			for k := range bad {
				if !reported[k] {
					t.Fatalf("%s breaks a rule but is not in details: %+v\n%s", k, e, body)
				}
			}
			return
		}
		checkAccepted(t, body, "", p)
		checkRoundTrip(t, p, "")
	})
}

// TestDecodeHugeExponents is the regression test for a panic the fuzzer found: big.Rat refuses exponents
// beyond about a million and the validator then compared a nil *big.Rat.
func TestDecodeHugeExponents(t *testing.T) {
	for _, n := range []string{"1e9999999", "-1e-9999999", "4.5E+10000000", "1e99999999999999999999", "1e1001"} {
		for _, field := range []string{`"latitude":4.5`, `"longitude":-75.6`, `"neededPeople":3.0`} {
			body := strings.Replace(validReq, field, field[:strings.IndexByte(field, ':')+1]+n, 1)
			if p, e := Decode([]byte(body), ""); p != nil || e == nil || e.Code != CodeInvalidJSON {
				t.Errorf("%s as %s: want invalid_json, got %+v %+v", n, field, p, e)
			}
		}
	}
	// Exponents that float64 can hold still work, and the range check still names the field.
	if p, e := Decode([]byte(strings.Replace(validReq, `"latitude":4.5`, `"latitude":45e-1`, 1)), ""); e != nil || *p.Latitude != 4.5 {
		t.Errorf("45e-1: %+v %+v", p, e)
	}
}

func checkErrorBody(t *testing.T, e *ErrorBody) {
	t.Helper()
	codes := []string{CodeInvalidBody, CodeInvalidJSON, CodeConsentRequired}
	if !slices.Contains(codes, e.Code) || e.Error == "" || !utf8.ValidString(e.Error) {
		t.Fatalf("error body: %+v", e)
	}
	for _, d := range e.Details {
		if d.Message == "" || (d.Field != "" && !strings.HasPrefix(d.Field, "/")) {
			t.Fatalf("detail without a message or a JSON pointer: %+v", d)
		}
	}
}

// allowed lists the fields of each type (SPEC.md), and the code-point limits of its strings (SPEC.md for
// title, description, contactName; DESIGN.md for the rest).
var allowed = map[string]map[string]int{
	TypeRequest: {"type": 0, "source": 100, "externalId": 200, "emergencySlug": 64, "title": 100, "description": 600,
		"category": 0, "contactName": 100, "contactWhatsapp": 40, "publishContact": 0, "address": 300,
		"neighborhood": 100, "latitude": 0, "longitude": 0, "urgency": 0, "neededPeople": 0},
	TypeOffer: {"type": 0, "source": 100, "externalId": 200, "emergencySlug": 64, "title": 100, "description": 600,
		"category": 0, "contactName": 100, "contactWhatsapp": 40, "publishContact": 0, "address": 300,
		"latitude": 0, "longitude": 0, "collectionCenterStatus": 0},
}

var required = map[string][]string{
	TypeRequest: {"source", "externalId", "title", "category", "contactName", "contactWhatsapp", "address", "latitude", "longitude"},
	TypeOffer:   {"source", "externalId", "title", "category", "contactName", "contactWhatsapp"},
}

var enums = map[string][]string{"category": Categories, "urgency": Urgencies, "collectionCenterStatus": CollectionCenterStatuses}

// ranges are SPEC.md's numeric limits, compared exactly (as decimals, not as float64).
var ranges = map[string][2]string{"latitude": {"-4.3", "13.6"}, "longitude": {"-79.1", "-66.8"}, "neededPeople": {"0", "10000"}}

// isControl is what DESIGN.md calls a control character: C0, DEL and C1. A multi-line description
// may hold tabs and line breaks.
func isControl(r rune, multiline bool) bool {
	if multiline && (r == '\t' || r == '\n' || r == '\r') {
		return false
	}
	return r < 0x20 || (r >= 0x7f && r <= 0x9f)
}

func rat(s string) *big.Rat {
	r, _ := new(big.Rat).SetString(s)
	return r
}

// violations judges a well-formed body field by field and returns the JSON pointers that break a rule
// (the phone's format excepted).
// asRead is a string member as docs/decisions.md says it is read: trimmed of white space and format
// characters (invisible), empty when only combining marks are left; every member but source and
// externalId also loses the bidirectional controls anywhere in it.
func asRead(member, s string) string {
	if member != "source" && member != "externalId" {
		s = strings.Map(func(r rune) rune {
			if (r >= 0x202A && r <= 0x202E) || (r >= 0x2066 && r <= 0x2069) || r == 0x200E || r == 0x200F || r == 0x061C {
				return -1
			}
			return r
		}, s)
	}
	s = strings.TrimFunc(s, func(r rune) bool { return unicode.IsSpace(r) || unicode.Is(unicode.Cf, r) })
	if strings.IndexFunc(s, func(r rune) bool { return !unicode.In(r, unicode.Mn, unicode.Me, unicode.Cf) && !unicode.IsSpace(r) }) < 0 {
		return ""
	}
	return s
}

func violations(m map[string]json.RawMessage, typ string) map[string]bool {
	bad := map[string]bool{}
	for k, raw := range m {
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		var v any
		if dec.Decode(&v) != nil {
			bad["/"+k] = true
			continue
		}
		limit, known := allowed[typ][k]
		s, isString := v.(string)
		s = asRead(k, s)
		switch {
		case !known:
			bad["/"+k] = true
		case k == "publishContact":
			bad["/"+k] = v != true
		case k == "type":
			bad["/"+k] = s != typ
		case ranges[k] != [2]string{}:
			n, ok := v.(json.Number)
			r := rat(string(n))
			bad["/"+k] = !ok || r == nil || r.Cmp(rat(ranges[k][0])) < 0 || r.Cmp(rat(ranges[k][1])) > 0 ||
				(k == "neededPeople" && !r.IsInt())
		case !isString:
			bad["/"+k] = true
		case s == "" && enums[k] == nil:
			// an empty text is absent; required fields are checked below
		case enums[k] != nil:
			bad["/"+k] = !slices.Contains(enums[k], s) // an empty enum too (issue 12)
		default:
			bad["/"+k] = utf8.RuneCountInString(s) > limit ||
				strings.ContainsFunc(s, func(r rune) bool { return isControl(r, k == "description") })
		}
	}
	for _, k := range append(required[typ], "publishContact") {
		var s string
		if raw, ok := m[k]; !ok || (json.Unmarshal(raw, &s) == nil && asRead(k, s) == "" && string(raw) != "null") {
			bad["/"+k] = true
		}
	}
	for k, v := range bad {
		if !v {
			delete(bad, k)
		}
	}
	return bad
}

// checkAccepted verifies, independently of the validator, that an accepted body keeps every rule and
// that the publication is the body, trimmed, with the defaults applied.
func checkAccepted(t *testing.T, body []byte, forced string, p *Publication) {
	t.Helper()
	if !utf8.Valid(body) {
		t.Fatalf("accepted invalid UTF-8: %q", body)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatalf("accepted what encoding/json refuses (%v): %q", err, body)
	}
	if n := topLevelKeys(t, body); n != len(m) {
		t.Fatalf("accepted a body with %d keys of which %d distinct: %q", n, len(m), body)
	}
	typ := forced
	if forced != "" {
		if _, has := m["type"]; has {
			t.Fatalf("accepted type in a tool call: %q", body)
		}
		m["type"] = json.RawMessage(`"` + forced + `"`)
	} else {
		_ = json.Unmarshal(m["type"], &typ)
		typ = asRead("type", typ)
		m["type"] = json.RawMessage(`"` + typ + `"`)
	}
	if p.Type != typ || (typ != TypeRequest && typ != TypeOffer) {
		t.Fatalf("type %q accepted as %q", typ, p.Type)
	}
	if bad := violations(m, typ); len(bad) > 0 {
		t.Fatalf("accepted a body that breaks %v: %q", bad, body)
	}
	if !p.PublishContact {
		t.Fatal("accepted without consent")
	}
	// Every field of the publication is the trimmed input.
	got := map[string]any{}
	b, _ := json.Marshal(p)
	_ = json.Unmarshal(b, &got)
	for k, raw := range m {
		var v any
		_ = json.Unmarshal(raw, &v)
		if s, ok := v.(string); ok {
			if v = asRead(k, s); v == "" {
				continue
			}
		}
		if k == "neededPeople" {
			f, _ := v.(float64)
			v = math.Trunc(f) // 3.0 is the integer 3
		}
		if !reflect.DeepEqual(got[k], v) {
			t.Fatalf("%s: sent %#v, decoded %#v", k, v, got[k])
		}
	}
	if typ == TypeRequest {
		if p.Urgency == "" || p.NeededPeople == nil || (m["urgency"] == nil && p.Urgency != DefaultUrgency) ||
			(m["neededPeople"] == nil && *p.NeededPeople != DefaultNeededPeople) {
			t.Fatalf("request defaults: urgency %q, neededPeople %v", p.Urgency, p.NeededPeople)
		}
	} else if p.Urgency != "" || p.NeededPeople != nil || p.Neighborhood != "" {
		t.Fatalf("an offer got request fields: %+v", p)
	}
	if len(p.ContactE164) < 8 || p.ContactE164[0] != '+' || strings.Trim(p.ContactE164[1:], "0123456789") != "" {
		t.Fatalf("contactE164 %q is not E.164", p.ContactE164)
	}
}

// topLevelKeys counts the keys of the top-level object as written, duplicates included.
func topLevelKeys(t *testing.T, body []byte) int {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(body))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("accepted a body that is not an object: %q", body)
	}
	n := 0
	for dec.More() {
		if _, err := dec.Token(); err != nil {
			t.Fatal(err)
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			t.Fatal(err)
		}
		n++
	}
	return n
}

// checkRoundTrip decodes the accepted publication again, as a client would resend it.
func checkRoundTrip(t *testing.T, p *Publication, forced string) {
	t.Helper()
	var m map[string]any
	b, _ := json.Marshal(p)
	_ = json.Unmarshal(b, &m)
	delete(m, "contactE164") // derived, not part of the wire format
	delete(m, "municipioCode")
	if m["locationPrecision"] == PrecisionPlace { // the point of the place, not coordinates given
		delete(m, "latitude")
		delete(m, "longitude")
		delete(m, "locationPrecision")
	}
	if forced != "" {
		delete(m, "type")
	}
	b, _ = json.Marshal(m)
	again, e := Decode(b, forced)
	if e != nil {
		t.Fatalf("the accepted publication does not decode again: %+v\n%s", e, b)
	}
	if !reflect.DeepEqual(p, again) {
		t.Fatalf("round trip changed the publication:\n%+v\n%+v", p, again)
	}
}
