package httpapi

import (
	"net/url"
	"testing"
)

// TestQueryNumbersAreDecimals: a number in a query string is digits with an optional point and sign; Go's
// own syntax, which strconv.ParseFloat also takes, is refused rather than read as another number.
func TestQueryNumbersAreDecimals(t *testing.T) {
	for s, want := range map[string]bool{"4.5339": true, "-75.68": true, "+4": true, "10": true, "7.": true, ".5": true,
		"4_5": false, "4.5_3": false, "1_00": false, "0x1p2": false, "0x10": false, "1e2": false, "Inf": false, "NaN": false, "": false, "4,5": false, "- 4": false} {
		if _, err := parseDecimal(s); (err == nil) != want {
			t.Errorf("parseDecimal(%q): %v, want accepted %v", s, err, want)
		}
	}
	q, errs := parseListQuery(url.Values{"latitude": {"4_5"}, "longitude": {"-75.6"}, "radiusKm": {"1_00"}})
	if len(errs) != 2 || q.Latitude != nil || q.RadiusKm != nil || q.Longitude == nil || *q.Longitude != -75.6 {
		t.Errorf("latitude=4_5&radiusKm=1_00: %+v %+v", q, errs)
	}
}
