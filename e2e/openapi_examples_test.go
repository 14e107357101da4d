package e2e

import (
	"strconv"
	"strings"
	"testing"

	"github.com/directaid/directaid/internal/openapidoc"
	"github.com/directaid/directaid/internal/testserver"
)

// TestOpenAPIExamplesWork sends every request example of the served OpenAPI document to the server and
// expects the status the example declares (x-status); call checks each answer against the document too.
// (schema's TestEveryOperationHasExamples checks that every operation has examples, valid against their
// schemas.)
func TestOpenAPIExamplesWork(t *testing.T) {
	s := testserver.Start(t, testserver.Options{})
	resp, raw := s.Do("GET", "/api/public/openapi.json", nil)
	if resp.StatusCode != 200 {
		t.Fatalf("openapi.json: %d", resp.StatusCode)
	}
	doc, err := openapidoc.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	// Paths with {id} are sent about a record of this server's own, {responseId} about a response to it.
	_, rec := publish(t, s, validRequest())
	id, _ := rec["id"].(string)
	// Paths with {responseId} about a response to it.
	resp, resRaw := s.Do("POST", "/api/public/v1/help/"+id+"/responses", []byte(`{"message":"Puedo ayudar"}`), "Content-Type", "application/json")
	var respID string
	if i := strings.Index(string(resRaw), `"responseId":"`); resp.StatusCode == 201 && i >= 0 {
		respID, _, _ = strings.Cut(string(resRaw[i+len(`"responseId":"`):]), `"`)
	} else {
		t.Fatalf("a response to fill {responseId}: %d %s", resp.StatusCode, resRaw)
	}
	sent := 0
	for path, item := range doc.Paths {
		for method, op := range item {
			if op.RequestBody == nil {
				continue
			}
			target := strings.ReplaceAll(strings.ReplaceAll(path, "{id}", id), "{responseId}", respID)
			if strings.Contains(target, "{") {
				t.Fatalf("%s %s: a path parameter this test cannot fill", strings.ToUpper(method), path)
			}
			for name, ex := range op.RequestBody.Content["application/json"].Examples {
				want, err := strconv.Atoi(ex.Status)
				if err != nil {
					t.Fatalf("%s %q: x-status %q", op.OperationID, name, ex.Status)
				}
				resp, body := call(t, s, strings.ToUpper(method), target, ex.Value,
					"Content-Type", "application/json", "Accept", "application/json, text/event-stream")
				if resp.StatusCode != want {
					t.Errorf("%s example %q: %d, the document says %d\n%s\n%v", op.OperationID, name, resp.StatusCode, want, ex.Value, body)
				}
				sent++
			}
		}
	}
	if sent < 5 {
		t.Fatalf("only %d request examples in the served document", sent)
	}
	t.Logf("%d request examples sent, each answered with its documented status", sent)
}
