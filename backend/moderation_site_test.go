package backend_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/directaid/directaid/backend"
	"github.com/directaid/directaid/backend/store"
	"github.com/directaid/directaid/backend/store/storetest"
)

// The site's /moderacion over the real service: refused without an authenticated moderator (the
// Caddy layer's WithModerator), the queue with one, and its actions in the audit trail under their name.
func TestSiteModeration(t *testing.T) {
	s := newExpiryServer(t, &fakeClock{at: time.Now().UTC()})
	ctx := context.Background()
	rec, _, err := s.st.Create(ctx, storetest.Record("app", "mod-1"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.svc.Moderate(ctx, rec.ID, backend.ActionHide, ""); err != nil { // the admin endpoint's way: no name
		t.Fatal(err)
	}
	do := func(method, who string, form url.Values) *httptest.ResponseRecorder {
		var body *strings.Reader
		if form != nil {
			body = strings.NewReader(form.Encode())
		} else {
			body = strings.NewReader("")
		}
		r := httptest.NewRequest(method, "http://ayuda.test/moderacion", body)
		if form != nil {
			r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		}
		if who != "" {
			r = r.WithContext(backend.WithModerator(r.Context(), who))
		}
		w := httptest.NewRecorder()
		s.h.ServeHTTP(w, r)
		return w
	}
	if w := do("GET", "", nil); w.Code != http.StatusUnauthorized || w.Header().Get("WWW-Authenticate") == "" {
		t.Fatalf("GET without a moderator: %d %v", w.Code, w.Header())
	}
	w := do("GET", "ana", nil)
	if w.Code != http.StatusOK || !strings.Contains(w.Body.String(), rec.ID) || w.Header().Get("Access-Control-Allow-Origin") != "" {
		t.Fatalf("GET as ana: %d %v\n%s", w.Code, w.Header(), w.Body)
	}
	m := regexp.MustCompile(`name="token" value="([^"]+)"`).FindStringSubmatch(w.Body.String())
	if m == nil {
		t.Fatal("no token on the page")
	}
	w = do("POST", "ana", url.Values{"token": {m[1]}, "action": {backend.ActionRestore}, "id": {rec.ID}})
	if w.Code != http.StatusSeeOther {
		t.Fatalf("restore: %d\n%s", w.Code, w.Body)
	}
	if got, _ := s.st.Get(ctx, rec.ID); got.Status != store.StatusOpen {
		t.Fatalf("after restore: %s", got.Status)
	}
	// Another moderator cannot reuse ana's token.
	if w := do("POST", "beto", url.Values{"token": {m[1]}, "action": {backend.ActionHide}, "id": {rec.ID}}); w.Code != http.StatusForbidden {
		t.Fatalf("beto with ana's token: %d", w.Code)
	}
	trail, err := s.svc.AuditTrail(ctx, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range trail {
		if e.Actor == store.ActorOperator {
			got = append(got, fmt.Sprintf("%s by %q", e.Action, e.By))
		}
	}
	if want := []string{`hide by ""`, `restore by "ana"`}; strings.Join(got, ", ") != strings.Join(want, ", ") {
		t.Errorf("operator entries: %v, want %v", got, want)
	}
}
