package e2e

import (
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/directaid/directaid/internal/testserver"
)

// TestMatchesFromATownApproximate: a publication placed by its town (no coordinates) has its town's
// point, so the distances to its matches are approximate too: its confirmation and its page say «a unos
// … km (ubicación aproximada)», never «a 1,1 km» as if measured from the person.
func TestMatchesFromATownApproximate(t *testing.T) {
	t.Parallel()
	s := testserver.Start(t, testserver.Options{})
	resp, near := publish(t, s, map[string]any{"type": "request", "source": "e2e", "externalId": "near-town-1", "emergencySlug": "eje-cafetero",
		"title": "Llevar a 3 personas al hospital", "category": "transporte", "address": "Cra 19 # 12-40", "latitude": 4.5439, "longitude": -75.6811,
		"contactName": "Rosa", "contactWhatsapp": "3005551234", "publishContact": true})
	if resp.StatusCode != 201 {
		t.Fatalf("publish the request: %d %v", resp.StatusCode, near)
	}
	offer := url.Values{"type": {"offer"}, "source": {"directaid-web"}, "externalId": {"web-town-offer"}, "emergencySlug": {"eje-cafetero"},
		"title": {"Transporte en camioneta"}, "category": {"transporte"}, "lugar-departamento": {"63"}, "lugar-municipio": {"63001"},
		"contactName": {"Luis"}, "contactWhatsapp": {"3109876543"}, "publishContact": {"true"}}
	resp, body := s.Do("POST", "/ofrecer", []byte(offer.Encode()), "Content-Type", "application/x-www-form-urlencoded")
	approx := regexp.MustCompile(`Llevar a 3 personas al hospital</a>, a unos \d+,\d km \(ubicación aproximada\)`)
	if resp.StatusCode != 200 && resp.StatusCode != 201 || !approx.Match(body) {
		_, after, _ := strings.Cut(string(body), `id="coincidencias"`)
		t.Fatalf("the confirmation of a town-placed offer: %d, its matches:\n%.2000s", resp.StatusCode, after)
	}
	page := regexp.MustCompile(`id="resultado-enlace" href="([^"]+)"`).FindSubmatch(body)
	if page == nil {
		t.Fatal("no public link on the confirmation")
	}
	path := strings.TrimPrefix(string(page[1]), s.URL)
	if _, md := s.Do("GET", path+".md", nil); !regexp.MustCompile(`Llevar a 3 personas al hospital\]\([^)]+\), a unos \d+,\d km \(ubicación aproximada\)`).Match(md) {
		t.Errorf("the offer's page lists its match without saying the distance is approximate:\n%.4000s", md)
	}
}

// TestGuideExamplesOfResponsesAndMatches: the integration guide's examples of a response and of matches
// work as written against the real server (with a real record's id for the guide's example id).
func TestGuideExamplesOfResponsesAndMatches(t *testing.T) {
	t.Parallel()
	s := testserver.Start(t, testserver.Options{})
	resp, pub := publish(t, s, validRequest())
	if resp.StatusCode != 201 {
		t.Fatalf("publish: %d %v", resp.StatusCode, pub)
	}
	id := pub["id"].(string)
	_, guide := s.Do("GET", "/integraciones.md", nil)
	const exampleID = "06h0j9hc2k7j3vpb"
	m := regexp.MustCompile(`(?s)curl -s -X POST '([^']+/` + exampleID + `/responses)' \\\n  -H 'Content-Type: application/json' \\\n  -d '([^']+)'`).FindSubmatch(guide)
	if m == nil {
		t.Fatalf("no response example in the guide:\n%s", guide)
	}
	path := strings.Replace(strings.TrimPrefix(string(m[1]), s.URL), exampleID, id, 1)
	resp, out := call(t, s, "POST", path, m[2], "Content-Type", "application/json")
	if resp.StatusCode != 201 || out["responseToken"] == nil || out["counted"] != true {
		t.Errorf("the guide's response example: %d %v", resp.StatusCode, out)
	}
	mm := regexp.MustCompile(`curl -s '([^']+/` + exampleID + `/matches[^']*)'`).FindSubmatch(guide)
	if mm == nil {
		t.Fatalf("no matches example in the guide")
	}
	if resp, out := call(t, s, "GET", strings.Replace(strings.TrimPrefix(string(mm[1]), s.URL), exampleID, id, 1), nil); resp.StatusCode != 200 || out["matchedBy"] == nil {
		t.Errorf("the guide's matches example: %d %v", resp.StatusCode, out)
	}
}
