package e2e

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/directaid/directaid/internal/testserver"
)

// The read side through the real binary: view=list|detail|panorama and the CSV and GeoJSON exports,
// against a store seeded with records whose answers are known.

// Armenia, Quindío: the centre of the radius searches.
const centerLat, centerLon = 4.5339, -75.6811

// destination is the point at distKm from (lat, lon) towards bearing (degrees from north), on a sphere.
func destination(lat, lon, distKm, bearing float64) (float64, float64) {
	const r = 6371.0088
	rad := math.Pi / 180
	d := distKm / r
	la1, lo1, b := lat*rad, lon*rad, bearing*rad
	la2 := math.Asin(math.Sin(la1)*math.Cos(d) + math.Cos(la1)*math.Sin(d)*math.Cos(b))
	lo2 := lo1 + math.Atan2(math.Sin(b)*math.Sin(d)*math.Cos(la1), math.Cos(d)-math.Sin(la1)*math.Sin(la2))
	return la2 / rad, lo2 / rad
}

type seeded struct {
	id, createdAt string
	body          map[string]any
}

func phoneOf(n int) string { return fmt.Sprintf("+57 300 555 %04d", n) }

// seedKnown publishes the eight records the filter tests reason about, oldest first.
func seedKnown(t *testing.T, s *testserver.Server) []seeded {
	t.Helper()
	at := func(dist, bearing float64) (float64, float64) {
		return destination(centerLat, centerLon, dist, bearing)
	}
	l1a, l1o := at(1, 0)
	l2a, l2o := at(4.95, 90) // just inside 5 km
	l3a, l3o := at(5.05, 180)
	l5a, l5o := at(2, 180)
	l8a, l8o := at(3, 270)
	bodies := []map[string]any{
		with(validRequest(), "category", "salud", "urgency", "urgent", "title", "Médico para adultos mayores", "description", nil, "latitude", l1a, "longitude", l1o),
		with(validRequest(), "category", "alimentos", "urgency", "needed", "title", "Agua potable", "description", nil, "latitude", l2a, "longitude", l2o, "neededPeople", 30),
		with(validRequest(), "category", "refugio", "urgency", "stable", "title", "Carpas", "description", nil, "latitude", l3a, "longitude", l3o, "neededPeople", 4),
		with(validOffer(), "category", "transporte", "title", "Transporte en camioneta", "description", "Llevo MEDICINAS y agua"),
		with(validOffer(), "category", "salud", "title", "Brigada de salud", "description", "Atención médica gratuita", "latitude", l5a, "longitude", l5o, "address", "Parque Sucre"),
		with(validRequest(), "emergencySlug", "inundaciones-la-mojana", "category", "alimentos", "urgency", "urgent", "title", "Mercados para niños", "description", nil, "latitude", 9.0, "longitude", -74.8, "neededPeople", 50),
		with(validOffer(), "emergencySlug", "inundaciones-la-mojana", "category", "acopio", "collectionCenterStatus", "needs_volunteers", "title", "Centro de acopio", "latitude", 9.01, "longitude", -74.81),
		with(validRequest(), "category", "salud", "urgency", "urgent", "title", "medicamentos para NIÑOS", "description", nil, "latitude", l8a, "longitude", l8o, "neededPeople", 3),
	}
	out := make([]seeded, len(bodies))
	for i, b := range bodies {
		b["contactWhatsapp"] = phoneOf(i + 1)
		resp, res := publish(t, s, b)
		if resp.StatusCode != 201 {
			t.Fatalf("seed %d: %d %v", i+1, resp.StatusCode, res)
		}
		out[i] = seeded{id: res["id"].(string), createdAt: res["createdAt"].(string), body: b}
		time.Sleep(3 * time.Millisecond) // distinct creation times, so "since" has a clear answer
	}
	return out
}

type listAnswer struct {
	GeneratedAt string            `json:"generatedAt"`
	Total       int               `json:"total"`
	TotalExact  bool              `json:"totalExact"`
	Returned    int               `json:"returned"`
	Filters     map[string]any    `json:"filters"`
	Items       []json.RawMessage `json:"items"`
	NextCursor  string            `json:"nextCursor"`
}

type item struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Location *struct {
		Latitude   *float64 `json:"latitude"`
		Longitude  *float64 `json:"longitude"`
		DistanceKm *float64 `json:"distanceKm"`
	} `json:"location"`
	Contact map[string]any `json:"contact"`
}

// getList GETs a list, checks it against the OpenAPI document and that no phone number is in it.
func getList(t *testing.T, s *testserver.Server, query string) (listAnswer, []item) {
	t.Helper()
	resp, raw := s.Do("GET", "/api/public/v1/help?"+query, nil)
	s.CheckOpenAPI(s.NewRequest("GET", "/api/public/v1/help?"+query, nil), resp, raw)
	if resp.StatusCode != 200 {
		t.Fatalf("%s: %d %s", query, resp.StatusCode, raw)
	}
	assertNoPhone(t, query, raw)
	var a listAnswer
	if err := json.Unmarshal(raw, &a); err != nil {
		t.Fatal(err)
	}
	items := make([]item, len(a.Items))
	for i, r := range a.Items {
		if err := json.Unmarshal(r, &items[i]); err != nil {
			t.Fatal(err)
		}
		if items[i].Contact["available"] != true || len(items[i].Contact) != 2 {
			t.Errorf("%s: contact %v, want only name and available", query, items[i].Contact)
		}
	}
	if a.Returned != len(items) {
		t.Errorf("%s: returned %d, items %d", query, a.Returned, len(items))
	}
	return a, items
}

// assertNoPhone fails if any seeded phone number, in any spelling, is in body.
func assertNoPhone(t *testing.T, what string, body []byte) {
	t.Helper()
	for _, needle := range []string{"30055500", "300 555", "wa.me", "whatsapp", "Whatsapp"} {
		if bytes.Contains(body, []byte(needle)) {
			t.Fatalf("%s: the answer contains %q (a phone number leaked):\n%s", what, needle, body)
		}
	}
}

// listIDs follows nextCursor to the end.
func listIDs(t *testing.T, s *testserver.Server, query string) ([]string, []item, listAnswer) {
	t.Helper()
	var ids []string
	var all []item
	first, items := getList(t, s, query)
	a := first
	for {
		for _, it := range items {
			ids = append(ids, it.ID)
		}
		all = append(all, items...)
		if a.NextCursor == "" {
			return ids, all, first
		}
		if len(ids) > 10000 {
			t.Fatal("paging does not end")
		}
		a, items = getList(t, s, query+"&cursor="+url.QueryEscape(a.NextCursor))
	}
}

func TestReadFilters(t *testing.T) {
	t.Parallel()
	s := testserver.Start(t, testserver.Options{})
	recs := seedKnown(t, s)
	idx := func(ns ...int) []string {
		out := make([]string, len(ns))
		for i, n := range ns {
			out[i] = recs[n-1].id
		}
		return out
	}
	// since is by updatedAt (the change feed), oldest change first.
	_, det := call(t, s, "GET", "/api/public/v1/help?view=detail&id="+recs[3].id, nil)
	since := url.QueryEscape(det["updatedAt"].(string))
	near := fmt.Sprintf("latitude=%v&longitude=%v", centerLat, centerLon)
	cases := []struct {
		query string
		want  []string
	}{
		{"", idx(8, 7, 6, 5, 4, 3, 2, 1)},
		{"emergencySlug=inundaciones-la-mojana", idx(7, 6)},
		{"emergencySlug=eje-cafetero", idx(8, 5, 4, 3, 2, 1)},
		{"type=offer", idx(7, 5, 4)},
		{"type=request", idx(8, 6, 3, 2, 1)},
		{"category=salud", idx(8, 5, 1)},
		{"urgency=urgent", idx(8, 6, 1)},
		{"q=medico", idx(1)},                      // "Médico": accents and case ignored
		{"q=M%C3%89DIC", idx(8, 5, 4, 1)},         // "MÉDIC" finds médico, médica, MEDICINAS, medicamentos
		{"q=ni%C3%B1os", idx(8, 6)},               // "niños" finds "NIÑOS" and "niños"
		{"q=ninos", idx(8, 6)},                    // and without the tilde
		{"q=agua+medicinas", idx(4)},              // every word must occur
		{"q=%20%20", idx(8, 7, 6, 5, 4, 3, 2, 1)}, // blank q is no filter
		{near + "&radiusKm=5", idx(1, 5, 8, 2)},   // nearest first; 4.95 km in, 5.05 km out
		{near + "&radiusKm=5.1", idx(1, 5, 8, 2, 3)},
		{near + "&radiusKm=5&type=request", idx(1, 8, 2)},
		{near + "&radiusKm=5&category=salud&urgency=urgent", idx(1, 8)},
		{near + "&radiusKm=0.5", nil},
		{"since=" + since, idx(5, 6, 7, 8)},
		{"since=" + since + "&emergencySlug=eje-cafetero", idx(5, 8)},
		{"since=" + since + "&category=salud", idx(5, 8)},
		{"category=salud&type=offer", idx(5)},
		{"status=resolved", nil},
		{"category=rescate", nil},
	}
	for _, c := range cases {
		for _, limit := range []int{0, 1, 3} {
			query := "view=list&" + c.query
			if limit > 0 {
				query += fmt.Sprintf("&limit=%d", limit)
			}
			ids, items, first := listIDs(t, s, query)
			if !slices.Equal(ids, c.want) {
				t.Errorf("%s: got %v, want %v", query, ids, c.want)
				continue
			}
			if first.Total != len(c.want) || !first.TotalExact {
				t.Errorf("%s: total %d (exact %v), want %d", query, first.Total, first.TotalExact, len(c.want))
			}
			if strings.Contains(c.query, "radiusKm") {
				prev := -1.0
				for _, it := range items {
					if it.Location == nil || it.Location.DistanceKm == nil || *it.Location.DistanceKm < prev || *it.Location.DistanceKm > 5.1 {
						t.Errorf("%s: bad distanceKm order or value in %+v", query, it.Location)
						break
					}
					prev = *it.Location.DistanceKm
				}
			} else {
				for _, it := range items {
					if it.Location != nil && it.Location.DistanceKm != nil {
						t.Errorf("%s: distanceKm without a point", query)
					}
				}
			}
		}
	}
	// total=none: the same pages; the total is only a lower bound, exact when one page is the whole list.
	for _, c := range cases {
		query := "view=list&total=none&limit=3&" + c.query
		ids, _, first := listIDs(t, s, query)
		if !slices.Equal(ids, c.want) {
			t.Errorf("%s: got %v, want %v", query, ids, c.want)
		}
		if exact := len(c.want) <= 3; first.TotalExact != exact || first.Total < min(len(c.want), 3) || first.Total > len(c.want) ||
			(exact && first.Total != len(c.want)) {
			t.Errorf("%s: total %d (exact %v) of %d", query, first.Total, first.TotalExact, len(c.want))
		}
	}
	// Distances are right to the metre.
	_, items := getList(t, s, "view=list&"+near+"&radiusKm=5")
	for i, want := range []float64{1, 2, 3, 4.95} {
		if got := *items[i].Location.DistanceKm; math.Abs(got-want) > 0.002 {
			t.Errorf("distanceKm %v, want %v", got, want)
		}
	}
	// The answer echoes the normalized filters, defaults included.
	a, _ := getList(t, s, "view=list&"+near+"&category=salud")
	if a.Filters["radiusKm"] != 10.0 || a.Filters["limit"] != 20.0 || a.Filters["category"] != "salud" {
		t.Errorf("filters %v", a.Filters)
	}
}

func TestReadDetailPanoramaAndErrors(t *testing.T) {
	t.Parallel()
	s := testserver.Start(t, testserver.Options{})
	recs := seedKnown(t, s)

	// Detail: the one place with the phone.
	resp, d := call(t, s, "GET", "/api/public/v1/help?view=detail&id="+recs[0].id, nil)
	contact, _ := d["contact"].(map[string]any)
	if resp.StatusCode != 200 || contact["whatsapp"] != "+573005550001" || contact["whatsappUrl"] != "https://wa.me/573005550001" ||
		d["title"] != "Médico para adultos mayores" || !strings.HasSuffix(fmt.Sprint(d["publicUrl"]), "/ayudas/"+recs[0].id) {
		t.Fatalf("detail: %d %v", resp.StatusCode, d)
	}
	if cc := resp.Header.Get("Cache-Control"); !strings.HasPrefix(cc, "private") {
		t.Errorf("detail Cache-Control %q", cc)
	}
	resp, e := call(t, s, "GET", "/api/public/v1/help?view=detail&id=0000000000000000", nil)
	if resp.StatusCode != 404 || e["code"] != "not_found" {
		t.Errorf("unknown id: %d %v", resp.StatusCode, e)
	}

	// Panorama.
	resp, p := call(t, s, "GET", "/api/public/v1/help?view=panorama", nil)
	if resp.StatusCode != 200 {
		t.Fatal(resp.StatusCode, p)
	}
	ems := p["emergencies"].([]any)
	if len(ems) != 2 {
		t.Fatalf("panorama: %v", p)
	}
	eje := ems[0].(map[string]any)
	if eje["slug"] != "eje-cafetero" || eje["total"] != 6.0 || eje["requests"] != 4.0 || eje["offers"] != 2.0 ||
		eje["neededPeople"] != 12.0+30+4+3 || eje["newestAt"] != recs[7].createdAt {
		t.Errorf("panorama eje-cafetero: %v", eje)
	}
	counts := map[string]float64{}
	for _, c := range eje["counts"].([]any) {
		m := c.(map[string]any)
		counts[fmt.Sprint(m["type"], "/", m["category"], "/", m["urgency"])] = m["count"].(float64)
	}
	want := map[string]float64{"request/salud/urgent": 2, "request/alimentos/needed": 1, "request/refugio/stable": 1,
		"offer/transporte/<nil>": 1, "offer/salud/<nil>": 1}
	if fmt.Sprint(counts) != fmt.Sprint(want) {
		t.Errorf("counts %v, want %v", counts, want)
	}
	_, p = call(t, s, "GET", "/api/public/v1/help?view=panorama&emergencySlug=inundaciones-la-mojana", nil)
	if ems := p["emergencies"].([]any); len(ems) != 1 || ems[0].(map[string]any)["neededPeople"] != 50.0 {
		t.Errorf("panorama of one: %v", p)
	}

	// ETag and 304 on lists, panorama and exports.
	for _, q := range []string{"view=list&category=salud", "view=panorama", "view=list&format=csv", "view=list&format=geojson"} {
		path := "/api/public/v1/help?" + q
		resp, _ := s.Do("GET", path, nil)
		etag := resp.Header.Get("ETag")
		if etag == "" || !strings.Contains(resp.Header.Get("Cache-Control"), "max-age=") {
			t.Fatalf("%s: no ETag or Cache-Control", q)
		}
		time.Sleep(5 * time.Millisecond) // generatedAt moves on; the ETag must not
		resp2, body := call(t, s, "GET", path, nil, "If-None-Match", etag)
		if resp2.StatusCode != 304 || len(body) != 0 {
			t.Errorf("%s: If-None-Match → %d", q, resp2.StatusCode)
		}
	}
	resp, _ = s.Do("GET", "/api/public/v1/help?view=list&category=salud", nil)
	etag := resp.Header.Get("ETag")
	publish(t, s, with(validRequest(), "category", "salud"))
	if resp, _ := call(t, s, "GET", "/api/public/v1/help?view=list&category=salud", nil, "If-None-Match", etag); resp.StatusCode != 200 {
		t.Errorf("after a new record: %d, want 200", resp.StatusCode)
	}

	// Invalid parameters: 400 naming each one.
	for q, wantFields := range map[string][]string{
		"view=lista":                                        {"/query/view"},
		"view=list&limit=0":                                 {"/query/limit"},
		"view=list&limit=101":                               {"/query/limit"},
		"view=list&limit=abc":                               {"/query/limit"},
		"view=list&type=solicitud&category=comida":          {"/query/type", "/query/category"},
		"view=list&urgency=alta":                            {"/query/urgency"},
		"view=list&emergencySlug=nope":                      {"/query/emergencySlug"},
		"view=list&latitude=4.5":                            {"/query/longitude"},
		"view=list&latitude=4.5&longitude=-75&radiusKm=0":   {"/query/radiusKm"},
		"view=list&latitude=4.5&longitude=-75&radiusKm=500": {"/query/radiusKm"},
		"view=list&latitude=x&longitude=-75":                {"/query/latitude"},
		"view=list&radiusKm=5":                              {"/query/radiusKm"},
		"view=list&since=ayer":                              {"/query/since"},
		"view=list&since=2026-01-01T00:00:00Z&q=agua":       {"/query/since"},
		"view=list&status=hidden":                           {"/query/status"},
		"view=list&status=withdrawn":                        {"/query/status"},
		"view=list&cursor=garbage":                          {"/query/cursor"},
		"view=list&format=xml":                              {"/query/format"},
		"view=list&total=no":                                {"/query/total"},
		"view=list&lat=4.5&lng=-75":                         {"/query/lat", "/query/lng"},
		"view=list&type=offer&type=request":                 {"/query/type"},
		"view=list&q=" + strings.Repeat("a", 201):           {"/query/q"},
		"view=detail":                                       {"/query/id"},
		"view=detail&id=nope":                               {"/query/id"},
		"view=detail&id=" + recs[0].id + "&format=csv":      {"/query/format"},
		"view=panorama&emergencySlug=nope":                  {"/query/emergencySlug"},
	} {
		resp, e := call(t, s, "GET", "/api/public/v1/help?"+q, nil)
		if resp.StatusCode != 400 || e["code"] != "invalid_parameter" || !slices.Equal(fields(e), wantFields) {
			t.Errorf("%s: %d %v, want 400 invalid_parameter naming %v", q, resp.StatusCode, e, wantFields)
		}
	}
	// since with the other filters it does not combine with, as with q.
	for _, q := range []string{"municipio=63001", "latitude=4.5&longitude=-75.7"} {
		resp, e := call(t, s, "GET", "/api/public/v1/help?view=list&since=2026-01-01T00:00:00Z&"+q, nil)
		if resp.StatusCode != 400 || e["code"] != "invalid_parameter" || !slices.Equal(fields(e), []string{"/query/since"}) {
			t.Errorf("since with %s: %d %v, want 400 invalid_parameter naming /query/since", q, resp.StatusCode, e)
		}
	}
	// A cursor is bound to its filters.
	a, _ := getList(t, s, "view=list&limit=1")
	if resp, e := call(t, s, "GET", "/api/public/v1/help?view=list&limit=1&type=offer&cursor="+a.NextCursor, nil); resp.StatusCode != 400 || !slices.Equal(fields(e), []string{"/query/cursor"}) {
		t.Errorf("cursor with other filters: %d %v", resp.StatusCode, e)
	}
	// Without view, discovery as before.
	if resp, d := call(t, s, "GET", "/api/public/v1/help", nil); resp.StatusCode != 200 || d["emergencies"] == nil {
		t.Errorf("discovery: %d %v", resp.StatusCode, d)
	}
}

type featureCollection struct {
	Type     string `json:"type"`
	Features []struct {
		Type     string          `json:"type"`
		ID       string          `json:"id"`
		Geometry json.RawMessage `json:"geometry"`
		Props    map[string]any  `json:"properties"`
	} `json:"features"`
	Total      int    `json:"total"`
	NextCursor string `json:"nextCursor"`
}

func TestReadExports(t *testing.T) {
	t.Parallel()
	s := testserver.Start(t, testserver.Options{})
	recs := seedKnown(t, s)
	// A title that a spreadsheet would run as a formula stays text.
	resp, res := publish(t, s, with(validOffer(), "title", "=HYPERLINK(\"http://x\")", "description", "línea 1\nlínea 2, con \"comillas\"", "contactWhatsapp", phoneOf(9)))
	if resp.StatusCode != 201 {
		t.Fatal(res)
	}

	// CSV: header, HXL row, one row per record, parsed by encoding/csv.
	resp, raw := s.Do("GET", "/api/public/v1/help?view=list&format=csv&limit=100", nil)
	s.CheckOpenAPI(s.NewRequest("GET", "/api/public/v1/help?view=list&format=csv&limit=100", nil), resp, raw)
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/csv") {
		t.Fatalf("csv: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	assertNoPhone(t, "csv", raw)
	rows, err := csv.NewReader(bytes.NewReader(raw)).ReadAll()
	if err != nil {
		t.Fatalf("csv does not parse: %v\n%s", err, raw)
	}
	if len(rows) != 2+len(recs)+1 {
		t.Fatalf("csv: %d rows", len(rows))
	}
	col := map[string]int{}
	for i, name := range rows[0] {
		col[name] = i
		if !strings.HasPrefix(rows[1][i], "#") {
			t.Errorf("HXL row: column %s has %q", name, rows[1][i])
		}
	}
	if rows[1][col["latitude"]] != "#geo+lat" || rows[1][col["longitude"]] != "#geo+lon" {
		t.Errorf("HXL row %v", rows[1])
	}
	newest := rows[2]
	if newest[col["title"]] != "'=HYPERLINK(\"http://x\")" || newest[col["description"]] != "línea 1\nlínea 2, con \"comillas\"" {
		t.Errorf("csv text: %q / %q", newest[col["title"]], newest[col["description"]])
	}
	if last := rows[len(rows)-1]; last[col["id"]] != recs[0].id || last[col["title"]] != "Médico para adultos mayores" || last[col["urgency"]] != "urgent" || last[col["latitude"]] == "" {
		t.Errorf("csv oldest row %v", last)
	}

	// GeoJSON: a FeatureCollection of Points [lon, lat]; an offer without coordinates has geometry null.
	for _, q := range []string{"view=list&format=geojson&limit=100", "view=list&format=geojson&latitude=4.5339&longitude=-75.6811&radiusKm=5"} {
		resp, raw = s.Do("GET", "/api/public/v1/help?"+q, nil)
		s.CheckOpenAPI(s.NewRequest("GET", "/api/public/v1/help?"+q, nil), resp, raw)
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/geo+json" {
			t.Fatalf("geojson: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		assertNoPhone(t, "geojson", raw)
		var fc featureCollection
		if err := json.Unmarshal(raw, &fc); err != nil {
			t.Fatal(err)
		}
		if fc.Type != "FeatureCollection" || len(fc.Features) != fc.Total || fc.Total == 0 {
			t.Fatalf("geojson: %s", raw)
		}
		nulls := 0
		for _, f := range fc.Features {
			if f.Type != "Feature" || f.ID != f.Props["id"] {
				t.Errorf("feature %v", f)
			}
			if string(f.Geometry) == "null" {
				nulls++
				continue
			}
			var g struct {
				Type        string    `json:"type"`
				Coordinates []float64 `json:"coordinates"`
			}
			if err := json.Unmarshal(f.Geometry, &g); err != nil || g.Type != "Point" || len(g.Coordinates) != 2 ||
				g.Coordinates[0] < -180 || g.Coordinates[0] > 180 || g.Coordinates[1] < -90 || g.Coordinates[1] > 90 {
				t.Errorf("geometry %s", f.Geometry)
				continue
			}
			loc := f.Props["location"].(map[string]any)
			if g.Coordinates[0] != loc["longitude"] || g.Coordinates[1] != loc["latitude"] {
				t.Errorf("geometry %v does not match location %v", g.Coordinates, loc)
			}
		}
		if strings.Contains(q, "radiusKm") != (nulls == 0) {
			t.Errorf("%s: %d null geometries", q, nulls)
		}
	}
	// Exports page too, with a Link header to the next page.
	resp, _ = s.Do("GET", "/api/public/v1/help?view=list&format=csv&limit=2", nil)
	if link := resp.Header.Get("Link"); !strings.Contains(link, "cursor=") || !strings.Contains(link, `rel="next"`) {
		t.Errorf("Link %q", link)
	}
}

func TestReadPagingUnderConcurrentInserts(t *testing.T) {
	t.Parallel()
	s := testserver.Start(t, testserver.Options{})
	// Seeded records lie 0 to 1.3 km north of the centre, so radius pages end at different distances.
	var before []string
	for i := range 60 {
		_, res := publish(t, s, with(validRequest(), "category", []string{"salud", "refugio"}[i%2], "latitude", 4.5339+float64(i)*0.0002))
		before = append(before, res["id"].(string))
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	for w := range 3 { // writers keep publishing while the reader pages, nearer and farther than the cursor
		wg.Add(1)
		go func() {
			defer wg.Done()
			client := &http.Client{Timeout: 10 * time.Second}
			for n := 0; !stop.Load(); n++ {
				body := mustJSON(t, with(validRequest(), "latitude", 4.5339+float64((n*7+w*13)%70)*0.0002))
				resp, err := client.Post(s.URL+"/api/public/v1/help", "application/json", bytes.NewReader(body))
				if err != nil {
					t.Errorf("writer %d: %v", w, err)
					return
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusCreated {
					t.Errorf("writer %d: %d", w, resp.StatusCode)
					return
				}
			}
		}()
	}
	for _, q := range []string{"view=list&limit=7", "view=list&limit=4&category=salud", "view=list&limit=6&latitude=4.5339&longitude=-75.6811&radiusKm=2"} {
		ids, _, _ := listIDs(t, s, q)
		seen := map[string]int{}
		for _, id := range ids {
			if seen[id]++; seen[id] > 1 {
				t.Errorf("%s: %s returned twice", q, id)
			}
		}
		for i, id := range before {
			if strings.Contains(q, "salud") && i%2 == 1 {
				continue
			}
			if seen[id] != 1 {
				t.Errorf("%s: %s (seeded #%d) missed", q, id, i)
			}
		}
	}
	stop.Store(true)
	wg.Wait()
}

func TestReadDetailRateLimit(t *testing.T) {
	t.Parallel()
	s := testserver.Start(t, testserver.Options{DetailEvents: 3})
	_, res := publish(t, s, validRequest())
	id := res["id"].(string)
	_, d := call(t, s, "GET", "/api/public/v1/help", nil)
	if rl, _ := d["detailRateLimit"].(map[string]any); rl["events"] != 3.0 || rl["windowSeconds"] != 60.0 {
		t.Errorf("discovery detailRateLimit: %v", d["detailRateLimit"])
	}
	for i := range 3 {
		if resp, _ := call(t, s, "GET", "/api/public/v1/help?view=detail&id="+id, nil); resp.StatusCode != 200 {
			t.Fatalf("detail %d: %d", i, resp.StatusCode)
		}
	}
	resp, e := call(t, s, "GET", "/api/public/v1/help?view=detail&id="+id, nil)
	if resp.StatusCode != 429 || e["code"] != "rate_limited" || resp.Header.Get("Retry-After") == "" || !strings.Contains(fmt.Sprint(e["error"]), "teléfono") {
		t.Fatalf("over the detail limit: %d %v", resp.StatusCode, e)
	}
	// A pair Caddy's query matcher cannot parse makes it see no view=detail: such a query is refused
	// whole, never served past the limit.
	for _, extra := range []string{"&x=%zz", "&%", "&;", ";", "&a;b=1"} {
		resp, e := call(t, s, "GET", "/api/public/v1/help?view=detail&id="+id+extra, nil)
		if resp.StatusCode != 400 || e["code"] != "invalid_parameter" {
			t.Errorf("detail with %q over the limit: %d %v, want 400 invalid_parameter", extra, resp.StatusCode, e)
		}
	}
	// Lists are not held back by the detail limit.
	if resp, _ := call(t, s, "GET", "/api/public/v1/help?view=list", nil); resp.StatusCode != 200 {
		t.Fatalf("list after detail limit: %d", resp.StatusCode)
	}
}
