package e2e

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/directaid/directaid/backend/places"
	"github.com/directaid/directaid/internal/testserver"
	"github.com/directaid/directaid/schema"
)

// TestBrowserPlacePicker: with JavaScript, «¿Dónde?» fetches the place list when first touched (not with
// the page), then answers on the phone as the person types, from the list alone (no request while typing), a result fills departamento, municipio and centro poblado,
// the selects cascade, and the request published without coordinates has the place's point, marked
// approximate.
func TestBrowserPlacePicker(t *testing.T) {
	artifacts := needBrowser(t)
	s := testserver.Start(t, testserver.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	p := &phone{ctx: startPhone(ctx, t), s: s, artifacts: artifacts}
	p.watchConsole(t)

	p.open(t, "/pedir")
	defer func() {
		for _, m := range p.consoleErrors() {
			t.Errorf("browser console: %s", m)
		}
	}()
	// The list comes when the picker is first touched, not with the page.
	if run(p.ctx, t, "list fetched", chromedp.Evaluate[bool](`performance.getEntriesByType('resource').some(e => e.name.indexOf('.tsv') >= 0)`)) {
		t.Error("/pedir fetched the place list before the picker was used")
	}
	p.do(t, "touch the picker", chromedp.Click(chromedp.ID("f-lugar-buscar"), chromedp.NodeVisible))
	run(p.ctx, t, "place list loaded", chromedp.Poll[bool](`document.getElementById('lugar').classList.contains('al-instante')`,
		chromedp.WithPollingTimeout(15*time.Second)))
	if run(p.ctx, t, "steps hidden", chromedp.Evaluate[int](`Array.from(document.querySelectorAll('#lugar .paso')).filter(b => b.offsetParent).length`)) != 0 {
		t.Errorf("the no-JavaScript step buttons show beside the instant picker")
	}
	// Typed without accents, answered on the phone.
	p.do(t, "type a place", chromedp.SendKeys(chromedp.ID("f-lugar-buscar"), "san jose del guaviare"))
	first := run(p.ctx, t, "first result", chromedp.Evaluate[string](`(document.querySelector('#lugar-resultados button') || {}).textContent || ''`))
	if first != "San José del Guaviare (Guaviare)" {
		t.Errorf("first result for «san jose del guaviare»: %q", first)
	}
	p.screenshot(t, "pedir-lugar-busqueda")
	// A place as people say it: «pueblo tapao» is Pueblo Tapado, as the server's searches read it.
	p.do(t, "clear", chromedp.Evaluate[chromedp.Void](`document.getElementById('f-lugar-buscar').value = ''`))
	p.do(t, "type pueblo tapao", chromedp.SendKeys(chromedp.ID("f-lugar-buscar"), "pueblo tapao"))
	if first := run(p.ctx, t, "first result", chromedp.Evaluate[string](`(document.querySelector('#lugar-resultados button') || {}).textContent || ''`)); first != "Pueblo Tapado, Montenegro (Quindío)" {
		t.Errorf("first result for «pueblo tapao»: %q", first)
	}
	// A typo gets the names like it, as the server's «Buscar» step gives them; the words people put
	// before a name are left out.
	for typed, want := range map[string]string{"armenai": "Armenia (Quindío)", "vereda el kaimo": "El Caimo, Armenia (Quindío)", "cerca de montenegro": "Montenegro (Quindío)", "dos quebradas": "Dosquebradas (Risaralda)"} {
		p.do(t, "clear", chromedp.Evaluate[chromedp.Void](`document.getElementById('f-lugar-buscar').value = ''`))
		p.do(t, "type "+typed, chromedp.SendKeys(chromedp.ID("f-lugar-buscar"), typed))
		got := run(p.ctx, t, "results", chromedp.Evaluate[string](`document.getElementById('lugar-resultados').textContent`))
		if !strings.Contains(got, want) {
			t.Errorf("results for «%s»: %q, want %s", typed, got, want)
		}
		if guessed := strings.Contains(got, "¿Quiso decir…?"); guessed != (typed == "armenai" || typed == "vereda el kaimo") {
			t.Errorf("results for «%s»: %q (a guess: %v)", typed, got, guessed)
		}
	}
	// The emergency chosen, a guess is of its area alone, as the server's search gives it.
	p.do(t, "choose the Eje Cafetero", chromedp.SetValue(chromedp.ID("f-emergencySlug"), "eje-cafetero"),
		chromedp.Evaluate[chromedp.Void](`document.getElementById('f-emergencySlug').dispatchEvent(new Event('change'))`))
	p.do(t, "clear", chromedp.Evaluate[chromedp.Void](`document.getElementById('f-lugar-buscar').value = ''`))
	p.do(t, "type cordova", chromedp.SendKeys(chromedp.ID("f-lugar-buscar"), "cordova"))
	if got := run(p.ctx, t, "results", chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll('#lugar-resultados button')).map(b => b.textContent)`)); len(got) != 1 || got[0] != "Córdoba (Quindío)" {
		t.Errorf("«cordova» with the Eje Cafetero chosen: %q, want Córdoba (Quindío) alone", got)
	}
	p.do(t, "unchoose", chromedp.SetValue(chromedp.ID("f-emergencySlug"), ""),
		chromedp.Evaluate[chromedp.Void](`document.getElementById('f-emergencySlug').dispatchEvent(new Event('change'))`))
	// «armenia» offers both municipios Armenia first; the Quindío one is chosen.
	p.do(t, "clear", chromedp.Evaluate[chromedp.Void](`document.getElementById('f-lugar-buscar').value = ''`))
	p.do(t, "type armenia", chromedp.SendKeys(chromedp.ID("f-lugar-buscar"), "armenia"))
	results := run(p.ctx, t, "results", chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll('#lugar-resultados button')).map(b => b.textContent)`))
	if len(results) < 2 || !strings.HasPrefix(strings.Join(results[:2], "|"), "Armenia (") || !strings.Contains(strings.Join(results[:2], "|"), "Armenia (Quindío)") {
		t.Fatalf("results for «armenia»: %v", results)
	}
	p.do(t, "choose Armenia (Quindío)", chromedp.Evaluate[chromedp.Void](
		`Array.from(document.querySelectorAll('#lugar-resultados button')).find(b => b.textContent === 'Armenia (Quindío)').click()`))
	got := run(p.ctx, t, "selects", chromedp.Evaluate[[]string](
		`['f-lugar-departamento','f-placeCode','f-lugar-centro'].map(id => document.getElementById(id).value).concat([document.getElementById('lugar-elegido').textContent])`))
	if strings.Join(got, "|") != "63|63001||Lugar: Armenia (Quindío)" {
		t.Errorf("after choosing Armenia (Quindío): %v", got)
	}
	// The cascade: a centro poblado of the chosen municipio.
	n := run(p.ctx, t, "centros poblados", chromedp.Evaluate[int](`document.getElementById('f-lugar-centro').options.length`))
	if n < 3 {
		t.Errorf("Armenia offers %d centro poblado options", n)
	}
	p.do(t, "choose El Caimo", chromedp.SetValue(chromedp.ID("f-lugar-centro"), "63001001"),
		chromedp.Evaluate[chromedp.Void](`document.getElementById('f-lugar-centro').dispatchEvent(new Event('change'))`))
	if got := p.text(t, "lugar-elegido"); got != "Lugar: El Caimo, Armenia (Quindío)" {
		t.Errorf("chosen place: %q", got)
	}

	// An offer 1 km from El Caimo's point: the request placed by its village lists it, at a distance
	// from the village's point, which the confirmation says is approximate.
	caimo, _ := places.Lookup("63001001")
	if resp, out := publish(t, s, with(validOffer(), "title", "Mercados para familias", "category", "alimentos",
		"latitude", caimo.Lat+0.009, "longitude", caimo.Lon)); resp.StatusCode != http.StatusCreated {
		t.Fatalf("publish the offer near El Caimo: %d %v", resp.StatusCode, out)
	}
	p.fill(t, map[string]string{
		"f-emergencySlug": "eje-cafetero", "f-title": "Agua para la vereda", "f-category": "alimentos",
		"f-address": "Finca La Esperanza", "f-contactName": "Ana", "f-contactWhatsapp": "3001234567",
	})
	id := p.publishes(t, "pedir-lugar", "Listo: su solicitud quedó publicada.", "request")
	p.wait(t, "coincidencias")
	if got := p.text(t, "coincidencias-lista"); !strings.HasPrefix(got, "Mercados para familias, a unos 1,0 km (ubicación aproximada)") {
		t.Errorf("the confirmation's match from a village's point: %q", got)
	}
	d := p.detail(t, id)
	if l := d.Location; l == nil || l.PlaceCode != "63001001" || l.Precision != "place" || l.Municipio != "Armenia (Quindío)" || l.Latitude == nil {
		t.Errorf("the record's location: %+v", l)
	}
}

// TestBrowserPlacePickerBeforeItsList: on a slow signal the place list (most of the site's bytes) takes
// a while; Enter in the search meanwhile asks the server, which answers at once, instead of searching an
// empty list and saying that no place has that name.
func TestBrowserPlacePickerBeforeItsList(t *testing.T) {
	artifacts := needBrowser(t)
	s := testserver.Start(t, testserver.Options{})
	target, _ := url.Parse(s.URL)
	rp := httputil.NewSingleHostReverseProxy(target)
	release := make(chan struct{})
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, ".tsv") {
			select { // the list, on a slow signal: until the test is done with it
			case <-release:
			case <-r.Context().Done():
				return
			}
		}
		rp.ServeHTTP(w, r)
	}))
	defer proxy.Close()
	defer close(release)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	p := &phone{ctx: startPhone(ctx, t), s: s, artifacts: artifacts}
	p.do(t, "open /pedir", chromedp.Navigate(proxy.URL+"/pedir"), chromedp.WaitVisible(chromedp.ID("f-lugar-buscar")))
	// Typing while the list comes says so, and how not to wait, rather than looking dead.
	p.do(t, "type el caimo", chromedp.Click(chromedp.ID("f-lugar-buscar"), chromedp.NodeVisible),
		chromedp.SendKeys(chromedp.ID("f-lugar-buscar"), "el caimo"))
	if got := run(p.ctx, t, "results while loading", chromedp.Evaluate[string](`document.getElementById('lugar-resultados').textContent`)); !strings.Contains(got, "Cargando la lista de lugares") {
		t.Errorf("typing before the list came shows %q", got)
	}
	p.do(t, "Enter", chromedp.SendKeys(chromedp.ID("f-lugar-buscar"), "\r"))
	// The page is posted to the server (a navigation): look until its answer is there.
	var got string
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if v, err := chromedp.Run(p.ctx, chromedp.Evaluate[string](`(document.getElementById('lugar-resultados') || {}).textContent || ''`)); err == nil {
			if got = v; strings.Contains(got, "El Caimo") || strings.Contains(got, "No se encontró") {
				break
			}
		}
	}
	if !strings.Contains(got, "El Caimo, Armenia (Quindío)") || strings.Contains(got, "No se encontró") {
		t.Fatalf("Enter before the list came: the results say %q, want El Caimo", got)
	}
	// Choosing it (the list still held back): the page says the place chosen, on screen.
	p.do(t, "choose El Caimo", chromedp.Evaluate[chromedp.Void](`Array.from(document.querySelectorAll('#lugar-resultados button')).find(b => b.textContent.indexOf('El Caimo, Armenia') === 0).click()`))
	var chosen string
	var top float64 // the place's top over the screen's height: on screen in [0, 1)
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		v, err := chromedp.Run(p.ctx, chromedp.Evaluate[[]any](`(() => { const e = document.getElementById('lugar-elegido'); return e && !e.hidden ? [e.textContent, e.getBoundingClientRect().top / innerHeight] : ['', 0]; })()`))
		if err == nil && len(v) == 2 {
			// Until the page has given the place the focus (autofocus, after its load) and so scrolled to it.
			if chosen, _ = v[0].(string); chosen != "" {
				if top, _ = v[1].(float64); top >= 0 && top < 1 {
					break
				}
			}
		}
	}
	if chosen != "Lugar: El Caimo, Armenia (Quindío)" || top < 0 || top >= 1 {
		t.Errorf("after choosing El Caimo before the list came: %q at %v of the screen's height", chosen, top)
	}
}

// TestBrowserPlacePickerNoAnswer: a weak signal the phone still calls online, the server unreachable
// before the place list came: typing a place says at once that there is no signal, and «Buscar» says it
// too instead of posting the form into nothing (the browser's error page took the fill with it).
func TestBrowserPlacePickerNoAnswer(t *testing.T) {
	artifacts := needBrowser(t)
	s := testserver.Start(t, testserver.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	p := &phone{ctx: startPhone(ctx, t), s: s, artifacts: artifacts}

	p.open(t, "/pedir")
	// The server is gone before the form is first used (which would bring the list); navigator.onLine
	// stays true.
	s.Kill()
	p.do(t, "title", chromedp.SendKeys(chromedp.ID("f-title"), "Agua para la vereda"))
	p.do(t, "touch the picker", chromedp.Click(chromedp.ID("f-lugar-buscar"), chromedp.NodeVisible))
	time.Sleep(time.Second) // the list's fetch has failed by now
	p.do(t, "type a place", chromedp.SendKeys(chromedp.ID("f-lugar-buscar"), "filandia"))
	said := `(document.getElementById('lugar-resultados').innerText || '').indexOf('Sin señal') >= 0 && !document.getElementById('lugar-resultados').hidden`
	run(p.ctx, t, "no signal said while typing", chromedp.Poll[bool](said, chromedp.WithPollingTimeout(15*time.Second)))
	p.do(t, "Buscar", chromedp.Click(chromedp.CSS(`#lugar button[value="buscar"]`), chromedp.NodeVisible))
	time.Sleep(time.Second)
	if url := run(p.ctx, t, "location", chromedp.Evaluate[string](`location.pathname`)); url != "/pedir" {
		t.Fatalf("«Buscar» with no answer left the page for %q", url)
	}
	if got := run(p.ctx, t, "title kept", chromedp.Evaluate[string](`document.getElementById('f-title').value`)); got != "Agua para la vereda" || !run(p.ctx, t, "still said", chromedp.Evaluate[bool](said)) {
		t.Errorf("after «Buscar»: title %q, the no-signal note shown: %v", got, run(p.ctx, t, "said", chromedp.Evaluate[bool](said)))
	}
	p.screenshot(t, "pedir-lugar-sin-respuesta")
}

// TestBrowserRespondWithoutSignal: «¿Puede ayudar?» sent on a signal that no longer answers is not sent
// into the browser's error page: the record page stays, says so, and keeps what was typed; pressed again
// with the signal back, the response goes.
func TestBrowserRespondWithoutSignal(t *testing.T) {
	artifacts := needBrowser(t)
	s := testserver.Start(t, testserver.Options{})
	target, _ := url.Parse(s.URL)
	rp := httputil.NewSingleHostReverseProxy(target)
	var down atomic.Bool
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if down.Load() { // a signal that carries nothing: the connection drops
			if hj, ok := w.(http.Hijacker); ok {
				if c, _, err := hj.Hijack(); err == nil {
					c.Close()
					return
				}
			}
			panic(http.ErrAbortHandler)
		}
		rp.ServeHTTP(w, r)
	}))
	defer proxy.Close()
	_, pub := publish(t, s, with(validRequest(), "externalId", "sin-senal-responder", "title", "Agua para doce personas"))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	p := &phone{ctx: startPhone(ctx, t), s: s, artifacts: artifacts}
	p.do(t, "open the record", chromedp.Navigate(proxy.URL+schema.RecordPath(pub["id"].(string))), chromedp.WaitVisible(chromedp.ID("responder-mensaje")))
	p.do(t, "write", chromedp.SendKeys(chromedp.ID("responder-mensaje"), "Tengo agua; la llevo a las 4"),
		chromedp.SendKeys(chromedp.ID("responder-whatsapp"), "311 555 6677"))
	down.Store(true)
	p.do(t, "send without signal", chromedp.Click(chromedp.CSS(`#responder-formulario button[type="submit"]`), chromedp.NodeVisible))
	run(p.ctx, t, "the page says it", chromedp.Poll[bool](`!!document.querySelector('#responder .sin-senal')`, chromedp.WithPollingTimeout(15*time.Second)))
	got := run(p.ctx, t, "the page", chromedp.Evaluate[[]string](`[location.href, document.querySelector('#responder .sin-senal').textContent, document.getElementById('responder-mensaje').value]`))
	if !strings.Contains(got[0], schema.RecordPath(pub["id"].(string))) || !strings.HasPrefix(got[1], "Sin señal: no se envió") || got[2] != "Tengo agua; la llevo a las 4" {
		t.Fatalf("after sending without signal: %q", got)
	}
	down.Store(false)
	p.do(t, "send again", chromedp.Click(chromedp.CSS(`#responder-formulario button[type="submit"]`), chromedp.NodeVisible))
	p.waitLocation(t, "/responder")
	if d := p.detail(t, pub["id"].(string)); d.Responses != 1 {
		t.Errorf("%d responses count, want 1", d.Responses)
	}
}
