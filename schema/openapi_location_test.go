package schema

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// TestOpenAPILocationRules: the publish bodies' schemas in the OpenAPI document take a body's location as
// the server does — latitude and longitude together, locationPrecision only with them, a request with
// them or placeCode — so that a client validating against the document builds what the server takes:
// for each variant, the document's verdict is the decoder's.
func TestOpenAPILocationRules(t *testing.T) {
	_, c := openAPICompiler(t)
	for _, typ := range []string{TypeRequest, TypeOffer} {
		name := map[string]string{TypeRequest: "HelpRequest", TypeOffer: "HelpOffer"}[typ]
		sch, err := c.Compile("directaid:openapi#/components/schemas/" + name)
		if err != nil {
			t.Fatal(err)
		}
		var base map[string]any
		b, _ := json.Marshal(map[string]any{TypeRequest: exampleRequest(DefaultExampleEmergency), TypeOffer: exampleOffer(DefaultExampleEmergency)}[typ])
		if err := json.Unmarshal(b, &base); err != nil {
			t.Fatal(err)
		}
		delete(base, "latitude")
		delete(base, "longitude")
		for _, place := range []map[string]any{
			{},
			{"latitude": 4.5339, "longitude": -75.6811},
			{"latitude": 4.5339},
			{"longitude": -75.6811},
			{"placeCode": "63001"},
			{"placeCode": "63001", "latitude": 4.5339},
			{"placeCode": "63001", "latitude": 4.5339, "longitude": -75.6811},
			{"locationPrecision": "gps"},
			{"locationPrecision": "gps", "placeCode": "63001"},
			{"locationPrecision": "gps", "latitude": 4.5339, "longitude": -75.6811},
		} {
			body := map[string]any{}
			for k, v := range base {
				body[k] = v
			}
			for k, v := range place {
				body[k] = v
			}
			b, _ := json.Marshal(body)
			v, err := jsonschema.UnmarshalJSON(strings.NewReader(string(b)))
			if err != nil {
				t.Fatal(err)
			}
			docSays := sch.Validate(v) == nil
			_, eb := Decode(b, "")
			if serverSays := eb == nil; docSays != serverSays {
				t.Errorf("%s with %v: the document says valid=%v, the server %v (%+v)", typ, place, docSays, serverSays, eb)
			}
		}
	}
}
