package site

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"
)

// recordLine is one line of the «Detalles» of a record's page and its twin: the field it shows, by its
// published name (its label is the form's, from labels, unless Label says otherwise) and by its place
// in the public record (a JSON pointer), and how its value is written when plain text will not do. A
// field a person must see on the record's page is one line in recordLines.
type recordLine struct {
	Field, At, Label string
	// Literal: the twin shows the value as a code span (an address keeps its "#" as written).
	Literal bool
	// Write writes the line's value from the record; nil writes the value at At as text.
	Write func(r *detailView) (detailItem, bool)
}

// recordLines are the lines of «Detalles», in order.
var recordLines = []recordLine{
	{Field: "type", At: "/type"},
	{Field: "status", At: "/status", Label: "Estado de la publicación"},
	{Field: "emergencySlug", At: "/emergency/title", Write: emergencyItem},
	{Field: "category", At: "/category"},
	{Field: "urgency", At: "/urgency"},
	{Field: "neededPeople", At: "/neededPeople", Label: "Necesitan la ayuda", Write: func(r *detailView) (detailItem, bool) {
		return detailItem{Text: r.People}, r.People != ""
	}},
	{Field: "collectionCenterStatus", At: "/collectionCenterStatus"},
	{Field: "address", At: "/location/address", Literal: true},
	{Field: "neighborhood", At: "/location/neighborhood"},
	{Field: "placeCode", At: "/location/place", Label: "Centro poblado o vereda", Write: func(r *detailView) (detailItem, bool) {
		return detailItem{Text: mdText(r.Town)}, r.Town != ""
	}},
	{Field: "municipio", At: "/location/municipio", Label: "Municipio", Write: func(r *detailView) (detailItem, bool) {
		return detailItem{Text: mdText(r.Municipio)}, r.Municipio != ""
	}},
	{Field: "latitude", At: "/location/latitude", Label: "Coordenadas", Write: func(r *detailView) (detailItem, bool) {
		note := " (ver en el mapa de OpenStreetMap)"
		if r.Precision != "" {
			note = " (" + r.Precision + "; ver en el mapa de OpenStreetMap)"
		}
		return detailItem{Text: r.Coords, URL: r.MapURL, Note: note}, r.MapURL != ""
	}},
}

// detailItem is a line of «Detalles» as the template writes it: Text is Markdown; Code, when set, is
// the raw value the twin shows as a code span instead; URL links Text; Note follows.
type detailItem struct {
	Label, Text, Code, URL, Note string
}

func emergencyItem(r *detailView) (detailItem, bool) {
	if r.EmergencyURL == "" {
		return detailItem{Text: mdText(r.EmergencyTitle), Note: " (ya no está activa)"}, true
	}
	return detailItem{Text: mdText(r.EmergencyTitle), URL: r.EmergencyURL}, true
}

// detailItems writes the lines of «Detalles» of rec (the public record as JSON) for dv.
func detailItems(dv *detailView, rec []byte) ([]detailItem, error) {
	var doc map[string]any
	if err := json.Unmarshal(rec, &doc); err != nil {
		return nil, err
	}
	var out []detailItem
	for _, l := range recordLines {
		var it detailItem
		ok := false
		if l.Write != nil {
			it, ok = l.Write(dv)
		} else if val, found := pointer(doc, l.At); found {
			enum, pub := published()[l.Field]
			it.Text, ok = valueText(val, pub, enum)
			if ok && l.Literal {
				it.Code = fmt.Sprint(val)
			}
		}
		if !ok {
			continue
		}
		it.Label = l.Label
		if it.Label == "" {
			it.Label = labels[l.Field]
		}
		out = append(out, it)
	}
	return out, nil
}

// pointer finds the value at a JSON pointer of plain names (no escapes: the record's names have none).
func pointer(doc map[string]any, at string) (any, bool) {
	var cur any = doc
	for name := range strings.SplitSeq(strings.TrimPrefix(at, "/"), "/") {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = m[name]; !ok {
			return nil, false
		}
	}
	return cur, cur != nil
}

// published are the fields of the published shapes, each with whether it is an enumeration: the others
// are text that people wrote, shown as written.
var published = sync.OnceValue(func() map[string]bool {
	out := map[string]bool{}
	for _, name := range []string{"HelpRequest", "HelpOffer"} {
		fields, _ := schemaFields(name)
		for _, f := range fields {
			out[f.Name] = out[f.Name] || len(f.Enum) > 0 || f.Const != ""
		}
	}
	return out
})

// valueText writes a value for a person: an enumeration's word, a date in Spanish, text escaped. pub
// says whether the field is published (enum: as an enumeration); one the server sets may be an
// enumeration or a time too.
func valueText(v any, pub, enum bool) (string, bool) {
	switch v := v.(type) {
	case string:
		if v == "" {
			return "", false
		}
		if l, ok := enumLabels[v]; ok && (enum || !pub) {
			return l, true
		}
		if !pub {
			if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
				return spanishDateTime(t), true
			}
		}
		return mdText(v), true
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64), true
	case bool:
		return map[bool]string{true: "sí", false: "no"}[v], true
	}
	return "", false
}
