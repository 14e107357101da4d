package testserver

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/directaid/directaid/schema"
)

// Publications and calls shared by the contract tests, in process (backend) and through the binary (e2e).

var seq atomic.Int64

// ValidRequest is a request that passes every rule; tests change one thing at a time.
func ValidRequest() map[string]any {
	return map[string]any{
		"type": "request", "source": "e2e", "externalId": fmt.Sprintf("req-%d", seq.Add(1)),
		"emergencySlug": "eje-cafetero", "title": "Agua potable para 12 familias", "description": "Sin agua desde el sismo.",
		"category": "alimentos", "contactName": "Ana Gómez", "contactWhatsapp": "+57 300 123 4567", "publishContact": true,
		"address": "Cra 14 # 20-31", "neighborhood": "Centro", "latitude": 4.5339, "longitude": -75.6811,
		"urgency": "urgent", "neededPeople": 12,
	}
}

// ValidOffer is an offer that passes every rule.
func ValidOffer() map[string]any {
	return map[string]any{
		"type": "offer", "source": "e2e", "externalId": fmt.Sprintf("off-%d", seq.Add(1)),
		"emergencySlug": "eje-cafetero", "title": "Transporte en camioneta", "category": "transporte",
		"contactName": "Luis", "contactWhatsapp": "3109876543", "publishContact": true,
	}
}

// With is m with the name, value pairs kv set (a nil value deletes the name).
func With(m map[string]any, kv ...any) map[string]any {
	out := maps.Clone(m)
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] == nil {
			delete(out, kv[i].(string))
		} else {
			out[kv[i].(string)] = kv[i+1]
		}
	}
	return out
}

// MustJSON encodes v.
func MustJSON(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Call sends a request, checks the answer against the served OpenAPI document, and decodes a JSON body.
func Call(t testing.TB, s *Server, method, path string, body []byte, header ...string) (*http.Response, map[string]any) {
	t.Helper()
	req := s.NewRequest(method, path, body, header...)
	resp, raw := s.Do(method, path, body, header...)
	s.CheckOpenAPI(req, resp, raw)
	var out map[string]any
	if len(raw) > 0 && resp.Header.Get("Content-Type") == "application/json" {
		if err := json.Unmarshal(raw, &out); err != nil {
			t.Fatalf("%s %s: answer is not JSON: %v\n%s", method, path, err, raw)
		}
	}
	return resp, out
}

// Publish posts body as JSON to the help endpoint, through Call.
func Publish(t testing.TB, s *Server, body any) (*http.Response, map[string]any) {
	t.Helper()
	return Call(t, s, "POST", schema.HelpPath, MustJSON(t, body), "Content-Type", "application/json")
}

// ErrorFields lists the JSON pointers named in an error body's details.
func ErrorFields(body map[string]any) []string {
	var out []string
	ds, _ := body["details"].([]any)
	for _, d := range ds {
		if m, ok := d.(map[string]any); ok {
			out = append(out, fmt.Sprint(m["field"]))
		}
	}
	return out
}
