package schema

import (
	"strings"

	"fmt"
	"golang.org/x/text/unicode/norm"
	"slices"
	"testing"
)

// TestTypeFaultWithTheOthers: a body whose type is missing or unknown, or that sends a tool's fixed type,
// is told every other fault with it: those of the fields both types share (not a request's address,
// which an offer need not have), the missing consent among them.
func TestTypeFaultWithTheOthers(t *testing.T) {
	fields := func(eb *ErrorBody) []string {
		var out []string
		for _, d := range eb.Details {
			out = append(out, d.Field)
		}
		return out
	}
	body := `{"source":"x","externalId":"y","title":"Agua","category":"comida","contactName":"Ana","contactWhatsapp":"123","publishContact":false%s}`
	for _, d := range []Decoder{{}, {General: true}} {
		for typ, forced := range map[string]string{"": "", `,"type":"solicitud"`: "", `,"type":"request"`: TypeRequest} {
			_, eb := d.Decode([]byte(fmt.Sprintf(body, typ)), forced)
			if eb == nil {
				t.Fatalf("%q (forced %q): accepted", typ, forced)
			}
			got := fields(eb)
			for _, want := range []string{"/type", "/category", "/contactWhatsapp", "/publishContact"} {
				if !slices.Contains(got, want) {
					t.Errorf("%q (forced %q): details %v lack %s", typ, forced, got, want)
				}
			}
			if forced == "" && slices.Contains(got, "/address") {
				t.Errorf("%q: a request's own field among the faults of a body of no type: %v", typ, got)
			}
			if forced != "" && !slices.Contains(got, "/address") {
				t.Errorf("the tool's type: the request's own fields are not checked: %v", got)
			}
		}
	}
	// Alone, the type's fault is the message.
	if _, eb := (Decoder{}).Decode([]byte(`{"source":"x","externalId":"y","emergencySlug":"e","title":"Agua","category":"salud","contactName":"Ana","contactWhatsapp":"3001234567","publishContact":true}`), ""); eb == nil ||
		len(eb.Details) != 1 || eb.Details[0].Field != "/type" || eb.Error != "Datos inválidos: "+eb.Details[0].Message+"." {
		t.Errorf("a body without type, otherwise an offer: %+v", eb)
	}
}

// TestTextsComposed: a text typed with combining accents (NFD: «e» and U+0301) is stored composed, and
// its characters are counted as people count them: a 91-character title so typed fits the 100.
func TestTextsComposed(t *testing.T) {
	title := strings.Repeat("é", 91) // each «é» two characters decomposed: 182
	decomposed := norm.NFD.String(title)
	body := fmt.Sprintf(`{"type":"offer","source":"x","externalId":"y","emergencySlug":"e","title":%q,"category":"salud","contactName":"José","contactWhatsapp":"3001234567","publishContact":true}`, decomposed)
	for _, d := range []Decoder{{}, {General: true}} {
		p, eb := d.Decode([]byte(body), "")
		if eb != nil {
			t.Fatalf("a 91-character title typed decomposed: %+v", eb)
		}
		if p.Title != title || p.ContactName != "José" {
			t.Errorf("stored %q, %q: not composed", p.Title, p.ContactName)
		}
	}
}
