package schema

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// ArgsValidator compiles the JSON Schema of a tool's input, reflected from its argument struct v as
// ReflectArgs does. Its function returns what the arguments violate, each with a JSON pointer and a Spanish message, so that a
// tool refuses what its published schema refuses (an empty enum, limit 0) as the HTTP API does.
func ArgsValidator(v any) func(args []byte) []FieldError {
	c := jsonschema.NewCompiler()
	c.UseRegexpEngine(fastRegexp)
	c.DefaultDraft(jsonschema.Draft2020)
	if err := c.AddResource("directaid:args", ReflectArgs(v)); err != nil {
		panic(err)
	}
	sch, err := c.Compile("directaid:args")
	if err != nil {
		panic(fmt.Sprintf("tool input schema: %v", err)) // a reflected schema always compiles
	}
	return func(args []byte) []FieldError {
		v, err := jsonschema.UnmarshalJSON(bytes.NewReader(args))
		if err != nil {
			return []FieldError{{Field: "", Message: "los argumentos no son un objeto JSON válido"}}
		}
		var ve *jsonschema.ValidationError
		if err := sch.Validate(v); errors.As(err, &ve) {
			return collect(ve, nil)
		}
		return nil
	}
}
