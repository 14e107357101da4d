package httpapi

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/directaid/directaid/schema"
)

// TestUnstampedJSON: the ETag's unstamped body, cut out of the stamped encoding, is byte-equal to
// encoding the value again with a zero stamp, for the three stamped answers, also when a string of the
// answer spells a generatedAt member.
func TestUnstampedJSON(t *testing.T) {
	at := time.Date(2026, 8, 11, 14, 30, 0, 123456789, time.UTC)
	trick := `"generatedAt":"` + at.Format(time.RFC3339Nano) + `"`
	item := schema.PublicHelp{ID: "06h0kawzs6kszdk7", Type: schema.TypeRequest}
	item.Title, item.Description = trick, `","generatedAt":"0001-01-01T00:00:00Z`
	list := &schema.HelpList{GeneratedAt: at, Total: 1, Filters: schema.ListQuery{Q: trick}, Items: []schema.PublicHelp{item}}
	geo := listGeoJSON(list)
	pan := &schema.Panorama{GeneratedAt: at, Emergencies: []schema.EmergencyPanorama{{Slug: "eje-cafetero", Title: trick}}}
	for name, c := range map[string]struct {
		v     any
		stamp *time.Time
	}{"list": {list, &list.GeneratedAt}, "geojson": {geo, &geo.GeneratedAt}, "panorama": {pan, &pan.GeneratedAt}} {
		for _, when := range []time.Time{at, at.Truncate(time.Second), {}} {
			*c.stamp = when
			body, _ := json.Marshal(c.v)
			*c.stamp = time.Time{}
			want, _ := json.Marshal(c.v)
			parts, ok := unstampedJSON(body, when)
			if got := bytes.Join(parts, nil); !ok || !bytes.Equal(got, want) {
				t.Errorf("%s at %v: ok %v\n got %s\nwant %s", name, when, ok, got, want)
			}
		}
	}
}
