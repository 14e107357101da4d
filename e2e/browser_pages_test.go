package e2e

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/directaid/directaid/backend/places"
	"github.com/directaid/directaid/internal/testserver"
)

// axeCore is the accessibility engine the test runs in each page (npm, pinned).
const axeCore = "axe-core@4.10.3"

// installAxe installs axeCore with npm into a temporary directory and returns its axe.min.js. Without npm
// the test is skipped, unless DIRECTAID_REQUIRE_NPX is set (CI).
func installAxe(t *testing.T) string {
	t.Helper()
	npm, err := exec.LookPath("npm")
	if err != nil {
		if os.Getenv("DIRECTAID_REQUIRE_NPX") != "" {
			t.Fatal("npm not found, and DIRECTAID_REQUIRE_NPX is set: install Node 20 (see .ci/run)")
		}
		t.Skip("npm not found: install Node 20 to run " + axeCore)
	}
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, npm, "install", "--prefix", dir, "--no-audit", "--no-fund", "--no-save", axeCore).CombinedOutput()
	if err != nil {
		t.Fatalf("npm install %s: %v\n%s", axeCore, err, out)
	}
	js, err := os.ReadFile(filepath.Join(dir, "node_modules", "axe-core", "axe.min.js"))
	if err != nil {
		t.Fatal(err)
	}
	return string(js)
}

// TestBrowserEveryPage: every page a person can meet — home, the forms (fresh and with their errors), an
// emergency's page, a record's page (also over the detail limit: without its phone), the integration
// guide, the privacy page and 404 — at 390×844 and 1280×800, with and without JavaScript: a screenshot of
// each (test-artifacts/pages/), no sideways scroll, and axe-core in the page finds no serious or critical
// violation.
func TestBrowserEveryPage(t *testing.T) {
	artifacts := needBrowser(t, "pages")
	axe := installAxe(t)
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	_, _ = zw.Write([]byte(places.TSV()))
	_ = zw.Close()
	t.Logf("place list: %d places, %d bytes (%d gzipped), fetched when the place picker is first used, then kept by the service worker",
		strings.Count(places.TSV(), "\n"), len(places.TSV()), gz.Len())

	// Each record page read spends the detail limit: 4 reads of the record's page and 2 of gestionar.js
	// (view=detail), then the 429 page.
	const detailLimit = 8
	s := testserver.Start(t, testserver.Options{DetailEvents: detailLimit})
	var id, manage string
	for range 3 {
		// Text as people paste it: a map link and a name without a space, each wider than a phone.
		_, res := publish(t, s, with(validRequest(),
			"description", "Estamos aquí: https://www.google.com/maps/place/Armenia,+Quind%C3%ADo/@4.5338889,-75.6811111,15z/data=!3m1!4b1!4m6!3m5!1s0x8e38f4",
			"contactName", "María_Fernanda_de_los_Ángeles_Rodríguez_Gutiérrez_Santamaría"))
		id, manage = res["id"].(string), res["manageUrl"].(string)
	}
	manageURL, err := url.Parse(manage)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute) // 48 page loads, each with axe
	defer cancel()
	p := &phone{ctx: startPhone(ctx, t), s: s, artifacts: artifacts}
	p.watchConsole(t)
	// Record pages are cacheable: without this the 429 case would be the browser's copy of the record.
	if _, err := chromedp.Call(p.ctx, network.SetCacheDisabled, network.SetCacheDisabledParams{CacheDisabled: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Call(p.ctx, network.SetBypassServiceWorker, network.SetBypassServiceWorkerParams{Bypass: true}); err != nil {
		t.Fatal(err)
	}

	type pg struct {
		name, path string
		ready      string // a selector visible once the page is what it should be
		act        func(t *testing.T, js bool)
	}
	submitEmpty := func(t *testing.T, _ bool) {
		p.do(t, "submit empty", chromedp.Click(chromedp.ID("enviar"), chromedp.NodeVisible))
		p.do(t, "errors", chromedp.WaitVisible(chromedp.ID("errores")))
		// With or without JavaScript, the list starts with the emergency, asked by its title (a person
		// does not know the slugs), and follows the fields' order on the page.
		items := run(p.ctx, t, "error list", chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll('#errores-lista li')).map(li => li.textContent)`))
		if len(items) < 2 || !strings.HasPrefix(items[0], "Elija la emergencia") || !strings.Contains(items[0], "«Terremoto en el Eje Cafetero»") ||
			strings.Contains(strings.Join(items, " "), "eje-cafetero") || !strings.Contains(items[len(items)-1], "autoriz") {
			t.Errorf("errors listed: %q, want the emergency first by its title and the consent last", items)
		}
	}
	pages := []pg{
		{"home", "/", "main h1", nil},
		{"pedir", "/pedir", "#enviar", nil},
		{"pedir-errores", "/pedir", "#enviar", submitEmpty},
		{"ofrecer", "/ofrecer", "#enviar", nil},
		{"emergencia", "/emergencias/eje-cafetero", "#filtro", nil},
		{"registro", "/ayudas/" + id, `main a[href^="https://wa.me/"]`, nil}, // with its «Reportar» form
		{"gestionar", "/gestionar#" + manageURL.Fragment, "#g-id", func(t *testing.T, js bool) {
			if js { // gestionar.js shows the record's title and status
				p.do(t, "record shown", chromedp.WaitVisible(chromedp.ID("gestion-publicacion")))
			}
		}},
		{"integraciones", "/integraciones", "main h1", nil},
		{"privacidad", "/privacidad", "main h1", nil},
		{"404", "/no-existe", "main h1", nil},
		{"429", "/ayudas/" + id, "main h1", nil},
	}
	sizes := []struct{ w, h int64 }{{phoneWidth, phoneHeight}, {1280, 800}}
	for _, page := range pages {
		if page.name == "429" {
			// Spend what is left of the detail limit, as many neighbours behind one IP would.
			for i := 0; ; i++ {
				resp, _ := s.Do("GET", "/ayudas/"+id, nil)
				if resp.StatusCode == 429 {
					break
				}
				if i > 2*detailLimit {
					t.Fatalf("GET /ayudas/%s never reached the limit of %d (last %d)", id, detailLimit, resp.StatusCode)
				}
			}
		}
		for _, size := range sizes {
			for _, js := range []bool{true, false} {
				name := fmt.Sprintf("%s-%dx%d-%s", page.name, size.w, size.h, map[bool]string{true: "js", false: "nojs"}[js])
				t.Run(name, func(t *testing.T) {
					opts := []chromedp.EmulateViewportOption{chromedp.EmulateScale(1)}
					if size.w == phoneWidth {
						opts = []chromedp.EmulateViewportOption{chromedp.EmulateScale(phoneScale), chromedp.EmulateMobile, chromedp.EmulatePortrait}
					}
					p.do(t, "viewport", chromedp.EmulateViewport(size.w, size.h, opts...))
					setScripts(t, p.ctx, js)
					if strings.Contains(page.path, "#") { // else the same URL again is only a jump within the page
						p.do(t, "blank", chromedp.Navigate("about:blank"))
					}
					p.do(t, "open "+page.path, chromedp.Navigate(s.URL+page.path), chromedp.WaitVisible(chromedp.CSS(page.ready)))
					if page.act != nil {
						page.act(t, js)
					}
					if page.name == "429" { // the record, without its phone, and when it shows
						if h1 := run(p.ctx, t, "h1", chromedp.Text(chromedp.CSS("main h1"))); h1 != validRequest()["title"] {
							t.Errorf("the record's page over the limit is titled %q", h1)
						}
						if text := run(p.ctx, t, "main", chromedp.Text(chromedp.CSS("main"))); !strings.Contains(text, "vuelva a cargar esta página en") || strings.Contains(text, "300 123") {
							t.Errorf("the record's page over the limit says: %q", text)
						}
					}
					w := run(p.ctx, t, "page width", chromedp.Evaluate[[]int](`[document.documentElement.scrollWidth, window.innerWidth]`))
					if len(w) != 2 || w[0] > w[1] {
						t.Errorf("content %v CSS px wide in a %v px window (scrolls sideways)", w[0], w[1])
					}
					p.screenshot(t, name)
					for _, v := range axeViolations(t, p.ctx, axe) {
						t.Errorf("axe: %s", v)
					}
				})
			}
		}
	}
	setScripts(t, p.ctx, true)
	for _, m := range p.consoleErrors() {
		if !strings.Contains(m, "429") && !strings.Contains(m, "404") && !strings.Contains(m, "400") {
			t.Errorf("browser console: %s", m)
		}
	}
}

// axeViolations runs axe (the source installAxe returned) in the page's DOM as it is and returns its
// serious and critical violations. Scripts come back only for it (the page's own deferred scripts do not
// run again).
func axeViolations(t *testing.T, ctx context.Context, axe string) []string {
	t.Helper()
	setScripts(t, ctx, true)
	run(ctx, t, "load axe", chromedp.Evaluate[chromedp.Void](axe))
	return run(ctx, t, "axe", chromedp.Evaluate[[]string](`axe.run(document, {resultTypes: ['violations']}).then(r =>
		r.violations.filter(v => v.impact === 'serious' || v.impact === 'critical').map(v =>
			v.impact + ' ' + v.id + ': ' + v.help + ' — ' + v.nodes.slice(0, 3).map(n => n.target.join(' ') + ' ' + n.failureSummary).join(' | ')))`,
		chromedp.EvalAwaitPromise, chromedp.EvalAsValue))
}

func setScripts(t *testing.T, ctx context.Context, on bool) {
	t.Helper()
	if _, err := chromedp.Call(ctx, emulation.SetScriptExecutionDisabled, emulation.SetScriptExecutionDisabledParams{Value: !on}); err != nil {
		t.Fatalf("scripts %v: %v", on, err)
	}
}
