package backend_test

import (
	"strings"
	"testing"

	"github.com/directaid/directaid/internal/testserver"
	"github.com/directaid/directaid/schema"
)

// A retry that writes the publisher's number another way is the same content: 200 with contentMatches
// true and the manage token, as the first answer gave it.
func TestRetryWithThePhoneWrittenAnotherWay(t *testing.T) {
	s := newContractServer(t)
	pub := testserver.ValidRequest()
	pub["contactWhatsapp"] = "300 123 4567"
	resp, first := s.publish(string(testserver.MustJSON(t, pub)))
	if resp.StatusCode != 201 {
		t.Fatalf("publish: %d %v", resp.StatusCode, first)
	}
	pub["contactWhatsapp"] = "+57 3001234567"
	resp, again := s.publish(string(testserver.MustJSON(t, pub)))
	if resp.StatusCode != 200 || again["contentMatches"] != true || again["manageToken"] != first["manageToken"] || again["id"] != first["id"] {
		t.Fatalf("retry with the number written another way: %d %v", resp.StatusCode, again)
	}
	pub["contactWhatsapp"] = "300 123 4568"
	if resp, other := s.publish(string(testserver.MustJSON(t, pub))); resp.StatusCode != 200 || other["contentMatches"] != false || other["manageToken"] != nil {
		t.Fatalf("retry with another number: %d %v", resp.StatusCode, other)
	}
}

// A malformed id is quoted back as it was sent, not as the store would read it («nope», not «n0pe»).
func TestBadIDQuotedAsSent(t *testing.T) {
	s := newContractServer(t)
	for _, path := range []string{schema.HelpPath + "?view=detail&id=nope", schema.HelpPath + "/nope/matches"} {
		_, raw := s.Do("GET", path, nil)
		if !strings.Contains(string(raw), `nope`) || strings.Contains(string(raw), "n0pe") {
			t.Errorf("%s: %s", path, raw)
		}
	}
	for _, path := range []string{schema.ResponsesPath("nope"), schema.ReportsPath("nope")} {
		_, raw := s.Do("POST", path, []byte(`{"message":"Voy","reason":"spam"}`), "Content-Type", "application/json")
		if strings.Contains(string(raw), "n0pe") {
			t.Errorf("POST %s: %s", path, raw)
		}
	}
}

// The missing consent is the top code while it is at least half of what is wrong, counted with the
// emergency's own detail when no emergencySlug names one of several.
func TestConsentRequiredCountsTheEmergencyDetail(t *testing.T) {
	s := newContractServer(t) // two active emergencies
	for _, c := range []struct {
		drop []string
		code string
		n    int
	}{
		{[]string{"publishContact", "emergencySlug"}, schema.CodeConsentRequired, 2},
		{[]string{"publishContact", "emergencySlug", "title"}, schema.CodeInvalidBody, 3},
		{[]string{"publishContact", "title"}, schema.CodeConsentRequired, 2},
	} {
		req := testserver.ValidRequest()
		for _, f := range c.drop {
			delete(req, f)
		}
		resp, body := s.publish(string(testserver.MustJSON(t, req)))
		details, _ := body["details"].([]any)
		if resp.StatusCode != 400 || body["code"] != c.code || len(details) != c.n {
			t.Errorf("without %v: %d %v, want %s with %d details", c.drop, resp.StatusCode, body, c.code, c.n)
		}
	}
}
