package backend_test

import (
	"bytes"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/directaid/directaid/backend"
	"github.com/directaid/directaid/internal/testserver"
)

// The publication rules (SPEC.md, DESIGN.md «Decisions on the publish contract»), asked of
// httpapi.NewHandler in process: validation, malformed bodies, the choice of the emergency.

func TestValidationRules(t *testing.T) {
	s := newContractServer(t).Server
	long := func(n int) string { return strings.Repeat("ñ", n) } // 2 bytes each: lengths count characters
	type rule struct {
		name  string
		body  map[string]any
		code  string
		field string
	}
	cases := []rule{
		{"category enum", testserver.With(testserver.ValidRequest(), "category", "comida"), "invalid_body", "/category"},
		{"urgency enum", testserver.With(testserver.ValidRequest(), "urgency", "alta"), "invalid_body", "/urgency"},
		{"collectionCenterStatus enum", testserver.With(testserver.ValidOffer(), "collectionCenterStatus", "cerrado"), "invalid_body", "/collectionCenterStatus"},
		{"type enum", testserver.With(testserver.ValidRequest(), "type", "pedido"), "invalid_body", "/type"},
		{"type missing", testserver.With(testserver.ValidRequest(), "type", nil), "invalid_body", "/type"},
		{"title 101", testserver.With(testserver.ValidRequest(), "title", long(101)), "invalid_body", "/title"},
		{"description 601", testserver.With(testserver.ValidRequest(), "description", long(601)), "invalid_body", "/description"},
		{"contactName 101", testserver.With(testserver.ValidRequest(), "contactName", long(101)), "invalid_body", "/contactName"},
		{"latitude below", testserver.With(testserver.ValidRequest(), "latitude", -4.31), "invalid_body", "/latitude"},
		{"latitude above", testserver.With(testserver.ValidRequest(), "latitude", 13.61), "invalid_body", "/latitude"},
		{"longitude below", testserver.With(testserver.ValidRequest(), "longitude", -79.11), "invalid_body", "/longitude"},
		{"longitude above", testserver.With(testserver.ValidRequest(), "longitude", -66.79), "invalid_body", "/longitude"},
		{"offer latitude above", testserver.With(testserver.ValidOffer(), "latitude", 14, "longitude", -75), "invalid_body", "/latitude"},
		{"neededPeople below", testserver.With(testserver.ValidRequest(), "neededPeople", -1), "invalid_body", "/neededPeople"},
		{"neededPeople above", testserver.With(testserver.ValidRequest(), "neededPeople", 10001), "invalid_body", "/neededPeople"},
		{"neededPeople fraction", testserver.With(testserver.ValidRequest(), "neededPeople", 1.5), "invalid_body", "/neededPeople"},
		{"latitude as string", testserver.With(testserver.ValidRequest(), "latitude", "4.5"), "invalid_body", "/latitude"},
		{"publishContact false", testserver.With(testserver.ValidRequest(), "publishContact", false), "consent_required", "/publishContact"},
		{"publishContact missing", testserver.With(testserver.ValidRequest(), "publishContact", nil), "consent_required", "/publishContact"},
		{"publishContact string", testserver.With(testserver.ValidRequest(), "publishContact", "true"), "invalid_body", "/publishContact"},
		{"unknown field", testserver.With(testserver.ValidRequest(), "lat", 4.5), "invalid_body", "/lat"},
		{"phone garbage", testserver.With(testserver.ValidRequest(), "contactWhatsapp", "llamar al vecino"), "invalid_body", "/contactWhatsapp"},
		{"phone too short", testserver.With(testserver.ValidRequest(), "contactWhatsapp", "12345"), "invalid_body", "/contactWhatsapp"},
		{"blank title is missing", testserver.With(testserver.ValidRequest(), "title", "   "), "invalid_body", "/title"},
		{"unknown emergency", testserver.With(testserver.ValidRequest(), "emergencySlug", "no-existe"), "unknown_emergency", "/emergencySlug"},
		{"emergency required", testserver.With(testserver.ValidRequest(), "emergencySlug", nil), "emergency_required", "/emergencySlug"},
	}
	requestRequired := []string{"source", "externalId", "title", "category", "contactName", "contactWhatsapp", "address", "latitude", "longitude"}
	for _, f := range requestRequired {
		cases = append(cases, rule{"request missing " + f, testserver.With(testserver.ValidRequest(), f, nil), "invalid_body", "/" + f})
	}
	for _, f := range []string{"source", "externalId", "title", "category", "contactName", "contactWhatsapp"} {
		cases = append(cases, rule{"offer missing " + f, testserver.With(testserver.ValidOffer(), f, nil), "invalid_body", "/" + f})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			resp, body := testserver.Publish(t, s, c.body)
			if resp.StatusCode != http.StatusBadRequest || body["code"] != c.code || !slices.Contains(testserver.ErrorFields(body), c.field) {
				t.Fatalf("want 400 %s naming %s; got %d %v", c.code, c.field, resp.StatusCode, body)
			}
			if msg, _ := body["error"].(string); msg == "" {
				t.Errorf("no error message: %v", body)
			}
		})
	}
	// Every violation at once.
	resp, body := testserver.Publish(t, s, testserver.With(testserver.ValidRequest(), "title", long(101), "latitude", 99, "category", "x"))
	if got := testserver.ErrorFields(body); resp.StatusCode != 400 || !slices.Equal(got, []string{"/title", "/category", "/latitude"}) {
		t.Errorf("all violations at once: %d %v", resp.StatusCode, got)
	}
	// The emergency rules too: consent and the emergency both missing, or a bad field and an unknown slug.
	resp, body = testserver.Publish(t, s, testserver.With(testserver.ValidRequest(), "publishContact", false, "emergencySlug", nil))
	if got := testserver.ErrorFields(body); resp.StatusCode != 400 || body["code"] != "consent_required" || !slices.Equal(got, []string{"/publishContact", "/emergencySlug"}) {
		t.Errorf("consent and emergency missing: %d %v", resp.StatusCode, body)
	}
	resp, body = testserver.Publish(t, s, testserver.With(testserver.ValidRequest(), "latitude", 99, "emergencySlug", " no-existe "))
	if got := testserver.ErrorFields(body); resp.StatusCode != 400 || body["code"] != "invalid_body" || !slices.Equal(got, []string{"/latitude", "/emergencySlug"}) {
		t.Errorf("bad latitude and unknown emergency: %d %v", resp.StatusCode, body)
	}
	// The limits themselves pass: 100 two-byte characters, the corners of Colombia, 0 and 10000 people.
	ok := []map[string]any{
		testserver.With(testserver.ValidRequest(), "title", long(100), "contactName", long(100), "description", long(600)),
		testserver.With(testserver.ValidRequest(), "latitude", -4.3, "longitude", -79.1, "neededPeople", 0),
		testserver.With(testserver.ValidRequest(), "latitude", 13.6, "longitude", -66.8, "neededPeople", 10000),
		testserver.With(testserver.ValidRequest(), "urgency", nil, "neededPeople", nil, "description", nil, "neighborhood", nil),
		testserver.With(testserver.ValidOffer(), "latitude", 4.5, "longitude", -75.6, "address", "Parque", "collectionCenterStatus", "needs_volunteers"),
	}
	for i, b := range ok {
		if resp, out := testserver.Publish(t, s, b); resp.StatusCode != 201 {
			t.Errorf("valid body %d refused: %d %v", i, resp.StatusCode, out)
		}
	}
}

func TestMalformedBodies(t *testing.T) {
	s := newContractServer(t).Server
	post := func(body []byte, ct string) (*http.Response, map[string]any) {
		return testserver.Call(t, s, "POST", "/api/public/v1/help", body, "Content-Type", ct)
	}
	for _, c := range []struct {
		name   string
		body   []byte
		ct     string
		status int
		code   string
	}{
		{"not json", []byte("hola"), "application/json", 400, "invalid_json"},
		{"truncated", []byte(`{"type":"request"`), "application/json", 400, "invalid_json"},
		{"duplicate key", []byte(`{"type":"request","type":"offer"}`), "application/json", 400, "invalid_json"},
		{"array", []byte(`[1,2]`), "application/json", 400, "invalid_body"},
		{"two values", []byte(`{} {}`), "application/json", 400, "invalid_json"},
		{"form encoded", []byte("title=x"), "application/x-www-form-urlencoded", 415, "unsupported_media_type"},
		{"no content type", testserver.MustJSON(t, testserver.ValidRequest()), "", 415, "unsupported_media_type"},
		{"latin1 charset", testserver.MustJSON(t, testserver.ValidRequest()), "application/json; charset=iso-8859-1", 415, "unsupported_media_type"},
		{"too large", append(append([]byte(`{"description":"`), bytes.Repeat([]byte("a"), 70<<10)...), `"}`...), "application/json", 413, "body_too_large"},
	} {
		t.Run(c.name, func(t *testing.T) {
			resp, body := post(c.body, c.ct)
			if resp.StatusCode != c.status || body["code"] != c.code {
				t.Fatalf("want %d %s, got %d %v", c.status, c.code, resp.StatusCode, body)
			}
		})
	}
	if resp, body := post(testserver.MustJSON(t, testserver.ValidRequest()), "application/json; charset=UTF-8"); resp.StatusCode != 201 {
		t.Errorf("charset=UTF-8 refused: %d %v", resp.StatusCode, body)
	}
	for _, c := range []struct{ method, path, allow string }{
		{"PUT", "/api/public/v1/help", "GET, HEAD, POST, OPTIONS"},
		{"PATCH", "/api/public/v1/help", "GET, HEAD, POST, OPTIONS"},
		{"DELETE", "/api/public/v1/help", "GET, HEAD, POST, OPTIONS"},
		{"POST", "/api/public/openapi.json", "GET, HEAD, OPTIONS"},
	} {
		resp, body := testserver.Call(t, s, c.method, c.path, nil)
		if resp.StatusCode != 405 || resp.Header.Get("Allow") != c.allow || body["code"] != "method_not_allowed" {
			t.Errorf("%s %s: %d %v %v", c.method, c.path, resp.StatusCode, resp.Header, body)
		}
	}
	for _, path := range []string{"/api/public/v1/help", "/api/public/openapi.json"} {
		if resp, _ := testserver.Call(t, s, "HEAD", path, nil); resp.StatusCode != 200 || resp.Header.Get("ETag") == "" {
			t.Errorf("HEAD %s: %d %v", path, resp.StatusCode, resp.Header)
		}
	}
}

func TestEmergencySelection(t *testing.T) {
	one := newContractServer(t, backend.Emergency{Slug: "eje-cafetero", Title: "Terremoto en el Eje Cafetero", OccurredOn: "2026-08-11"},
		backend.Emergency{Slug: "sequia-guajira", Title: "Sequía en La Guajira", Inactive: true}).Server
	resp, body := testserver.Publish(t, one, testserver.With(testserver.ValidRequest(), "emergencySlug", nil))
	if resp.StatusCode != 201 || body["emergencySlug"] != "eje-cafetero" {
		t.Fatalf("one active, no slug: %d %v", resp.StatusCode, body)
	}
	resp, body = testserver.Publish(t, one, testserver.With(testserver.ValidRequest(), "emergencySlug", "sequia-guajira"))
	if resp.StatusCode != 400 || body["code"] != "unknown_emergency" {
		t.Fatalf("inactive slug: %d %v", resp.StatusCode, body)
	}
	_, disc := testserver.Call(t, one, "GET", "/api/public/v1/help", nil)
	if es := disc["emergencies"].([]any); len(es) != 1 || es[0].(map[string]any)["slug"] != "eje-cafetero" {
		t.Errorf("discovery lists inactive emergencies: %v", es)
	}

	two := newContractServer(t).Server
	resp, body = testserver.Publish(t, two, testserver.With(testserver.ValidRequest(), "emergencySlug", nil))
	if resp.StatusCode != 400 || body["code"] != "emergency_required" {
		t.Fatalf("two active, no slug: %d %v", resp.StatusCode, body)
	}
	d := body["details"].([]any)[0].(map[string]any)
	if fmt.Sprint(d["allowed"]) != "[eje-cafetero inundaciones-la-mojana]" {
		t.Errorf("details should list the active slugs: %v", d)
	}
	resp, body = testserver.Publish(t, two, testserver.With(testserver.ValidRequest(), "emergencySlug", "inundaciones-la-mojana"))
	if resp.StatusCode != 201 || body["emergencySlug"] != "inundaciones-la-mojana" {
		t.Fatalf("explicit slug: %d %v", resp.StatusCode, body)
	}

	none := newContractServer(t, backend.Emergency{Slug: "pasada", Title: "Pasada", Inactive: true}).Server
	resp, body = testserver.Publish(t, none, testserver.With(testserver.ValidRequest(), "emergencySlug", nil))
	if resp.StatusCode != 400 || body["code"] != "no_active_emergency" {
		t.Fatalf("none active: %d %v", resp.StatusCode, body)
	}
}
