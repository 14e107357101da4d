package e2e

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"regexp"
	"slices"
	"testing"

	"github.com/directaid/directaid/internal/testserver"
)

// maxPageWeight bounds, gzipped as the shipped Caddyfile's `encode zstd gzip` sends them, what a phone
// downloads for a page a person opens first (HTML, stylesheet and script): a weak signal must still
// bring it in a few seconds.
const maxPageWeight = 20 << 10

// maxInstallWeight bounds, gzipped as the shipped Caddyfile's `encode zstd gzip` sends them, what the
// service worker downloads at install on a first visit (the pages it keeps and their assets), and
// maxMapWeight the map page with its assets (Leaflet's), which a person opens only when they ask for it.
const (
	maxInstallWeight = 40 << 10
	maxMapWeight     = 80 << 10
)

// TestSitePageWeight: the home page, /pedir and an emergency's page (with records) each transfer less
// than maxPageWeight gzipped, their assets included; the service worker's install and the map page stay within
// their bounds, and the place list is not part of the install. It prints each weight.
func TestSitePageWeight(t *testing.T) {
	t.Parallel()
	s := testserver.Start(t, testserver.Options{})
	for range 20 {
		publish(t, s, validRequest())
	}
	get := func(p string) []byte { return getBody(t, s, p) }
	gz := gzipped
	weigh := func(page string) (raw, zipped int) {
		raw, zipped, _ = pageWeight(t, s, page)
		t.Logf("%s: %d bytes, %d gzipped, with its assets", page, raw, zipped)
		return raw, zipped
	}
	for _, page := range []string{"/", "/pedir", "/emergencias/eje-cafetero"} {
		if _, zipped := weigh(page); zipped >= maxPageWeight {
			t.Errorf("%s transfers %d bytes gzipped, want under %d", page, zipped, maxPageWeight)
		}
	}
	if _, zipped := weigh("/emergencias/eje-cafetero/mapa"); zipped >= maxMapWeight {
		t.Errorf("the map page transfers %d bytes gzipped, want under %d", zipped, maxMapWeight)
	}

	// The service worker's first visit: /sw.js, then every URL it keeps at install. The assets it
	// leaves for their first use are weighed apart: keeping them at install was the earlier way.
	sw := get("/sw.js")
	m := regexp.MustCompile(`^self\.DIRECTAID = (\{.*\});\n`).FindSubmatch(sw)
	if m == nil {
		t.Fatalf("/sw.js does not start with its configuration:\n%.300s", sw)
	}
	var cfg struct {
		URLs   []string          `json:"urls"`
		Assets map[string]string `json:"assets"`
	}
	if err := json.Unmarshal(m[1], &cfg); err != nil {
		t.Fatal(err)
	}
	raw, zipped := len(sw), gz(sw)
	for _, u := range cfg.URLs {
		b := get(u)
		raw, zipped = raw+len(b), zipped+gz(b)
	}
	t.Logf("service worker install: %d URLs, %d bytes, %d gzipped", len(cfg.URLs), raw, zipped)
	if zipped >= maxInstallWeight {
		t.Errorf("the service worker's install downloads %d bytes gzipped, want under %d", zipped, maxInstallWeight)
	}
	var later []string
	for name, u := range cfg.Assets {
		if !slices.Contains(cfg.URLs, u) {
			later = append(later, name)
		}
	}
	slices.Sort(later)
	if !slices.Contains(later, "lugares.tsv") {
		t.Errorf("the service worker keeps the place list at install (first use only: %v)", later)
	}
	for _, name := range later {
		b := get(cfg.Assets[name])
		t.Logf("on first use, not at install: %s, %d bytes, %d gzipped", name, len(b), gz(b))
		if name == "lugares.tsv" {
			t.Logf("service worker install with the place list, as it was: %d bytes, %d gzipped", raw+len(b), zipped+gz(b))
		}
	}
}

// gzipped is the size of b gzipped, as the shipped Caddyfile's `encode zstd gzip` sends it.
func gzipped(b []byte) int {
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	_, _ = w.Write(b)
	_ = w.Close()
	return buf.Len()
}

// getBody GETs path from the site and returns its body, decompressed.
func getBody(t *testing.T, s *testserver.Server, path string) []byte {
	t.Helper()
	resp, body := s.Do("GET", path, nil) // the client asks for gzip and decompresses
	if resp.StatusCode != 200 {
		t.Fatalf("%s: %d", path, resp.StatusCode)
	}
	return body
}

var pageAssets = regexp.MustCompile(`(?:href|src)="(/assets/[^"]+)"`)

// pageWeight is what a first visit to page downloads: the page and the assets it names (its stylesheet
// and scripts; not what a script fetches later), in bytes and gzipped, and how many assets.
func pageWeight(t *testing.T, s *testserver.Server, page string) (raw, zipped, assets int) {
	t.Helper()
	body := getBody(t, s, page)
	raw, zipped = len(body), gzipped(body)
	for _, m := range pageAssets.FindAllStringSubmatch(string(body), -1) {
		a := getBody(t, s, m[1])
		raw, zipped, assets = raw+len(a), zipped+gzipped(a), assets+1
	}
	return raw, zipped, assets
}
