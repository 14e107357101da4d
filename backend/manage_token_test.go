package backend_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/directaid/directaid/backend"
	"github.com/directaid/directaid/backend/store"
	"github.com/directaid/directaid/internal/testserver"
	"github.com/directaid/directaid/schema"
)

// TestManageTokenBindsThePair: two publications given one id by force are stored under two ids, each
// with a token of its own that acts on it alone; a token made for the same id with another pair acts on
// nothing; and the tokens of records created before legacyTokensBefore (a MAC of the id alone) still act
// on those records, never on newer ones.
func TestManageTokenBindsThePair(t *testing.T) {
	clk := &fakeClock{at: time.Now().UTC()}
	if !clk.at.After(backend.LegacyTokensBefore) {
		clk.at = backend.LegacyTokensBefore.Add(time.Hour)
	}
	s := newExpiryServer(t, clk)
	forced := store.NewID(clk.at)
	s.svc.SetIDs(func(time.Time, *float64, *float64) string { return forced })
	pub := func(ext, title string) map[string]any {
		return map[string]any{"type": "offer", "source": "app", "externalId": ext, "emergencySlug": "eje-cafetero",
			"title": title, "category": "transporte", "contactName": "Luis", "contactWhatsapp": "3109876543", "publishContact": true}
	}
	a, b := s.publish(pub("a", "Transporte a Armenia")), s.publish(pub("b", "Carpas"))
	if a.ID != forced || b.ID == a.ID || a.ManageToken == b.ManageToken {
		t.Fatalf("one id forced on two publications: %s and %s, tokens %s and %s", a.ID, b.ID, a.ManageToken, b.ManageToken)
	}
	if code, _ := s.act(a.ID, b.ManageToken, "resolve"); code != http.StatusForbidden {
		t.Fatalf("b's token on a: %d", code)
	}
	if code, _ := s.act(b.ID, a.ManageToken, "resolve"); code != http.StatusForbidden {
		t.Fatalf("a's token on b: %d", code)
	}
	// The token the same id would have under another pair: what a second publication that shared a's id
	// (before ids were unique) would have been given.
	twin := &store.Record{ID: a.ID}
	twin.Source, twin.ExternalID = "app", "b"
	other, err := s.svc.ManageToken(context.Background(), twin)
	if err != nil {
		t.Fatal(err)
	}
	if code, _ := s.act(a.ID, other, "resolve"); code != http.StatusForbidden {
		t.Fatalf("a token of a's id with another pair: %d", code)
	}
	legacyA, err := s.svc.LegacyManageToken(context.Background(), a.ID)
	if err != nil {
		t.Fatal(err)
	}
	if code, _ := s.act(a.ID, legacyA, "resolve"); code != http.StatusForbidden {
		t.Fatalf("a token of the id alone on a record created after legacyTokensBefore: %d", code)
	}
	for _, r := range []struct{ id, token string }{{a.ID, a.ManageToken}, {b.ID, b.ManageToken}} {
		if code, res := s.act(r.id, r.token, "resolve"); code != http.StatusOK || res.ID != r.id || res.Status != store.StatusResolved {
			t.Fatalf("own token on %s: %d %+v", r.id, code, res)
		}
	}
	// A record created before legacyTokensBefore keeps the token its publisher was given then.
	clk.set(backend.LegacyTokensBefore.Add(-time.Hour))
	s.svc.SetIDs(store.NewIDNear)
	old := s.publish(pub("old", "Agua"))
	legacy, err := s.svc.LegacyManageToken(context.Background(), old.ID)
	if err != nil {
		t.Fatal(err)
	}
	if code, res := s.act(old.ID, legacy, "resolve"); code != http.StatusOK || res.Status != store.StatusResolved {
		t.Fatalf("the legacy token of a record created before legacyTokensBefore: %d %+v", code, res)
	}
	if code, _ := s.act(old.ID, old.ManageToken, "reopen"); code != http.StatusOK {
		t.Fatalf("the token it is given now: %d", code)
	}
}

// TestManageTokenOnlyToThePublishersNetwork: everything a retry compares is public (a detail shows the
// content), and an application's externalId may be guessed; so a retry of the same content gets the
// manage token back only from the network that published (an IPv4 address, an IPv6 /64), through the
// API, MCP and the site's form alike. From elsewhere it learns the id and that the content matches, and
// no token. A record stored before records kept their publisher's network gives it to no retry.
func TestManageTokenOnlyToThePublishersNetwork(t *testing.T) {
	s := newExpiryServer(t, &fakeClock{at: time.Now().UTC()})
	body := func(ext string) []byte {
		b, _ := json.Marshal(map[string]any{"type": "offer", "source": "app2", "externalId": ext, "emergencySlug": "eje-cafetero",
			"title": "Camioneta disponible", "category": "transporte", "contactName": "Luis", "contactWhatsapp": "310 987 6543",
			"publishContact": true, "latitude": 4.5123456, "longitude": -75.6654321})
		return b
	}
	post := func(path string, b []byte, from string, header ...string) (int, schema.PublishResult, string) {
		t.Helper()
		r := httptest.NewRequest("POST", "http://ayuda.test"+path, bytes.NewReader(b))
		r.Header.Set("Content-Type", "application/json")
		for i := 0; i+1 < len(header); i += 2 {
			r.Header.Set(header[i], header[i+1])
		}
		r.RemoteAddr = from
		w := httptest.NewRecorder()
		s.h.ServeHTTP(w, r)
		var res schema.PublishResult
		_ = json.Unmarshal(w.Body.Bytes(), &res)
		return w.Code, res, w.Body.String()
	}
	var ids []string
	for _, c := range []struct{ name, publisher, same, other string }{
		{"IPv4", "198.51.100.7:4000", "198.51.100.7:5000", "198.51.100.8:4000"},
		{"IPv6", "[2001:db8:1:2::5]:4000", "[2001:db8:1:2:ffff::9]:4000", "[2001:db8:1:3::5]:4000"},
	} {
		code, first, out := post(schema.HelpPath, body(c.name), c.publisher)
		if code != http.StatusCreated || first.ManageToken == "" {
			t.Fatalf("%s: publish: %d %s", c.name, code, out)
		}
		ids = append(ids, first.ID)
		code, res, out := post(schema.HelpPath, body(c.name), c.other)
		if code != http.StatusOK || res.ID != first.ID || res.ContentMatches == nil || !*res.ContentMatches || res.ManageToken != "" || res.ManageURL != "" ||
			len(res.Warnings) != 1 || res.Warnings[0].Code != schema.CodeManageTokenWithheld {
			t.Fatalf("%s: the same content from another network: %d %s, want 200, contentMatches, no token and why", c.name, code, out)
		}
		if code, res, out = post(schema.HelpPath, body(c.name), c.same); code != http.StatusOK || res.ManageToken != first.ManageToken {
			t.Fatalf("%s: the same content from the publisher's network: %d %s, want its token", c.name, code, out)
		}
	}
	// MCP: the tool's retry answers as the API's.
	args := `{"source":"app2","externalId":"mcp-1","emergencySlug":"eje-cafetero","title":"Camioneta disponible","category":"transporte","contactName":"Luis","contactWhatsapp":"310 987 6543","publishContact":true}`
	call := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + schema.ToolPublishOffer + `","arguments":` + args + `}}`
	mcp := func(from string) string {
		t.Helper()
		code, _, out := post(schema.MCPPath, []byte(call), from, testserver.MCPHeaders("2025-06-18", call)...)
		if code != http.StatusOK {
			t.Fatalf("MCP from %s: %d %s", from, code, out)
		}
		return out
	}
	if out := mcp("198.51.100.20:1"); !strings.Contains(out, `manageToken`) {
		t.Fatalf("MCP publish gave no token: %s", out)
	}
	if out := mcp("198.51.100.21:1"); strings.Contains(out, `"manageToken"`) || !strings.Contains(out, `contentMatches`) || !strings.Contains(out, "desde la red que la publicó") || strings.Contains(out, "Aviso para la persona") {
		t.Fatalf("MCP retry from another network: %s", out)
	}
	if out := mcp("198.51.100.20:2"); !strings.Contains(out, `manageToken`) {
		t.Fatalf("MCP retry from the publisher's network gave no token: %s", out)
	}
	// A record without its publisher's network (stored before records kept it): no retry gets it.
	_, first, _ := post(schema.HelpPath, body("old"), "198.51.100.30:1")
	if _, err := s.st.Update(context.Background(), first.ID, func(r *store.Record) error { r.Publisher = ""; return nil }); err != nil {
		t.Fatal(err)
	}
	if code, res, out := post(schema.HelpPath, body("old"), "198.51.100.30:1"); code != http.StatusOK || res.ManageToken != "" {
		t.Fatalf("a record without a publisher: %d %s", code, out)
	}
	// Nothing public carries the publisher's key.
	rec, err := s.st.Get(context.Background(), ids[0])
	if err != nil || len(rec.Publisher) != 24 {
		t.Fatalf("the stored publisher: %+v %v", rec, err)
	}
	for path, out := range s.views(rec.ID) {
		if strings.Contains(out, rec.Publisher) || strings.Contains(out, `"publisher"`) {
			t.Errorf("%s shows the publisher's key: %s", path, out)
		}
	}
}
