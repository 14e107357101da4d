package site

import (
	"encoding/json"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/directaid/directaid/site/sitetest"
)

// swConfig reads the configuration the server prepends to the service worker.
func swConfig(t *testing.T, body []byte) (version string, urls []string, offline string) {
	t.Helper()
	m := regexp.MustCompile(`^self\.DIRECTAID = (\{.*\});\n`).FindSubmatch(body)
	if m == nil {
		t.Fatalf("the service worker does not start with its configuration:\n%.300s", body)
	}
	var cfg struct {
		Version, Offline string
		URLs             []string
	}
	if err := json.Unmarshal(m[1], &cfg); err != nil {
		t.Fatal(err)
	}
	return cfg.Version, cfg.URLs, cfg.Offline
}

// TestServiceWorker: /sw.js is served from the root (so its scope is the whole site) as JavaScript that
// the Content-Security-Policy allows, revalidated on every check; it keeps the home page, the forms,
// every active emergency's page and every asset but the place list and the map's, each of which answers 200; its version changes with
// what it keeps; every page loads the script that installs it.
func TestServiceWorker(t *testing.T) {
	h, err := New(Options{Emergencies: emergencies(eje, mojana)})
	if err != nil {
		t.Fatal(err)
	}
	c := sitetest.HandlerClient(h)
	res, body := sitetest.Get(t, c, testBase+serviceWorkerPath)
	if res.StatusCode != http.StatusOK || res.Header.Get("Content-Type") != "text/javascript; charset=utf-8" ||
		res.Header.Get("Cache-Control") != "no-cache" || res.Header.Get("ETag") == "" {
		t.Fatalf("GET /sw.js: %d %v", res.StatusCode, res.Header)
	}
	if csp := res.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") || strings.Contains(csp, "worker-src") ||
		!strings.Contains(csp, "connect-src 'self'") {
		t.Errorf("the CSP does not let the page start /sw.js, or the worker fetch the site: %q", csp)
	}
	version, urls, offline := swConfig(t, body)
	site := h.(*handler)
	for _, want := range []string{"/", "/pedir", "/ofrecer", "/emergencias/eje-cafetero", "/emergencias/inundaciones-la-mojana", site.css, site.js, site.siteJS} {
		if !slices.Contains(urls, want) {
			t.Errorf("the service worker does not keep %s (keeps %v)", want, urls)
		}
	}
	// Every asset at install, but the place list and the map's, which wait for their first use.
	for p := range site.assets {
		onUse := p == site.placesURL || p == site.mapJS || p == site.mapCSS
		if slices.Contains(urls, p) == onUse {
			t.Errorf("the service worker keeps the asset %s at install: %v, want %v", p, !onUse, onUse)
		}
	}
	for _, u := range urls {
		if res, _ := sitetest.Get(t, c, testBase+u); res.StatusCode != http.StatusOK {
			t.Errorf("the service worker keeps %s, which answers %d", u, res.StatusCode)
		}
	}
	if !strings.Contains(offline, "Sin conexión") || !strings.Contains(offline, `href="`+testBase+`/pedir"`) {
		t.Errorf("the page for pages not kept offline:\n%s", offline)
	}
	if _, again := sitetest.Get(t, c, testBase+serviceWorkerPath); string(again) != string(body) {
		t.Error("the service worker changes between two requests: browsers would install it each time")
	}
	_, other := sitetest.Get(t, newSite(t, Options{Emergencies: emergencies(eje)}), testBase+serviceWorkerPath)
	if v2, _, _ := swConfig(t, other); v2 == version {
		t.Errorf("the version %s stays when the emergencies (what it keeps) change", version)
	}
	for _, p := range []string{"/", "/pedir", "/integraciones", "/emergencias/eje-cafetero"} {
		if _, page := sitetest.Get(t, c, testBase+p); !strings.Contains(string(page), `<script src="`+site.siteJS+`" defer></script>`) {
			t.Errorf("%s does not load the script that installs the service worker", p)
		}
	}
}

// TestServiceWorkerVisits: the worker is told which pages to keep when opened (records, emergency pages
// with their filters, maps) and how many, each asset's current URL by its name (for pages kept by an
// earlier version), and the note a kept copy starts with, with the place of its time.
func TestServiceWorkerVisits(t *testing.T) {
	h, err := New(Options{Emergencies: emergencies(eje)})
	if err != nil {
		t.Fatal(err)
	}
	_, body := sitetest.Get(t, sitetest.HandlerClient(h), testBase+serviceWorkerPath)
	m := regexp.MustCompile(`^self\.DIRECTAID = (\{.*\});\n`).FindSubmatch(body)
	var cfg struct {
		Visit   []string
		Visited int
		Assets  map[string]string
		Saved   string
	}
	if m == nil || json.Unmarshal(m[1], &cfg) != nil {
		t.Fatalf("the service worker's configuration:\n%.300s", body)
	}
	site := h.(*handler)
	if !slices.Equal(cfg.Visit, []string{"/ayudas/", "/emergencias/"}) || cfg.Visited != 50 {
		t.Errorf("pages kept when opened: %v, the last %d", cfg.Visit, cfg.Visited)
	}
	for name, want := range map[string]string{"site.css": site.css, "form.js": site.js, "lugares.tsv": site.placesURL, "mapa.js": site.mapJS} {
		if cfg.Assets[name] != want {
			t.Errorf("the asset named %s is %q, want %q", name, cfg.Assets[name], want)
		}
	}
	if len(cfg.Assets) != len(site.assets) {
		t.Errorf("%d assets named, of %d", len(cfg.Assets), len(site.assets))
	}
	if !strings.Contains(cfg.Saved, "guardada en este teléfono a las {hora}") {
		t.Errorf("the note of a kept copy: %q", cfg.Saved)
	}
}
