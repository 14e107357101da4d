package e2e

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/directaid/directaid/internal/testserver"
	"github.com/directaid/directaid/schema"
)

// TestDiscoveryExample: the OpenAPI document's example of the discovery names capabilities the server
// has (a client reading the example wrote code for names that never came).
func TestDiscoveryExample(t *testing.T) {
	t.Parallel()
	s := testserver.Start(t, testserver.Options{})
	_, served := call(t, s, "GET", schema.HelpPath, nil)
	var have []string
	for _, c := range served["capabilities"].([]any) {
		have = append(have, c.(string))
	}
	_, raw := s.Do("GET", schema.OpenAPIPath, nil)
	var doc struct {
		Paths map[string]map[string]struct {
			Responses map[string]struct {
				Content map[string]struct {
					Examples map[string]struct {
						Value struct {
							Capabilities []string `json:"capabilities"`
						} `json:"value"`
					} `json:"examples"`
				} `json:"content"`
			} `json:"responses"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	ex := doc.Paths[schema.HelpPath]["get"].Responses["200"].Content["application/json"].Examples["descubrimiento"].Value.Capabilities
	if len(ex) == 0 {
		t.Fatal("no discovery example in the OpenAPI document")
	}
	for _, c := range ex {
		if !slices.Contains(have, c) {
			t.Errorf("the example's capability %q is not served (served: %v)", c, have)
		}
	}
}
