package backend_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/directaid/directaid/schema"
)

// TestContactAvailableAgrees: once a phone is reported as someone else's, every view says so —
// detail, list, GeoJSON, the MCP search (the list's items) — and a record whose phone shows says true
// everywhere.
func TestContactAvailableAgrees(t *testing.T) {
	s := newExpiryServer(t, &fakeClock{at: time.Now().UTC()})
	pub := func(ext string) schema.PublishResult {
		return s.publish(map[string]any{"type": "request", "source": "app", "externalId": ext, "emergencySlug": "eje-cafetero",
			"title": "Agua", "category": "alimentos", "contactName": "Ana", "contactWhatsapp": "3001234567", "publishContact": true,
			"address": "Calle 1", "latitude": 4.53, "longitude": -75.68})
	}
	shown, hidden := pub("shown"), pub("hidden")
	if code, body := s.do("POST", schema.HelpPath+"/"+hidden.ID+schema.ReportsSuffix, []byte(`{"reason":"not_my_number"}`)); code != 202 {
		t.Fatalf("report: %d %s", code, body)
	}
	want := map[string]bool{shown.ID: true, hidden.ID: false}
	for id, avail := range want {
		_, body := s.do("GET", schema.HelpPath+"?view=detail&id="+id, nil)
		var d schema.PublicHelpDetail
		if err := json.Unmarshal([]byte(body), &d); err != nil || d.Contact.Available != avail {
			t.Errorf("detail of %s: available %v, want %v (%s)", id, d.Contact.Available, avail, body)
		}
	}
	_, body := s.do("GET", schema.HelpPath+"?view=list", nil)
	var l schema.HelpList
	if err := json.Unmarshal([]byte(body), &l); err != nil || len(l.Items) != 2 {
		t.Fatalf("list: %v %s", err, body)
	}
	for _, it := range l.Items {
		if it.Contact.Available != want[it.ID] {
			t.Errorf("list item %s: available %v, want %v", it.ID, it.Contact.Available, want[it.ID])
		}
	}
	_, body = s.do("GET", schema.HelpPath+"?view=list&format=geojson", nil)
	for id, avail := range want {
		i := strings.Index(body, `"id":"`+id+`"`)
		if i < 0 {
			t.Fatalf("geojson lacks %s", id)
		}
		end := strings.Index(body[i:], `"available":`)
		if end < 0 || !strings.HasPrefix(body[i+end+len(`"available":`):], map[bool]string{true: "true", false: "false"}[avail]) {
			t.Errorf("geojson of %s: want available %v", id, avail)
		}
	}
}
