package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/directaid/directaid/internal/testserver"
)

// TestBrowserFirstScreen: on a 390×844 phone, what a person needs first is on the first screen, by the
// position of the elements: on the home page the two actions and the active emergencies; on an
// emergency's page its records and their filter; on a record's page the WhatsApp button. No page shows
// its own raw URL. Screenshots go to test-artifacts/ (firstscreen-*.png).
func TestBrowserFirstScreen(t *testing.T) {
	artifacts := needBrowser(t)
	// The emergencies of the shipped Caddyfile.local, with their summaries and phone lines: what an
	// operator's texts look like, longer than the test server's own.
	s := testserver.Start(t, testserver.Options{Emergencies: shippedEmergencies(t)})
	var id string
	for range 3 {
		_, res := publish(t, s, with(validRequest(), "description", strings.Repeat("Necesitamos agua y comida. ", 20)))
		id = res["id"].(string)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	p := &phone{ctx: startPhone(ctx, t), s: s, artifacts: artifacts}

	// onFirstScreen checks that the first element matching each selector lies wholly within the first
	// screen (its bottom edge at most the viewport's height, nothing scrolled).
	onFirstScreen := func(t *testing.T, page string, selectors ...string) {
		t.Helper()
		p.do(t, "open "+page, chromedp.Navigate(s.URL+page), chromedp.WaitVisible(chromedp.CSS("main h1")))
		for _, sel := range selectors {
			js := `(function(){var e=document.querySelector(` + jsString(sel) + `); if(!e) return -1;
				var r=e.getBoundingClientRect(); return r.height>0 && r.top>=0 ? Math.ceil(r.bottom) : -1})()`
			bottom := run(p.ctx, t, "position of "+sel, chromedp.Evaluate[int](js))
			if bottom < 0 || bottom > phoneHeight {
				t.Errorf("%s: %q ends at %d px, want within the first %d px", page, sel, bottom, phoneHeight)
			}
		}
		if text := run(p.ctx, t, "main text", chromedp.Text(chromedp.CSS("main"))); strings.Contains(text, s.URL+page) {
			t.Errorf("%s shows its own raw URL", page)
		}
		name := strings.Trim(strings.ReplaceAll(page, "/", "-"), "-")
		if name == "" {
			name = "home"
		}
		p.screenshot(t, "firstscreen-"+name)
	}
	onFirstScreen(t, "/", `main a[href$="/pedir"]`, `main a[href$="/ofrecer"]`, `main a[href*="/emergencias/inundaciones-la-mojana"]`)
	onFirstScreen(t, "/emergencias/eje-cafetero", `#filtro summary`, `main :is(h3, h4) a[href*="/ayudas/"]`)
	// Its emergency lines are finger-sized targets, not the size of their three digits.
	for _, box := range run(p.ctx, t, "emergency lines", chromedp.Evaluate[[][]float64](`Array.from(document.querySelectorAll('main a[href^="tel:"]')).map(a => {
		const r = a.getBoundingClientRect(); return [r.width, r.height]; })`)) {
		if len(box) != 2 || box[0] < 36 || box[1] < 36 {
			t.Errorf("an emergency line's link is %v CSS px, want at least 36×36", box)
		}
	}
	onFirstScreen(t, "/ayudas/"+id, `main a[href^="https://wa.me/"]`)
}

// jsString quotes s as a JavaScript string literal.
func jsString(s string) string {
	return "'" + strings.ReplaceAll(strings.ReplaceAll(s, `\`, `\\`), "'", `\'`) + "'"
}

// shippedEmergencies are the emergency blocks of the repository's Caddyfile.local, as testserver.Options
// takes them.
func shippedEmergencies(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "Caddyfile.local"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	start := strings.Index(text, "\n\t\temergency ")
	end := strings.Index(text[max(start, 0):], "\n\t}\n")
	if start < 0 || end < 0 {
		t.Fatal("Caddyfile.local: no emergency blocks in its directaid block")
	}
	return text[start : start+end]
}
