package e2e

import (
	"context"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/directaid/directaid/backend/mcpserver"
	"github.com/directaid/directaid/internal/testserver"
	"github.com/directaid/directaid/schema"
)

// roundTrip re-reads v as another type through JSON.
func roundTrip[T any](t *testing.T, v any) T {
	t.Helper()
	var out T
	if err := json.Unmarshal(mustJSON(t, v), &out); err != nil {
		t.Fatalf("%v: %v", err, v)
	}
	return out
}

func published(t *testing.T, res *sdk.CallToolResult) schema.PublishResult {
	t.Helper()
	if res.IsError {
		t.Fatalf("tool error: %s", toolText(res))
	}
	return roundTrip[schema.PublishResult](t, res.StructuredContent)
}

// structuredAsText checks what the MCP specification asks of a tool returning structured content: its
// first text block is that content serialized as JSON; a human summary may follow (issue 12 item 10).
func structuredAsText(t *testing.T, name string, res *sdk.CallToolResult) {
	t.Helper()
	if res.IsError || len(res.Content) < 2 {
		t.Fatalf("%s: %d content blocks, want the JSON then the summary: %s", name, len(res.Content), toolText(res))
	}
	first, ok := res.Content[0].(*sdk.TextContent)
	var got any
	if !ok || json.Unmarshal([]byte(first.Text), &got) != nil || !reflect.DeepEqual(got, roundTrip[any](t, res.StructuredContent)) {
		t.Errorf("%s: first text block is not structuredContent as JSON:\n%v\nstructuredContent: %v", name, res.Content[0], res.StructuredContent)
	}
	if second, ok := res.Content[1].(*sdk.TextContent); !ok || strings.TrimSpace(second.Text) == "" {
		t.Errorf("%s: second block is not the summary: %v", name, res.Content[1])
	}
}

// toolError checks an isError result whose text names every wanted field and phrase.
// servedSchemas are the component schemas of the OpenAPI document the server serves, freshly decoded.
func servedSchemas(t *testing.T, s *testserver.Server) map[string]any {
	t.Helper()
	_, doc := call(t, s, "GET", "/api/public/openapi.json", nil)
	return doc["components"].(map[string]any)["schemas"].(map[string]any)
}

func TestMCPGoSDK(t *testing.T) {
	t.Parallel()
	s := testserver.Start(t, testserver.Options{})
	for _, version := range []string{"", "2025-11-25", "2025-06-18", "2025-03-26"} {
		t.Run("protocol "+version, func(t *testing.T) {
			cs := sdkSession(t, s, version)
			served := servedSchemas(t, s)
			if version != "" && cs.InitializeResult().ProtocolVersion != version {
				t.Errorf("negotiated %s", cs.InitializeResult().ProtocolVersion)
			}
			tools, err := cs.ListTools(context.Background(), nil)
			if err != nil {
				t.Fatal(err)
			}
			byName := map[string]*sdk.Tool{}
			for _, tool := range tools.Tools {
				byName[tool.Name] = tool
			}
			for _, name := range []string{schema.ToolListEmergencies, schema.ToolPublishRequest, schema.ToolPublishOffer} {
				if byName[name] == nil {
					t.Fatalf("tools/list lacks %s", name)
				}
			}
			for name, component := range map[string]string{schema.ToolPublishRequest: "HelpRequest", schema.ToolPublishOffer: "HelpOffer"} {
				tool := byName[name]
				// The API's body as the served OpenAPI document describes it, less the `type` the tool sets.
				want := served[component].(map[string]any)
				delete(want["properties"].(map[string]any), "type")
				want["required"] = slices.DeleteFunc(want["required"].([]any), func(r any) bool { return r == "type" })
				// …plus the tools' own switch, dryRun, and without the location rules at its top (anyOf,
				// dependentRequired), which models' tool APIs refuse: the fields' descriptions say them.
				want["properties"].(map[string]any)["dryRun"] = map[string]any{"type": "boolean", "description": schema.DryRunDescription}
				if want["dependentRequired"] == nil {
					t.Errorf("the served %s lacks its location rules", component)
				}
				delete(want, "anyOf")
				delete(want, "dependentRequired")
				if got := roundTrip[map[string]any](t, tool.InputSchema); !reflect.DeepEqual(got, want) {
					t.Errorf("%s input schema differs from the API's:\n got %s\nwant %s", name, mustJSON(t, got), mustJSON(t, want))
				}
				if want := map[string]any{"type": "object", "oneOf": []any{served["PublishResult"], served["DryRunResult"]}}; !reflect.DeepEqual(roundTrip[any](t, tool.OutputSchema), want) {
					t.Errorf("%s output schema is not PublishResult's or DryRunResult's", name)
				}
				a := tool.Annotations
				if tool.Title == "" || a == nil || a.Title == "" || !a.IdempotentHint || a.ReadOnlyHint || a.DestructiveHint == nil || *a.DestructiveHint {
					t.Errorf("%s: title %q, annotations %+v", name, tool.Title, a)
				}
			}
			// Each call of responder_solicitud is one more response: a client must not retry it as idempotent.
			if tool := byName[schema.ToolRespond]; tool == nil || tool.Annotations == nil || tool.Annotations.IdempotentHint {
				t.Errorf("%s must not be marked idempotent: %+v", schema.ToolRespond, tool)
			}
			for _, name := range []string{schema.ToolListEmergencies, schema.ToolSearchHelp, schema.ToolViewHelp, schema.ToolPanorama} {
				if tool := byName[name]; tool == nil || tool.Annotations == nil || !tool.Annotations.ReadOnlyHint || tool.Title == "" {
					t.Errorf("%s must be listed, titled and read-only: %+v", name, tool)
				}
			}
			for name, component := range map[string]string{schema.ToolSearchHelp: "HelpList", schema.ToolViewHelp: "PublicHelpDetail", schema.ToolPanorama: "Panorama"} {
				if !reflect.DeepEqual(roundTrip[any](t, byName[name].OutputSchema), served[component]) {
					t.Errorf("%s output schema is not %s's", name, component)
				}
			}
			if got := roundTrip[any](t, byName[schema.ToolSearchHelp].InputSchema); !reflect.DeepEqual(got, served["ListQuery"]) {
				t.Errorf("buscar_ayudas input schema is not ListQuery's:\n got %s\nwant %s", mustJSON(t, got), mustJSON(t, served["ListQuery"]))
			}

			toolError(t, callTool(t, cs, schema.ToolListEmergencies, map[string]any{"foo": 1}), `"foo" no existe`)
			list := callTool(t, cs, schema.ToolListEmergencies, nil)
			if em := roundTrip[mcpserver.EmergencyList](t, list.StructuredContent); len(em.Emergencies) != 2 || em.Emergencies[0].Slug != "eje-cafetero" {
				t.Errorf("listar_emergencias: %+v", em)
			}

			req := mcpArgs(validRequest())
			first := published(t, callTool(t, cs, schema.ToolPublishRequest, req))
			if !first.OK || first.Duplicate || first.Type != "request" || first.ID == "" || !strings.HasSuffix(first.PublicURL, "/ayudas/"+first.ID) {
				t.Errorf("publish request: %+v", first)
			}
			retry := published(t, callTool(t, cs, schema.ToolPublishRequest, req))
			if !retry.Duplicate || retry.ID != first.ID || retry.ContentMatches == nil || !*retry.ContentMatches {
				t.Errorf("retry: %+v, first %+v", retry, first)
			}
			if offer := published(t, callTool(t, cs, schema.ToolPublishOffer, mcpArgs(validOffer()))); offer.Type != "offer" || offer.Duplicate {
				t.Errorf("publish offer: %+v", offer)
			}

			toolError(t, callTool(t, cs, schema.ToolPublishRequest, with(mcpArgs(validRequest()), "latitude", 40.7)),
				"latitude", "menor o igual que 13.6", "vuelva a llamar a publicar_solicitud")
			toolError(t, callTool(t, cs, schema.ToolPublishOffer, with(mcpArgs(validOffer()), "publishContact", false)),
				"publishContact", "pregunte a la persona", "publishContact: true")
			toolError(t, callTool(t, cs, schema.ToolPublishOffer, with(mcpArgs(validOffer()), "emergencySlug", nil)),
				"emergencySlug", "listar_emergencias", "eje-cafetero", "inundaciones-la-mojana")
			toolError(t, callTool(t, cs, schema.ToolPublishRequest, with(mcpArgs(validRequest()), "type", "offer")), "type")
			// An unknown place is the data's fault: ask the person, never "retry the same call".
			unknown := with(mcpArgs(validRequest()), "latitude", nil, "longitude", nil, "placeCode", "99999")
			res := callTool(t, cs, schema.ToolPublishRequest, unknown)
			toolError(t, res, "placeCode", "pregunte a la persona", schema.PlacesPath, "no reintente el mismo código")
			if text := toolText(res); strings.Contains(text, "error temporal") {
				t.Errorf("an unknown placeCode is called a temporary error:\n%s", text)
			}
		})
	}
}

// TestMCPSameRecordAsHTTP: the idempotency pair is one namespace whichever door a record came in by.
func TestMCPSameRecordAsHTTP(t *testing.T) {
	t.Parallel()
	s := testserver.Start(t, testserver.Options{})
	cs := sdkSession(t, s, "")

	rec := validRequest()
	viaMCP := published(t, callTool(t, cs, schema.ToolPublishRequest, mcpArgs(rec)))
	resp, body := publish(t, s, rec)
	if resp.StatusCode != 200 || body["duplicate"] != true || body["id"] != viaMCP.ID || body["contentMatches"] != true {
		t.Errorf("POST help after MCP: %d %v (MCP id %s)", resp.StatusCode, body, viaMCP.ID)
	}

	off := validOffer()
	resp, body = publish(t, s, off)
	if resp.StatusCode != 201 {
		t.Fatalf("POST help: %d %v", resp.StatusCode, body)
	}
	again := published(t, callTool(t, cs, schema.ToolPublishOffer, mcpArgs(off)))
	if !again.Duplicate || again.ID != body["id"] {
		t.Errorf("MCP after POST help: %+v, HTTP id %v", again, body["id"])
	}
	// Same pair, other type: still that record, and the answer says the content differs.
	otherRes := callTool(t, cs, schema.ToolPublishRequest, mcpArgs(with(validRequest(), "externalId", off["externalId"])))
	if text := toolText(otherRes); !strings.HasPrefix(text, "El ofrecimiento ya estaba publicado") {
		t.Errorf("the stored record is an offer: %s", text)
	}
	other := published(t, otherRes)
	if !other.Duplicate || other.ID != body["id"] || other.ContentMatches == nil || *other.ContentMatches {
		t.Errorf("same pair through the other tool: %+v", other)
	}
}

// TestMCPGoSDKRateLimited: over the publish limit the SDK gets a 429 for the publish call only, and its
// session stays usable.
func TestMCPGoSDKRateLimited(t *testing.T) {
	t.Parallel()
	s := testserver.Start(t, testserver.Options{PublishEvents: 1, PublishWindow: "1m"})
	cs := sdkSession(t, s, "")
	published(t, callTool(t, cs, schema.ToolPublishOffer, mcpArgs(validOffer())))
	_, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: schema.ToolPublishOffer, Arguments: mcpArgs(validOffer())})
	if err == nil || !strings.Contains(err.Error(), "Too Many Requests") {
		t.Fatalf("second publication: %v", err)
	}
	callTool(t, cs, schema.ToolListEmergencies, nil)
	sdkSession(t, s, "2025-11-25") // connecting spends nothing either
}

// TestMCPGoSDKReadTools: the read tools answer what the HTTP read API answers, through the official client,
// and only ver_ayuda shows a phone number.
func TestMCPGoSDKReadTools(t *testing.T) {
	t.Parallel()
	s := testserver.Start(t, testserver.Options{})
	near := with(validRequest(), "title", "Médico para un herido", "category", "salud", "latitude", 4.5339, "longitude", -75.6811)
	far := with(validRequest(), "title", "Medico en Pereira", "category", "salud", "latitude", 4.8133, "longitude", -75.6961)
	var ids []string
	for _, rec := range []map[string]any{near, far, validOffer(), with(validRequest(), "emergencySlug", "inundaciones-la-mojana")} {
		resp, body := publish(t, s, rec)
		if resp.StatusCode != 201 {
			t.Fatalf("publish: %d %v", resp.StatusCode, body)
		}
		ids = append(ids, body["id"].(string))
	}
	cs := sdkSession(t, s, "")
	// A radius must be more than 0 km, and the refusal says so.
	toolError(t, callTool(t, cs, schema.ToolSearchHelp, map[string]any{"latitude": 4.5339, "longitude": -75.6811, "radiusKm": 0}), "radiusKm", "mayor que 0")

	// Each search answers the same items as GET help?view=list with the same filters.
	for _, c := range []struct {
		args  map[string]any
		query string
		want  []string
	}{
		{map[string]any{"emergencySlug": "eje-cafetero", "q": "MEDICO"}, "emergencySlug=eje-cafetero&q=MEDICO", []string{ids[1], ids[0]}},
		// Plural and feminine forms find the singular and the masculine («médicas heridas»: «Médico … herido»).
		{map[string]any{"q": "médicas heridas"}, "q=m%C3%A9dicas+heridas", []string{ids[0]}},
		{map[string]any{"latitude": 4.5339, "longitude": -75.6811, "radiusKm": 5, "type": "request"}, "latitude=4.5339&longitude=-75.6811&radiusKm=5&type=request", []string{ids[3], ids[0]}}, // equally near: newest first
		{map[string]any{"type": "offer"}, "type=offer", []string{ids[2]}},
	} {
		res := callTool(t, cs, schema.ToolSearchHelp, c.args)
		if res.IsError {
			t.Fatalf("buscar_ayudas %v: %s", c.args, toolText(res))
		}
		structuredAsText(t, schema.ToolSearchHelp, res)
		got := roundTrip[schema.HelpList](t, res.StructuredContent)
		_, api := call(t, s, "GET", "/api/public/v1/help?view=list&"+c.query, nil)
		apiList := roundTrip[schema.HelpList](t, api)
		var gotIDs, apiIDs []string
		for _, it := range got.Items {
			gotIDs = append(gotIDs, it.ID)
		}
		for _, it := range apiList.Items {
			apiIDs = append(apiIDs, it.ID)
		}
		if !slices.Equal(gotIDs, c.want) || !slices.Equal(apiIDs, c.want) {
			t.Errorf("%v: MCP %v, API %v, want %v", c.args, gotIDs, apiIDs, c.want)
		}
		if raw := string(mustJSON(t, res.StructuredContent)) + toolText(res); strings.Contains(raw, "3001234567") || strings.Contains(raw, "wa.me") {
			t.Errorf("buscar_ayudas shows a phone number: %s", raw)
		}
	}
	// attended as the API's strings, and as the booleans an agent naturally sends: the same answer.
	for _, v := range []any{"false", false} {
		res := callTool(t, cs, schema.ToolSearchHelp, map[string]any{"emergencySlug": "eje-cafetero", "attended": v})
		if got := roundTrip[schema.HelpList](t, res.StructuredContent); res.IsError || len(got.Items) != 3 || got.Filters.Attended != "false" {
			t.Errorf("buscar_ayudas attended %#v: %s", v, toolText(res))
		}
	}
	toolError(t, callTool(t, cs, schema.ToolSearchHelp, map[string]any{"attended": 1}), "attended")
	toolError(t, callTool(t, cs, schema.ToolSearchHelp, map[string]any{"latitude": 4.5}), "longitude")
	toolError(t, callTool(t, cs, schema.ToolSearchHelp, map[string]any{"category": "comida"}), "category")

	res := callTool(t, cs, schema.ToolViewHelp, map[string]any{"id": ids[0]})
	_, api := call(t, s, "GET", "/api/public/v1/help?view=detail&id="+ids[0], nil)
	if res.IsError || !reflect.DeepEqual(roundTrip[map[string]any](t, res.StructuredContent), api) || !strings.Contains(toolText(res), "https://wa.me/573001234567") {
		t.Errorf("ver_ayuda: %s\n%v\nAPI: %v", toolText(res), res.StructuredContent, api)
	}
	structuredAsText(t, schema.ToolViewHelp, res)
	toolError(t, callTool(t, cs, schema.ToolViewHelp, map[string]any{"id": "0000000000000000"}), "0000000000000000")

	res = callTool(t, cs, schema.ToolPanorama, map[string]any{"emergencySlug": "eje-cafetero"})
	structuredAsText(t, schema.ToolPanorama, res)
	structuredAsText(t, schema.ToolListEmergencies, callTool(t, cs, schema.ToolListEmergencies, nil))
	p := roundTrip[schema.Panorama](t, res.StructuredContent)
	if res.IsError || len(p.Emergencies) != 1 || p.Emergencies[0].Requests != 2 || p.Emergencies[0].Offers != 1 {
		t.Errorf("consultar_panorama: %s %+v", toolText(res), p)
	}
}

// TestMCPContactLimit: ver_ayuda spends the budget of the reads that show a phone number (the detail
// zone), shared with view=detail and the record pages; searching and publishing do not.
func TestMCPContactLimit(t *testing.T) {
	t.Parallel()
	s := testserver.Start(t, testserver.Options{DetailEvents: 2})
	_, body := publish(t, s, validRequest())
	id := body["id"].(string)
	cs := sdkSession(t, s, "")
	for range 2 {
		if res := callTool(t, cs, schema.ToolViewHelp, map[string]any{"id": id}); res.IsError {
			t.Fatalf("ver_ayuda: %s", toolText(res))
		}
	}
	_, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: schema.ToolViewHelp, Arguments: map[string]any{"id": id}})
	if err == nil || !strings.Contains(err.Error(), "Too Many Requests") {
		t.Fatalf("third ver_ayuda: %v", err)
	}
	callTool(t, cs, schema.ToolSearchHelp, map[string]any{})
	published(t, callTool(t, cs, schema.ToolPublishOffer, mcpArgs(validOffer())))
	for _, path := range []string{"/api/public/v1/help?view=detail&id=" + id, "/ayudas/" + id, "/ayudas/" + id + ".md"} {
		resp, raw := s.Do("GET", path, nil)
		if resp.StatusCode != 429 || resp.Header.Get("Retry-After") == "" || !strings.Contains(string(raw), "teléfono") {
			t.Errorf("%s over the detail limit: %d %s", path, resp.StatusCode, raw)
		}
	}
}

// TestMCPToolsSpendTheirZones: reportar_publicacion spends the report budget and actualizar_publicacion
// the manage budget, each shared with its HTTP twin (…/reports, …/actions), not the publishing budget.
func TestMCPToolsSpendTheirZones(t *testing.T) {
	t.Parallel()
	s := testserver.Start(t, testserver.Options{PublishEvents: 3})
	_, body := publish(t, s, validRequest())
	id, token := body["id"].(string), body["manageToken"].(string)
	cs := sdkSession(t, s, "")
	for range 2 {
		if res := callTool(t, cs, schema.ToolReport, map[string]any{"id": id, "reason": "spam"}); res.IsError {
			t.Fatalf("reportar_publicacion: %s", toolText(res))
		}
		if res := callTool(t, cs, schema.ToolManage, map[string]any{"id": id, "manageToken": token, "action": "renew"}); res.IsError {
			t.Fatalf("actualizar_publicacion: %s", toolText(res))
		}
	}
	// The publishing budget (one spent by the API) is whole but for that one.
	published(t, callTool(t, cs, schema.ToolPublishOffer, mcpArgs(validOffer())))
	published(t, callTool(t, cs, schema.ToolPublishOffer, mcpArgs(validOffer())))
	// The third of each kind fits; the fourth, over either surface, does not.
	if resp, raw := s.Do("POST", "/api/public/v1/help/"+id+"/reports", []byte(`{"reason":"spam"}`), "Content-Type", "application/json"); resp.StatusCode != 202 {
		t.Fatalf("third report, over the API: %d %s", resp.StatusCode, raw)
	}
	if resp, raw := s.Do("POST", "/api/public/v1/help/"+id+"/actions", []byte(`{"action":"renew"}`), "Content-Type", "application/json", "Authorization", "Bearer "+token); resp.StatusCode != 200 {
		t.Fatalf("third action, over the API: %d %s", resp.StatusCode, raw)
	}
	for _, c := range []struct {
		tool string
		args map[string]any
	}{{schema.ToolReport, map[string]any{"id": id, "reason": "spam"}}, {schema.ToolManage, map[string]any{"id": id, "manageToken": token, "action": "renew"}}} {
		_, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: c.tool, Arguments: c.args})
		if err == nil || !strings.Contains(err.Error(), "Too Many Requests") {
			t.Fatalf("fourth %s: %v", c.tool, err)
		}
	}
}

// TestMCPGoSDKFindPlaceThenPublish: an agent whose person says «estoy en el caimo» and knows no coordinates
// finds the place's code with buscar_lugar, publishes with it, and finds the record by its municipio.
func TestMCPGoSDKFindPlaceThenPublish(t *testing.T) {
	t.Parallel()
	s := testserver.Start(t, testserver.Options{})
	cs := sdkSession(t, s, "")
	res := callTool(t, cs, schema.ToolFindPlace, map[string]any{"q": "el caimo", "emergencySlug": "eje-cafetero"})
	structuredAsText(t, schema.ToolFindPlace, res)
	found := roundTrip[schema.PlaceList](t, res.StructuredContent)
	if len(found.Places) == 0 || found.Places[0].PlaceCode != "63001001" || found.Places[0].Place != "El Caimo, Armenia (Quindío)" ||
		found.Places[0].MunicipioCode != "63001" || !found.Places[0].InArea || found.Places[0].Kind != "centroPoblado" {
		t.Fatalf("buscar_lugar «el caimo»: %+v", found.Places)
	}
	rec := with(mcpArgs(validRequest()), "latitude", nil, "longitude", nil, "placeCode", found.Places[0].PlaceCode)
	pub := published(t, callTool(t, cs, schema.ToolPublishRequest, rec))
	res = callTool(t, cs, schema.ToolSearchHelp, map[string]any{"municipio": found.Places[0].MunicipioCode})
	list := roundTrip[schema.HelpList](t, res.StructuredContent)
	if res.IsError || len(list.Items) != 1 || list.Items[0].ID != pub.ID || list.Items[0].Location == nil || list.Items[0].Location.PlaceCode != "63001001" {
		t.Fatalf("buscar_ayudas municipio=63001 after publishing at El Caimo: %s", toolText(res))
	}

	// A typo gets guesses, not places: the text asks to confirm them with the person.
	res = callTool(t, cs, schema.ToolFindPlace, map[string]any{"q": "armenai", "emergencySlug": "eje-cafetero"})
	structuredAsText(t, schema.ToolFindPlace, res)
	if found = roundTrip[schema.PlaceList](t, res.StructuredContent); len(found.Places) != 0 || len(found.Guesses) != 1 || found.Guesses[0].PlaceCode != "63001" ||
		!strings.Contains(toolText(res), "pregunte a la persona si quiso decir") {
		t.Errorf("buscar_lugar «armenai»: %+v %+v %s", found.Places, found.Guesses, toolText(res))
	}
	// Armenia of the Eje Cafetero first; with no emergency, both Armenias.
	res = callTool(t, cs, schema.ToolFindPlace, map[string]any{"q": "Armenia", "emergencySlug": "eje-cafetero"})
	if found = roundTrip[schema.PlaceList](t, res.StructuredContent); len(found.Places) < 2 || found.Places[0].PlaceCode != "63001" {
		t.Errorf("buscar_lugar «Armenia» in the Eje Cafetero: %+v", found.Places)
	}
	res = callTool(t, cs, schema.ToolFindPlace, map[string]any{"q": "Armenia"})
	if text := toolText(res); strings.Contains(text, "FUERA") {
		t.Errorf("buscar_lugar without an emergency marks places outside one: %s", text)
	}
	if found = roundTrip[schema.PlaceList](t, res.StructuredContent); len(found.Places) < 2 ||
		!slices.ContainsFunc(found.Places[:2], func(p schema.PlaceMatch) bool { return p.PlaceCode == "05059" }) ||
		!slices.ContainsFunc(found.Places[:2], func(p schema.PlaceMatch) bool { return p.PlaceCode == "63001" }) {
		t.Errorf("buscar_lugar «Armenia»: %+v", found.Places)
	}
	// The area's places before any other, whatever their rank: La Unión of the Eje Cafetero (a centro
	// poblado of Dosquebradas) before the municipios called La Unión elsewhere.
	res = callTool(t, cs, schema.ToolFindPlace, map[string]any{"q": "la union", "emergencySlug": "eje-cafetero"})
	if found = roundTrip[schema.PlaceList](t, res.StructuredContent); len(found.Places) == 0 || !found.Places[0].InArea {
		t.Errorf("buscar_lugar «la union» in the Eje Cafetero: %+v", found.Places)
	}
	// The places outside the area are said to be, and the text asks to confirm them with the person.
	if text := toolText(res); !strings.Contains(text, "(Nariño), FUERA de la zona de la emergencia") || !strings.Contains(text, "confirme con la persona") {
		t.Errorf("buscar_lugar «la union» in the Eje Cafetero does not mark the places outside its area: %s", text)
	}
	for i := 1; i < len(found.Places); i++ {
		if found.Places[i].InArea && !found.Places[i-1].InArea {
			t.Errorf("buscar_lugar «la union»: a place of the area after one outside it: %+v", found.Places)
		}
	}
	res = callTool(t, cs, schema.ToolFindPlace, map[string]any{"q": "pueblo tapao"})
	if found = roundTrip[schema.PlaceList](t, res.StructuredContent); len(found.Places) == 0 || found.Places[0].PlaceCode != "63470003" {
		t.Errorf("buscar_lugar «pueblo tapao»: %+v", found.Places)
	}
	res = callTool(t, cs, schema.ToolFindPlace, map[string]any{"q": "armenia quindio"})
	if found = roundTrip[schema.PlaceList](t, res.StructuredContent); len(found.Places) == 0 || found.Places[0].PlaceCode != "63001" || found.Places[0].InArea {
		t.Errorf("buscar_lugar «armenia quindio»: %+v", found.Places)
	}
	// Nothing found is an answer, not an error, and says what to ask.
	res = callTool(t, cs, schema.ToolFindPlace, map[string]any{"q": "Springfield"})
	if found = roundTrip[schema.PlaceList](t, res.StructuredContent); res.IsError || len(found.Places) != 0 || !strings.Contains(toolText(res), "municipio") {
		t.Errorf("buscar_lugar «Springfield»: %s", toolText(res))
	}
	toolError(t, callTool(t, cs, schema.ToolFindPlace, map[string]any{"q": "¿?"}), "/q", "lugar")
	toolError(t, callTool(t, cs, schema.ToolFindPlace, map[string]any{}), "q")
	toolError(t, callTool(t, cs, schema.ToolFindPlace, map[string]any{"q": "armenia", "emergencySlug": "otra"}), "/emergencySlug", "eje-cafetero")
	toolError(t, callTool(t, cs, schema.ToolFindPlace, map[string]any{"q": strings.Repeat("a", 101)}), "q")
}
