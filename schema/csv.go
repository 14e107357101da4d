package schema

import (
	"strconv"
	"strings"
	"time"
)

// CSVColumn is one column of view=list&format=csv: its header, its HXL hashtag (the second row) and how
// a record's cell is written. A new column is one line here; the export and its tests read this table.
type CSVColumn struct {
	Name, HXL string
	Cell      func(*PublicHelp) string
}

// CSVColumns are the columns of the CSV export, in order. There is no phone: PublicHelp has none.
var CSVColumns = []CSVColumn{
	{"id", "#meta+id", func(h *PublicHelp) string { return h.ID }},
	{"type", "#meta+type", func(h *PublicHelp) string { return h.Type }},
	{"emergencySlug", "#crisis+code", func(h *PublicHelp) string { return h.Emergency.Slug }},
	{"emergencyTitle", "#crisis+name", func(h *PublicHelp) string { return csvText(h.Emergency.Title) }},
	{"title", "#description+title", func(h *PublicHelp) string { return csvText(h.Title) }},
	{"description", "#description", func(h *PublicHelp) string { return csvText(h.Description) }},
	{"category", "#sector", func(h *PublicHelp) string { return h.Category }},
	{"urgency", "#severity", func(h *PublicHelp) string { return h.Urgency }},
	{"neededPeople", "#inneed+num", func(h *PublicHelp) string { return csvInt(h.NeededPeople) }},
	{"collectionCenterStatus", "#status", func(h *PublicHelp) string { return h.CollectionCenterStatus }},
	{"address", "#loc+address", func(h *PublicHelp) string { return csvText(csvLoc(h).Address) }},
	{"neighborhood", "#loc+name", func(h *PublicHelp) string { return csvText(csvLoc(h).Neighborhood) }},
	{"latitude", "#geo+lat", func(h *PublicHelp) string { return csvFloat(csvLoc(h).Latitude) }},
	{"longitude", "#geo+lon", func(h *PublicHelp) string { return csvFloat(csvLoc(h).Longitude) }},
	{"distanceKm", "#geo+distance", func(h *PublicHelp) string { return csvFloat(csvLoc(h).DistanceKm) }},
	{"locationPrecision", "#geo+precision", func(h *PublicHelp) string { return csvLoc(h).Precision }},
	{"placeCode", "#loc+code", func(h *PublicHelp) string { return csvLoc(h).PlaceCode }},
	{"place", "#loc+name+place", func(h *PublicHelp) string { return csvText(csvLoc(h).PlaceName) }},
	{"municipioCode", "#adm2+code", func(h *PublicHelp) string { return csvLoc(h).MunicipioCode }},
	{"municipio", "#adm2+name", func(h *PublicHelp) string { return csvText(csvLoc(h).Municipio) }},
	{"contactName", "#contact+name", func(h *PublicHelp) string { return csvText(h.Contact.Name) }},
	{"createdAt", "#date+created", func(h *PublicHelp) string { return h.CreatedAt.Format(time.RFC3339Nano) }},
	{"status", "#meta+status", func(h *PublicHelp) string { return h.Status }},
	{"responses", "#reached+num", func(h *PublicHelp) string { return strconv.Itoa(h.Responses) }},
	{"updatedAt", "#date+updated", func(h *PublicHelp) string { return h.UpdatedAt.Format(time.RFC3339Nano) }},
	{"publicUrl", "#meta+url", func(h *PublicHelp) string { return h.PublicURL }},
	{"expiresAt", "#date+expires", func(h *PublicHelp) string { return csvTime(h.ExpiresAt) }},
}

// csvTime is an optional time's cell: empty without one.
func csvTime(t *time.Time) string {
	if t == nil {
		return ""
	}
	return t.Format(time.RFC3339Nano)
}

// csvText neutralizes spreadsheet formulas in free text (a title "=HYPERLINK(…)" must stay text when the
// export is opened in a spreadsheet).
func csvText(s string) string {
	if s != "" && strings.ContainsRune("=+-@\t\r", rune(s[0])) {
		return "'" + s
	}
	return s
}

func csvFloat(f *float64) string {
	if f == nil {
		return ""
	}
	return strconv.FormatFloat(*f, 'f', -1, 64)
}

func csvInt(n *int) string {
	if n == nil {
		return ""
	}
	return strconv.Itoa(*n)
}

var noLocation PublicLocation

func csvLoc(h *PublicHelp) *PublicLocation {
	if h.Location == nil {
		return &noLocation
	}
	return h.Location
}
