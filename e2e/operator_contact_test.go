package e2e

import (
	"strings"
	"testing"

	"github.com/directaid/directaid/internal/testserver"
)

// TestOperatorContact: the Caddyfile's operator_contact is on /privacidad and in every page's footer, so a
// person without a link to their record can still reach whoever keeps their data (Ley 1581).
func TestOperatorContact(t *testing.T) {
	t.Parallel()
	s := testserver.Start(t, testserver.Options{Emergencies: testserver.TwoEmergencies + `
		operator_contact "datos@ayuda.example.org o WhatsApp 300 000 0000 <b>"`})
	for _, path := range []string{"/", "/privacidad", "/pedir", "/emergencias/eje-cafetero"} {
		resp, body := s.Do("GET", path, nil)
		page := string(body)
		if resp.StatusCode != 200 || !strings.Contains(page, "datos@ayuda.example.org o WhatsApp 300 000 0000 &lt;b&gt;") || strings.Contains(page, "0000 <b>") {
			t.Errorf("%s: %d, the operator's contact is missing or not escaped", path, resp.StatusCode)
		}
	}
	if _, md := s.Do("GET", "/privacidad.md", nil); !strings.Contains(string(md), "datos@ayuda.example.org") {
		t.Errorf("/privacidad.md lacks the operator's contact:\n%s", md)
	}
	plain := testserver.Start(t, testserver.Options{})
	if _, body := plain.Do("GET", "/", nil); strings.Contains(string(body), "Responsable de los datos") {
		t.Error("without operator_contact the footer names no one")
	}
}
