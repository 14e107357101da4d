package e2e

import (
	"regexp"
	"testing"

	"github.com/directaid/directaid/internal/testserver"
)

// maxPageWeight bounds what a phone downloads for a page a person opens first (HTML, stylesheet and
// script): a weak signal must still bring it in a few seconds. The bytes are counted as the server
// sends them; the test server does not compress, so this bounds the shipped Caddyfile's
// `encode zstd gzip` answers from above.
const maxPageWeight = 50 << 10

// TestSitePageWeight: the home page, /pedir and an emergency's page (with records) each transfer less
// than maxPageWeight, their assets included.
func TestSitePageWeight(t *testing.T) {
	s := testserver.Start(t, testserver.Options{})
	for range 20 {
		publish(t, s, validRequest())
	}
	assets := regexp.MustCompile(`(?:href|src)="(/assets/[^"]+)"`)
	for _, page := range []string{"/", "/pedir", "/emergencias/eje-cafetero"} {
		resp, body := s.Do("GET", page, nil, "Accept-Encoding", "gzip")
		if resp.StatusCode != 200 {
			t.Fatalf("%s: %d", page, resp.StatusCode)
		}
		total := len(body)
		for _, m := range assets.FindAllStringSubmatch(string(body), -1) {
			_, a := s.Do("GET", m[1], nil, "Accept-Encoding", "gzip")
			total += len(a)
		}
		t.Logf("%s: %d bytes transferred (page %d, %s)", page, total, len(body), resp.Header.Get("Content-Encoding"))
		if total >= maxPageWeight {
			t.Errorf("%s transfers %d bytes, want under %d", page, total, maxPageWeight)
		}
	}
}
