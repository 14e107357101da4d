package site

import (
	"net/http"
	"strings"
	"testing"

	"github.com/directaid/directaid/site/sitetest"
)

// TestFormRefusesInvalidUTF8: bytes that are not UTF-8 (here a UTF-16 surrogate written as UTF-8, and a
// stray 0xff) must not reach the API as U+FFFD, where "a\xed\xa0\x80" and "a\ufffd" would be one
// idempotency key (issue 12). The form answers 400 and names the field; nothing is published.
func TestFormRefusesInvalidUTF8(t *testing.T) {
	for field, value := range map[string]string{"externalId": "web-a\xed\xa0\x80", "title": "Agua\xff", "latitude": "4.5\xed\xa0\x80"} {
		fake := &fakePublish{status: 201}
		c := newSite(t, Options{Emergencies: emergencies(eje), Service: &funcs{publish: fake.publish}})
		vals := formValues("web-789")
		vals.Set(field, value)
		res, body := postForm(t, c, "/pedir", vals)
		if res.StatusCode != http.StatusBadRequest || len(fake.bodies) != 0 {
			t.Fatalf("%s %q: %d, published %v; want 400 and nothing published", field, value, res.StatusCode, fake.bodies)
		}
		doc := sitetest.ParseHTML(t, body)
		list := sitetest.Text(element(t, doc, "errores-lista"))
		if !strings.Contains(list, "UTF-8") {
			t.Errorf("%s: the error summary does not say what is wrong: %q", field, list)
		}
		if field == "title" {
			if n := element(t, doc, "f-title-error"); sitetest.HasAttr(n, "hidden") || !strings.Contains(sitetest.Text(n), "«Título»") {
				t.Errorf("the title's error: %q", sitetest.Text(n))
			}
		}
	}
}
