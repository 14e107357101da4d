package schema

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"

	"github.com/invopop/jsonschema"
)

// reflectSchema reflects a Go type into an inlined draft 2020-12 JSON Schema (no $defs, no $id), with
// the constants invopop cannot express in tags.
func reflectSchema(v any) *jsonschema.Schema {
	r := &jsonschema.Reflector{DoNotReference: true, ExpandedStruct: true, Anonymous: true}
	s := r.Reflect(v)
	s.Version = ""
	s.Definitions = nil
	if s.Properties != nil {
		if p, ok := s.Properties.Get("publishContact"); ok {
			p.Const = true
		}
		if p, ok := s.Properties.Get("type"); ok {
			switch reflect.TypeOf(v).Elem() {
			case reflect.TypeOf(Request{}):
				p.Type, p.Const = "string", TypeRequest
				if u, ok := s.Properties.Get("urgency"); ok {
					u.Default = DefaultUrgency
				}
				if n, ok := s.Properties.Get("neededPeople"); ok {
					n.Default = DefaultNeededPeople
				}
			case reflect.TypeOf(Offer{}):
				p.Type, p.Const = "string", TypeOffer
			}
		}
	}
	fieldEnums(s, reflect.TypeOf(v))
	fillEnums(s)
	if _, ok := v.(*DryRunResult); ok {
		storedPrecision(s)
	}
	return s
}

// namedEnums are the enumerations a struct field names in its `enum` tag (`enum:"statuses"`), declared
// once beside their constants, so that no jsonschema tag repeats the values.
var namedEnums = map[string]func() []string{
	"statuses":   func() []string { return Statuses },
	"listed":     func() []string { return ListedStatuses },
	"removed":    func() []string { return RemovedStatuses },
	"errorCodes": ErrorCodeNames,
}

// fieldEnums gives each property of s whose field in t has an `enum` tag that enumeration, at any depth
// (embedded structs, pointers, slices, maps). A tag naming no enumeration panics: a programming error.
func fieldEnums(s *jsonschema.Schema, t reflect.Type) {
	if s == nil {
		return
	}
	switch t.Kind() {
	case reflect.Pointer:
		fieldEnums(s, t.Elem())
	case reflect.Slice, reflect.Array:
		fieldEnums(s.Items, t.Elem())
	case reflect.Map:
		fieldEnums(s.AdditionalProperties, t.Elem())
	case reflect.Struct:
		if s.Properties == nil {
			return
		}
		for i := range t.NumField() {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "-" || !f.IsExported() && !f.Anonymous {
				continue
			}
			if f.Anonymous && name == "" {
				fieldEnums(s, f.Type)
				continue
			}
			if name == "" {
				name = f.Name
			}
			p, ok := s.Properties.Get(name)
			if !ok {
				continue
			}
			if enum := f.Tag.Get("enum"); enum != "" {
				vals, ok := namedEnums[enum]
				if !ok {
					panic("schema: field " + t.Name() + "." + f.Name + " names no enumeration " + enum)
				}
				p.Enum = nil
				for _, v := range vals() {
					p.Enum = append(p.Enum, v)
				}
			}
			fieldEnums(p, f.Type)
		}
	}
}

// sharedEnums are the enumerations that several wire types carry, by property name. They are declared
// once (types.go) and written into every reflected schema, so that no struct tag repeats them.
var sharedEnums = map[string][]string{
	"type":                   {TypeRequest, TypeOffer},
	"category":               Categories,
	"urgency":                Urgencies,
	"collectionCenterStatus": CollectionCenterStatuses,
}

// fillEnums gives every property named in sharedEnums, at any depth, its enumeration, unless its tag
// says otherwise (a const, or another enum such as GeoJSON's "type"); and contactWhatsapp its rule (phone.go).
func fillEnums(s *jsonschema.Schema) {
	if s == nil {
		return
	}
	if s.Properties != nil {
		for name, p := range s.Properties.FromOldest() {
			if name == "contactWhatsapp" && p.Type == "string" { // Common's phone, wherever it is embedded
				desc := phoneDescription
				if p.Description != "" {
					desc = p.Description + " " + phoneRules
				}
				p.Pattern, p.Description, p.Examples = PhonePattern, desc, nil
				for _, e := range PhoneExamples {
					p.Examples = append(p.Examples, e)
				}
			}
			if vals, ok := sharedEnums[name]; ok && len(p.Enum) == 0 && p.Const == nil {
				for _, v := range vals {
					p.Enum = append(p.Enum, v)
				}
			}
			fillEnums(p)
		}
	}
	fillEnums(s.Items)
	for _, sub := range slices.Concat(s.AllOf, s.AnyOf, s.OneOf) {
		fillEnums(sub)
	}
	fillEnums(s.AdditionalProperties)
}

// toMap turns a reflected schema into plain JSON data, the form the validator compiler and the
// OpenAPI document take.
func toMap(s *jsonschema.Schema) map[string]any {
	b, err := json.Marshal(s)
	if err != nil {
		panic(err) // a reflected schema always marshals
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		panic(err)
	}
	return m
}

// Schemas of the wire types, by the name they carry in the OpenAPI components.
var wireTypes = map[string]any{
	"HelpRequest":   &Request{},
	"HelpOffer":     &Offer{},
	"PublishResult": &PublishResult{},
	"Error":         &ErrorBody{},
	"Discovery":     &Discovery{},
	"Emergency":     &EmergencyInfo{},
	"ActionRequest": &ActionRequest{},
	"ActionResult":  &ActionResult{},
}

// JSONSchema returns the JSON Schema of a wire type by its component name (HelpRequest, HelpOffer,
// PublishResult, Error, Discovery, Emergency), freshly reflected so that callers may change it.
func JSONSchema(name string) *jsonschema.Schema {
	v, ok := wireTypes[name]
	if !ok {
		return nil
	}
	return reflectSchema(v)
}

// withLocationRules writes into a publish body's schema in the OpenAPI document the rules of its location
// that locationFaults applies, so that a client validating against it builds what the server takes:
// latitude and longitude go together, locationPrecision only with them, and a request gives them or
// placeCode. The validator's own schema leaves them to locationFaults, whose messages name each field;
// an MCP tool's input schema says them in its fields' descriptions, since models' tool APIs refuse an
// anyOf at the top of an input schema.
func withLocationRules(s *jsonschema.Schema, request bool) {
	s.DependentRequired = map[string][]string{
		"latitude":          {"longitude"},
		"longitude":         {"latitude"},
		"locationPrecision": {"latitude", "longitude"},
	}
	if request {
		s.AnyOf = []*jsonschema.Schema{{Required: []string{"latitude", "longitude"}}, {Required: []string{"placeCode"}}}
	}
}

// ToolInputSchema is the schema of a publish body minus `type`, which an MCP tool sets itself.
func ToolInputSchema(typ string) json.RawMessage {
	name := "HelpRequest"
	if typ == TypeOffer {
		name = "HelpOffer"
	}
	s := JSONSchema(name)
	s.Properties.Delete("type")
	s.Required = slices.DeleteFunc(s.Required, func(r string) bool { return r == "type" })
	s.Properties.Set(DryRunArg, &jsonschema.Schema{Type: "boolean", Description: DryRunDescription})
	b, err := json.Marshal(s)
	if err != nil {
		panic(err)
	}
	return b
}
