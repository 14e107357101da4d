package backend_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/directaid/directaid/backend"
	"github.com/directaid/directaid/backend/httpapi"
	"github.com/directaid/directaid/backend/mcpserver"
	"github.com/directaid/directaid/internal/testserver"
	"github.com/directaid/directaid/schema"
)

// A publication placed far outside its emergency's area is published with a warning (201 and dry run);
// one inside it, or near it, or in an emergency without an area, gets none.
func TestFarFromEmergencyWarns(t *testing.T) {
	st := testserver.Badger(t)
	svc := backend.NewService(st, backend.Config{Emergencies: []backend.Emergency{
		{Slug: "eje-cafetero", Title: "Terremoto en el Eje Cafetero", Area: []string{"63", "66", "17"}},
		{Slug: "la-mojana", Title: "Inundaciones"},
	}})
	h, err := httpapi.NewHandler(svc, httpapi.Options{MCP: mcpserver.New(svc)})
	if err != nil {
		t.Fatal(err)
	}
	publish := func(n int, slug, place, query string) (int, map[string]any) {
		body := fmt.Sprintf(`{"type":"request","source":"t","externalId":"x%d","emergencySlug":%q,"title":"Insulina","category":"salud",
			"contactName":"María","contactWhatsapp":"3001234567","publishContact":true,"address":"Calle 1","placeCode":%q}`, n, slug, place)
		r := httptest.NewRequest(http.MethodPost, "http://ayuda.test"+schema.HelpPath+query, strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		var m map[string]any
		_ = json.Unmarshal(w.Body.Bytes(), &m)
		return w.Code, m
	}
	for i, tc := range []struct {
		slug, place, query string
		status             int
		warn               bool
	}{
		{"eje-cafetero", "05059", "", http.StatusCreated, true},        // Armenia (Antioquia), ~180 km away
		{"eje-cafetero", "05059", "?dryRun=true", http.StatusOK, true}, // the dry run says it too
		{"eje-cafetero", "63001", "", http.StatusCreated, false},       // Armenia (Quindío)
		{"eje-cafetero", "76001", "", http.StatusCreated, true},        // Cali: ~170 km from the nearest
		{"eje-cafetero", "76147", "", http.StatusCreated, false},       // Cartago (Valle): outside, but beside Pereira
		{"la-mojana", "05059", "", http.StatusCreated, false},          // no area: no warning
	} {
		status, m := publish(i, tc.slug, tc.place, tc.query)
		ws, _ := m["warnings"].([]any)
		if status != tc.status || (len(ws) > 0) != tc.warn {
			t.Errorf("%s in %s%s: %d warnings %v, want %d warn %v", tc.place, tc.slug, tc.query, status, m["warnings"], tc.status, tc.warn)
			continue
		}
		if tc.warn {
			w := ws[0].(map[string]any)
			if w["code"] != schema.CodeFarFromEmergency || w["field"] != "/placeCode" || !strings.Contains(w["message"].(string), "Terremoto en el Eje Cafetero") {
				t.Errorf("warning %v", w)
			}
			// It says what became of the publication: a dry run stored nothing.
			if said, dry := strings.Contains(w["message"].(string), "Se publicó de todos modos"), tc.query != ""; said == dry {
				t.Errorf("%s%s: warning %q", tc.place, tc.query, w["message"])
			}
		}
	}
}

// TestPlaceFarFromPointWarns: a placeCode and typed coordinates that disagree by more than farKm give a
// warning on /placeCode (the point stays the coordinates'); close ones, or a placeCode alone, none.
func TestPlaceFarFromPointWarns(t *testing.T) {
	st := testserver.Badger(t)
	svc := backend.NewService(st, backend.Config{Emergencies: []backend.Emergency{{Slug: "eje-cafetero", Title: "Terremoto en el Eje Cafetero"}}})
	h, err := httpapi.NewHandler(svc, httpapi.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i, tc := range []struct {
		where string
		warn  bool
	}{
		{`"placeCode":"63001","latitude":12.5,"longitude":-71.7`, true},       // Armenia and La Guajira: ~900 km
		{`"placeCode":"63001","latitude":4.5339,"longitude":-75.6811`, false}, // Armenia and its own point
		{`"placeCode":"63001"`, false},                                        // the place's point
		{`"latitude":12.5,"longitude":-71.7`, false},                          // coordinates alone
	} {
		body := fmt.Sprintf(`{"type":"request","source":"t","externalId":"p%d","title":"Insulina","category":"salud",
			"contactName":"María","contactWhatsapp":"3001234567","publishContact":true,"address":"Calle 1",%s}`, i, tc.where)
		r := httptest.NewRequest(http.MethodPost, "http://ayuda.test"+schema.HelpPath, strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		var m struct {
			Warnings []schema.Warning `json:"warnings"`
		}
		_ = json.Unmarshal(w.Body.Bytes(), &m)
		got := slices.ContainsFunc(m.Warnings, func(w schema.Warning) bool {
			return w.Code == schema.CodePlaceFarFromPoint && w.Field == "/placeCode" && strings.Contains(w.Message, "Armenia")
		})
		if w.Code != http.StatusCreated || got != tc.warn {
			t.Errorf("%s: %d %s, want 201 and the warning %v", tc.where, w.Code, w.Body, tc.warn)
		}
	}
}

// A point outside Colombia, farther than places.MaxMunicipioKm from every listed place, is in no
// municipio: published with its coordinates and no municipio (not in any town's list), and the warning
// says the point is in none and asks to check the coordinates.
func TestPointAbroadHasNoMunicipio(t *testing.T) {
	s := newContractServer(t, backend.Emergency{Slug: "eje-cafetero", Title: "Terremoto en el Eje Cafetero", Area: []string{"63", "66", "17"}})
	body := `{"type":"request","source":"t","externalId":"caracas","emergencySlug":"eje-cafetero","title":"Insulina","category":"salud",
		"contactName":"María","contactWhatsapp":"3001234567","publishContact":true,"address":"Calle 1","latitude":10.5,"longitude":-66.9}`
	resp, m := s.publish(body)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("publish: %d %v", resp.StatusCode, m)
	}
	ws, _ := m["warnings"].([]any)
	if len(ws) != 1 || !strings.Contains(ws[0].(map[string]any)["message"].(string), "no está en ningún municipio de Colombia") ||
		!strings.Contains(ws[0].(map[string]any)["message"].(string), "revise la latitud y la longitud") {
		t.Fatalf("warnings: %v", m["warnings"])
	}
	_, _, d := s.call("GET", schema.HelpPath+"?view=detail&id="+m["id"].(string), nil)
	loc, _ := d["location"].(map[string]any)
	if loc == nil || loc["municipio"] != nil || loc["municipioCode"] != nil || loc["latitude"] != 10.5 {
		t.Fatalf("location of a point abroad: %v", d["location"])
	}
}

// The MCP tools say the warnings in their text too, which is all some clients show a model.
func TestMCPPublishSaysItsWarnings(t *testing.T) {
	st := testserver.Badger(t)
	svc := backend.NewService(st, backend.Config{Emergencies: []backend.Emergency{
		{Slug: "eje-cafetero", Title: "Terremoto en el Eje Cafetero", Area: []string{"63", "66", "17"}},
	}})
	h, err := httpapi.NewHandler(svc, httpapi.Options{MCP: mcpserver.New(svc)})
	if err != nil {
		t.Fatal(err)
	}
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"publicar_solicitud","arguments":{"source":"t","externalId":"far",
		"emergencySlug":"eje-cafetero","title":"Insulina","category":"salud","contactName":"María","contactWhatsapp":"3001234567",
		"publishContact":true,"address":"Calle 1","placeCode":"05059"}}}`
	code, out := testserver.Record(h, "POST", schema.MCPPath, []byte(body), testserver.MCPHeaders("2025-06-18", body)...)
	if code != http.StatusOK || !strings.Contains(out, "Aviso para la persona: Armenia (Antioquia) está a unos") {
		t.Fatalf("%d %s", code, out)
	}
}
