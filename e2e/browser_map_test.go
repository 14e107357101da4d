package e2e

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/directaid/directaid/internal/testserver"
)

// tileServer is a loopback stand-in for a map tile server: a plain tile for every /{z}/{x}/{y}.png, or
// 503 while failing is set. It counts the tiles asked for.
type tileServer struct {
	*httptest.Server
	asked, failing atomic.Int64
}

func newTileServer(t *testing.T) *tileServer {
	img := image.NewRGBA(image.Rect(0, 0, 256, 256))
	for i := range img.Pix {
		img.Pix[i] = 0xe8
	}
	img.Set(0, 0, color.Black)
	var tile bytes.Buffer
	if err := png.Encode(&tile, img); err != nil {
		t.Fatal(err)
	}
	ts := &tileServer{}
	path := regexp.MustCompile(`^/[0-9]+/[0-9]+/[0-9]+\.png$`)
	ts.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ts.asked.Add(1)
		if !path.MatchString(r.URL.Path) || ts.failing.Load() != 0 {
			http.Error(w, "no", http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "image/png")
		_, _ = w.Write(tile.Bytes())
	}))
	t.Cleanup(ts.Close)
	return ts
}

// TestBrowserMap: a volunteer opens the requests of the Eje Cafetero on the map from the list's «Ver
// mapa»: the filter goes along (and shows in the map's form), every request is on the map (five at one
// village's point as one group that lists them, one alone at Pereira), each links to its record and none shows a
// contact; the tiles come from the tile server the Caddyfile names (a loopback one here), allowed by the
// page's Content-Security-Policy; axe finds nothing serious. When the tiles fail the page says so and the
// points stay; without JavaScript the page is the list. Screenshots at 390×844 in test-artifacts/.
func TestBrowserMap(t *testing.T) {
	artifacts := needBrowser(t)
	axe := installAxe(t)
	tiles := newTileServer(t)
	s := testserver.Start(t, testserver.Options{Emergencies: fmt.Sprintf(`map_tiles "%s/{z}/{x}/{y}.png" "© Mapas de prueba"`, tiles.URL) +
		testserver.TwoEmergencies})
	var armenia []string
	for i := range 5 {
		_, out := publish(t, s, with(validRequest(), "title", fmt.Sprintf("Insulina para %d personas", i+1), // placed at a village's point
			"latitude", nil, "longitude", nil, "placeCode", "63001001"))
		armenia = append(armenia, out["id"].(string))
	}
	_, out := publish(t, s, with(validRequest(), "title", "Rescate en Pereira", "category", "rescate", "latitude", 4.8133, "longitude", -75.6961))
	pereira := out["id"].(string)
	publish(t, s, with(validOffer(), "latitude", 4.54, "longitude", -75.67))
	publish(t, s, validOffer()) // without coordinates: on the list only

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	p := &phone{ctx: startPhone(ctx, t), s: s, artifacts: artifacts}
	p.watchConsole(t)

	p.open(t, "/emergencias/eje-cafetero?type=request")
	href := run(p.ctx, t, "«Ver mapa»", chromedp.Evaluate[string](`(Array.from(document.querySelectorAll('main a')).find(a => a.textContent === 'Ver mapa') || {}).href || ''`))
	if href != s.URL+"/emergencias/eje-cafetero/mapa?type=request" {
		t.Fatalf("the list's «Ver mapa» goes to %q", href)
	}
	p.do(t, "open the map", chromedp.Navigate(href), chromedp.WaitVisible(chromedp.CSS("main h1")))
	waitMap := func(want string) string {
		t.Helper()
		run(p.ctx, t, "map status", chromedp.Poll[bool](fmt.Sprintf(`document.getElementById('mapa-estado').textContent.indexOf(%q) >= 0`, want),
			chromedp.WithPollingTimeout(20*time.Second)))
		return p.text(t, "mapa-estado")
	}
	status := waitMap("El mapa muestra 6 publicaciones")
	if got := run(p.ctx, t, "type filter", chromedp.Value(chromedp.ID("filtro-type"))); got != "request" {
		t.Errorf("the map's filter form shows type %q, want request", got)
	}
	counts := run(p.ctx, t, "markers", chromedp.Evaluate[[]int](`[document.querySelectorAll('#mapa .mapa-punto').length,
		Array.from(document.querySelectorAll('#mapa .mapa-grupo')).reduce((n, g) => n + Number(g.textContent), 0),
		document.querySelectorAll('#mapa .mapa-grupo').length]`))
	if len(counts) != 3 || counts[0]+counts[1] != 6 || counts[2] != 1 {
		t.Errorf("the map shows %v (points, records in groups, groups); want the 6 requests, 5 of them in one group (%s)", counts, status)
	}
	run(p.ctx, t, "tiles", chromedp.Poll[bool](`document.querySelectorAll('#mapa img.leaflet-tile-loaded').length > 0`, chromedp.WithPollingTimeout(20*time.Second)))
	if tiles.asked.Load() == 0 {
		t.Error("no tile was asked of the tile server")
	}
	if got := run(p.ctx, t, "attribution", chromedp.Text(chromedp.CSS("#mapa .leaflet-control-attribution"))); !strings.Contains(got, "© Mapas de prueba") {
		t.Errorf("the map's attribution: %q", got)
	}
	p.screenshot(t, "mapa")

	// settled waits until the map stands still: a popup pans the map clear of the zoom buttons, and a tap
	// during the pan lands beside its target. Still means no pan or zoom animation and the popup at the
	// same place in two reads 100 ms apart.
	settled := func(what string) {
		t.Helper()
		run(p.ctx, t, what, chromedp.Poll[bool](`(() => {
			const el = document.querySelector('#mapa .leaflet-popup');
			if (document.querySelector('#mapa .leaflet-pan-anim, #mapa .leaflet-zoom-anim')) { window.__mapa = ''; return false; }
			const r = el ? el.getBoundingClientRect() : {x: -1, y: -1};
			const k = r.x + ',' + r.y, was = window.__mapa;
			window.__mapa = k;
			return was === k;
		})()`, chromedp.WithPollingInterval(100*time.Millisecond), chromedp.WithPollingTimeout(10*time.Second)))
	}
	// clear reports where the open popup overlaps the zoom buttons, which covered its first lines and
	// its link (a tap there zoomed out), or runs past the map's sides (its close button off the screen);
	// "" when it does neither.
	clear := func() string {
		t.Helper()
		return run(p.ctx, t, "popup clear of the buttons", chromedp.Evaluate[string](`(() => {
			const a = document.querySelector('#mapa .leaflet-popup-content-wrapper').getBoundingClientRect();
			const b = document.querySelector('#mapa .leaflet-control-zoom').getBoundingClientRect();
			const m = document.getElementById('mapa').getBoundingClientRect();
			const over = a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom;
			if (over) return 'popup ' + JSON.stringify(a) + ' under the buttons ' + JSON.stringify(b);
			return a.right > m.right + 1 || a.left < m.left - 1 ? 'popup ' + JSON.stringify(a) + ' past the map ' + JSON.stringify(m) : '';
		})()`))
	}

	// The point alone: its popup links to its record.
	p.do(t, "tap the point", chromedp.Click(chromedp.CSS("#mapa .mapa-punto"), chromedp.NodeVisible))
	p.do(t, "popup", chromedp.WaitVisible(chromedp.CSS("#mapa .leaflet-popup-content a")))
	settled("the point's popup opened")
	if over := clear(); over != "" {
		t.Errorf("the point's %s", over)
	}
	if got := run(p.ctx, t, "popup link", chromedp.Evaluate[string](`document.querySelector('#mapa .leaflet-popup-content a').href`)); got != s.URL+"/ayudas/"+pereira {
		t.Errorf("the point's popup links to %q, want its record %s", got, pereira)
	}
	// The group at one place: its popup lists its five records and links to the list around that place.
	p.do(t, "close", chromedp.Evaluate[chromedp.Void](`document.querySelector('#mapa .leaflet-popup-close-button').click()`))
	// It fades out before it leaves, over what is under it: the group's tap waits for it to be gone.
	run(p.ctx, t, "the point's popup gone", chromedp.Poll[bool](`!document.querySelector('#mapa .leaflet-popup')`, chromedp.WithPollingTimeout(5*time.Second)))
	settled("the point's popup closed")
	// The group is tapped by its element: the page, scrolled by the point's popup and its closing, is
	// still moving when a click by position lands, on another element then.
	p.do(t, "tap the group", chromedp.Evaluate[chromedp.Void](`document.querySelector('#mapa .mapa-grupo').click()`))
	// Its popup fades in, its list read afresh at each poll (Leaflet may build the content again).
	run(p.ctx, t, "the group's popup", chromedp.Poll[bool](`document.querySelectorAll('#mapa .leaflet-popup').length === 1 &&
		document.querySelectorAll('#mapa .leaflet-popup-content li').length > 0 &&
		getComputedStyle(document.querySelector('#mapa .leaflet-popup')).opacity === '1'`, chromedp.WithPollingTimeout(10*time.Second)))
	settled("the group's popup opened")
	if over := clear(); over != "" {
		t.Errorf("the group's %s", over)
	}
	if got := run(p.ctx, t, "group's place", chromedp.Text(chromedp.CSS("#mapa .leaflet-popup-content p"))); got != "5 publicaciones en El Caimo, Armenia (Quindío):" {
		t.Errorf("the group's popup begins %q, want the village's name", got)
	}
	links := run(p.ctx, t, "group links", chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll('#mapa .leaflet-popup-content a')).map(a => a.href)`))
	for _, id := range armenia {
		if !strings.Contains(strings.Join(links, " "), "/ayudas/"+id) {
			t.Errorf("the group's popup lacks the record %s: %v", id, links)
		}
	}
	if len(links) != 6 || !strings.Contains(links[0], "/emergencias/eje-cafetero?") || !strings.Contains(links[0], "type=request") || !strings.Contains(links[0], "radiusKm=1") {
		t.Errorf("the group's popup: %v, want its 5 records and the list around it with the filter", links)
	}
	p.screenshot(t, "mapa-grupo")
	if text := run(p.ctx, t, "map text", chromedp.Text(chromedp.ID("mapa"))); strings.Contains(text, "Ana Gómez") || strings.Contains(text, "300") {
		t.Errorf("the map shows contact data:\n%s", text)
	}
	for _, v := range axeViolations(t, p.ctx, axe) {
		t.Errorf("axe on the map: %s", v)
	}

	// The tile server fails: the page says so, the points stay.
	tiles.failing.Store(1)
	p.do(t, "reload without tiles", chromedp.Navigate(s.URL+"/emergencias/eje-cafetero/mapa?type=request&category=rescate"), chromedp.WaitVisible(chromedp.CSS("main h1")))
	status = waitMap("El fondo del mapa no cargó")
	if !strings.Contains(status, "El mapa muestra 1 publicación") {
		t.Errorf("without tiles: %q", status)
	}
	if n := run(p.ctx, t, "points", chromedp.Evaluate[int](`document.querySelectorAll('#mapa .mapa-punto').length`)); n != 1 {
		t.Errorf("without tiles the map shows %d points, want 1", n)
	}
	p.screenshot(t, "mapa-sin-teselas")
	tiles.failing.Store(0)

	// Without JavaScript: no map, the list with a link to each record.
	setScripts(t, p.ctx, false)
	asked := tiles.asked.Load()
	p.do(t, "open without JS", chromedp.Navigate(s.URL+"/emergencias/eje-cafetero/mapa?type=request"), chromedp.WaitVisible(chromedp.CSS("main h1")))
	shown := run(p.ctx, t, "list", chromedp.Evaluate[[]any](`[document.getElementById('mapa').hidden,
		Array.from(document.querySelectorAll('main h3 a')).map(a => a.getAttribute('href'))]`))
	if hidden, _ := shown[0].(bool); !hidden {
		t.Error("without JavaScript the empty map box shows")
	}
	if items, _ := shown[1].([]any); len(items) != 6 || !strings.Contains(fmt.Sprint(items), "/ayudas/"+pereira) {
		t.Errorf("without JavaScript the map page lists %v, want the 6 requests", items)
	}
	if tiles.asked.Load() != asked {
		t.Error("without JavaScript the page asked for tiles")
	}
	p.screenshot(t, "mapa-nojs")
	for _, v := range axeViolations(t, p.ctx, axe) {
		t.Errorf("axe on the map without JavaScript: %s", v)
	}
	setScripts(t, p.ctx, true)
	for _, m := range p.consoleErrors() {
		t.Errorf("browser console: %s", m)
	}
}
