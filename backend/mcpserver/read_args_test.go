package mcpserver

import (
	"strings"
	"testing"
	"time"

	"github.com/directaid/directaid/backend"
	"github.com/directaid/directaid/backend/store/storetest"
	"github.com/directaid/directaid/internal/testserver"
	"github.com/directaid/directaid/schema"
)

// TestMCPReadToolsValidateLikeREST: the read tools refuse what their published input schema refuses,
// as GET help?view=list refuses limit=0 (issue 12): no silent default for limit 0, no empty enum taken
// as "any".
func TestMCPReadToolsValidateLikeREST(t *testing.T) {
	s := testserver.Badger(t)
	storetest.Seed(t, s, 5, time.Date(2026, 8, 11, 0, 0, 0, 0, time.UTC), time.Minute)
	svc := backend.NewService(s, backend.Config{Emergencies: []backend.Emergency{{Slug: "eje-cafetero", Title: "Terremoto"}}})
	for args, field := range map[string]string{
		`{"limit":0}`:                        "/limit",
		`{"limit":101}`:                      "/limit",
		`{"type":""}`:                        "/type",
		`{"type":"pedido"}`:                  "/type",
		`{"category":""}`:                    "/category",
		`{"urgency":" "}`:                    "/urgency",
		`{"latitude":"4.5","longitude":-75}`: "/latitude",
		`{"radiusKm":0,"latitude":4.5,"longitude":-75}`: "/radiusKm",
	} {
		res := callReadTool(t, svc, schema.ToolSearchHelp, args)
		if text := resultText(res); !res.IsError || !strings.Contains(text, "«"+strings.TrimPrefix(field, "/")+"»") {
			t.Errorf("buscar_ayudas %s: want an error naming %s, got %v", args, field, text)
		}
	}
	if res := callReadTool(t, svc, schema.ToolViewHelp, `{"id":""}`); !res.IsError || !strings.Contains(resultText(res), "«id»") {
		t.Errorf(`ver_ayuda {"id":""}: %v`, resultText(res))
	}
	// What the schema allows still works: no limit means the default, an empty text is no filter.
	for _, args := range []string{`{}`, `{"limit":1}`, `{"q":""}`, `{"emergencySlug":"eje-cafetero","type":"request"}`} {
		if res := callReadTool(t, svc, schema.ToolSearchHelp, args); res.IsError {
			t.Errorf("buscar_ayudas %s: %v", args, resultText(res))
		}
	}
}
