package site

import (
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/directaid/directaid/site/sitetest"
)

// TestMapPage: an emergency's map is its list with the map's data: the filters of its URL go to the
// GeoJSON it reads and stay in its links (paging, the filter form, back to the list), the list's page
// links to the map with the same filters, the tile server is an image source of the map page's
// Content-Security-Policy only, and the Markdown twin is the list.
func TestMapPage(t *testing.T) {
	s := &records{}
	for range 25 {
		s.add(eje.Slug, "offer", "Ofrecimiento")
	}
	s.add(eje.Slug, "request", "Solicitud de insulina")
	o := s.options(eje)
	o.MapTiles = MapTiles{URL: "https://{s}.tiles.example.org/{z}/{x}/{y}.png", Attribution: "© Ejemplo"}
	h, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	site, c := h.(*handler), sitetest.HandlerClient(h)

	res, body := sitetest.Get(t, c, testBase+"/emergencias/eje-cafetero/mapa?type=offer")
	page := string(body)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("the map: %d\n%s", res.StatusCode, page)
	}
	if csp := res.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "img-src 'self' data: https://*.tiles.example.org;") ||
		strings.Count(csp, "tiles.example.org") != 1 {
		t.Errorf("the map's CSP does not let images (only) come from the tile server: %q", csp)
	}
	attr := func(name string) string {
		m := regexp.MustCompile(`id="mapa"[^>]* ` + name + `="([^"]*)"`).FindStringSubmatch(page)
		if m == nil {
			t.Fatalf("the map has no %s:\n%s", name, page)
		}
		return html.UnescapeString(m[1])
	}
	data, err := url.Parse(attr("data-datos"))
	if err != nil || data.Path != "/api/public/v1/help" {
		t.Fatalf("the map's data: %q", attr("data-datos"))
	}
	want := url.Values{"view": {"list"}, "format": {"geojson"}, "emergencySlug": {"eje-cafetero"}, "type": {"offer"}, "limit": {"100"}, "total": {"none"}}
	if got := data.Query(); got.Encode() != want.Encode() {
		t.Errorf("the map reads %v, want %v", got, want)
	}
	if got := attr("data-teselas"); got != o.MapTiles.URL || attr("data-atribucion") != "© Ejemplo" {
		t.Errorf("the map's tiles: %q, %q", got, attr("data-atribucion"))
	}
	for _, want := range []string{`<h1>Mapa: Terremoto en el Eje Cafetero</h1>`, `action="/emergencias/eje-cafetero/mapa"`,
		`href="/emergencias/eje-cafetero/mapa"`, // the filter form's «Quitar los filtros»
		`href="` + testBase + `/emergencias/eje-cafetero?type=offer">Ver la lista sin el mapa`,
		`href="` + testBase + `/emergencias/eje-cafetero/mapa?cursor=`, // «Ver más»: the next page of the map's list
		`<script src="` + site.mapJS + `" defer>`, `<link rel="stylesheet" href="` + site.mapCSS + `">`} {
		if !strings.Contains(page, want) {
			t.Errorf("the map lacks %s", want)
		}
	}
	if strings.Contains(page, "Solicitud de insulina") || !strings.Contains(page, "Ofrecimiento") {
		t.Error("the map's list does not apply its filter")
	}

	for _, a := range []string{site.mapJS, site.mapCSS} {
		if res, b := sitetest.Get(t, c, testBase+a); res.StatusCode != http.StatusOK || res.Header.Get("Cache-Control") != assetCache || len(b) < 10000 {
			t.Errorf("GET %s: %d, Cache-Control %q, %d bytes", a, res.StatusCode, res.Header.Get("Cache-Control"), len(b))
		}
	}
	if _, js := sitetest.Get(t, c, testBase+site.mapJS); !strings.HasPrefix(string(js), "/* Leaflet BSD 2-Clause License") {
		t.Errorf("the map's script does not start with Leaflet's licence: %.80q", js)
	}

	res, body = sitetest.Get(t, c, testBase+"/emergencias/eje-cafetero?type=offer")
	if strings.Contains(res.Header.Get("Content-Security-Policy"), "tiles.example.org") {
		t.Error("the list's page lets images come from the tile server")
	}
	if !strings.Contains(string(body), `href="`+testBase+`/emergencias/eje-cafetero/mapa?type=offer">Ver mapa</a>`) {
		t.Error("the list's page does not link to its map with its filters")
	}
	if strings.Contains(string(body), site.mapJS) || strings.Contains(string(body), `id="mapa"`) {
		t.Error("the list's page loads the map")
	}

	_, twin := sitetest.Get(t, c, testBase+"/emergencias/eje-cafetero/mapa.md?type=offer")
	if !strings.HasPrefix(string(twin), "# Mapa: Terremoto en el Eje Cafetero") || !strings.Contains(string(twin), "### [Ofrecimiento]("+testBase+"/ayudas/") {
		t.Errorf("the map's twin is not its list:\n%s", twin)
	}
}

// TestMapTilesChecked: the tile settings an operator can get wrong are refused with what is wrong.
func TestMapTilesChecked(t *testing.T) {
	for _, tc := range []struct{ url, attribution, want string }{
		{"https://tile.example.org/{z}/{x}.png", "©", "lacks {y}"},
		{"ftp://tile.example.org/{z}/{x}/{y}.png", "©", "absolute http(s) URL"},
		{"/tiles/{z}/{x}/{y}.png", "©", "absolute http(s) URL"},
		{"https://tile.example.org; script-src */{z}/{x}/{y}.png", "©", "spaces, quotes"},
		{"https://a.{s}.example.org/{z}/{x}/{y}.png", "©", "only as the first label"},
		{"https://tile.example.org/{z}/{x}/{y}.png", " ", "attribution"},
		{"https://tile.example.org/{z}/{x}/{y}.png", "a\nb", "attribution"},
	} {
		err := CheckMapTiles(MapTiles{URL: tc.url, Attribution: tc.attribution})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q %q: %v, want an error about %s", tc.url, tc.attribution, err, tc.want)
		}
		if _, err := New(Options{MapTiles: MapTiles{URL: tc.url, Attribution: tc.attribution}}); err == nil {
			t.Errorf("New accepts the tiles %q %q", tc.url, tc.attribution)
		}
	}
	if err := CheckMapTiles(DefaultMapTiles); err != nil {
		t.Errorf("the default tiles: %v", err)
	}
}
