package mcpserver

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/directaid/directaid/backend"
	"github.com/directaid/directaid/backend/store"
	"github.com/directaid/directaid/backend/store/storetest"
	"github.com/directaid/directaid/internal/testserver"
	"github.com/directaid/directaid/schema"
)

// TestMCPMatches: buscar_coincidencias answers what GET help/{id}/matches answers, and refuses bad
// arguments, unknown and withdrawn records with messages a model can act on.
func TestMCPMatches(t *testing.T) {
	s := testserver.Badger(t)
	ctx := context.Background()
	req, _, err := s.Create(ctx, storetest.Record("mcp", "req"))
	if err != nil {
		t.Fatal(err)
	}
	o := storetest.Record("mcp", "off")
	lat := *o.Latitude + 0.02
	o.Type, o.Needs, o.Latitude, o.Title = schema.TypeOffer, schema.Needs{}, &lat, "Mercados para familias"
	off, _, err := s.Create(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	svc := backend.NewService(s, backend.Config{Emergencies: []backend.Emergency{{Slug: "eje-cafetero", Title: "Terremoto"}}})

	res := callReadTool(t, svc, schema.ToolMatches, `{"id":"`+strings.ToUpper(req.ID)+`","radiusKm":5,"limit":3}`)
	text := resultText(res)
	if res.IsError || !strings.Contains(text, "["+off.ID+"] Mercados para familias, a 2.2 km") || strings.Contains(text, "3001234567") {
		t.Fatalf("buscar_coincidencias: %s", text)
	}
	var m schema.HelpMatches
	b, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(b, &m); err != nil || m.Type != schema.TypeOffer || m.Limit != 3 || *m.RadiusKm != 5 || len(m.Items) != 1 || m.Items[0].ID != off.ID {
		t.Fatalf("structured: %s", b)
	}
	if res := callReadTool(t, svc, schema.ToolMatches, `{"id":"`+off.ID+`"}`); res.IsError || !strings.Contains(resultText(res), "1 solicitudes vigentes de alimentos a menos de 25 km") {
		t.Errorf("an offer's matches: %s", resultText(res))
	}
	if _, err := s.Update(ctx, off.ID, func(r *store.Record) error { r.Status = store.StatusWithdrawn; return nil }); err != nil {
		t.Fatal(err)
	}
	for args, want := range map[string]string{
		`{}`:                                     "«id» es obligatorio",
		`{"id":"` + req.ID + `","limit":21}`:     "/limit",
		`{"id":"` + req.ID + `","radiusKm":101}`: "/radiusKm",
		`{"id":"` + req.ID + `","radius":5}`:     "no existe",
		`{"id":"0000000000000000"}`:              "No existe ningún registro",
		`{"id":"` + off.ID + `"}`:                "fue retirada",
	} {
		if res := callReadTool(t, svc, schema.ToolMatches, args); !res.IsError || !strings.Contains(resultText(res), want) {
			t.Errorf("%s: %s", args, resultText(res))
		}
	}
}
