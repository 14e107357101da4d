package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/directaid/directaid/internal/testserver"
)

// TestBrowserPeople walks the site as people in the Eje Cafetero quake would, at 390×844, with JavaScript
// on and off, in real Chromium against the binary, never typing a coordinate:
//   - María has no GPS: she searches «insulina» in «armenia» from the home page and lands on the
//     emergency's list of Armenia (Quindío), not Armenia (Antioquia); «Usar mi ubicación» failing sends
//     her to the town field; she publishes her request by the town's name (Enter in the place search
//     searches), keeps the manage link with «Gestionar» and resolves it; the record's page then says
//     «Ya resuelta» first, with no WhatsApp button.
//   - A volunteer in Pereira types «Pereira» in the filter's «Municipio» (no suggestions: the server reads
//     the name) and finds the records there, urgent requests first with a red badge, then, with the link
//     in sight «Sin nadie ayudando», those nobody helps yet.
//   - A person reports their number on a record's page and, going back, sees it gone at once.
//   - A town far from the emergency's area, chosen by mistake, publishes with a warning in sight.
//   - A publisher withdraws: «Retirar» asks first (the browser's dialog with JavaScript, a confirmation
//     step without), and changing one's mind keeps the publication.
//
// Every page met logs its weight (gzipped, with its assets). Screenshots go to test-artifacts/people/; axe-core checks the pages met on the way.
func TestBrowserPeople(t *testing.T) {
	artifacts := needBrowser(t, "people")
	axe := installAxe(t)
	// The Eje Cafetero has its area (63 66 17) and lines; pages are compressed as the shipped Caddyfile does.
	s := testserver.Start(t, testserver.Options{Site: "encode zstd gzip"})
	seedTowns(t, s)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	p := &phone{ctx: startPhone(ctx, t), s: s, artifacts: artifacts}
	p.watchConsole(t)
	axeClean := func(t *testing.T, js bool) {
		t.Helper()
		for _, v := range axeViolations(t, p.ctx, axe) {
			t.Errorf("axe: %s", v)
		}
		setScripts(t, p.ctx, js) // axe needs scripts; the walk goes on as it was
	}
	goTo := func(t *testing.T, path string) {
		t.Helper()
		p.do(t, "open "+path, chromedp.Navigate(s.URL+path), chromedp.WaitVisible(chromedp.CSS("main h1")))
		p.weigh(t)
	}
	mainText := func(t *testing.T) string {
		t.Helper()
		return run(p.ctx, t, "main text", chromedp.Text(chromedp.CSS("main")))
	}
	tap := func(t *testing.T, what, sel string) {
		t.Helper()
		p.do(t, what, chromedp.Click(chromedp.CSS(sel), chromedp.NodeVisible))
	}

	for _, js := range []bool{true, false} {
		mode := map[bool]string{true: "js", false: "nojs"}[js]
		setScripts(t, p.ctx, js)

		t.Run("maria-"+mode, func(t *testing.T) {
			goTo(t, "/")
			p.screenshot(t, "inicio-"+mode)
			p.fill(t, map[string]string{"buscar-q": "insulina", "buscar-municipio": "armenia"})
			tap(t, "search", "#buscar button[type=submit]")
			waitText(t, p, "filtro", "Filtrar la lista") // only the emergency's page has the filter
			url := run(p.ctx, t, "url", chromedp.Evaluate[string](`location.pathname + location.search`))
			if url != "/emergencias/eje-cafetero?municipio=armenia&q=insulina" {
				t.Errorf("the home search landed on %q", url)
			}
			text := mainText(t)
			if !strings.Contains(text, "Insulina para mi papá") || strings.Contains(text, "Insulina en Antioquia") {
				t.Errorf("«insulina» in «armenia» lists:\n%s", text)
			}
			p.screenshot(t, "maria-busqueda-"+mode)
			axeClean(t, js)

			if js { // no GPS: «Usar mi ubicación» fails and offers the town instead of coordinates
				if _, err := chromedp.CallBrowser(p.ctx, browser.SetPermission, browser.SetPermissionParams{
					Permission: &browser.PermissionDescriptor{Name: "geolocation"}, Setting: browser.PermissionSettingGranted, Origin: s.URL}); err != nil {
					t.Fatal(err)
				}
				if _, err := chromedp.Call(p.ctx, emulation.SetGeolocationOverride, emulation.SetGeolocationOverrideParams{}); err != nil {
					t.Fatal(err) // no position: «position unavailable»
				}
				tap(t, "open the filter", "#filtro summary")
				tap(t, "use my location", "#usar-ubicacion")
				waitText(t, p, "ubicacion-estado", "municipio")
				if got := run(p.ctx, t, "focus", chromedp.Evaluate[string](`document.activeElement.id`)); got != "filtro-municipio" {
					t.Errorf("after the location failed the focus is on %q, want the town field", got)
				}
				if strings.Contains(p.text(t, "ubicacion-estado"), "latitud") {
					t.Errorf("the failure asks for coordinates: %q", p.text(t, "ubicacion-estado"))
				}
				p.screenshot(t, "maria-sin-gps")
			}

			goTo(t, "/pedir")
			p.fill(t, map[string]string{"f-emergencySlug": "eje-cafetero", "f-title": "Insulina para mi mamá " + mode,
				"f-category": "salud", "f-urgency": "urgent", "f-address": "Calle 20 # 14-10", "f-contactName": "María",
				"f-contactWhatsapp": "3001112233"})
			// A latitude with a decimal comma and no longitude: the missing longitude is said at «Longitud»,
			// not as «Diga dónde» at the place picker; then the coordinate is cleared and the town chosen.
			p.fill(t, map[string]string{"f-latitude": "4,5339"})
			p.submit(t, "errores")
			if got := p.text(t, "errores-lista"); !strings.Contains(got, "«Longitud»") || strings.Contains(got, "Diga dónde") {
				t.Errorf("a latitude without its longitude: %q", got)
			}
			p.fill(t, map[string]string{"f-latitude": ""})
			if js {
				// The place list comes when the picker is first used: typing in it brings the list, and the
				// results follow what was typed.
				p.do(t, "type armenia", chromedp.SendKeys(chromedp.ID("f-lugar-buscar"), "armenia"))
				run(p.ctx, t, "place list", chromedp.Poll[bool](`document.getElementById('lugar').classList.contains('al-instante')`,
					chromedp.WithPollingTimeout(15*time.Second)))
			} else {
				// Enter in the place search searches: the page comes back with everything typed and the results.
				p.do(t, "type armenia and Enter", chromedp.SendKeys(chromedp.ID("f-lugar-buscar"), "armenia\r"))
				p.do(t, "results", chromedp.WaitVisible(chromedp.CSS("#lugar-resultados button")))
				if got := run(p.ctx, t, "title kept", chromedp.Value(chromedp.ID("f-title"))); got != "Insulina para mi mamá "+mode {
					t.Errorf("the search lost the title: %q", got)
				}
				if n := run(p.ctx, t, "errors", chromedp.Evaluate[bool](`!document.getElementById('errores').hidden`)); n {
					t.Errorf("Enter in the place search tried to publish")
				}
			}
			first := run(p.ctx, t, "first result", chromedp.Evaluate[string](`document.querySelector('#lugar-resultados button').textContent`))
			if first != "Armenia (Quindío)" {
				t.Errorf("the first place for «armenia» is %q, want Armenia (Quindío)", first)
			}
			p.screenshot(t, "maria-lugar-"+mode)
			tap(t, "choose Armenia (Quindío)", "#lugar-resultados button")
			if !js {
				p.do(t, "chosen", chromedp.WaitVisible(chromedp.ID("lugar-elegido")))
				if y := run(p.ctx, t, "scroll", chromedp.Evaluate[float64](`window.scrollY`)); y < 200 {
					t.Errorf("the chosen place's page opens at the top (scrollY %v), not at #lugar", y)
				}
			}
			if got := p.text(t, "lugar-elegido"); got != "Lugar: Armenia (Quindío)" {
				t.Errorf("chosen place: %q", got)
			}
			if lat := run(p.ctx, t, "latitude", chromedp.Value(chromedp.ID("f-latitude"))); lat != "" {
				t.Errorf("a coordinate was typed: %q", lat)
			}
			p.check(t, "f-publishContact")
			p.submit(t, "resultado-ver")
			public := run(p.ctx, t, "public link", chromedp.Evaluate[string](`document.getElementById('resultado-ver').href`))
			for _, sel := range []string{"#gestionar-ahora button", `#enviar-gestion[href^="https://wa.me/?text="]`} {
				if !run(p.ctx, t, sel, chromedp.Evaluate[bool](fmt.Sprintf(`!!document.querySelector(%q) && document.querySelector(%q).offsetParent !== null`, sel, sel))) {
					t.Errorf("the confirmation lacks %s", sel)
				}
			}
			if js != run(p.ctx, t, "remember", chromedp.Evaluate[bool](`!document.getElementById('recordar').hidden`)) {
				t.Errorf("«Recordar en este teléfono» shown %v with JavaScript %v", !js, js)
			}
			if js {
				p.check(t, "recordar-aqui")
			}
			p.screenshot(t, "maria-publicada-"+mode)
			axeClean(t, js)

			// «Gestionar» posts the id and the token: the manage page opens filled in, with or without JS.
			tap(t, "Gestionar", "#gestionar-ahora button")
			p.do(t, "manage page", chromedp.WaitVisible(chromedp.ID("g-id")))
			if ok := run(p.ctx, t, "filled", chromedp.Evaluate[bool](`document.getElementById('g-id').value !== '' && document.getElementById('g-token').value !== ''`)); !ok {
				t.Fatalf("/gestionar opened without the id and the token")
			}
			tap(t, "resolve", `#gestion-formulario button[value="resolve"]`)
			p.wait(t, "gestion-resultado")
			p.screenshot(t, "maria-resuelta-"+mode)

			p.do(t, "open the record", chromedp.Navigate(public), chromedp.WaitVisible(chromedp.CSS("main h1")))
			banner := run(p.ctx, t, "banner", chromedp.Evaluate[string](`document.querySelector('main h1 + p').textContent`))
			if banner != "Ya resuelta: no hace falta escribir." {
				t.Errorf("the resolved record's first line: %q", banner)
			}
			if n := run(p.ctx, t, "whatsapp", chromedp.Evaluate[int](`document.querySelectorAll('main a[href^="https://wa.me/57"]').length`)); n != 0 {
				t.Errorf("the resolved record still has %d WhatsApp buttons", n)
			}
			p.screenshot(t, "maria-registro-resuelto-"+mode)
			axeClean(t, js)

			if js { // the home page lists what she chose to remember on this phone
				goTo(t, "/")
				p.wait(t, "mias")
				if got := p.text(t, "mias-lista"); !strings.Contains(got, "Insulina para mi mamá js") {
					t.Errorf("«Mis publicaciones en este teléfono»: %q", got)
				}
				p.screenshot(t, "inicio-mis-publicaciones")
			}
		})

		t.Run("voluntario-pereira-"+mode, func(t *testing.T) {
			// He types «Pereira» in the filter's «Municipio» and filters: no suggestion list, no place list
			// on the phone, the server reads the name.
			goTo(t, "/emergencias/eje-cafetero")
			tap(t, "open the filter", "#filtro summary")
			p.fill(t, map[string]string{"filtro-municipio": "Pereira"})
			tap(t, "filter", "#filtro button[type=submit]")
			p.waitLocation(t, "municipio=Pereira")
			p.weigh(t)
			wantOrder := func(t *testing.T, what string, want ...string) string {
				t.Helper()
				text := mainText(t)
				wantTitles(t, what, text, []string{townInsulin, townInsulinOther, townWater, townRescue, townTransport}, want)
				return text
			}
			text := wantOrder(t, "Pereira's list (urgent, then requests, then offers)", townRescue, townWater, townTransport)
			for _, want := range []string{"Cruz Roja 132", "Compartir esta lista por WhatsApp", "1 persona dice que está ayudando"} {
				if !strings.Contains(text, want) {
					t.Errorf("Pereira's list lacks %q", want)
				}
			}
			if js && run(p.ctx, t, "place list", chromedp.Evaluate[bool](`performance.getEntriesByType('resource').some(e => e.name.includes('lugares'))`)) {
				t.Errorf("the filter by town fetched the place list")
			}
			bg := run(p.ctx, t, "badge", chromedp.Evaluate[string](`getComputedStyle(document.querySelector('main h4 + p strong')).backgroundColor`))
			if bg != "rgb(179, 0, 27)" {
				t.Errorf("the urgency badge's background: %q", bg)
			}
			p.screenshot(t, "voluntario-pereira-"+mode)
			axeClean(t, js)

			// Those nobody is helping yet: one tap on a link in sight, the filter left folded.
			tap(t, "nobody helping yet", `main a[href*="attended=false"]`)
			url := p.waitLocation(t, "attended=false")
			if !strings.Contains(url, "municipio=Pereira") {
				t.Errorf("«sin nadie ayudando» left Pereira: %s", url)
			}
			p.weigh(t)
			text = wantOrder(t, "Pereira's list of those nobody helps yet", townRescue, townTransport)
			if strings.Contains(text, "dice que está ayudando") || strings.Contains(text, "dicen que están ayudando") {
				t.Errorf("the list of those nobody helps yet shows one being helped:\n%s", text)
			}
			if got := run(p.ctx, t, "filter shown", chromedp.Value(chromedp.ID("filtro-attended"))); got != "false" {
				t.Errorf("the filter's «Respuestas» says %q", got)
			}
			if !strings.Contains(text, "Ver también las que tienen ayuda") {
				t.Errorf("no way back to the whole list of Pereira:\n%s", text)
			}
			p.screenshot(t, "voluntario-pereira-sin-ayuda-"+mode)
			axeClean(t, js)

			// The text search reads a town too.
			goTo(t, "/emergencias/eje-cafetero?q=pereira")
			wantOrder(t, "?q=pereira", townRescue, townWater, townTransport)
		})

		t.Run("reporta-su-numero-"+mode, func(t *testing.T) {
			// A number of each mode's own: the first mode's report disowns its number, which then stays
			// hidden on new publications.
			last := map[bool]string{true: "66", false: "77"}[js]
			_, res := publish(t, s, with(validRequest(), "title", "Carpa para 4 "+mode, "contactWhatsapp", "31044455"+last))
			id := res["id"].(string)
			goTo(t, "/ayudas/"+id)
			if !strings.Contains(mainText(t), "+57 310 444 55"+last) {
				t.Fatalf("the record does not show the number before the report")
			}
			p.screenshot(t, "reporte-antes-"+mode)
			tap(t, "reason", "#motivo-not_my_number")
			tap(t, "send", "#reporte-formulario button[type=submit]")
			p.do(t, "back link", chromedp.WaitVisible(chromedp.CSS(`main a[href$="/ayudas/`+id+`"]`)))
			p.screenshot(t, "reporte-enviado-"+mode)
			axeClean(t, js)
			tap(t, "back to the record", `main a[href$="/ayudas/`+id+`"]`)
			p.waitLocation(t, "/ayudas/"+id)
			p.do(t, "record", chromedp.WaitVisible(chromedp.CSS("main h1")))
			p.weigh(t)
			text := mainText(t)
			if strings.Contains(text, "310 444 55"+last) || run(p.ctx, t, "links", chromedp.Evaluate[int](`document.querySelectorAll('a[href^="tel:+57"], a[href^="https://wa.me/57"]').length`)) != 0 {
				t.Errorf("the number is still on the record's page after not_my_number:\n%s", text)
			}
			p.screenshot(t, "reporte-despues-"+mode)
			axeClean(t, js)
		})

		t.Run("lugar-lejos-"+mode, func(t *testing.T) {
			// Armenia (Antioquia) chosen by mistake for the Eje Cafetero: published, with a warning in sight.
			goTo(t, "/pedir")
			p.fill(t, map[string]string{"f-emergencySlug": "eje-cafetero", "f-title": "Pañales para bebé " + mode,
				"f-category": "salud", "f-address": "Calle 8 # 3-15", "f-contactName": "Rosa", "f-contactWhatsapp": "3001112244"})
			if js {
				p.do(t, "type armenia", chromedp.SendKeys(chromedp.ID("f-lugar-buscar"), "armenia"))
				run(p.ctx, t, "place list", chromedp.Poll[bool](`document.getElementById('lugar').classList.contains('al-instante')`,
					chromedp.WithPollingTimeout(15*time.Second)))
			} else {
				p.do(t, "type armenia and Enter", chromedp.SendKeys(chromedp.ID("f-lugar-buscar"), "armenia\r"))
				p.do(t, "results", chromedp.WaitVisible(chromedp.CSS("#lugar-resultados button")))
			}
			if !run(p.ctx, t, "mark Antioquia", chromedp.Evaluate[bool](`(() => {
				const b = Array.from(document.querySelectorAll('#lugar-resultados button')).find(b => b.textContent === 'Armenia (Antioquia)');
				if (b) b.id = 'elegir-antioquia';
				return !!b;
			})()`)) {
				t.Fatal("«armenia» does not offer Armenia (Antioquia)")
			}
			tap(t, "choose Armenia (Antioquia)", "#elegir-antioquia")
			p.wait(t, "lugar-elegido")
			if got := p.text(t, "lugar-elegido"); got != "Lugar: Armenia (Antioquia)" {
				t.Fatalf("chosen place: %q", got)
			}
			p.check(t, "f-publishContact")
			p.submit(t, "resultado-ver")
			warn := p.text(t, "resultado-avisos")
			if !strings.HasPrefix(warn, "Armenia (Antioquia) está a unos") || !strings.Contains(warn, "revise que eligió el lugar correcto. Se publicó de todos modos; si el lugar está mal, retírela") {
				t.Errorf("the confirmation's warning: %q", warn)
			}
			p.screenshot(t, "lugar-lejos-"+mode)
			axeClean(t, js)
		})

		t.Run("retira-"+mode, func(t *testing.T) {
			_, res := publish(t, s, with(validRequest(), "title", "Colchones para 3 "+mode))
			id, token := res["id"].(string), res["manageToken"].(string)
			exists := func() bool {
				t.Helper()
				resp, _ := s.Do("GET", "/api/public/v1/help?view=detail&id="+id, nil)
				return resp.StatusCode == 200
			}
			withdraw := `#gestion-formulario button[value="withdraw"]`
			danger := func(t *testing.T, sel string) { // «Retirar» is red (the danger style), with or without JS
				t.Helper()
				if !run(p.ctx, t, "danger style", chromedp.Evaluate[bool](fmt.Sprintf(`getComputedStyle(document.querySelector(%q)).backgroundColor === 'rgb(179, 0, 27)'`, sel))) {
					t.Errorf("%s is not in the danger style", sel)
				}
			}
			if js { // the manage link: its fragment fills the form
				p.do(t, "open the manage link", chromedp.Navigate(s.URL+"/gestionar#id="+id+"&token="+token), chromedp.WaitVisible(chromedp.ID("g-id")))
				run(p.ctx, t, "filled", chromedp.Poll[bool](`document.getElementById('g-token').value !== ''`, chromedp.WithPollingTimeout(10*time.Second)))
				run(p.ctx, t, "described", chromedp.Poll[bool](`!document.getElementById('gestion-publicacion').hidden`, chromedp.WithPollingTimeout(10*time.Second)))
				danger(t, withdraw)
				if run(p.ctx, t, "reopen", chromedp.Evaluate[bool](`document.querySelector('#gestion-formulario button[value="reopen"]').offsetParent !== null`)) {
					t.Error("an open record offers «Reabrir»")
				}
				p.screenshot(t, "retira-antes-js")
				// «Retirar» asks first: «Cancelar» keeps the publication, «Aceptar» withdraws it.
				answers := make(chan bool, 2)
				asked := make(chan string, 2)
				dctx, stop := context.WithCancel(p.ctx)
				defer stop()
				dialogs := chromedp.Events(dctx, page.JavascriptDialogOpening)
				go func() {
					for ev, err := range dialogs {
						if err != nil {
							return
						}
						asked <- ev.Message
						_, _ = chromedp.Call(dctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: <-answers})
					}
				}()
				for _, accept := range []bool{false, true} {
					answers <- accept
					tap(t, "withdraw", withdraw)
					select {
					case m := <-asked:
						if !strings.HasPrefix(m, "¿Retirar la publicación?") {
							t.Errorf("«Retirar» asks %q", m)
						}
					case <-time.After(15 * time.Second):
						t.Fatal("«Retirar» withdrew without asking")
					}
					if !accept {
						time.Sleep(500 * time.Millisecond) // what a withdrawal would have sent has arrived
						if !exists() {
							t.Fatal("«Cancelar» withdrew the publication")
						}
					}
				}
			} else { // without JavaScript the person pastes the link's id and code into the form
				goTo(t, "/gestionar")
				p.fill(t, map[string]string{"g-id": id, "g-token": token})
				danger(t, withdraw)
				tap(t, "withdraw", withdraw)
				p.wait(t, "confirmar-retiro")
				danger(t, withdraw)
				danger(t, `#confirmar-retiro button[value="withdraw"]`)
				if !exists() {
					t.Fatal("«Retirar» withdrew without asking")
				}
				p.screenshot(t, "retira-confirmar-nojs")
				axeClean(t, js)
				tap(t, "yes, withdraw", `#confirmar-retiro button[value="withdraw"]`)
			}
			p.wait(t, "gestion-resultado")
			waitText(t, p, "gestion-resultado", map[bool]string{true: "Retirar (borra mi nombre y teléfono): listo.", false: "Listo: la publicación quedó retirada"}[js])
			if exists() {
				t.Errorf("the publication is still there after «Retirar» was confirmed")
			}
			// Nothing is left to do with it: no action, no responses.
			waitText(t, p, "gestion-publicacion", "Esta publicación ya no está: se retiró.")
			// (The form's default button, off the screen, only shows the publication: Enter in a field.)
			left := run(p.ctx, t, "what is left", chromedp.Evaluate[[]any](`[Array.from(document.querySelectorAll('#gestion-formulario button:not([data-abrir])')).filter(b => b.offsetParent !== null).map(b => b.textContent),
				document.querySelector('main').innerText.includes('Nadie ha respondido')]`))
			if b, _ := left[0].([]any); len(b) != 0 || left[1] != false {
				t.Errorf("a withdrawn record's manage page shows the buttons %v, «Nadie ha respondido» %v", left[0], left[1])
			}
			p.screenshot(t, "retira-hecho-"+mode)
			axeClean(t, js)
		})
	}

	setScripts(t, p.ctx, true)
	for _, m := range p.consoleErrors() {
		t.Errorf("browser console: %s", m)
	}
}
