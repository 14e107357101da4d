package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"net/url"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"github.com/directaid/directaid/internal/testserver"
	"github.com/directaid/directaid/schema"
)

// chromiumBin is Debian's chromium package (installed by .ci/run).
const chromiumBin = "/usr/bin/chromium"

// The phone: a common phone screen in CSS pixels (portrait), at twice the density.
const (
	phoneWidth, phoneHeight = 390, 844
	phoneScale              = 2
)

// needBrowser skips the test without Chromium (fails instead under DIRECTAID_REQUIRE_CHROMIUM=1) and
// returns the directory for its screenshots, test-artifacts/ at the repo root (or a folder of it).
func needBrowser(t *testing.T, sub ...string) string {
	t.Helper()
	if _, err := exec.LookPath(chromiumBin); err != nil {
		if os.Getenv("DIRECTAID_REQUIRE_CHROMIUM") == "1" {
			t.Fatalf("DIRECTAID_REQUIRE_CHROMIUM=1 but %s is missing: %v", chromiumBin, err)
		}
		t.Skipf("%s is not installed (apt-get install chromium): %v", chromiumBin, err)
	}
	artifacts, err := filepath.Abs(filepath.Join(append([]string{"..", "test-artifacts"}, sub...)...))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(artifacts, 0o755); err != nil {
		t.Fatal(err)
	}
	return artifacts
}

// TestBrowserPublishForms drives a real headless Chromium at phone width through the site of the real
// binary: the home page, the request form (a publication, a retry of the same fill, a missing field,
// a reload that keeps the fill's externalId) and the offer form (with "Usar mi ubicación"), and finds
// what the forms stored through the public read API. Screenshots go to test-artifacts/ at the repo root.
func TestBrowserPublishForms(t *testing.T) {
	artifacts := needBrowser(t)

	s := testserver.Start(t, testserver.Options{}) // two active emergencies: the forms offer the choice
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	ctx = startPhone(ctx, t)
	p := &phone{ctx: ctx, s: s, artifacts: artifacts}
	p.watchConsole(t)

	t.Run("home", func(t *testing.T) {
		p.open(t, "/")
		text := run(p.ctx, t, "home text", chromedp.Text(chromedp.CSS("main")))
		for _, want := range []string{"Terremoto en el Eje Cafetero", "Inundaciones en La Mojana"} {
			if !strings.Contains(text, want) {
				t.Errorf("the home page does not show the active emergency %q:\n%s", want, text)
			}
		}
		for _, href := range []string{"/pedir", "/ofrecer"} {
			n := run(p.ctx, t, "links to "+href, chromedp.Evaluate[int](fmt.Sprintf(`document.querySelectorAll('main a[href$=%q]').length`, href)))
			if n == 0 {
				t.Errorf("the home page does not link to %s", href)
			}
		}
		p.screenshot(t, "home")
	})

	t.Run("pedir", func(t *testing.T) { p.requestForm(t) })
	t.Run("ofrecer", func(t *testing.T) { p.offerForm(t) })
	t.Run("cerca de mí", func(t *testing.T) { p.nearMe(t) })
	t.Run("sin enlace", func(t *testing.T) { p.retryWithoutLink(t) })

	for _, m := range p.consoleErrors() {
		t.Errorf("browser console: %s", m)
	}
}

// request is one fill of /pedir, by element id.
var request = map[string]string{
	"f-emergencySlug":   "inundaciones-la-mojana", // the second choice: not what a careless default would send
	"f-title":           "Mercado y agua para 5 familias",
	"f-description":     "El agua se llevó la cosecha; hay dos niños pequeños. Mi vecina: 310 555 6677.", // a number: a warning
	"f-category":        "refugio",
	"f-urgency":         "urgent",
	"f-neededPeople":    "5",
	"f-address":         "Calle 5 # 3-20, junto a la iglesia",
	"f-neighborhood":    "San Marcos",
	"f-latitude":        "8,6601", // the decimal comma people write
	"f-longitude":       "-75.1302",
	"f-contactName":     "María Pérez",
	"f-contactWhatsapp": "300 555 1234",
}

// publishes gives consent and submits the filled form of page (screenshots before and after), sees
// want as its success message, and finds the record, the only one of its type, through view=list.
func (p *phone) publishes(t *testing.T, page, want, typ string) string {
	t.Helper()
	p.check(t, "f-publishContact")
	p.screenshot(t, page+"-filled")
	p.submit(t, "resultado-nuevo")
	if got := p.text(t, "resultado-nuevo"); got != want {
		t.Errorf("success message: %q, want %q", got, want)
	}
	checkExpiryLine(t, p.text(t, "resultado-vence"), "Si nadie renueva la publicación, deja de mostrarse el ", ". Para mantenerla más tiempo, abra el enlace y pulse «Renovar».")
	// The confirmation starts on screen (the page had been scrolled down to «Publicar»).
	if top := run(p.ctx, t, "confirmation's top", chromedp.Evaluate[float64](`document.getElementById('resultado').getBoundingClientRect().top`)); top < 0 {
		t.Errorf("the confirmation starts %v px above the screen", -top)
	}
	p.screenshot(t, page+"-success")
	id := p.recordID(t)
	list := p.list(t, "type="+typ)
	if list.Total != 1 || len(list.Items) != 1 || list.Items[0].ID != id {
		t.Fatalf("view=list of %s after one publication: total %d, items %+v; want the record %s", typ, list.Total, list.Items, id)
	}
	return id
}

func (p *phone) requestForm(t *testing.T) {
	// A complete fill publishes, and the page says so.
	p.open(t, "/pedir")
	firstID := p.externalID(t)
	p.fill(t, request)
	// Filling the form, with signal, brings the place list (which the service worker keeps), though this
	// fill gave coordinates: the picker works on the phone if the signal goes before the person needs it.
	run(p.ctx, t, "place list fetched", chromedp.Poll[bool](`performance.getEntriesByType('resource').some(e => /\/lugares\.[0-9a-f]+\.tsv$/.test(e.name))`,
		chromedp.WithPollingTimeout(10*time.Second)))
	id := p.publishes(t, "pedir", "Listo: su solicitud quedó publicada.", "request")
	if got := p.text(t, "resultado-avisos"); !strings.Contains(got, "La descripción tenía un número de teléfono") {
		t.Errorf("the confirmation's warnings: %q", got)
	}
	d := p.detail(t, id)
	wantPlace(t, d, "inundaciones-la-mojana", "Calle 5 # 3-20, junto a la iglesia", "San Marcos", 8.6601, -75.1302)
	// The number typed in the description is stored with its digits hidden, and the confirmation said so.
	if d.Type != "request" || d.Title != request["f-title"] || d.Description != strings.Replace(request["f-description"], "310 555 6677", "••• ••• ••••", 1) || d.Category != "refugio" ||
		d.Urgency != "urgent" || d.NeededPeople == nil || *d.NeededPeople != 5 {
		t.Errorf("stored request differs from the fill: %+v", d)
	}
	if d.Contact.Name != "María Pérez" || d.Contact.Whatsapp != "+573005551234" {
		t.Errorf("stored contact: %+v, want María Pérez, +573005551234", d.Contact)
	}

	// The same fill sent again (a retry after a lost answer) is recognised, not published twice.
	run(p.ctx, t, "button enabled again", chromedp.Poll[bool](`!document.getElementById('enviar').disabled`, chromedp.WithPollingTimeout(10*time.Second)))
	run(p.ctx, t, "resend", chromedp.Evaluate[chromedp.Void](`document.getElementById('formulario').requestSubmit()`))
	p.wait(t, "resultado-duplicado")
	if n := p.list(t, "type=request").Total; n != 1 {
		t.Errorf("resending the same fill stored %d requests, want 1", n)
	}

	// «Ver mi publicación», then «Atrás»: the confirmation again, with its manage link (the page is not
	// cached: the link was lost, with the empty form in its place). A link to /pedir opens the empty form.
	p.do(t, "see my publication", chromedp.Click(chromedp.ID("resultado-ver"), chromedp.NodeVisible))
	p.waitLocation(t, "/ayudas/"+id)
	p.do(t, "back", chromedp.NavigateBack())
	p.wait(t, "resultado-gestionar")
	if href := run(p.ctx, t, "manage link after «Atrás»", chromedp.Evaluate[string](`document.getElementById('resultado-gestionar').href`)); !strings.Contains(href, "/gestionar#id="+id+"&token=") {
		t.Errorf("after «Atrás» the manage link is %q, want the one of %s", href, id)
	}
	p.screenshot(t, "pedir-atras")
	// The menu's «Pedir ayuda» opens the empty form, with a note that brings the confirmation back.
	p.open(t, "/pedir")
	p.wait(t, "ultima")
	p.do(t, "see my last publication", chromedp.Click(chromedp.ID("ultima-ver"), chromedp.NodeVisible))
	p.wait(t, "resultado-gestionar")
	if href := run(p.ctx, t, "manage link from the note", chromedp.Evaluate[string](`document.getElementById('resultado-gestionar').href`)); !strings.Contains(href, "/gestionar#id="+id+"&token=") {
		t.Errorf("the note brought back the manage link %q, want the one of %s", href, id)
	}

	// A new fill without a title: the field's error in Spanish next to it, nothing stored.
	p.open(t, "/pedir")
	secondID := p.externalID(t)
	if secondID == firstID {
		t.Errorf("a new fill reuses the externalId %q of the published one", firstID)
	}
	p.fill(t, withValues(request, "f-title", "", "f-neededPeople", "2", "f-contactName", "Rosa Díaz"))
	p.check(t, "f-publishContact")
	p.submit(t, "f-title-error")
	if got := p.text(t, "f-title-error"); got != "«Título» es obligatorio" {
		t.Errorf("title error: %q, want «Título» es obligatorio", got)
	}
	if got := run(p.ctx, t, "aria-invalid", chromedp.Evaluate[string](`document.getElementById('f-title').getAttribute('aria-invalid') || ''`)); got != "true" {
		t.Errorf("the title input is not marked aria-invalid (%q)", got)
	}
	if got := p.text(t, "errores-mensaje"); got != "No se pudo publicar: corrija los campos marcados." {
		t.Errorf("error summary: %q", got)
	}
	shown := run(p.ctx, t, "shown errors", chromedp.Evaluate[[]string](
		`Array.from(document.querySelectorAll('#formulario .error')).filter(e => !e.hidden).map(e => e.id)`))
	if len(shown) != 1 || shown[0] != "f-title-error" {
		t.Errorf("errors shown next to fields: %v, want only f-title-error", shown)
	}
	p.screenshot(t, "pedir-error")
	if n := p.list(t, "type=request").Total; n != 1 {
		t.Errorf("the fill without a title stored something: %d requests, want 1", n)
	}

	// Reloading keeps the fill's externalId (a person who reloads before resending must not publish twice);
	// the corrected fill then publishes under it.
	p.do(t, "reload", chromedp.Reload(), chromedp.WaitVisible(chromedp.ID("enviar")))
	if got := p.externalID(t); got != secondID {
		t.Errorf("after a reload the fill's externalId is %q, want %q", got, secondID)
	}
	// The point pasted whole in «Latitud», as a map app copies it: both fields.
	p.fill(t, withValues(request, "f-title", "Carpas para 2 familias", "f-neededPeople", "2", "f-contactName", "Rosa Díaz",
		"f-latitude", "8.6601, -75.1302", "f-longitude", ""))
	if !run(p.ctx, t, "consent", chromedp.Evaluate[bool](`document.getElementById('f-publishContact').checked`)) {
		p.check(t, "f-publishContact")
	}
	p.submit(t, "resultado-nuevo")
	if got := run(p.ctx, t, "split point", chromedp.Evaluate[string](`document.getElementById('f-latitude').value + ' ' + document.getElementById('f-longitude').value`)); got != "8.6601 -75.1302" {
		t.Errorf("the point pasted in «Latitud» was sent as %q", got)
	}
	if n := p.list(t, "type=request").Total; n != 2 {
		t.Errorf("after the corrected fill: %d requests, want 2", n)
	}
	resp, out := publish(t, p.s, map[string]any{"type": "request", "source": "directaid-web", "externalId": secondID,
		"emergencySlug": "inundaciones-la-mojana", "title": "Carpas para 2 familias", "category": "refugio", "address": "x",
		"latitude": 8.6601, "longitude": -75.1302, "contactName": "Rosa Díaz", "contactWhatsapp": "3005551234", "publishContact": true})
	if resp.StatusCode != 200 || out["duplicate"] != true {
		t.Errorf("the corrected fill was not stored under the externalId %q the page kept: %d %v", secondID, resp.StatusCode, out)
	}
}

func (p *phone) offerForm(t *testing.T) {
	p.open(t, "/ofrecer")
	p.locate(t, 4.5339, -75.6811)
	p.do(t, "use my location", chromedp.Click(chromedp.ID("usar-ubicacion"), chromedp.NodeVisible))
	run(p.ctx, t, "coordinates filled", chromedp.Poll[bool](`document.getElementById('f-longitude').value !== ''`,
		chromedp.WithPollingTimeout(15*time.Second)))
	gotLat := run(p.ctx, t, "latitude", chromedp.Value(chromedp.ID("f-latitude")))
	gotLon := run(p.ctx, t, "longitude", chromedp.Value(chromedp.ID("f-longitude")))
	if gotLat != "4.53390" || gotLon != "-75.68110" {
		t.Errorf("«Usar mi ubicación» filled %q, %q; want 4.53390, -75.68110", gotLat, gotLon)
	}
	if got := p.text(t, "ubicacion-estado"); got != "Listo: se llenaron la latitud y la longitud." {
		t.Errorf("location status: %q", got)
	}

	// A request 1.1 km away that the offer can serve: the confirmation lists it at once.
	resp, near := publish(t, p.s, map[string]any{"type": "request", "source": "e2e", "externalId": "browser-near-1", "emergencySlug": "eje-cafetero",
		"title": "Llevar a 3 personas al hospital", "category": "transporte", "address": "Cra 19 # 12-40", "latitude": 4.5439, "longitude": -75.6811,
		"contactName": "Rosa", "contactWhatsapp": "3005551234", "publishContact": true})
	if resp.StatusCode != 201 {
		t.Fatalf("publish the request near: %d %v", resp.StatusCode, near)
	}
	p.fill(t, map[string]string{
		"f-emergencySlug":   "eje-cafetero",
		"f-title":           "Transporte en camioneta para 6 personas",
		"f-category":        "transporte",
		"f-address":         "Parque de Bolívar, Armenia",
		"f-contactName":     "Luis Ortiz",
		"f-contactWhatsapp": "+57 310 987 6543",
	})
	id := p.publishes(t, "ofrecer", "Listo: su ofrecimiento quedó publicado.", "offer")
	p.wait(t, "coincidencias")
	got := run(p.ctx, t, "matches", chromedp.Evaluate[[]string](
		`[document.querySelector('#coincidencias h2').textContent].concat(Array.from(document.querySelectorAll('#coincidencias-lista li')).map(li => li.textContent + ' ' + li.querySelector('a').href))`))
	if want := []string{"Solicitudes cerca que usted puede atender", "Llevar a 3 personas al hospital, a 1,1 km, Armenia (Quindío) " + near["publicUrl"].(string)}; !slices.Equal(got, want) ||
		!run(p.ctx, t, "none hidden", chromedp.Evaluate[bool](`document.getElementById('coincidencias-ninguna').hidden`)) {
		t.Errorf("the confirmation's matches: %q, want %q", got, want)
	}
	p.screenshot(t, "ofrecer-coincidencias")
	d := p.detail(t, id)
	wantPlace(t, d, "eje-cafetero", "Parque de Bolívar, Armenia", "", 4.5339, -75.6811)
	if d.Type != "offer" || d.Title != "Transporte en camioneta para 6 personas" || d.Category != "transporte" ||
		d.Contact.Name != "Luis Ortiz" || d.Contact.Whatsapp != "+573109876543" {
		t.Errorf("stored offer differs from the fill: %+v", d)
	}
}

// nearMe: on the emergency's page, «Usar mi ubicación» in the filter fills the point, and the list then
// shows what is near it, nearest first, with its distance: the offer published from that very spot.
func (p *phone) nearMe(t *testing.T) {
	p.open(t, "/emergencias/eje-cafetero")
	p.locate(t, 4.5339, -75.6811)
	p.do(t, "open the filter", chromedp.Click(chromedp.CSS("#filtro summary"), chromedp.NodeVisible))
	p.do(t, "use my location", chromedp.Click(chromedp.ID("usar-ubicacion"), chromedp.NodeVisible))
	run(p.ctx, t, "coordinates filled", chromedp.Poll[bool](`document.getElementById('filtro-longitude').value !== ''`,
		chromedp.WithPollingTimeout(15*time.Second)))
	p.screenshot(t, "emergencia-cerca")
	p.do(t, "filter", chromedp.Click(chromedp.CSS("#filtro button[type=submit]"), chromedp.NodeVisible))
	url := p.waitLocation(t, "latitude=")
	if !strings.Contains(url, "latitude=4.53390") || !strings.Contains(url, "longitude=-75.68110") {
		t.Errorf("the filter went to %s", url)
	}
	main := run(p.ctx, t, "list", chromedp.Text(chromedp.CSS("main")))
	if !strings.Contains(main, "Transporte en camioneta para 6 personas") || !strings.Contains(main, "0,0 km") {
		t.Errorf("the list near the point lacks the offer published there (with its distance):\n%s", main)
	}
	p.screenshot(t, "emergencia-filtrada")
}

// waitLocation waits until the tab is at a URL holding want, after a tap that navigates (the old page's
// elements would answer a plain WaitVisible), and until that page is loaded; it returns the URL.
func (p *phone) waitLocation(t *testing.T, want string) string {
	t.Helper()
	var url string
	for deadline := time.Now().Add(15 * time.Second); !strings.Contains(url, want); {
		if time.Now().After(deadline) {
			t.Fatalf("the tap did not lead to a page at …%s… (at %q)", want, url)
		}
		time.Sleep(50 * time.Millisecond)
		url, _ = chromedp.Run(p.ctx, chromedp.Location()) // fails while the page changes: try again
	}
	p.do(t, "page at "+want, chromedp.WaitReady(chromedp.CSS("footer")))
	return url
}

// weigh logs what the page in the tab weighs on a first visit: the page and its assets, gzipped as the
// shipped Caddyfile sends them (the browser's own counts are of no use once the service worker answers).
func (p *phone) weigh(t *testing.T) {
	t.Helper()
	page := run(p.ctx, t, "path", chromedp.Evaluate[string](`location.pathname + location.search`))
	raw, zipped, assets := pageWeight(t, p.s, page)
	t.Logf("weight %s: %d bytes transferred gzipped with its %d assets (%d uncompressed)", page, zipped, assets, raw)
}

// locate makes the browser report the position (lat, lon), with permission granted as a person would.
func (p *phone) locate(t *testing.T, lat, lon float64) {
	t.Helper()
	if _, err := chromedp.CallBrowser(p.ctx, browser.SetPermission, browser.SetPermissionParams{
		Permission: &browser.PermissionDescriptor{Name: "geolocation"}, Setting: browser.PermissionSettingGranted, Origin: p.s.URL,
	}); err != nil {
		t.Fatalf("grant geolocation: %v", err)
	}
	acc := 15.0
	if _, err := chromedp.Call(p.ctx, emulation.SetGeolocationOverride, emulation.SetGeolocationOverrideParams{
		Latitude: &lat, Longitude: &lon, Accuracy: &acc,
	}); err != nil {
		t.Fatalf("geolocation override: %v", err)
	}
}

// withValues is m with the given id, value pairs replaced.
func withValues(m map[string]string, kv ...string) map[string]string {
	out := maps.Clone(m)
	for i := 0; i+1 < len(kv); i += 2 {
		out[kv[i]] = kv[i+1]
	}
	return out
}

func wantPlace(t *testing.T, d schema.PublicHelpDetail, slug, address, neighborhood string, lat, lon float64) {
	t.Helper()
	if d.Emergency.Slug != slug {
		t.Errorf("stored emergency %q, want %q", d.Emergency.Slug, slug)
	}
	l := d.Location
	if l == nil || l.Address != address || l.Neighborhood != neighborhood || l.Latitude == nil || l.Longitude == nil ||
		math.Abs(*l.Latitude-lat) > 1e-9 || math.Abs(*l.Longitude-lon) > 1e-9 {
		t.Errorf("stored location %s, want %q, %q, %v, %v", mustJSON(t, l), address, neighborhood, lat, lon)
	}
}

// phone is the browser tab and the server it talks to.
type phone struct {
	ctx       context.Context
	s         *testserver.Server
	artifacts string

	mu      sync.Mutex
	console []string
}

// startPhone starts headless Chromium (its own temporary profile) and emulates a phone in its tab; the
// browser ends with ctx or with the test.
func startPhone(ctx context.Context, t *testing.T) context.Context {
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromiumBin), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.WindowSize(phoneWidth, phoneHeight))
	actx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	bctx, cancelTab := chromedp.NewContext(actx)
	t.Cleanup(func() { cancelTab(); cancelAlloc() })
	if err := chromedp.Do(bctx, chromedp.EmulateViewport(phoneWidth, phoneHeight,
		chromedp.EmulateScale(phoneScale), chromedp.EmulateMobile, chromedp.EmulatePortrait)); err != nil {
		t.Fatalf("start %s: %v", chromiumBin, err)
	}
	return bctx
}

// consoleErrors are the uncaught exceptions, console.error calls and security messages (a
// Content-Security-Policy violation) the pages produced. Failed requests are not among them: the
// error fill gets its 400 on purpose.
func (p *phone) consoleErrors() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.console
}

func (p *phone) watchConsole(t *testing.T) {
	ctx, cancel := context.WithCancel(p.ctx)
	msgs := chromedp.Console(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for m, err := range msgs {
			if err != nil {
				return
			}
			if m.IsException() || (m.Type == chromedp.ConsoleError && m.Source != "network") || m.Source == "security" {
				p.mu.Lock()
				p.console = append(p.console, m.String())
				p.mu.Unlock()
			}
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
}

// open loads a page of the site, waits for it and checks that it fits the phone's width.
func (p *phone) open(t *testing.T, pagePath string) {
	t.Helper()
	p.do(t, "open "+pagePath, chromedp.Navigate(p.s.URL+pagePath), chromedp.WaitVisible(chromedp.CSS("main h1")))
	if pagePath != "/" {
		// The form's script (deferred, so it ran before the load event) shows «Usar mi ubicación».
		if !run(p.ctx, t, "form script", chromedp.Evaluate[bool](`!document.getElementById('usar-ubicacion').hidden`)) {
			t.Errorf("%s: the form's script did not run (the «Usar mi ubicación» button is still hidden)", pagePath)
		}
		if !run(p.ctx, t, "location hint", chromedp.Evaluate[bool](`(document.getElementById('ubicacion-ayuda') || {hidden: true}).hidden`)) {
			t.Errorf("%s: the hint for browsers without «Usar mi ubicación» shows beside the button", pagePath)
		}
	}
	w := run(p.ctx, t, "page width", chromedp.Evaluate[[]int](`[document.documentElement.scrollWidth, window.innerWidth]`))
	if len(w) != 2 || w[0] > w[1] || w[1] != phoneWidth {
		t.Errorf("%s at phone width: content %v CSS px wide in a %v px window (scrolls sideways)", pagePath, w[0], w[1])
	}
}

// fill types each value into the element of that id, as a person would; selects get their value set.
func (p *phone) fill(t *testing.T, values map[string]string) {
	t.Helper()
	for id, v := range values {
		tag := run(p.ctx, t, "tag of "+id, chromedp.Evaluate[string](fmt.Sprintf(`document.getElementById(%q).tagName`, id)))
		// Empty first (chromedp's SetValue cannot set ""), also a select: an unknown option leaves it empty.
		steps := []chromedp.Action[chromedp.Void]{chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`document.getElementById(%q).value = ''`, id))}
		switch {
		case v == "":
		case tag == "SELECT":
			steps = append(steps, chromedp.SetValue(chromedp.ID(id), v))
		default:
			steps = append(steps, chromedp.SendKeys(chromedp.ID(id), v))
		}
		p.do(t, "fill "+id, steps...)
		if got := run(p.ctx, t, "value of "+id, chromedp.Value(chromedp.ID(id))); got != v {
			t.Fatalf("%s holds %q after typing %q", id, got, v)
		}
	}
}

// check ticks a checkbox with a click on it, as a tap would.
func (p *phone) check(t *testing.T, id string) {
	t.Helper()
	p.do(t, "tick "+id, chromedp.Click(chromedp.ID(id), chromedp.NodeVisible))
	if !run(p.ctx, t, "ticked "+id, chromedp.Evaluate[bool](fmt.Sprintf(`document.getElementById(%q).checked`, id))) {
		t.Fatalf("%s is not checked after a tap", id)
	}
}

// submit taps the submit button and waits until the element of that id shows.
func (p *phone) submit(t *testing.T, wantVisible string) {
	t.Helper()
	p.do(t, "submit", chromedp.Click(chromedp.ID("enviar"), chromedp.NodeVisible))
	p.wait(t, wantVisible)
}

func (p *phone) wait(t *testing.T, id string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, 15*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, chromedp.WaitVisible(chromedp.ID(id))); err != nil {
		summary, _ := chromedp.Run(p.ctx, chromedp.Evaluate[string](`(document.getElementById('errores') || {}).innerText || ''`))
		t.Fatalf("#%s did not show: %v (error box: %q)", id, err, summary)
	}
}

func (p *phone) text(t *testing.T, id string) string {
	t.Helper()
	return strings.TrimSpace(run(p.ctx, t, "text of #"+id, chromedp.Text(chromedp.ID(id))))
}

// externalID is the idempotency key the page will send for this fill.
func (p *phone) externalID(t *testing.T) string {
	t.Helper()
	return run(p.ctx, t, "externalId", chromedp.Value(chromedp.CSS(`#formulario input[name=externalId]`)))
}

// recordID is the id in the public link of the success message.
func (p *phone) recordID(t *testing.T) string {
	t.Helper()
	href := run(p.ctx, t, "public link", chromedp.Evaluate[string](`document.getElementById('resultado-enlace').href`))
	u, err := url.Parse(href)
	if err != nil || !strings.HasPrefix(u.Path, "/ayudas/") {
		t.Fatalf("the success message links to %q, want …/ayudas/{id}", href)
	}
	return path.Base(u.Path)
}

// screenshot saves the whole page, as the phone renders it, to test-artifacts/browser-<name>.png.
func (p *phone) screenshot(t *testing.T, name string) {
	t.Helper()
	// A full-page capture of a long page (the guide) at phone scale takes seconds even on a quiet machine:
	// it gets three times a step's budget, so that a busy CI machine does not fail it.
	ctx, cancel := context.WithTimeout(p.ctx, 60*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, browserErr(p.ctx, err))
	}
	file := filepath.Join(p.artifacts, "browser-"+name+".png")
	if err := os.WriteFile(file, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", file)
}

func (p *phone) list(t *testing.T, query string) schema.HelpList {
	t.Helper()
	var l schema.HelpList
	p.get(t, "/api/public/v1/help?view=list&"+query, &l)
	return l
}

func (p *phone) detail(t *testing.T, id string) schema.PublicHelpDetail {
	t.Helper()
	var d schema.PublicHelpDetail
	p.get(t, "/api/public/v1/help?view=detail&id="+url.QueryEscape(id), &d)
	return d
}

// get reads the API (checked against the served OpenAPI document) into v.
func (p *phone) get(t *testing.T, pathQuery string, v any) {
	t.Helper()
	req := p.s.NewRequest("GET", pathQuery, nil)
	resp, body := p.s.Do("GET", pathQuery, nil)
	p.s.CheckOpenAPI(req, resp, body)
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %d\n%s", pathQuery, resp.StatusCode, body)
	}
	if err := json.Unmarshal(body, v); err != nil {
		t.Fatalf("GET %s: %v\n%s", pathQuery, err, body)
	}
}

func (p *phone) do(t *testing.T, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, 20*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatalf("%s: %v", what, browserErr(p.ctx, err))
	}
}

func run[T any](ctx context.Context, t *testing.T, what string, a chromedp.Action[T]) T {
	t.Helper()
	stepCtx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	v, err := chromedp.Run(stepCtx, a)
	if err != nil {
		t.Fatalf("%s: %v", what, browserErr(ctx, err))
	}
	return v
}

// browserErr says when the whole test ran out of time rather than one step.
func browserErr(ctx context.Context, err error) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("%w (the browser test's time is up)", err)
	}
	return err
}

// retryWithoutLink: the API answers a send with «ya estaba publicada» and no manage link (the first send,
// whose answer was lost, came from another network). The page says why and how to get it, and «Volver a
// mi formulario» brings back the same fill, its externalId kept, to send again from the first network.
func (p *phone) retryWithoutLink(t *testing.T) {
	p.open(t, "/pedir")
	ext := p.externalID(t)
	// The answer of a retry from another network, as the API gives it.
	p.do(t, "the API's answer", chromedp.Evaluate[chromedp.Void](`window.fetch = () => Promise.resolve(new Response(JSON.stringify({
		ok: true, duplicate: true, contentMatches: true, id: '06h2gaaaaaaaaaaa', status: 'open',
		publicUrl: location.origin + '/ayudas/06h2gaaaaaaaaaaa'}), {status: 200, headers: {'Content-Type': 'application/json'}}))`))
	p.fill(t, map[string]string{"f-title": "Agua para la vereda"})
	p.submit(t, "resultado-sin-gestion")
	if got := p.text(t, "resultado-sin-gestion"); !strings.Contains(got, "no recibió el enlace para gestionarla") {
		t.Errorf("the retry without a link says %q", got)
	}
	p.do(t, "back to the form", chromedp.Click(chromedp.ID("volver-formulario"), chromedp.NodeVisible))
	p.wait(t, "enviar")
	state := run(p.ctx, t, "the form again", chromedp.Evaluate[[]any](`[document.getElementById('resultado').hidden,
		document.getElementById('f-title').value, document.querySelector('#formulario [name=externalId]').value,
		sessionStorage.getItem('directaid:/pedir')]`))
	if len(state) != 4 || state[0] != true || state[1] != "Agua para la vereda" || state[2] != ext || state[3] != ext {
		t.Errorf("«Volver a mi formulario»: result hidden, title, externalId, kept id = %v; want true, the title, %s, %s", state, ext, ext)
	}
	p.do(t, "reload", chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS("main h1")))
	if got := p.externalID(t); got != ext {
		t.Errorf("after a reload the fill's externalId is %q, want %s (sent again it would publish twice)", got, ext)
	}
}
