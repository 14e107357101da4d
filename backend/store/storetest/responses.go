package storetest

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/directaid/directaid/backend/store"
)

// testResponses: a response is stored once per (record, id), read back whole, newest first; the counts
// follow status, expiry and Uncounted; an update is atomic; a record's responses are deleted together.
func testResponses(t *testing.T, s store.Store) {
	a, b := Record("app", "resp-a"), Record("app", "resp-b")
	for _, r := range []*store.Record{a, b} {
		if _, _, err := s.Create(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	t0 := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	mk := func(rec *store.Record, id string, at time.Time) *store.Response {
		return &store.Response{RecordID: rec.ID, ID: id, CreatedAt: at, UpdatedAt: at, ExpiresAt: at.Add(48 * time.Hour),
			Status: store.ResponseActive, Message: "Tengo insulina " + id, ContactName: "Ana", ContactWhatsapp: "300 123 4567", ContactE164: "+573001234567"}
	}
	r1, r2, r3 := mk(a, "r1", t0), mk(a, "r2", t0.Add(time.Hour)), mk(b, "r3", t0)
	for _, r := range []*store.Response{r1, r2, r3} {
		if err := s.CreateResponse(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.CreateResponse(ctx, mk(a, "r1", t0)); !errors.Is(err, store.ErrResponseExists) {
		t.Fatalf("a taken id: %v, want ErrResponseExists", err)
	}
	if err := s.CreateResponse(ctx, &store.Response{RecordID: "0000000000000000", ID: "x", ExpiresAt: t0, Status: store.ResponseActive}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a response to an unknown record: %v, want ErrNotFound", err)
	}
	got, err := s.RecordResponses(ctx, a.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].ID != "r2" || got[1].ID != "r1" {
		t.Fatalf("responses of a: %+v, want r2 then r1", got)
	}
	if g := got[1]; g.Message != r1.Message || g.ContactE164 != r1.ContactE164 || g.ContactWhatsapp != r1.ContactWhatsapp ||
		g.ContactName != r1.ContactName || !g.CreatedAt.Equal(t0) || !g.ExpiresAt.Equal(r1.ExpiresAt) || g.RecordID != a.ID {
		t.Fatalf("read back %+v, stored %+v", g, r1)
	}
	counts := func(at time.Time) map[string]int {
		t.Helper()
		c, err := s.ResponseCounts(ctx, []string{a.ID, b.ID, "0000000000000000"}, at)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	if c := counts(t0.Add(2 * time.Hour)); c[a.ID] != 2 || c[b.ID] != 1 || len(c) != 2 {
		t.Fatalf("counts: %v", c)
	}
	// r1 expires at t0+48h, r2 an hour later.
	if c := counts(t0.Add(48 * time.Hour)); c[a.ID] != 1 || c[b.ID] != 0 {
		t.Fatalf("counts at r1's expiry: %v", c)
	}
	if _, err := s.UpdateResponse(ctx, a.ID, "r2", func(r *store.Response) error { r.Status = "withdrawn"; r.ErasePersonal(); return nil }); err != nil {
		t.Fatal(err)
	}
	if c := counts(t0.Add(2 * time.Hour)); c[a.ID] != 1 {
		t.Fatalf("a withdrawn response still counts: %v", c)
	}
	// An uncounted response is stored, read back as such, and left out of the counts until an update
	// counts it.
	r4 := mk(b, "r4", t0)
	r4.Uncounted = true
	if err := s.CreateResponse(ctx, r4); err != nil {
		t.Fatal(err)
	}
	if c := counts(t0.Add(2 * time.Hour)); c[b.ID] != 1 {
		t.Fatalf("an uncounted response counts: %v", c)
	}
	if rs, err := s.RecordResponses(ctx, b.ID); err != nil || len(rs) != 2 || !slices.ContainsFunc(rs, func(r *store.Response) bool { return r.ID == "r4" && r.Uncounted }) {
		t.Fatalf("responses of b: %v %v, want r4 uncounted among them", rs, err)
	}
	if _, err := s.UpdateResponse(ctx, b.ID, "r4", func(r *store.Response) error { r.Uncounted = false; return nil }); err != nil {
		t.Fatal(err)
	}
	if c := counts(t0.Add(2 * time.Hour)); c[b.ID] != 2 {
		t.Fatalf("a response counted again: %v, want 2", c)
	}
	if _, err := s.UpdateResponse(ctx, b.ID, "r4", func(r *store.Response) error { r.Uncounted = true; return nil }); err != nil {
		t.Fatal(err)
	}
	if c := counts(t0.Add(2 * time.Hour)); c[b.ID] != 1 {
		t.Fatalf("a response uncounted by an update: %v, want 1", c)
	}
	// Hidden responses are listed for the operator, by record then response, with their reporters; a
	// restored one leaves the list with its reporters cleared.
	if hidden, err := s.HiddenResponses(ctx); err != nil || len(hidden) != 0 {
		t.Fatalf("hidden responses of a store with none: %v %v", hidden, err)
	}
	for _, h := range []struct{ rec, id string }{{b.ID, "r4"}, {b.ID, "r3"}, {a.ID, "r1"}} {
		if _, err := s.UpdateResponse(ctx, h.rec, h.id, func(r *store.Response) error {
			r.Status, r.Reporters = "hidden", []string{"x", "y", "z"}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	hidden, err := s.HiddenResponses(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, h := range hidden {
		keys = append(keys, h.RecordID+"/"+h.ID)
		if len(h.Reporters) != 3 || h.Message == "" {
			t.Errorf("hidden %s/%s read back as %+v", h.RecordID, h.ID, h)
		}
	}
	want := []string{b.ID + "/r3", b.ID + "/r4", a.ID + "/r1"}
	if a.ID < b.ID {
		want = []string{a.ID + "/r1", b.ID + "/r3", b.ID + "/r4"}
	}
	if !slices.Equal(keys, want) {
		t.Fatalf("hidden responses %v, want %v", keys, want)
	}
	for _, h := range []struct{ rec, id string }{{b.ID, "r4"}, {b.ID, "r3"}, {a.ID, "r1"}} {
		if _, err := s.UpdateResponse(ctx, h.rec, h.id, func(r *store.Response) error {
			r.Status, r.Cleared, r.Reporters = store.ResponseActive, r.Reporters, nil
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	if hidden, err := s.HiddenResponses(ctx); err != nil || len(hidden) != 0 {
		t.Fatalf("hidden responses once restored: %v %v", hidden, err)
	}
	if rs, err := s.RecordResponses(ctx, a.ID); err != nil || !slices.ContainsFunc(rs, func(r *store.Response) bool { return r.ID == "r1" && len(r.Cleared) == 3 }) {
		t.Fatalf("a restored response's cleared reporters: %v %v", rs, err)
	}
	if _, err := s.UpdateResponse(ctx, a.ID, "nope", func(*store.Response) error { return nil }); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("update of an unknown response: %v", err)
	}
	refuse := errors.New("no")
	if _, err := s.UpdateResponse(ctx, a.ID, "r1", func(r *store.Response) error { r.Status = "withdrawn"; return refuse }); !errors.Is(err, refuse) {
		t.Fatalf("fn's error: %v", err)
	}
	// Concurrent reports of one response: each is kept (the update is atomic).
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			if _, err := s.UpdateResponse(ctx, a.ID, "r1", func(r *store.Response) error {
				r.Reporters = append(r.Reporters, fmt.Sprint("rep", i))
				return nil
			}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	got, err = s.RecordResponses(ctx, a.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[1].Status != store.ResponseActive || len(got[1].Reporters) != 8 || got[0].Message != "" || got[0].ContactE164 != "" {
		t.Fatalf("after the updates: %+v %+v", got[0], got[1])
	}
	if err := s.DeleteResponses(ctx, a.ID); err != nil {
		t.Fatal(err)
	}
	if got, err := s.RecordResponses(ctx, a.ID); err != nil || len(got) != 0 {
		t.Fatalf("after DeleteResponses: %v %v", got, err)
	}
	if got, err := s.RecordResponses(ctx, b.ID); err != nil || len(got) != 2 {
		t.Fatalf("another record's responses: %v %v", got, err)
	}
}

// testResponsesPerRecordBound: a record holds at most store.MaxResponsesPerRecord responses of every
// status; responders racing for its last place get it once, the others ErrTooManyResponses; a taken id
// is still ErrResponseExists, and another record is not affected.
func testResponsesPerRecordBound(t *testing.T, s store.Store) {
	a, b := Record("app", "bound-a"), Record("app", "bound-b")
	for _, r := range []*store.Record{a, b} {
		if _, _, err := s.Create(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	t0 := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	mk := func(rec *store.Record, id string) *store.Response {
		return &store.Response{RecordID: rec.ID, ID: id, CreatedAt: t0, UpdatedAt: t0, ExpiresAt: t0.Add(48 * time.Hour),
			Status: store.ResponseActive, Message: "Puedo ayudar " + id}
	}
	for i := range store.MaxResponsesPerRecord - 1 {
		r := mk(a, fmt.Sprintf("r%04d", i))
		if i%3 == 0 {
			r.Status = "withdrawn" // every status counts
		}
		if err := s.CreateResponse(ctx, r); err != nil {
			t.Fatalf("response %d: %v", i, err)
		}
	}
	// One place left: 8 responders race for it.
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = s.CreateResponse(ctx, mk(a, fmt.Sprintf("race%d", i)))
		}()
	}
	wg.Wait()
	stored := 0
	for _, err := range errs {
		switch {
		case err == nil:
			stored++
		case !errors.Is(err, store.ErrTooManyResponses):
			t.Fatalf("a racing responder: %v, want nil or ErrTooManyResponses", err)
		}
	}
	if stored != 1 {
		t.Fatalf("%d racing responders stored the last place, want 1", stored)
	}
	if err := s.CreateResponse(ctx, mk(a, "one-more")); !errors.Is(err, store.ErrTooManyResponses) {
		t.Fatalf("a response past the bound: %v, want ErrTooManyResponses", err)
	}
	if err := s.CreateResponse(ctx, mk(a, "r0001")); !errors.Is(err, store.ErrResponseExists) {
		t.Fatalf("a taken id at the bound: %v, want ErrResponseExists", err)
	}
	if got, err := s.RecordResponses(ctx, a.ID); err != nil || len(got) != store.MaxResponsesPerRecord {
		t.Fatalf("responses of a full record: %d, %v; want %d", len(got), err, store.MaxResponsesPerRecord)
	}
	if err := s.CreateResponse(ctx, mk(b, "other")); err != nil {
		t.Fatalf("another record's response: %v", err)
	}
}
