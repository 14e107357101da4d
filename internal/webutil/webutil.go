// Package webutil holds the HTTP helpers that the API (backend) and the website (site) share, so that
// both answer alike: the same entity tags and the same base URL for links.
package webutil

import (
	"crypto/sha256"
	"encoding/base64"
	"mime"
	"net/http"
	"regexp"
	"strconv"
	"strings"
)

// ETag is the strong entity tag of body: 96 bits of its SHA-256, far more than two versions of one
// resource need to differ, in 16 characters.
func ETag(body []byte) string { return ETagOf(body) }

// ETagOf is the ETag of the parts' concatenation, without concatenating them.
func ETagOf(parts ...[]byte) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write(p)
	}
	var sum [sha256.Size]byte
	return `"` + base64.RawURLEncoding.EncodeToString(h.Sum(sum[:0])[:12]) + `"`
}

// ETagMatches reports whether an If-None-Match header matches etag; If-None-Match compares weakly
// (RFC 9110), so W/ is ignored.
func ETagMatches(header, etag string) bool {
	for t := range strings.SplitSeq(header, ",") {
		if t = strings.TrimSpace(t); t == "*" || strings.TrimPrefix(t, "W/") == etag {
			return true
		}
	}
	return false
}

// validHost admits host names, IPv4 and bracketed IPv6 with an optional port: nothing that could break
// out of a URL, a Markdown link or a shell-quoted example. Go's server admits more (' ( ) ; = …).
var validHost = regexp.MustCompile(`^([A-Za-z0-9._-]+|\[[0-9A-Fa-f:.]+\])(:[0-9]{1,5})?$`)

// ValidHost reports whether host (a Host header, or the host of a URL) is one that links may carry.
func ValidHost(host string) bool { return validHost.MatchString(host) }

// BaseURL is the absolute base of links for r: publicURL when it is set (without a trailing slash), else
// the request's own scheme and Host. ok is false when that Host could not be a host name: a link built
// from it could break out of a URL or an example, so the request must be refused. X-Forwarded-* are
// not read: behind a proxy, set publicURL.
func BaseURL(publicURL string, r *http.Request) (base string, ok bool) {
	if publicURL != "" {
		return strings.TrimRight(publicURL, "/"), true
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host, ValidHost(r.Host)
}

// AcceptQ is the highest quality the Accept header gives to a media type that match admits (0 when none).
// Malformed parts and q values are skipped.
func AcceptQ(accept string, match func(mediaType string) bool) float64 {
	var best float64
	for part := range strings.SplitSeq(accept, ",") {
		mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil || !match(mt) {
			continue
		}
		q := 1.0
		if s, ok := params["q"]; ok {
			if q, err = strconv.ParseFloat(s, 64); err != nil {
				continue
			}
		}
		best = max(best, q)
	}
	return best
}
