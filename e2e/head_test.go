package e2e

import (
	"testing"

	"github.com/directaid/directaid/internal/testserver"
	"github.com/directaid/directaid/schema"
)

// TestHeadMatchesGet: through the binary (Caddy, encode included), HEAD sends the Content-Length GET
// sends, uncompressed, on the API's reads, the OpenAPI document and the site.
func TestHeadMatchesGet(t *testing.T) {
	t.Parallel()
	s := testserver.Start(t, testserver.Options{})
	_, rec := publish(t, s, validRequest())
	id, _ := rec["id"].(string)
	identity := []string{"Accept-Encoding", "identity"}
	// A list and the panorama carry generatedAt, whose milliseconds may take one digit less from one
	// request to the next: HEAD must send a Content-Length, not the same one.
	stamped := map[string]bool{schema.HelpPath + "?view=list": true, schema.HelpPath + "?view=panorama": true}
	for _, path := range []string{schema.HelpPath, schema.HelpPath + "?view=list", schema.HelpPath + "?view=panorama",
		schema.HelpPath + "?view=detail&id=" + id, schema.OpenAPIPath, "/", schema.RecordPath(id), schema.HelpPath + "?view=nada"} {
		get, body := s.Do("GET", path, nil, identity...)
		head, _ := s.Do("HEAD", path, nil, identity...)
		same := head.ContentLength == get.ContentLength || stamped[path] && head.ContentLength > 0
		if get.ContentLength != int64(len(body)) || !same || head.StatusCode != get.StatusCode {
			t.Errorf("%s: GET %d Content-Length %d (body %d), HEAD %d Content-Length %d", path, get.StatusCode, get.ContentLength, len(body),
				head.StatusCode, head.ContentLength)
		}
	}
}
