package e2e

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/directaid/directaid/internal/testserver"
)

// TestBrowserOffline: a phone opens /pedir (the service worker installs and keeps the pages), loses the
// signal (DevTools network emulation, for the page and for the service worker), reloads and still gets
// the form from the cache, fills it and sends it: the page says it is saved on the phone, and nothing
// reaches the server. The signal returns: the page says «publicada» with the record's link, and the
// public API holds exactly one record of that fill. A counting proxy in front of the server proves
// that, while offline, no request of the page or of the worker got out of the browser (emulation on the
// page's target alone does not cover a service worker's fetches, nor the page's own requests once a
// worker controls it: the test sets it on both targets).
//
// Before losing the signal the person opens a filtered list, a record and the map: offline each reads as
// the copy of its own URL with «guardada … a las HH:MM» (a filter never opened answers «Sin conexión»),
// the map says why it has none; the place picker, whose list was never fetched, says it needs the signal.
// The publication sent when the signal returns shows its manage link, which stays on the phone until «Ya
// lo guardé», as does one the worker sent with no page open; the worker keeps the last 50 pages opened.
// axe-core checks the pages that show the manage link.
func TestBrowserOffline(t *testing.T) {
	artifacts := needBrowser(t)
	axe := installAxe(t)
	tiles := newTileServer(t) // the map's tiles, on loopback
	s := testserver.Start(t, testserver.Options{Emergencies: fmt.Sprintf(`map_tiles "%s/{z}/{x}/{y}.png" "© Mapas de prueba"`, tiles.URL) +
		testserver.TwoEmergencies})
	target, _ := url.Parse(s.URL)
	var seen atomic.Int64
	var hold atomic.Bool   // a weak signal: a publication's POST gets no answer
	var portal atomic.Bool // a Wi-Fi portal answers a publication's POST with its own page
	rp := httputil.NewSingleHostReverseProxy(target)
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The browser's own update check of the worker's script is not the page's nor the worker's
		// traffic, and DevTools' emulation does not cover it (with no signal it just fails).
		if r.URL.Path != "/sw.js" {
			seen.Add(1)
		}
		if os.Getenv("DEBUG_PROXY") != "" {
			t.Logf("%s proxy: %s %s", time.Now().Format("05.000"), r.Method, r.URL)
		}
		if portal.Load() && r.Method == http.MethodPost && r.URL.Path == "/api/public/v1/help" {
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprint(w, "<html><body>Acepte los términos para navegar</body></html>")
			return
		}
		if hold.Load() && r.Method == http.MethodPost && r.URL.Path == "/api/public/v1/help" {
			// No answer until the browser gives up (or a while: a service worker's fetch is not the page's).
			select {
			case <-r.Context().Done():
			case <-time.After(5 * time.Second):
				http.Error(w, "no answer", http.StatusBadGateway)
			}
			return
		}
		rp.ServeHTTP(w, r)
	}))
	defer proxy.Close()

	// A record in the Eje Cafetero, whose page the person opens before losing the signal.
	_, rec := publish(t, s, with(validRequest(), "title", "Insulina en Armenia"))
	recordPath := "/ayudas/" + rec["id"].(string)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	p := &phone{ctx: startPhone(ctx, t), s: s, artifacts: artifacts}
	p.watchConsole(t)
	if _, err := chromedp.Call(p.ctx, network.Enable, network.EnableParams{}); err != nil {
		t.Fatal(err)
	}

	open := func(path string) {
		t.Helper()
		p.do(t, "open "+path, chromedp.Navigate(proxy.URL+path), chromedp.WaitVisible(chromedp.CSS("main h1")))
	}
	open("/pedir")
	// The worker installs (keeping its pages and assets), activates and takes this page.
	run(p.ctx, t, "service worker in control", chromedp.Poll[bool](`navigator.serviceWorker.controller !== null`,
		chromedp.WithPollingTimeout(20*time.Second)))
	kept := run(p.ctx, t, "kept pages", chromedp.Evaluate[[]string](`caches.keys().then(ks => caches.open(ks.find(k => k !== 'directaid-visitas')))
		.then(c => c.keys()).then(rs => rs.map(r => new URL(r.url).pathname))`, chromedp.EvalAwaitPromise, chromedp.EvalAsValue))
	for _, want := range []string{"/", "/pedir", "/ofrecer", "/emergencias/eje-cafetero"} {
		if !slices.Contains(kept, want) {
			t.Errorf("the service worker did not keep %s (kept %v)", want, kept)
		}
	}
	for _, k := range kept {
		if strings.HasSuffix(k, ".tsv") {
			t.Errorf("the service worker fetched the place list %s before the place picker was used", k)
		}
	}
	// Online, the person opens the requests of the Eje Cafetero and a record: both stay on the phone.
	open("/emergencias/eje-cafetero?type=request")
	open(recordPath)
	open("/emergencias/eje-cafetero/mapa")
	run(p.ctx, t, "the map", chromedp.Poll[bool](`document.getElementById('mapa-estado').textContent.indexOf('El mapa muestra') === 0`,
		chromedp.WithPollingTimeout(20*time.Second)))
	run(p.ctx, t, "visited pages kept", chromedp.Poll[bool](`caches.open('directaid-visitas').then(c => c.keys())
		.then(ks => ks.map(k => new URL(k.url)).filter(u => u.search === '?type=request' || u.pathname === '`+recordPath+`' ||
			u.pathname === '/emergencias/eje-cafetero/mapa').length === 3)`,
		chromedp.WithPollingTimeout(10*time.Second)))
	open("/pedir")

	// The service worker is a target of its own: its fetches are cut there.
	targets, err := chromedp.Targets(p.ctx)
	if err != nil {
		t.Fatal(err)
	}
	tabs := []context.Context{p.ctx}
	for _, ti := range targets {
		if ti.Type == "service_worker" {
			swCtx, cancel := chromedp.NewContext(p.ctx, chromedp.WithTargetID(ti.TargetID))
			defer cancel()
			if _, err := chromedp.Call(swCtx, network.Enable, network.EnableParams{}); err != nil {
				t.Fatalf("attach to the service worker: %v", err)
			}
			// The worker's fetches go to the network, as they do once the browser's HTTP cache is stale (a
			// page is fresh there for a minute at most): offline, the pages then come from the worker's copies.
			if _, err := chromedp.Call(swCtx, network.SetCacheDisabled, network.SetCacheDisabledParams{CacheDisabled: true}); err != nil {
				t.Fatalf("the service worker's HTTP cache: %v", err)
			}
			tabs = append(tabs, swCtx)
		}
	}
	if len(tabs) != 2 {
		t.Fatalf("%d service workers, want 1", len(tabs)-1)
	}
	// The page's own requests that the worker leaves alone (the map's GeoJSON) go to the network too.
	if _, err := chromedp.Call(p.ctx, network.SetCacheDisabled, network.SetCacheDisabledParams{CacheDisabled: true}); err != nil {
		t.Fatal(err)
	}
	setOffline := func(off bool) {
		t.Helper()
		// The signal returns for the worker first, then for the page (its 'online' event).
		for _, ctx := range slices.Backward(tabs) {
			if _, err := chromedp.Call(ctx, emulateNetworkConditions, emulateNetworkConditionsParams{
				Offline: off, DownloadThroughput: -1, UploadThroughput: -1}); err != nil {
				t.Fatalf("network emulation (offline %v): %v", off, err)
			}
		}
		if _, err := chromedp.Call(p.ctx, network.OverrideNetworkState, network.OverrideNetworkStateParams{
			Offline: off, DownloadThroughput: -1, UploadThroughput: -1}); err != nil {
			t.Fatalf("navigator state (offline %v): %v", off, err)
		}
	}

	setOffline(true)
	before := seen.Load()
	// With no signal, the form still opens: from the service worker's cache.
	p.do(t, "reload offline", chromedp.Reload(), chromedp.WaitVisible(chromedp.ID("enviar")))
	if !run(p.ctx, t, "navigator offline", chromedp.Evaluate[bool](`!navigator.onLine`)) {
		t.Error("navigator.onLine is still true under offline emulation")
	}
	p.screenshot(t, "offline-pedir")
	savedNote := func(page string) {
		t.Helper()
		note := run(p.ctx, t, "saved note", chromedp.Evaluate[string](`(document.querySelector('main .guardada') || {}).textContent || ''`))
		if !regexp.MustCompile(`^Sin señal al abrirla: esta es la copia de esta página guardada en este teléfono a las [0-9]{2}:[0-9]{2}\.`).MatchString(note) {
			t.Errorf("%s offline: the note of a kept copy is %q", page, note)
		}
	}
	open("/emergencias/inundaciones-la-mojana")
	savedNote("/emergencias/inundaciones-la-mojana")
	// The filtered list is its own filtered copy, not the last list seen; a filter never opened is not kept.
	open("/emergencias/eje-cafetero?type=request")
	savedNote("the filtered list")
	if got := run(p.ctx, t, "type filter", chromedp.Value(chromedp.ID("filtro-type"))); got != "request" {
		t.Errorf("offline, /emergencias/eje-cafetero?type=request shows the list filtered by %q", got)
	}
	p.screenshot(t, "offline-filtrada")
	open("/emergencias/eje-cafetero?type=offer")
	if h1 := run(p.ctx, t, "offline h1", chromedp.Text(chromedp.CSS("main h1"))); h1 != "Sin conexión" {
		t.Errorf("a filter never opened, offline: %q, want «Sin conexión»", h1)
	}
	// The record opened online reads offline, its number included.
	open(recordPath)
	if h1 := run(p.ctx, t, "record h1", chromedp.Text(chromedp.CSS("main h1"))); h1 != "Insulina en Armenia" {
		t.Errorf("the record opened online, offline: %q", h1)
	}
	savedNote("the record")
	p.screenshot(t, "offline-registro")
	// The map opened online: its list, and the reason for no map.
	open("/emergencias/eje-cafetero/mapa")
	savedNote("the map")
	run(p.ctx, t, "no map offline", chromedp.Poll[bool](`document.getElementById('mapa').hidden &&
		document.getElementById('mapa-estado').textContent.indexOf('No se pudieron traer los puntos del mapa') === 0`,
		chromedp.WithPollingTimeout(10*time.Second)))
	if n := run(p.ctx, t, "map's list", chromedp.Evaluate[int](`document.querySelectorAll('main :is(h3, h4) a[href*="/ayudas/"]').length`)); n != 1 {
		t.Errorf("the map offline lists %d records, want 1", n)
	}
	p.screenshot(t, "offline-mapa")
	open("/integraciones") // not kept: the worker's page for that
	if h1 := run(p.ctx, t, "offline h1", chromedp.Text(chromedp.CSS("main h1"))); h1 != "Sin conexión" {
		t.Errorf("a page not kept, offline: %q, want «Sin conexión»", h1)
	}
	// The emergency page's buttons open the forms with their emergency (/pedir?emergencia=…): offline,
	// the kept form, never «Sin conexión».
	for _, form := range []string{"/pedir", "/ofrecer"} {
		open(form + "?emergencia=eje-cafetero")
		if h1 := run(p.ctx, t, "form h1", chromedp.Text(chromedp.CSS("main h1"))); h1 == "Sin conexión" || !run(p.ctx, t, "form", chromedp.Evaluate[bool](`document.getElementById('enviar') !== null`)) {
			t.Errorf("%s?emergencia=eje-cafetero offline: %q, want the kept form", form, h1)
		}
		savedNote(form + "?emergencia=eje-cafetero")
	}
	open("/pedir")
	// The place list comes on the picker's first use, which was never with signal: the picker says so.
	// (Enter as the page's script receives it: DevTools' key events also type a character, which submits.)
	p.do(t, "search a place offline", chromedp.SendKeys(chromedp.ID("f-lugar-buscar"), "armenia"),
		chromedp.Evaluate[chromedp.Void](`document.getElementById('f-lugar-buscar').dispatchEvent(new KeyboardEvent('keydown', {key: 'Enter', bubbles: true, cancelable: true}))`))
	if got := p.text(t, "lugar-resultados"); !strings.HasPrefix(got, "Sin señal, y la lista de lugares todavía no está en este teléfono") {
		t.Errorf("the place picker offline without its list: %q", got)
	}
	p.screenshot(t, "offline-lugar")
	p.do(t, "clear the search", chromedp.Evaluate[chromedp.Void](`document.getElementById('f-lugar-buscar').value = ''`))
	ext := p.externalID(t)
	// Sent empty with no signal: what is missing is said now, and nothing is kept to be refused later.
	p.submit(t, "errores")
	if got := p.text(t, "errores"); !strings.Contains(got, "Falta «Título»") || !strings.Contains(got, "Diga dónde") || !strings.Contains(got, "Marque la casilla") {
		t.Errorf("an empty form sent offline: %q", got)
	}
	if n := run(p.ctx, t, "outbox", chromedp.Evaluate[int](`directaidOutbox.all().then(items => items.length)`, chromedp.EvalAwaitPromise)); n != 0 {
		t.Errorf("an empty form sent offline was kept in the outbox (%d)", n)
	}
	p.fill(t, withValues(request, "f-title", "Agua potable sin señal"))
	p.check(t, "f-publishContact")
	p.submit(t, "resultado-guardada")
	if got := p.text(t, "resultado-guardada"); !strings.Contains(got, "guardada en este teléfono — se enviará cuando vuelva la señal") {
		t.Errorf("saved message: %q", got)
	}
	p.screenshot(t, "offline-guardada")
	if n := seen.Load() - before; n != 0 {
		t.Errorf("%d requests reached the server while the phone was offline (the service worker is not offline?)", n)
	}
	if n := p.list(t, "type=request&emergencySlug=inundaciones-la-mojana").Total; n != 0 {
		t.Fatalf("%d requests stored while offline", n)
	}

	// The signal returns: the saved fill is published, once, under the externalId it was saved with.
	t.Logf("%s online", time.Now().Format("05.000"))
	setOffline(false)
	// The first try may fail while the emulation settles (the page then tries again within 15 s).
	waitCtx, cancelWait := context.WithTimeout(p.ctx, 60*time.Second)
	defer cancelWait()
	if err := chromedp.Do(waitCtx, chromedp.WaitVisible(chromedp.ID("resultado-nuevo"))); err != nil {
		state, _ := chromedp.Run(p.ctx, chromedp.Evaluate[string](`JSON.stringify({online: navigator.onLine,
			result: document.getElementById('resultado').outerHTML, bandeja: document.getElementById('bandeja').outerHTML})`))
		t.Fatalf("«publicada» did not show once the signal returned: %v\n%s\nconsole: %q", err, state, p.consoleErrors())
	}
	if got := p.text(t, "resultado-nuevo"); got != "Listo: su solicitud quedó publicada." {
		t.Errorf("published message: %q", got)
	}
	if !run(p.ctx, t, "saved message gone", chromedp.Evaluate[bool](`document.getElementById('resultado-guardada').hidden`)) {
		t.Error("the saved message still shows after the publication")
	}
	// Nothing waits any more: the page's «se enviarán cuando vuelva la señal» goes too.
	if _, err := chromedp.Run(p.ctx, chromedp.Poll[bool](`document.getElementById('bandeja').hidden`, chromedp.WithPollingTimeout(5*time.Second))); err != nil {
		t.Errorf("the pending notice stays after the publication: %q", p.text(t, "bandeja"))
	}
	if note := run(p.ctx, t, "kept copy's note", chromedp.Evaluate[string](`(document.querySelector('main .guardada') || {}).textContent || ''`)); note != "" {
		t.Errorf("online again, /pedir still says it is the kept copy: %q", note)
	}
	// Its manage link shows, and stays on the phone until the person says they saved it.
	manage := run(p.ctx, t, "manage link", chromedp.Evaluate[[]any](`[!document.getElementById('resultado-gestion').hidden,
		document.getElementById('resultado-gestionar').href]`))
	manageURL, _ := manage[1].(string)
	if shown, _ := manage[0].(bool); !shown || !strings.Contains(manageURL, "/gestionar#id=") {
		t.Errorf("after an offline publication the manage link shows %v: %q", manage[0], manageURL)
	}
	// Its «Gestionar» button carries the record and its code, as after a publication with signal.
	ids := run(p.ctx, t, "manage button's fields", chromedp.Evaluate[[]string](`[document.getElementById('gestionar-id').value,
		document.getElementById('gestionar-token').value]`))
	if len(ids) != 2 || ids[0] == "" || ids[1] == "" || !strings.Contains(manageURL, ids[0]) {
		t.Errorf("after an offline publication «Gestionar» sends id and code %q (manage link %s)", ids, manageURL)
	}
	p.screenshot(t, "offline-publicada")
	for _, v := range axeViolations(t, p.ctx, axe) {
		t.Errorf("axe, the publication sent when the signal returned: %s", v)
	}
	id := p.recordID(t)
	run(p.ctx, t, "manage link kept", chromedp.Poll[bool](`(localStorage.getItem('directaid:enlaces-gestion') || '').indexOf('`+id+`') >= 0`,
		chromedp.WithPollingTimeout(10*time.Second)))
	open("/")
	if got := run(p.ctx, t, "home's manage link", chromedp.Evaluate[string](`(document.querySelector('#enlaces-gestion a') || {}).href || ''`)); got != manageURL || got == "" {
		t.Errorf("the home page shows the manage link %q, want %q", got, manageURL)
	}
	if text := run(p.ctx, t, "home's notice", chromedp.Text(chromedp.ID("enlaces-gestion"))); !strings.Contains(text, "«Agua potable sin señal»") ||
		!strings.Contains(text, "quedó publicada") {
		t.Errorf("the home page's notice does not name the publication: %q", text)
	}
	p.screenshot(t, "offline-enlace-inicio")
	for _, v := range axeViolations(t, p.ctx, axe) {
		t.Errorf("axe, the home page with the manage link: %s", v)
	}
	p.do(t, "saved it", chromedp.Click(chromedp.CSS("#enlaces-gestion button"), chromedp.NodeVisible))
	if left := run(p.ctx, t, "links left", chromedp.Evaluate[[]any](`[!!document.getElementById('enlaces-gestion'), localStorage.getItem('directaid:enlaces-gestion')]`)); left[0] != false || left[1] != "[]" {
		t.Errorf("after «Ya lo guardé»: notice shown %v, stored %v", left[0], left[1])
	}
	list := p.list(t, "type=request&emergencySlug=inundaciones-la-mojana")
	if list.Total != 1 || len(list.Items) != 1 || list.Items[0].ID != id {
		t.Fatalf("after the signal returned: total %d, items %+v; want exactly the record %s", list.Total, list.Items, id)
	}
	if d := p.detail(t, id); d.Title != "Agua potable sin señal" {
		t.Errorf("stored title %q", d.Title)
	}
	resp, out := publish(t, s, map[string]any{"type": "request", "source": "directaid-web", "externalId": ext,
		"emergencySlug": "inundaciones-la-mojana", "title": "Agua potable sin señal", "category": "refugio", "address": "x",
		"latitude": 8.6601, "longitude": -75.1302, "contactName": "María Pérez", "contactWhatsapp": "3005551234", "publishContact": true})
	if resp.StatusCode != 200 || out["duplicate"] != true {
		t.Errorf("the record was not stored under the externalId %q of the saved fill: %d %v", ext, resp.StatusCode, out)
	}
	// Nothing waits any more: a new page sends nothing again, and shows no manage link.
	open("/")
	if run(p.ctx, t, "no notice", chromedp.Evaluate[bool](`!!document.getElementById('enlaces-gestion')`)) {
		t.Error("the manage link shows again after «Ya lo guardé»")
	}
	time.Sleep(time.Second)
	if n := p.list(t, "type=request&emergencySlug=inundaciones-la-mojana").Total; n != 1 {
		t.Errorf("after another page load: %d requests, want 1", n)
	}

	// A publication the service worker sent with no page open (Background Sync) left its manage link in
	// IndexedDB: the next page moves it to localStorage, and the home page shows it.
	run(p.ctx, t, "sent by the worker", chromedp.Evaluate[chromedp.Void](`directaidOutbox.put({externalId: 'enviada-sin-pagina', action: '/pedir',
		sent: {id: 'x', title: 'Carpas para la vereda', publicUrl: location.origin + '/ayudas/x', manageUrl: location.origin + '/gestionar#id=x&token=t'}})`,
		chromedp.EvalAwaitPromise))
	open("/")
	// The page moves it once IndexedDB answers, after the load: wait for the link.
	if got := run(p.ctx, t, "manage link of the worker's send", chromedp.Poll[string](`(document.querySelector('#enlaces-gestion a') || {}).href || ''`,
		chromedp.WithPollingTimeout(10*time.Second))); got != proxy.URL+"/gestionar#id=x&token=t" {
		t.Errorf("the home page shows %q for a publication the worker sent", got)
	}
	left := run(p.ctx, t, "moved", chromedp.Evaluate[[]any](`directaidOutbox.all().then(items => [items.length, localStorage.getItem('directaid:enlaces-gestion')])`,
		chromedp.EvalAwaitPromise, chromedp.EvalAsValue))
	if n, _ := left[0].(float64); n != 0 || !strings.Contains(fmt.Sprint(left[1]), "Carpas para la vereda") {
		t.Errorf("after the page load: %v items in IndexedDB, localStorage %v", left[0], left[1])
	}

	// A saved fill the worker sent with no page open and the server refused (a phone number too short):
	// every page says so, with «Descartarla»; its form brings it back with the error, and it stays on the
	// phone through a reload until it is corrected or discarded.
	// Two saved fills, of two people, refused: every page lists each, with its title and «Descartarla»;
	// /pedir brings back one at a time (the oldest, or the one its link names), never a mix of the two.
	run(p.ctx, t, "refused by the server", chromedp.Evaluate[chromedp.Void](`Promise.all([
		directaidOutbox.put({externalId: 'rechazada-1', action: '/pedir', api: '/api/public/v1/help', savedAt: '2026-11-29T10:00:00Z',
			body: JSON.stringify({type: 'request', source: 'directaid-web', externalId: 'rechazada-1', emergencySlug: 'eje-cafetero',
				title: 'Leche para bebés', category: 'alimentos', contactName: 'Rosa', contactWhatsapp: '300 12', publishContact: true, address: 'Vereda El Caimo'}),
			rejected: {status: 400, data: {code: 'invalid_body', error: 'Datos inválidos', details: [{field: '/contactWhatsapp', message: '«contactWhatsapp» no es un número de celular válido'}]}}}),
		directaidOutbox.put({externalId: 'rechazada-0', action: '/pedir', api: '/api/public/v1/help', savedAt: '2026-11-29T10:05:00Z',
			body: JSON.stringify({type: 'request', source: 'directaid-web', externalId: 'rechazada-0', emergencySlug: 'eje-cafetero',
				description: 'Somos cuatro', contactName: 'Pedro', publishContact: true}),
			rejected: {status: 400, data: {code: 'invalid_body', error: 'Datos inválidos', details: [{field: '/title', message: '«title» es obligatorio'}]}}})])`,
		chromedp.EvalAwaitPromise))
	open("/emergencias/eje-cafetero")
	if got := run(p.ctx, t, "refusal notice", chromedp.Poll[string](`(b => b && b.querySelectorAll('button').length === 2 ? b.textContent : '')(document.getElementById('rechazadas'))`,
		chromedp.WithPollingTimeout(10*time.Second))); !strings.Contains(got, "no se pudo publicar") || !strings.Contains(got, "«Leche para bebés»") || strings.Count(got, "Descartarla") != 2 {
		t.Errorf("a list page after two refused saved fills says %q", got)
	}
	fill := `(t => t && t.value ? [t.value, document.getElementById('f-contactWhatsapp').value, document.getElementById('f-contactName').value,
		document.getElementById('f-description').value, document.getElementById('f-contactWhatsapp').getAttribute('aria-invalid') || ''] : null)(document.getElementById('f-title'))`
	for range 2 { // the form, then a reload before correcting it: the oldest, Rosa's, alone
		open("/pedir")
		got := run(p.ctx, t, "refused fill back", chromedp.Poll[[]any](fill, chromedp.WithPollingTimeout(10*time.Second), chromedp.WithPollingInterval(200*time.Millisecond)))
		if fmt.Sprint(got) != "[Leche para bebés 300 12 Rosa  true]" {
			t.Errorf("/pedir with two refused saved fills: %v, want Rosa's alone", got)
		}
	}
	// Pedro's, from its link: his fields alone, and «Descartar» on the form drops it.
	open("/pedir?guardada=rechazada-0")
	got := run(p.ctx, t, "named fill back", chromedp.Poll[[]any](`(d => d && d.value ? [d.value, document.getElementById('f-title').value, document.getElementById('f-contactName').value,
		document.getElementById('f-contactWhatsapp').value, document.getElementById('f-address').value] : null)(document.getElementById('f-description'))`,
		chromedp.WithPollingTimeout(10*time.Second), chromedp.WithPollingInterval(200*time.Millisecond)))
	if fmt.Sprint(got) != "[Somos cuatro  Pedro  ]" {
		t.Errorf("/pedir?guardada=rechazada-0: %v, want Pedro's fields alone", got)
	}
	run(p.ctx, t, "discard on the form", chromedp.Poll[bool](`(d => { if (d && !d.hidden) { d.click(); return true; } return false; })(document.getElementById('descartar-guardada'))`,
		chromedp.WithPollingTimeout(10*time.Second)))
	// The form then opens afresh (a navigation): wait for it, then look.
	time.Sleep(time.Second)
	open("/")
	run(p.ctx, t, "one left", chromedp.Poll[bool](`directaidOutbox.all().then(items => items.length === 1 && items[0].externalId === 'rechazada-1')`,
		chromedp.WithPollingTimeout(10*time.Second)))
	run(p.ctx, t, "discard", chromedp.Poll[bool](`(b => { const d = b && b.querySelector('button.secundario'); if (d) d.click(); return !!d; })(document.getElementById('rechazadas'))`,
		chromedp.WithPollingTimeout(10*time.Second)))
	if n := run(p.ctx, t, "discarded", chromedp.Poll[float64](`directaidOutbox.all().then(items => items.length === 0 ? 1 : 0)`, chromedp.WithPollingTimeout(5*time.Second))); n != 1 {
		t.Error("the refused fill stayed in IndexedDB after «Descartarla»")
	}
	run(p.ctx, t, "the notice goes once nothing refused is left", chromedp.Poll[bool](`!document.getElementById('rechazadas')`, chromedp.WithPollingTimeout(5*time.Second)))

	// A Wi-Fi portal answers the outbox's send with its own page (200, HTML): not the API's refusal, so the
	// fill waits to be sent again.
	portal.Store(true)
	waiting := run(p.ctx, t, "portal", chromedp.Evaluate[[]any](`directaidOutbox.put({externalId: 'portal-1', action: '/pedir', api: '/api/public/v1/help',
		savedAt: new Date().toISOString(), body: '{}'}).then(() => directaidOutbox.flush(() => {})).then(n => directaidOutbox.all().then(items => [n, !!items[0].rejected]))`,
		chromedp.EvalAwaitPromise, chromedp.EvalAsValue))
	portal.Store(false)
	if fmt.Sprint(waiting) != "[1 false]" {
		t.Errorf("after a portal's answer the outbox says %v, want [1 false] (still waiting, not refused)", waiting)
	}
	run(p.ctx, t, "clear", chromedp.Evaluate[chromedp.Void](`directaidOutbox.remove('portal-1')`, chromedp.EvalAwaitPromise))

	// A send that gets no answer (a weak signal) is saved on the phone after a while (data-espera, 20 s
	// unless set), then published once when answers come back.
	hold.Store(true)
	open("/pedir")
	p.do(t, "a short wait", chromedp.Evaluate[chromedp.Void](`document.getElementById('formulario').setAttribute('data-espera', '1500')`))
	p.fill(t, withValues(request, "f-title", "Agua con señal débil"))
	p.check(t, "f-publishContact")
	p.submit(t, "resultado-guardada")
	hold.Store(false)
	waitWeak, cancelWeak := context.WithTimeout(p.ctx, 40*time.Second)
	defer cancelWeak()
	if err := chromedp.Do(waitWeak, chromedp.WaitVisible(chromedp.ID("resultado-nuevo"))); err != nil {
		t.Errorf("a fill saved after no answer was not published once answers came back: %v", err)
	}
	if n := p.list(t, "q=senal+debil").Total; n != 1 {
		t.Errorf("a fill sent with no answer, then from the phone: %d records, want 1", n)
	}

	// The pages kept when opened are the last 50: 51 more lists push out every earlier one.
	for i := range 51 {
		p.do(t, "open a list", chromedp.Navigate(fmt.Sprintf("%s/emergencias/eje-cafetero?q=n%d", proxy.URL, i)), chromedp.WaitVisible(chromedp.CSS("main h1")))
	}
	visits := `caches.open('directaid-visitas').then(c => c.keys()).then(ks => ks.map(k => new URL(k.url).search))`
	run(p.ctx, t, "the last 50", chromedp.Poll[bool](visits+`.then(s => s.length === 50 && s[49] === '?q=n50')`, chromedp.WithPollingTimeout(10*time.Second)))
	if kept := run(p.ctx, t, "kept", chromedp.Evaluate[[]string](visits, chromedp.EvalAwaitPromise, chromedp.EvalAsValue)); kept[0] != "?q=n1" {
		t.Errorf("the pages kept when opened start with %q, want ?q=n1 (the 50 newest)", kept[0])
	}
	for _, m := range p.consoleErrors() {
		t.Errorf("browser console: %s", m)
	}
}

// Network.emulateNetworkConditions, deprecated in the protocol (cdproto no longer generates it) but the
// one that DevTools' «Offline» uses: it cuts the page and its service worker.
type emulateNetworkConditionsParams struct {
	Offline            bool    `json:"offline"`
	Latency            float64 `json:"latency"`
	DownloadThroughput float64 `json:"downloadThroughput"`
	UploadThroughput   float64 `json:"uploadThroughput"`
}

var emulateNetworkConditions = cdp.Command[emulateNetworkConditionsParams, cdp.Empty]{Method: "Network.emulateNetworkConditions"}
