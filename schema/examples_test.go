package schema

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/directaid/directaid/internal/openapidoc"
)

// TestEveryOperationHasExamples: every JSON request body and every JSON answer of every operation in the
// document carries examples, and each example is valid against the schema it illustrates. An operation
// added without examples fails here: declare them in OperationExamples (or, for Error answers, make sure
// ErrorExamples has the status).
func TestEveryOperationHasExamples(t *testing.T) {
	raw, c := openAPICompiler(t)
	d, err := openapidoc.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	esc := strings.NewReplacer("~", "~0", "/", "~1").Replace
	check := func(where, ptr string, value json.RawMessage) {
		t.Helper()
		sch, err := c.Compile("directaid:openapi#" + ptr)
		if err != nil {
			t.Fatalf("%s: %v", where, err)
		}
		v, err := jsonschema.UnmarshalJSON(strings.NewReader(string(value)))
		if err != nil {
			t.Fatal(err)
		}
		if err := sch.Validate(v); err != nil {
			t.Errorf("%s: the example does not match its schema: %v\n%s", where, err, value)
		}
	}
	operations, examples := 0, 0
	for path, item := range d.Paths {
		for method, op := range item {
			operations++
			base := "/paths/" + esc(path) + "/" + method
			if op.RequestBody != nil {
				mt, ok := op.RequestBody.Content["application/json"]
				if ok && len(mt.Examples) == 0 {
					t.Errorf("%s (%s %s): its request body has no examples", op.OperationID, strings.ToUpper(method), path)
				}
				for name, ex := range mt.Examples {
					if ex.Status == "" {
						t.Errorf("%s: request example %q does not say (x-status) what the server answers", op.OperationID, name)
					}
					if _, declared := op.Responses[ex.Status]; !declared {
						t.Errorf("%s: request example %q expects %s, which the operation does not declare", op.OperationID, name, ex.Status)
					}
					check(op.OperationID+" request "+name, base+"/requestBody/content/application~1json/schema", ex.Value)
					examples++
				}
			}
			for _, ex := range op.QueryExamples {
				if _, declared := op.Responses[ex.Status]; !declared || ex.Query == "" {
					t.Errorf("%s: query example %q expects %q, which the operation does not declare (or has no query)", op.OperationID, ex.Name, ex.Status)
				}
				examples++
			}
			for status, r := range op.Responses {
				mt, ok := r.Content["application/json"]
				if !ok {
					continue
				}
				if len(mt.Examples) == 0 {
					t.Errorf("%s (%s %s): its %s answer has no examples", op.OperationID, strings.ToUpper(method), path, status)
				}
				for name, ex := range mt.Examples {
					check(op.OperationID+" "+status+" "+name, base+"/responses/"+status+"/content/application~1json/schema", ex.Value)
					examples++
				}
			}
		}
	}
	t.Logf("%d operations, %d examples, each valid against its schema", operations, examples)
}

// openAPICompiler is the built-in OpenAPI document and a JSON Schema compiler that holds it as
// "directaid:openapi", to compile its schemas by pointer ("directaid:openapi#/components/schemas/…").
func openAPICompiler(t *testing.T) ([]byte, *jsonschema.Compiler) {
	t.Helper()
	raw, err := OpenAPI("")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(string(raw)))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	if err := c.AddResource("directaid:openapi", doc); err != nil {
		t.Fatal(err)
	}
	return raw, c
}
