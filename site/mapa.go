package site

import (
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/url"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/directaid/directaid/internal/webutil"
	"github.com/directaid/directaid/schema"
)

// The map of an emergency (/emergencias/{slug}/mapa) is the emergency's page with its list, under a map
// of the same records: Leaflet (vendored in assets/leaflet with its licence) and assets/mapa.js read the
// list as GeoJSON from the public API, with the page's filters, and group near points on a grid. The
// background tiles come from the operator's tile server (MapTiles); the Content-Security-Policy of the
// map page alone lets images come from its host. Without JavaScript, or without the tiles or the data,
// the list is still there, as on the emergency's page.

// mapSuffix ends the path of an emergency's map: the emergency's path, then this.
const mapSuffix = "/mapa"

// mapPath is the path of an emergency's map.
func mapPath(slug string) string { return schema.EmergencyPath(slug) + mapSuffix }

// MapTiles is the background of the maps: an XYZ tile URL template and the attribution its licence asks
// for, which every map shows.
type MapTiles struct {
	// URL is the template of a tile's address, with {z}, {x} and {y} (and optionally {s}, a subdomain,
	// as the first label of the host): https://tile.openstreetmap.org/{z}/{x}/{y}.png.
	URL string `json:"url"`
	// Attribution is plain text, e.g. «© OpenStreetMap».
	Attribution string `json:"attribution"`
}

// DefaultMapTiles are OpenStreetMap's standard tiles, what a map shows unless the operator sets others.
var DefaultMapTiles = MapTiles{URL: "https://tile.openstreetmap.org/{z}/{x}/{y}.png", Attribution: "© colaboradores de OpenStreetMap"}

// CheckMapTiles validates t: an absolute http(s) URL template with {z}, {x} and {y}, and a one-line
// attribution. The error says what is wrong, for the operator's configuration.
func CheckMapTiles(t MapTiles) error {
	_, err := t.origin()
	return err
}

// origin is the source of the tiles in a Content-Security-Policy: scheme and host (a {s} first label
// becomes *).
func (t MapTiles) origin() (string, error) {
	for _, p := range []string{"{z}", "{x}", "{y}"} {
		if !strings.Contains(t.URL, p) {
			return "", fmt.Errorf("map tiles URL %q lacks %s: it must be a template like https://tile.openstreetmap.org/{z}/{x}/{y}.png", t.URL, p)
		}
	}
	if strings.ContainsFunc(t.URL, func(r rune) bool {
		return unicode.IsSpace(r) || unicode.IsControl(r) || strings.ContainsRune(`"'<>\;,`, r)
	}) {
		return "", fmt.Errorf("map tiles URL %q holds spaces, quotes or one of < > \\ ; ,", t.URL)
	}
	raw, wild := t.URL, false
	if i := strings.Index(raw, "://{s}."); i >= 0 {
		raw, wild = raw[:i+3]+raw[i+7:], true
	}
	u, err := url.Parse(strings.NewReplacer("{z}", "0", "{x}", "0", "{y}", "0", "{r}", "").Replace(raw))
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.User != nil || u.Host == "" || u.Opaque != "" ||
		!webutil.ValidHost(u.Host) {
		return "", fmt.Errorf("map tiles URL %q must be an absolute http(s) URL (with {s}, if any, only as the first label of its host)", t.URL)
	}
	host := u.Host
	if a := t.Attribution; strings.TrimSpace(a) == "" || utf8.RuneCountInString(a) > 200 || strings.ContainsFunc(a, unicode.IsControl) {
		return "", errors.New("map tiles attribution must be one line of 1 to 200 characters (the tiles' licence asks for it)")
	}
	if wild {
		host = "*." + host
	}
	return u.Scheme + "://" + host, nil
}

// addMap adds the maps' assets (kept by the service worker on first use) and checks the tiles.
func (h *handler) addMap() error {
	h.tiles = h.o.MapTiles
	if h.tiles == (MapTiles{}) {
		h.tiles = DefaultMapTiles
	}
	if err := CheckMapTiles(h.tiles); err != nil {
		return fmt.Errorf("site: %w", err)
	}
	h.mapCSP = mapCSP(h.tiles)
	// Leaflet's licence (BSD 2-Clause) goes with every copy: at the head of the script that carries it.
	var js []byte
	for _, f := range []string{"leaflet/LICENSE", "leaflet/leaflet.js", "mapa.js"} {
		b, err := files.ReadFile("assets/" + f)
		if err != nil {
			return err
		}
		if f == "leaflet/LICENSE" {
			b = []byte("/* Leaflet " + strings.ReplaceAll(string(b), "*/", "* /") + "*/\n")
		}
		js = append(js, b...)
	}
	h.mapJS = h.addBytes("mapa.js", js, mime.TypeByExtension(".js"))
	var err error
	if h.mapCSS, err = h.addAsset("mapa.css", "leaflet/leaflet.css", "mapa.css"); err != nil {
		return err
	}
	h.onUse[h.mapJS], h.onUse[h.mapCSS] = true, true
	return nil
}

// mapCSP is csp with the tile server allowed as a source of images, for the map pages.
func mapCSP(t MapTiles) string {
	origin, err := t.origin()
	if err != nil { // New checked it
		panic(err)
	}
	return strings.Replace(csp, "img-src 'self' data:", "img-src 'self' data: "+origin, 1)
}

// mapPoints bounds how many records a map shows: mapPages pages of schema.MaxListLimit, the first of
// the list's order (the filters narrow it; the page says so when there are more).
const mapPages = 5

// mapView is what the map's template sees.
type mapView struct {
	Data               string // the first page of the map's records, as GeoJSON from the public API
	Pages              int    // how many pages of Data mapa.js reads at most
	List               string // the emergency's page with the same filters
	Tiles, Attribution string
	Labels             string // JSON: the words for the records' type, category and urgency
}

// mapLabels are the words of enumLabels a map's popups use (types, categories, urgencies), as JSON.
var mapLabels = func() string {
	words := map[string]string{}
	for _, k := range slices.Concat([]string{schema.TypeRequest, schema.TypeOffer}, schema.Categories, schema.Urgencies) {
		words[k] = enumLabels[k]
	}
	b, err := json.Marshal(words)
	if err != nil {
		panic(err)
	}
	return string(b)
}()

// mapLinks points the list of an emergency's page to its map («Ver mapa», with the same filters) and,
// on the map itself, points the list's links (paging, filters) to the map and gives the map its data.
func (v *view) mapLinks(pg *page) {
	lv, fv := pg.list, pg.filter
	if lv == nil {
		return
	}
	list, onMap := schema.EmergencyPath(pg.emergency.Slug), mapPath(pg.emergency.Slug)
	query := ""
	if lv.API != "" {
		if u, err := url.Parse(lv.API); err == nil {
			q := u.Query()
			for _, k := range []string{"view", "emergencySlug", "cursor"} {
				q.Del(k)
			}
			if len(q) > 0 {
				query = "?" + q.Encode()
			}
		}
	}
	if !pg.onMap {
		lv.MapURL = v.base + onMap + query
		return
	}
	lv.ListURL = v.base + list + query
	swap := func(s string) string {
		for _, prefix := range []string{v.base + list, list} {
			if rest, ok := strings.CutPrefix(s, prefix); ok && (rest == "" || rest[0] == '?') {
				return strings.TrimSuffix(prefix, list) + onMap + rest
			}
		}
		return s
	}
	lv.Next, lv.First, lv.Reset, lv.Unattended.URL = swap(lv.Next), swap(lv.First), swap(lv.Reset), swap(lv.Unattended.URL)
	for i := range lv.Guesses {
		lv.Guesses[i].URL = swap(lv.Guesses[i].URL)
	}
	if fv != nil {
		fv.Action, fv.Reset = swap(fv.Action), swap(fv.Reset)
	}
	if len(lv.Errors) > 0 {
		return
	}
	data, _ := url.Parse(lv.API)
	q := data.Query()
	q.Set("format", schema.FormatGeoJSON)
	q.Set("limit", fmt.Sprint(schema.MaxListLimit))
	q.Set("total", "none")
	q.Del("cursor")
	data.RawQuery = q.Encode()
	tiles := v.h.tiles
	pg.mapv = &mapView{Data: data.RequestURI(), Pages: mapPages, List: list + query, Tiles: tiles.URL, Attribution: tiles.Attribution, Labels: mapLabels}
}
