package schema

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/invopop/jsonschema"
)

const validReq = `{"type":"request","source":" app ","externalId":"1","title":" Agua ","category":"alimentos",
"contactName":"Ana","contactWhatsapp":"300 123 4567","publishContact":true,"address":"Cra 1","latitude":4.5,"longitude":-75.6,"neededPeople":3.0}`

func TestDecodeNormalizes(t *testing.T) {
	p, e := Decode([]byte(validReq), "")
	if e != nil {
		t.Fatalf("refused: %+v", e)
	}
	if p.Source != "app" || p.Title != "Agua" {
		t.Errorf("strings not trimmed: %q %q", p.Source, p.Title)
	}
	if p.Urgency != "needed" || p.NeededPeople == nil || *p.NeededPeople != 3 {
		t.Errorf("defaults/integers: %q %v", p.Urgency, p.NeededPeople)
	}
	if p.ContactE164 != "+573001234567" || p.ContactWhatsapp != "300 123 4567" {
		t.Errorf("phone: %q as given %q", p.ContactE164, p.ContactWhatsapp)
	}
	var m map[string]any
	_ = json.Unmarshal([]byte(validReq), &m)
	delete(m, "neededPeople")
	b, _ := json.Marshal(m)
	if p, _ := Decode(b, ""); p == nil || *p.NeededPeople != 1 {
		t.Errorf("neededPeople default: %+v", p)
	}
}

func TestDecodeRejects(t *testing.T) {
	for _, c := range []struct{ name, body, code, field string }{
		{"NaN", `{"latitude": NaN}`, CodeInvalidJSON, ""},
		{"invalid utf-8", "{\"title\":\"\xff\"}", CodeInvalidJSON, ""},
		{"deep nesting", strings.Repeat("[", 10000) + strings.Repeat("]", 10000), CodeInvalidJSON, ""},
		{"1e400", strings.Replace(validReq, `"latitude":4.5`, `"latitude":1e400`, 1), CodeInvalidBody, "/latitude"},
		{"NUL in title", strings.Replace(validReq, `" Agua "`, `"Agua\u0000"`, 1), CodeInvalidBody, "/title"},
		{"newline in title", strings.Replace(validReq, `" Agua "`, `"Agua\nmás"`, 1), CodeInvalidBody, "/title"},
		{"null field", strings.Replace(validReq, `" Agua "`, `null`, 1), CodeInvalidBody, "/title"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, e := Decode([]byte(c.body), "")
			if p != nil || e == nil || e.Code != c.code || (c.field != "" && (len(e.Details) == 0 || e.Details[0].Field != c.field)) {
				t.Fatalf("want %s at %q, got %+v %+v", c.code, c.field, p, e)
			}
		})
	}
	// A newline is fine in a description.
	if _, e := Decode([]byte(strings.Replace(validReq, `"address"`, `"description":"línea 1\nlínea 2","address"`, 1)), ""); e != nil {
		t.Errorf("multi-line description refused: %+v", e)
	}
}

func TestForcedType(t *testing.T) {
	body := strings.Replace(validReq, `"type":"request",`, "", 1)
	if p, e := Decode([]byte(body), TypeRequest); e != nil || p.Type != TypeRequest {
		t.Fatalf("forced type: %+v %+v", p, e)
	}
	if _, e := Decode([]byte(validReq), TypeRequest); e == nil || e.Details[0].Field != "/type" {
		t.Fatalf("a tool call must not carry type: %+v", e)
	}
}

func TestToolInputSchemaIsRequestMinusTypePlusDryRun(t *testing.T) {
	var tool, full map[string]any
	_ = json.Unmarshal(ToolInputSchema(TypeRequest), &tool)
	b, _ := json.Marshal(JSONSchema("HelpRequest"))
	_ = json.Unmarshal(b, &full)
	props := full["properties"].(map[string]any)
	delete(props, "type")
	if _, ok := tool["properties"].(map[string]any)["type"]; ok {
		t.Fatal("tool schema has type")
	}
	// The tools add one switch of their own, dryRun (POST help's query parameter).
	tp := tool["properties"].(map[string]any)
	if d, _ := tp[DryRunArg].(map[string]any); d["type"] != "boolean" {
		t.Errorf("tool schema's dryRun: %v", tp[DryRunArg])
	}
	delete(tp, DryRunArg)
	tb, _ := json.Marshal(tp)
	fb, _ := json.Marshal(props)
	if string(tb) != string(fb) {
		t.Errorf("tool properties differ from the API's")
	}
	for _, r := range tool["required"].([]any) {
		if r == "type" {
			t.Error("type still required")
		}
	}
}

func TestOpenAPIBuilds(t *testing.T) {
	b, err := OpenAPI("https://ayuda.example.org/")
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if doc["openapi"] != "3.1.0" || doc["servers"].([]any)[0].(map[string]any)["url"] != "https://ayuda.example.org" {
		t.Errorf("doc: %v %v", doc["openapi"], doc["servers"])
	}
}

// TestSharedEnumsEverywhere: every wire schema that has a category, urgency or collection-centre status
// carries the one list of types.go — a tag that spelled out its own (stale) list would show here.
func TestSharedEnumsEverywhere(t *testing.T) {
	var walk func(name, path string, s *jsonschema.Schema)
	walk = func(name, path string, s *jsonschema.Schema) {
		if s == nil || s.Properties == nil {
			return
		}
		for prop, p := range s.Properties.FromOldest() {
			if want, ok := sharedEnums[prop]; ok && prop != "type" {
				var got []string
				for _, v := range p.Enum {
					got = append(got, v.(string))
				}
				if !slices.Equal(got, want) {
					t.Errorf("%s%s/%s: enum %v, want %v", name, path, prop, got, want)
				}
			}
			walk(name, path+"/"+prop, p)
			walk(name, path+"/"+prop+"/items", p.Items)
		}
	}
	for name := range wireTypes {
		walk(name, "", JSONSchema(name))
	}
	if u, _ := JSONSchema("HelpRequest").Properties.Get("urgency"); u.Default != DefaultUrgency {
		t.Errorf("urgency default %v", u.Default)
	}
}

// TestDecodeIssue12: escaped lone surrogates are invalid JSON naming the member (they used to read as
// U+FFFD, so "a\ud800" and "a\ufffd" were one idempotency key), and an empty string is absent only in
// a free text.
func TestDecodeIssue12(t *testing.T) {
	r := func(old, new string) []byte { return []byte(strings.Replace(validReq, old, new, 1)) }
	for _, c := range []struct {
		body        []byte
		code, field string
	}{
		{r(`"externalId":"1"`, `"externalId":"a\ud800"`), CodeInvalidJSON, "/externalId"},
		{r(`"externalId":"1"`, `"externalId":"a\udbff"`), CodeInvalidJSON, "/externalId"},
		{r(`" Agua "`, `"\udc00Agua"`), CodeInvalidJSON, "/title"},
		{r(`"latitude":4.5`, `"latitude":""`), CodeInvalidBody, "/latitude"},
		{r(`"longitude":-75.6`, `"longitude":" "`), CodeInvalidBody, "/longitude"},
		{r(`"neededPeople":3.0`, `"neededPeople":""`), CodeInvalidBody, "/neededPeople"},
		{r(`"neededPeople":3.0`, `"neededPeople":3.0,"urgency":""`), CodeInvalidBody, "/urgency"},
		{r(`"category":"alimentos"`, `"category":""`), CodeInvalidBody, "/category"},
	} {
		p, e := Decode(c.body, "")
		if p != nil || e == nil || e.Code != c.code || !hasDetail(e.Details, c.field) || !strings.Contains(e.Details[0].Message, "«") {
			t.Errorf("%s: want %s naming %s, got %+v %+v", c.body, c.code, c.field, p, e)
		}
	}
	if p, e := Decode(r(`"externalId":"1"`, `"externalId":"a\ufffd"`), ""); e != nil || p.ExternalID != "a\ufffd" {
		t.Errorf("U+FFFD is a character: %+v %+v", p, e)
	}
	if p, e := Decode(r(`"address"`, `"description":" ","neighborhood":"","address"`), ""); e != nil || p.Description != "" {
		t.Errorf("empty texts are absent: %+v %+v", p, e)
	}
}

// TestDecimalPeopleSaidSo: a count with decimals is refused saying it must be whole, not «(se recibió un
// número)», which a person reads as «it was a number».
func TestDecimalPeopleSaidSo(t *testing.T) {
	_, e := Decode([]byte(strings.Replace(validReq, `"neededPeople":3.0`, `"neededPeople":2.5`, 1)), "")
	if e == nil || len(e.Details) != 1 || e.Details[0].Field != "/neededPeople" || e.Details[0].Message != "«neededPeople» debe ser un número entero, sin decimales" {
		t.Errorf("neededPeople 2.5: %+v", e)
	}
}

// TestConsentCodeWhenItDominates: a missing consent is the top code when it is at least half of what is
// wrong (alone, or with one other field): that is what a person must decide. A body that lacks most of
// what a publication needs answers invalid_body, with the consent still among its details.
func TestConsentCodeWhenItDominates(t *testing.T) {
	noConsent := strings.Replace(validReq, `"publishContact":true`, `"publishContact":false`, 1)
	for _, c := range []struct{ name, body, code string }{
		{"consent alone", noConsent, CodeConsentRequired},
		{"consent missing alone", strings.Replace(validReq, `"publishContact":true,`, ``, 1), CodeConsentRequired},
		{"consent and one field", strings.Replace(noConsent, `"title":" Agua ",`, ``, 1), CodeConsentRequired},
		{"consent and two fields", strings.Replace(strings.Replace(noConsent, `"title":" Agua ",`, ``, 1), `"category":"alimentos",`, ``, 1), CodeInvalidBody},
		{"only a type", `{"type":"request"}`, CodeInvalidBody},
		{"a type and no consent", `{"type":"request","publishContact":false}`, CodeInvalidBody},
	} {
		_, eb := Decode([]byte(c.body), "")
		if eb == nil {
			t.Errorf("%s: accepted", c.name)
			continue
		}
		if eb.Code != c.code || !hasDetail(eb.Details, "/publishContact") {
			t.Errorf("%s: code %s, want %s, with /publishContact among the details: %+v", c.name, eb.Code, c.code, eb)
		}
		if c.code == CodeInvalidBody && !strings.Contains(eb.Error, "revise los campos") {
			t.Errorf("%s: %q does not send the reader to details", c.name, eb.Error)
		}
	}
}

// TestInvisibleTextIsAbsent: what a person cannot see around a string is trimmed, and a free text with
// nothing visible (zero-width spaces, a byte order mark, combining marks alone) is no text: a required
// one is refused as missing, an optional one is absent. Both decode paths say the same.
func TestInvisibleTextIsAbsent(t *testing.T) {
	for _, blank := range []string{`\u200b\u200b`, `\ufeff`, `\u200d\u0301`, ` \u2060 `, `\u0301\u0308`} {
		body := strings.Replace(validReq, `" Agua "`, `"`+blank+`"`, 1)
		decodeBoth(t, []byte(body), "")
		p, e := Decode([]byte(body), "")
		if p != nil || e == nil || len(e.Details) == 0 || e.Details[0].Field != "/title" {
			t.Errorf("title %s: %+v %+v, want /title refused as missing", blank, p, e)
		}
		withDesc := strings.Replace(validReq, `"address"`, `"description":"`+blank+`","address"`, 1)
		decodeBoth(t, []byte(withDesc), "")
		if p, e := Decode([]byte(withDesc), ""); e != nil || p.Description != "" {
			t.Errorf("description %s: %+v %+v, want absent", blank, p, e)
		}
	}
	// Around visible text, the same characters are trimmed; inside it, kept.
	body := strings.Replace(validReq, `" Agua "`, `"\ufeff\u200bAgua\u200bfría\u200b "`, 1)
	decodeBoth(t, []byte(body), "")
	if p, e := Decode([]byte(body), ""); e != nil || p.Title != "Agua\u200bfría" {
		t.Errorf("title around visible text: %+v %+v", p, e)
	}
}

// TestBidiControlsLeaveTexts: the bidirectional embeddings, overrides and isolates, which make a text
// show in another order than it holds, are removed from every text people read, inside it too, on both
// decode paths; a text of nothing else is absent. The idempotency key's members stay as sent: two
// application identifiers that differ by one of them stay two records.
func TestBidiControlsLeaveTexts(t *testing.T) {
	controls := []string{`\u202a`, `\u202b`, `\u202c`, `\u202d`, `\u202e`, `\u2066`, `\u2067`, `\u2068`, `\u2069`, `\u200e`, `\u200f`, `\u061c`}
	for _, c := range controls {
		r := strings.NewReplacer(`" Agua "`, `"Ag`+c+`ua"`, `"Cra 1"`, `"`+c+`Cra`+c+` 1`+c+`"`, `"Ana"`, `"A`+c+`na"`,
			`"300 123 4567"`, `"300`+c+` 123 4567"`, `"address"`, `"description":"llame al `+c+`7654 321 003","neighborhood":"`+c+c+`","address"`,
			`"externalId":"1"`, `"externalId":"1`+c+`2"`)
		body := []byte(r.Replace(validReq))
		decodeBoth(t, body, "")
		p, e := Decode(body, "")
		if e != nil {
			t.Fatalf("%s: %+v", c, e)
		}
		if p.Title != "Agua" || p.Address != "Cra 1" || p.ContactName != "Ana" || p.Description != "llame al 7654 321 003" || p.Neighborhood != "" {
			t.Errorf("%s: texts kept a direction control: %q %q %q %q %q", c, p.Title, p.Address, p.ContactName, p.Description, p.Neighborhood)
		}
		if p.ContactE164 != "+573001234567" {
			t.Errorf("%s: contactWhatsapp read as %q", c, p.ContactE164)
		}
		if want := "1" + strconvUnquote(t, c) + "2"; p.ExternalID != want {
			t.Errorf("%s: externalId %q, want it as sent (%q)", c, p.ExternalID, want)
		}
	}
	// A mark between groups of digits reorders them too (311 222 3344 shows as 222 311 3344).
	p, e := Decode([]byte(strings.Replace(validReq, `" Agua "`, `"Llame al \u200f311 222 3344\u200f ya"`, 1)), "")
	if e != nil || p.Title != "Llame al 311 222 3344 ya" {
		t.Errorf("direction marks: %+v %+v", p, e)
	}
	if got := CleanText(" \u202eAgua\u2066 fría\u2069 "); got != "Agua fría" {
		t.Errorf("CleanText: %q", got)
	}
}

func strconvUnquote(t *testing.T, esc string) string {
	t.Helper()
	s, err := strconv.Unquote(`"` + esc + `"`)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
