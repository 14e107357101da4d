package e2e

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/directaid/directaid/internal/testserver"
	"github.com/directaid/directaid/schema"
)

// TestBrowserRecordLife drives real Chromium at phone width through a record's life on the site (issue
// 13 item 10): gestionar.js with a manage link from the API (title and status shown, «Marcar como
// resuelta» resolves, the API agrees), then the whole scenario: publish through /pedir, follow
// the manage link the confirmation shows, resolve, and report ANOTHER record through its page's form
// with JavaScript off; the API shows the report counted (not_my_number hides the phone).
func TestBrowserRecordLife(t *testing.T) {
	artifacts := needBrowser(t, "life")
	s := testserver.Start(t, testserver.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	p := &phone{ctx: startPhone(ctx, t), s: s, artifacts: artifacts}
	p.watchConsole(t)

	// resolveOnManagePage is on /gestionar with a link's fragment: it sees the record's title and
	// status, taps «Marcar como resuelta» and sees the new status.
	resolveOnManagePage := func(t *testing.T, title, shot string) {
		t.Helper()
		p.wait(t, "gestion-publicacion")
		if got := p.text(t, "gestion-publicacion"); !strings.Contains(got, title) || !strings.Contains(got, "Estado: vigente. Si nadie la renueva, deja de mostrarse el ") {
			t.Errorf("the manage page says %q, want the title %q, «Estado: vigente» and until when", got, title)
		}
		if got := run(p.ctx, t, "fields", chromedp.Evaluate[bool](`document.getElementById('g-id').value !== '' && document.getElementById('g-token').value !== ''`)); !got {
			t.Errorf("gestionar.js did not fill the id and token from the fragment")
		}
		p.screenshot(t, shot+"-abierta")
		// Enter («Ir» on a phone) in the code's field shows the publication and does nothing to it (the
		// form's first button used to be «Marcar como resuelta»).
		p.do(t, "Enter in the code", chromedp.SendKeys(chromedp.ID("g-token"), "\r"))
		time.Sleep(500 * time.Millisecond)
		if got := p.text(t, "gestion-publicacion"); !strings.Contains(got, "Estado: vigente") {
			t.Fatalf("after Enter in the code: %q, want it still «vigente»", got)
		}
		p.do(t, "resolve", chromedp.Click(chromedp.CSS(`#gestion-formulario button[value="resolve"]`), chromedp.NodeVisible))
		p.wait(t, "gestion-resultado")
		if got := p.text(t, "gestion-hecho"); !strings.Contains(got, "Marcar como resuelta") {
			t.Errorf("after the tap: %q", got)
		}
		waitText(t, p, "gestion-publicacion", "Estado: resuelta. Su número sigue en la página de la publicación")
		p.screenshot(t, shot+"-resuelta")
	}

	t.Run("gestionar.js", func(t *testing.T) {
		offer := validOffer()
		_, pub := publish(t, s, offer)
		id, manage := pub["id"].(string), pub["manageUrl"].(string)
		u, err := url.Parse(manage)
		if err != nil || u.Path != schema.ManagePath || u.Fragment == "" {
			t.Fatalf("manageUrl %q", manage)
		}
		// Someone answered: the page lists it as the page without JavaScript does, with how many count and
		// its time in Colombia's.
		if resp, body := call(t, s, "POST", schema.ResponsesPath(id), mustJSON(t, map[string]any{"message": "Me interesa, paso a las 3", "contactWhatsapp": "3112223344"}), "Content-Type", "application/json"); resp.StatusCode != 201 {
			t.Fatalf("respond: %d %v", resp.StatusCode, body)
		}
		p.do(t, "open the manage link", chromedp.Navigate(s.URL+u.Path+"#"+u.Fragment), chromedp.WaitVisible(chromedp.CSS("main h1")))
		waitText(t, p, "gestion-respuestas-resumen", "1 persona dice que está ayudando.")
		if got := p.text(t, "gestion-respuestas-lista"); !strings.Contains(got, "Me interesa, paso a las 3") || !strings.Contains(got, "(hora de Colombia)") || !strings.Contains(got, "(+57 311 222 3344)") {
			t.Errorf("the responses listed by gestionar.js: %q", got)
		}
		resolveOnManagePage(t, offer["title"].(string), "gestionar")
		if d := p.detail(t, id); d.Status != "resolved" {
			t.Errorf("the API says %q after «Marcar como resuelta»", d.Status)
		}
		// A mistyped code: «Ver quién responde» says it is not valid (it did nothing at all).
		p.do(t, "a wrong code", chromedp.SetValue(chromedp.ID("g-token"), "codigo-equivocado"),
			chromedp.Click(chromedp.CSS(`#gestion-formulario button[value="responses"]`), chromedp.NodeVisible))
		waitText(t, p, "gestion-error", "no es válido")
	})

	// A record hidden by reports: its publisher reads that it is hidden with its data kept, and only
	// «Retirar» shows (it said «se retiró», with no button).
	t.Run("oculta", func(t *testing.T) {
		_, pub := publish(t, s, with(validRequest(), "externalId", "oculta-por-reportes"))
		id, manage := pub["id"].(string), pub["manageUrl"].(string)
		for _, ip := range []string{"127.0.0.51", "127.0.0.52", "127.0.0.53"} {
			report(t, s, ip, id, map[string]any{"reason": "spam"})
		}
		u, _ := url.Parse(manage)
		// From another page: a new fragment alone on /gestionar would not load it again.
		p.do(t, "open the hidden record's manage link", chromedp.Navigate(s.URL+"/"), chromedp.WaitVisible(chromedp.CSS("main h1")),
			chromedp.Navigate(s.URL+u.Path+"#"+u.Fragment), chromedp.WaitVisible(chromedp.CSS("main h1")))
		waitText(t, p, "gestion-publicacion", "está oculta mientras quien opera el sitio revisa reportes")
		shown := run(p.ctx, t, "buttons", chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll('#gestion-formulario button[value]'))
			.filter(b => !b.hidden && b.offsetParent !== null && b.value !== 'responses').map(b => b.value)`))
		if len(shown) != 1 || shown[0] != "withdraw" {
			t.Errorf("the hidden record's actions: %v, want only withdraw", shown)
		}
		p.screenshot(t, "gestionar-oculta")
	})

	// The manage link pasted whole in «Código de la publicación» (opened in another browser, or read out
	// from a WhatsApp message): the page takes its two codes and shows the publication.
	t.Run("enlace pegado", func(t *testing.T) {
		_, pub := publish(t, s, with(validRequest(), "externalId", "enlace-pegado", "title", "Publicación del enlace pegado"))
		p.do(t, "open /gestionar", chromedp.Navigate(s.URL+"/"), chromedp.WaitVisible(chromedp.CSS("main h1")),
			chromedp.Navigate(s.URL+schema.ManagePath), chromedp.WaitVisible(chromedp.ID("g-id")))
		// A button pressed with both fields empty says what is missing, as without JavaScript.
		p.do(t, "resolve with no code", chromedp.Click(chromedp.CSS(`#gestion-formulario button[value="resolve"]`), chromedp.NodeVisible))
		waitText(t, p, "gestion-error", "Escriba el código de la publicación")
		p.do(t, "paste the link and Enter", chromedp.SendKeys(chromedp.ID("g-id"), pub["manageUrl"].(string)+"\r"))
		waitText(t, p, "gestion-publicacion", "Publicación del enlace pegado")
		if got := run(p.ctx, t, "codes", chromedp.Evaluate[[]string](`[document.getElementById('g-id').value, document.getElementById('g-token').value]`)); len(got) != 2 ||
			got[0] != pub["id"].(string) || got[1] != pub["manageToken"].(string) {
			t.Errorf("the fields after pasting the link: %q", got)
		}
	})

	// The same without JavaScript: the link pasted in «Código de la publicación», the other field left
	// empty, and a button: the browser sends the form (no field is required of it), the server reads the
	// link's two codes and applies the action.
	t.Run("enlace pegado sin JavaScript", func(t *testing.T) {
		_, pub := publish(t, s, with(validRequest(), "externalId", "enlace-pegado-sin-js", "title", "Publicación del enlace sin JavaScript"))
		setScripts(t, p.ctx, false)
		defer setScripts(t, p.ctx, true)
		p.do(t, "open /gestionar", chromedp.Navigate(s.URL+schema.ManagePath), chromedp.WaitVisible(chromedp.ID("g-id")))
		// The link opened without JavaScript leaves the fields empty: the page says what to do, above them
		// and on the first screen.
		if top := run(p.ctx, t, "the advice", chromedp.Evaluate[float64](`(e => e && e.offsetParent ? e.getBoundingClientRect().bottom : -1)(document.getElementById('gestion-pegar'))`)); top < 0 || top > 740 {
			t.Errorf("the advice to paste the link is not on the first screen without JavaScript (bottom at %v)", top)
		}
		p.do(t, "paste the link", chromedp.SendKeys(chromedp.ID("g-id"), pub["manageUrl"].(string)))
		p.do(t, "resolve", chromedp.Click(chromedp.CSS(`#gestion-formulario button[value="resolve"]`), chromedp.NodeVisible))
		waitText(t, p, "gestion-hecho", "resuelta")
		if d := p.detail(t, pub["id"].(string)); d.Status != "resolved" {
			t.Errorf("the API says %q after resolving with the pasted link, without JavaScript", d.Status)
		}
	})

	// Another manage link opened in the same tab changes the fragment alone: the page shows, and acts on,
	// the publication of the new link (it resolved the first one). After «Marcar como resuelta», «Reabrir»
	// shows (it was not on a page the server rendered for an open record).
	t.Run("otro enlace", func(t *testing.T) {
		_, first := publish(t, s, with(validRequest(), "externalId", "primer-enlace", "title", "Primera publicación del teléfono"))
		_, second := publish(t, s, with(validRequest(), "externalId", "segundo-enlace", "title", "Segunda publicación del teléfono"))
		link := func(pub map[string]any) string {
			u, _ := url.Parse(pub["manageUrl"].(string))
			return s.URL + u.Path + "#" + u.Fragment
		}
		p.do(t, "open the first link", chromedp.Navigate(s.URL+"/"), chromedp.WaitVisible(chromedp.CSS("main h1")),
			chromedp.Navigate(link(first)), chromedp.WaitVisible(chromedp.CSS("main h1")))
		waitText(t, p, "gestion-publicacion", "Primera publicación del teléfono")
		if run(p.ctx, t, "the advice", chromedp.Evaluate[bool](`!document.getElementById('gestion-pegar').hidden`)) {
			t.Error("a link that filled the fields still shows the advice to paste it")
		}
		p.do(t, "open the second link in the same tab", chromedp.Navigate(link(second)))
		waitText(t, p, "gestion-publicacion", "Segunda publicación del teléfono")
		if got := run(p.ctx, t, "id", chromedp.Value(chromedp.ID("g-id"))); got != second["id"].(string) {
			t.Fatalf("the code field holds %q after the second link, want %s", got, second["id"])
		}
		p.do(t, "resolve", chromedp.Click(chromedp.CSS(`#gestion-formulario button[value="resolve"]`), chromedp.NodeVisible))
		waitText(t, p, "gestion-publicacion", "Estado: resuelta")
		if d := p.detail(t, first["id"].(string)); d.Status != "open" {
			t.Errorf("the first publication is %s after acting on the second link", d.Status)
		}
		if d := p.detail(t, second["id"].(string)); d.Status != "resolved" {
			t.Errorf("the second publication is %s after «Marcar como resuelta»", d.Status)
		}
		shown := run(p.ctx, t, "buttons", chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll('#gestion-formulario button[value]'))
			.filter(b => !b.hidden && b.offsetParent !== null && b.value !== 'responses').map(b => b.value)`))
		if !slices.Contains(shown, "reopen") || slices.Contains(shown, "resolve") {
			t.Errorf("after resolving, the buttons shown: %v, want «Reabrir» and not «Marcar como resuelta»", shown)
		}
		// Reopened, it lives again, and the page says until when.
		p.do(t, "reopen", chromedp.Click(chromedp.CSS(`#gestion-formulario button[value="reopen"]`), chromedp.NodeVisible))
		waitText(t, p, "gestion-hecho", "Reabrir: listo.")
		checkExpiryLine(t, p.text(t, "gestion-hecho"), "Reabrir: listo. Si nadie la renueva, deja de mostrarse el ", ".")
	})

	t.Run("escenario", func(t *testing.T) {
		// Someone else's record, with a phone, that its owner will report.
		_, other := publish(t, s, validRequest())
		otherID := other["id"].(string)
		if d := p.detail(t, otherID); !d.Contact.Available || d.Contact.Whatsapp == "" {
			t.Fatalf("the other record shows no phone before the report: %+v", d.Contact)
		}

		p.open(t, "/pedir")
		p.fill(t, request)
		p.check(t, "f-publishContact")
		p.submit(t, "resultado-gestion")
		id := p.recordID(t)
		manage := run(p.ctx, t, "manage link", chromedp.Evaluate[string](`document.getElementById('resultado-gestionar').href`))
		if !strings.Contains(manage, schema.ManagePath+"#") || !strings.Contains(manage, "id="+id) {
			t.Fatalf("the confirmation's manage link is %q", manage)
		}
		p.screenshot(t, "pedir-enlace")
		p.do(t, "follow the manage link", chromedp.Click(chromedp.ID("resultado-gestionar"), chromedp.NodeVisible),
			chromedp.WaitVisible(chromedp.ID("gestion-formulario")))
		resolveOnManagePage(t, request["f-title"], "escenario-gestionar")
		if d := p.detail(t, id); d.Status != "resolved" {
			t.Errorf("the API says %q after resolving through the manage link", d.Status)
		}

		// The other record's owner finds their number, and reports it without JavaScript.
		setScripts(t, p.ctx, false)
		defer setScripts(t, p.ctx, true)
		p.do(t, "open the other record", chromedp.Navigate(s.URL+schema.RecordPath(otherID)), chromedp.WaitVisible(chromedp.ID("reporte-formulario")))
		p.screenshot(t, "registro-reportar")
		first := run(p.ctx, t, "first reason", chromedp.Evaluate[string](`document.querySelector('#reporte-formulario input[name=reason]').value`))
		if first != "not_my_number" {
			t.Errorf("the first reason is %q, want not_my_number", first)
		}
		p.do(t, "choose «Es mi número»", chromedp.Click(chromedp.CSS(`label[for="motivo-not_my_number"]`), chromedp.NodeVisible))
		p.do(t, "note", chromedp.SendKeys(chromedp.ID("reporte-nota"), "Nunca publiqué esto."))
		p.do(t, "send", chromedp.Click(chromedp.CSS(`#reporte-formulario button[type=submit]`), chromedp.NodeVisible))
		waitText(t, p, "contenido", "Reporte recibido")
		if got := p.text(t, "contenido"); !strings.Contains(got, "el teléfono de esta publicación ya no se muestra") {
			t.Errorf("the report's page says:\n%s", got)
		}
		p.screenshot(t, "reporte-recibido")
		if d := p.detail(t, otherID); d.Contact.Available || d.Contact.Whatsapp != "" || d.Contact.WhatsappURL != "" {
			t.Errorf("after not_my_number through the form the API still shows the phone: %+v", d.Contact)
		}
		// The person's own record was not touched by it.
		if d := p.detail(t, id); !d.Contact.Available {
			t.Errorf("the published record lost its phone: %+v", d.Contact)
		}
	})

	for _, m := range p.consoleErrors() {
		t.Errorf("browser console: %s", m)
	}
}

// waitText waits until the element of that id contains want.
func waitText(t *testing.T, p *phone, id, want string) {
	t.Helper()
	js := fmt.Sprintf(`(document.getElementById(%q) || {innerText: ''}).innerText.includes(%q)`, id, want)
	deadline := time.Now().Add(20 * time.Second)
	for {
		// A form's POST navigates: a poll begun on the old page ends with it, so poll again.
		ctx, cancel := context.WithTimeout(p.ctx, time.Until(deadline))
		_, err := chromedp.Run(ctx, chromedp.Poll[bool](js))
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) || p.ctx.Err() != nil {
			t.Fatalf("#%s never said %q: %v (it says %q)", id, want, err, p.text(t, id))
		}
		time.Sleep(100 * time.Millisecond)
	}
}
