package backend_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/directaid/directaid/backend"
	"github.com/directaid/directaid/backend/store"
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
