package schema

import (
	"encoding/json"
	"testing"
)

// TestOpenAPISecurity: every operation's security names a declared scheme, and each token goes where the
// server takes it: the publisher's actions and responses list the manageToken, a responder's actions the
// responseToken (a client generated from the document wires the credential it says).
func TestOpenAPISecurity(t *testing.T) {
	raw, err := OpenAPI("http://ayuda.test")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Paths      map[string]map[string]json.RawMessage `json:"paths"`
		Components struct {
			SecuritySchemes map[string]any `json:"securitySchemes"`
		} `json:"components"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"actOnHelp": "manageToken", "listHelpResponses": "manageToken", "actOnResponse": "responseToken"}
	seen := map[string]bool{}
	for path, item := range doc.Paths {
		for method, raw := range item {
			var op struct {
				OperationID string                `json:"operationId"`
				Security    []map[string][]string `json:"security"`
			}
			if json.Unmarshal(raw, &op) != nil {
				continue // the path's parameters
			}
			for _, req := range op.Security {
				for name := range req {
					if _, ok := doc.Components.SecuritySchemes[name]; !ok {
						t.Errorf("%s %s: security %q is no declared scheme", method, path, name)
					}
					if w, ok := want[op.OperationID]; ok {
						seen[op.OperationID] = true
						if name != w {
							t.Errorf("%s (%s %s) asks for %s, want %s", op.OperationID, method, path, name, w)
						}
					}
				}
			}
		}
	}
	for id := range want {
		if !seen[id] {
			t.Errorf("%s has no security", id)
		}
	}
}
