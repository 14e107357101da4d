package site

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/directaid/directaid/schema"
)

// field is one property of a wire type, read from its JSON Schema: the documentation tables and the
// forms are both built from it, so neither can drift from what the API validates.
type field struct {
	Name        string
	Type        string // JSON Schema type
	Required    bool
	Description string
	MaxLength   uint64
	Min, Max    string // JSON numbers as written in the schema; "" when absent
	Enum        []string
	Default     string
	Const       string
	Format      string // e.g. date-time, uri
}

// schemaFields returns the properties of the named wire type (schema.JSONSchema) in declaration order.
func schemaFields(name string) ([]field, error) {
	s := schema.JSONSchema(name)
	if s == nil || s.Properties == nil {
		return nil, fmt.Errorf("site: schema %q has no properties", name)
	}
	required := map[string]bool{}
	for _, r := range s.Required {
		required[r] = true
	}
	var out []field
	for name := range s.Properties.KeysFromOldest() {
		p, _ := s.Properties.Get(name)
		f := field{Name: name, Type: p.Type, Required: required[name], Description: p.Description,
			Min: p.Minimum.String(), Max: p.Maximum.String(), Format: p.Format}
		if p.MaxLength != nil {
			f.MaxLength = *p.MaxLength
		}
		for _, e := range p.Enum {
			f.Enum = append(f.Enum, fmt.Sprint(e))
		}
		if p.Default != nil {
			f.Default = fmt.Sprint(p.Default)
		}
		if p.Const != nil {
			f.Const = fmt.Sprint(p.Const)
		}
		out = append(out, f)
	}
	return out, nil
}

// typeNames are the JSON types as a Spanish reader knows them.
var typeNames = map[string]string{
	"string": "texto", "number": "número", "integer": "número entero", "boolean": "booleano",
	"object": "objeto", "array": "lista",
}

// conditional names the fields (type/field) whose obligation depends on the server's state, which a
// schema cannot say.
var conditional = map[string]string{
	"HelpRequest/emergencySlug": "si hay varias emergencias activas",
	"HelpOffer/emergencySlug":   "si hay varias emergencias activas",
}

// limits describes the constraints of f in Spanish; quote wraps literal values (a Markdown code span in
// the documentation, nothing in a form hint).
func (f field) limits(quote func(string) string) []string {
	var out []string
	if f.Const != "" {
		out = append(out, "siempre "+quote(f.Const))
	}
	if f.Format != "" {
		out = append(out, "formato "+quote(f.Format))
	}
	if f.MaxLength > 0 {
		out = append(out, "máximo "+strconv.FormatUint(f.MaxLength, 10)+" caracteres")
	}
	switch {
	case f.Min != "" && f.Max != "":
		out = append(out, "de "+quote(f.Min)+" a "+quote(f.Max))
	case f.Min != "":
		out = append(out, "mínimo "+quote(f.Min))
	case f.Max != "":
		out = append(out, "máximo "+quote(f.Max))
	}
	if len(f.Enum) > 0 {
		vals := make([]string, len(f.Enum))
		for i, e := range f.Enum {
			vals[i] = quote(e)
		}
		out = append(out, "uno de: "+strings.Join(vals, ", "))
	}
	if f.Default != "" {
		out = append(out, "por defecto "+quote(f.Default))
	}
	return out
}

// fieldTable renders the Markdown table of a wire type's fields, for the integration guide.
func fieldTable(name string) (string, error) {
	fields, err := schemaFields(name)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	b.WriteString("| Campo | Tipo | Obligatorio | Límites | Descripción |\n|---|---|---|---|---|\n")
	for _, f := range fields {
		req := "no"
		if f.Required {
			req = "sí"
		} else if c, ok := conditional[name+"/"+f.Name]; ok {
			req = c
		}
		typ := typeNames[f.Type]
		if typ == "" {
			typ = f.Type
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", mdCode(f.Name), typ, req,
			strings.Join(f.limits(mdCode), "; "), mdText(f.Description))
	}
	return b.String(), nil
}
