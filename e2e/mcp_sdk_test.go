package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/directaid/directaid/backend"
	"github.com/directaid/directaid/internal/testserver"
	"github.com/directaid/directaid/schema"
)

// openAPIChecked checks every HTTP exchange of a client we did not write against the served OpenAPI document.
type openAPIChecked struct{ s *testserver.Server }

func (c openAPIChecked) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	c.s.CheckOpenAPI(req, resp, body)
	resp.Body = io.NopCloser(bytes.NewReader(body))
	return resp, nil
}

// sdkSession connects the official Go SDK client over Streamable HTTP; version "" is the SDK's default
// (2026-07-28 through server/discover).
func sdkSession(t *testing.T, s *testserver.Server, version string) *sdk.ClientSession {
	t.Helper()
	client := sdk.NewClient(&sdk.Implementation{Name: "directaid-e2e", Version: "1.0.0"}, nil)
	transport := &sdk.StreamableClientTransport{Endpoint: s.URL + "/mcp", HTTPClient: &http.Client{Transport: openAPIChecked{s}}}
	cs, err := client.Connect(context.Background(), transport, &sdk.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("connect (%q): %v", version, err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// roundTrip re-reads v as another type through JSON.
func roundTrip[T any](t *testing.T, v any) T {
	t.Helper()
	var out T
	if err := json.Unmarshal(mustJSON(t, v), &out); err != nil {
		t.Fatalf("%v: %v", err, v)
	}
	return out
}

func callTool(t *testing.T, cs *sdk.ClientSession, name string, args map[string]any) *sdk.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return res
}

func published(t *testing.T, res *sdk.CallToolResult) schema.PublishResult {
	t.Helper()
	if res.IsError {
		t.Fatalf("tool error: %s", toolText(res))
	}
	return roundTrip[schema.PublishResult](t, res.StructuredContent)
}

func toolText(res *sdk.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			b.WriteString(tc.Text + "\n")
		}
	}
	return b.String()
}

// toolError checks an isError result whose text names every wanted field and phrase.
func toolError(t *testing.T, res *sdk.CallToolResult, want ...string) {
	t.Helper()
	text := toolText(res)
	if !res.IsError {
		t.Fatalf("want isError, got %s", text)
	}
	for _, w := range want {
		if !strings.Contains(text, w) {
			t.Errorf("error text lacks %q:\n%s", w, text)
		}
	}
}

func TestMCPGoSDK(t *testing.T) {
	s := testserver.Start(t, testserver.Options{})
	for _, version := range []string{"", "2025-11-25", "2025-06-18", "2025-03-26"} {
		t.Run("protocol "+version, func(t *testing.T) {
			cs := sdkSession(t, s, version)
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
			for _, name := range []string{backend.ToolListEmergencies, backend.ToolPublishRequest, backend.ToolPublishOffer} {
				if byName[name] == nil {
					t.Fatalf("tools/list lacks %s", name)
				}
			}
			for name, typ := range map[string]string{backend.ToolPublishRequest: schema.TypeRequest, backend.ToolPublishOffer: schema.TypeOffer} {
				tool := byName[name]
				want := roundTrip[any](t, json.RawMessage(schema.ToolInputSchema(typ)))
				if got := roundTrip[any](t, tool.InputSchema); !reflect.DeepEqual(got, want) {
					t.Errorf("%s input schema differs from the API's:\n got %s\nwant %s", name, mustJSON(t, got), mustJSON(t, want))
				}
				if want := roundTrip[any](t, schema.JSONSchema("PublishResult")); !reflect.DeepEqual(roundTrip[any](t, tool.OutputSchema), want) {
					t.Errorf("%s output schema is not PublishResult's", name)
				}
				a := tool.Annotations
				if tool.Title == "" || a == nil || a.Title == "" || !a.IdempotentHint || a.ReadOnlyHint || a.DestructiveHint == nil || *a.DestructiveHint {
					t.Errorf("%s: title %q, annotations %+v", name, tool.Title, a)
				}
			}
			if a := byName[backend.ToolListEmergencies].Annotations; a == nil || !a.ReadOnlyHint {
				t.Errorf("listar_emergencias must be read-only: %+v", a)
			}

			list := callTool(t, cs, backend.ToolListEmergencies, nil)
			if em := roundTrip[backend.EmergencyList](t, list.StructuredContent); len(em.Emergencies) != 2 || em.Emergencies[0].Slug != "eje-cafetero" {
				t.Errorf("listar_emergencias: %+v", em)
			}

			req := mcpArgs(validRequest())
			first := published(t, callTool(t, cs, backend.ToolPublishRequest, req))
			if !first.OK || first.Duplicate || first.Type != "request" || first.ID == "" || !strings.HasSuffix(first.PublicURL, "/ayudas/"+first.ID) {
				t.Errorf("publish request: %+v", first)
			}
			retry := published(t, callTool(t, cs, backend.ToolPublishRequest, req))
			if !retry.Duplicate || retry.ID != first.ID || retry.ContentMatches == nil || !*retry.ContentMatches {
				t.Errorf("retry: %+v, first %+v", retry, first)
			}
			if offer := published(t, callTool(t, cs, backend.ToolPublishOffer, mcpArgs(validOffer()))); offer.Type != "offer" || offer.Duplicate {
				t.Errorf("publish offer: %+v", offer)
			}

			toolError(t, callTool(t, cs, backend.ToolPublishRequest, with(mcpArgs(validRequest()), "latitude", 40.7)),
				"latitude", "menor o igual que 13.6", "vuelva a llamar a publicar_solicitud")
			toolError(t, callTool(t, cs, backend.ToolPublishOffer, with(mcpArgs(validOffer()), "publishContact", false)),
				"publishContact", "pregunte a la persona", "publishContact: true")
			toolError(t, callTool(t, cs, backend.ToolPublishOffer, with(mcpArgs(validOffer()), "emergencySlug", nil)),
				"emergencySlug", "listar_emergencias", "eje-cafetero", "inundaciones-la-mojana")
			toolError(t, callTool(t, cs, backend.ToolPublishRequest, with(mcpArgs(validRequest()), "type", "offer")), "type")
		})
	}
}

// TestMCPSameRecordAsHTTP: the idempotency pair is one namespace whichever door a record came in by.
func TestMCPSameRecordAsHTTP(t *testing.T) {
	s := testserver.Start(t, testserver.Options{})
	cs := sdkSession(t, s, "")

	rec := validRequest()
	viaMCP := published(t, callTool(t, cs, backend.ToolPublishRequest, mcpArgs(rec)))
	resp, body := publish(t, s, rec)
	if resp.StatusCode != 200 || body["duplicate"] != true || body["id"] != viaMCP.ID || body["contentMatches"] != true {
		t.Errorf("POST help after MCP: %d %v (MCP id %s)", resp.StatusCode, body, viaMCP.ID)
	}

	off := validOffer()
	resp, body = publish(t, s, off)
	if resp.StatusCode != 201 {
		t.Fatalf("POST help: %d %v", resp.StatusCode, body)
	}
	again := published(t, callTool(t, cs, backend.ToolPublishOffer, mcpArgs(off)))
	if !again.Duplicate || again.ID != body["id"] {
		t.Errorf("MCP after POST help: %+v, HTTP id %v", again, body["id"])
	}
	// Same pair, other type: still that record, and the answer says the content differs.
	other := published(t, callTool(t, cs, backend.ToolPublishRequest, mcpArgs(with(validRequest(), "externalId", off["externalId"]))))
	if !other.Duplicate || other.ID != body["id"] || other.ContentMatches == nil || *other.ContentMatches {
		t.Errorf("same pair through the other tool: %+v", other)
	}
}

// TestMCPGoSDKRateLimited: over the publish limit the SDK gets a 429 for the publish call only, and its
// session stays usable.
func TestMCPGoSDKRateLimited(t *testing.T) {
	s := testserver.Start(t, testserver.Options{PublishEvents: 1, PublishWindow: "1m"})
	cs := sdkSession(t, s, "")
	published(t, callTool(t, cs, backend.ToolPublishOffer, mcpArgs(validOffer())))
	_, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: backend.ToolPublishOffer, Arguments: mcpArgs(validOffer())})
	if err == nil || !strings.Contains(err.Error(), "Too Many Requests") {
		t.Fatalf("second publication: %v", err)
	}
	callTool(t, cs, backend.ToolListEmergencies, nil)
	sdkSession(t, s, "2025-11-25") // connecting spends nothing either
}
