package backend_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/directaid/directaid/schema"
)

// TestPhoneNumbersLeaveTexts: a phone number typed in a publication's texts (its own contact's or
// another's) is taken out of them before storing, with a phone_in_text warning per text, so that no view
// carries it (lists, exports, pages, MCP); the consent and the «not my number» report govern
// contactWhatsapp alone. A retry of the same body is the same content; a dry run tells the same.
func TestPhoneNumbersLeaveTexts(t *testing.T) {
	s := newExpiryServer(t, &fakeClock{at: time.Now().UTC()})
	pub := map[string]any{"type": "request", "source": "app", "externalId": "tel-1", "emergencySlug": "eje-cafetero",
		"title": "Agua: llamen al 310 555 6677", "description": "Mi hija: 320-111-2233 o https://wa.me/573105556677. Somos 12 familias, Cra 14 # 20-31.",
		"category": "alimentos", "contactName": "Ana", "contactWhatsapp": "300 123 4567", "publishContact": true, "address": "Finca 3 vereda El Caimo", "placeCode": "63001001"}
	b, _ := json.Marshal(pub)
	code, out := s.do("POST", schema.HelpPath+"?dryRun=true", b)
	var dry schema.DryRunResult
	if err := json.Unmarshal([]byte(out), &dry); err != nil || code != http.StatusOK || len(dry.Warnings) != 2 || dry.Record.Title != "Agua: llamen al ••• ••• ••••" {
		t.Fatalf("dry run: %d %s", code, out)
	}
	res := s.publish(pub)
	if len(res.Warnings) != 2 || res.Warnings[0].Code != schema.CodePhoneInText || res.Warnings[0].Field != "/title" || res.Warnings[1].Field != "/description" {
		t.Fatalf("warnings: %+v", res.Warnings)
	}
	for view, out := range s.views(res.ID) {
		for _, n := range []string{"310 555 6677", "3105556677", "320-111-2233", "3201112233", "573105556677"} {
			if strings.Contains(out, n) {
				t.Errorf("%s carries %s: %s", view, n, out)
			}
		}
		if view == "detail" && (!strings.Contains(out, "Somos 12 familias, Cra 14 # 20-31.") || !strings.Contains(out, "Mi hija: •••-•••-•••• o https://wa.me/••••••••••••")) {
			t.Errorf("the detail lost the rest of the text: %s", out)
		}
	}
	code, out = s.do("POST", schema.HelpPath, b)
	var again schema.PublishResult
	if err := json.Unmarshal([]byte(out), &again); err != nil || code != http.StatusOK || again.ContentMatches == nil || !*again.ContentMatches || len(again.Warnings) != 2 {
		t.Fatalf("the retry: %d %s", code, out)
	}
}
