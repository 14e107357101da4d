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

// testWebhooks: the outbox keeps an event once by id; a claim leases the head of each (hook, record) only,
// skips what is not due, leased or of another hook, and two owners claiming at once never get one event
// twice; a finished event lets the next of its record go; a lost lease refuses the finish; the log, the
// pending count (of due events), the prune (of events done with, or pending long past due) and the state
// read back what was written.
func testWebhooks(t *testing.T, st store.Store) {
	s, ok := st.(store.WebhookOutbox)
	if !ok {
		t.Fatalf("%T does not implement store.WebhookOutbox", st)
	}
	t0 := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	mk := func(id, hook, rec string, due time.Time) *store.WebhookEvent {
		return &store.WebhookEvent{ID: id, Hook: hook, RecordID: rec, Type: "status", CreatedAt: t0, DueAt: due, NextAt: due, Body: []byte(`{"id":"` + id + `"}`)}
	}
	n, err := s.EnqueueWebhookEvents(ctx, []*store.WebhookEvent{
		mk("a1", "h1", "ra", t0), mk("a2", "h1", "ra", t0), mk("b1", "h1", "rb", t0),
		mk("later", "h1", "rc", t0.Add(time.Hour)), mk("c2", "h1", "rc", t0), mk("x1", "h2", "ra", t0),
	})
	if err != nil || n != 6 {
		t.Fatalf("enqueue: %d, %v", n, err)
	}
	if n, err := s.EnqueueWebhookEvents(ctx, []*store.WebhookEvent{mk("a1", "h1", "ra", t0), mk("d1", "h1", "rd", t0)}); err != nil || n != 1 {
		t.Fatalf("enqueue again: %d stored, %v; want 1 (a1 is stored already)", n, err)
	}
	if p, err := s.PendingWebhookEvents(ctx, t0); err != nil || p != 6 {
		t.Fatalf("pending due: %d, %v; want 6 (not \"later\")", p, err)
	}
	ids := func(evs []*store.WebhookEvent) []string {
		var out []string
		for _, e := range evs {
			out = append(out, e.ID)
		}
		slices.Sort(out)
		return out
	}
	got, err := s.ClaimWebhookEvents(ctx, []string{"h1"}, "n1", t0, time.Minute, 10)
	if err != nil {
		t.Fatal(err)
	}
	// a2 waits for a1; "later" is not due and does not hold c2 back; x1 is of a hook not asked for.
	if want := []string{"a1", "b1", "c2", "d1"}; !slices.Equal(ids(got), want) {
		t.Fatalf("claim: %v, want %v", ids(got), want)
	}
	for _, e := range got {
		if e.LeaseOwner != "n1" || !e.LeaseUntil.Equal(t0.Add(time.Minute)) || string(e.Body) != `{"id":"`+e.ID+`"}` || e.Seq == 0 {
			t.Fatalf("claimed event %+v", e)
		}
	}
	if again, err := s.ClaimWebhookEvents(ctx, []string{"h1"}, "n2", t0.Add(time.Second), time.Minute, 10); err != nil || len(again) != 0 {
		t.Fatalf("a second claim under the leases: %v, %v; want none", ids(again), err)
	}
	a1 := got[slices.IndexFunc(got, func(e *store.WebhookEvent) bool { return e.ID == "a1" })]
	lost := *a1
	if err := s.FinishWebhookAttempt(ctx, &lost, "n2"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("finish by a non-owner: %v, want ErrNotFound", err)
	}
	a1.State, a1.Attempts, a1.LastStatus, a1.UpdatedAt = store.WebhookDelivered, 1, 204, t0.Add(2*time.Second)
	if err := s.FinishWebhookAttempt(ctx, a1, "n1"); err != nil {
		t.Fatal(err)
	}
	b1 := got[slices.IndexFunc(got, func(e *store.WebhookEvent) bool { return e.ID == "b1" })]
	b1.Attempts, b1.LastStatus, b1.LastError, b1.NextAt, b1.UpdatedAt = 1, 500, "HTTP 500", t0.Add(10*time.Second), t0.Add(3*time.Second)
	if err := s.FinishWebhookAttempt(ctx, b1, "n1"); err != nil {
		t.Fatal(err)
	}
	// Now a2 is the head of ra; b1 waits for its NextAt; c2 and d1 are still leased.
	got, err = s.ClaimWebhookEvents(ctx, []string{"h1", "h2"}, "n2", t0.Add(5*time.Second), time.Minute, 10)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"a2", "x1"}; !slices.Equal(ids(got), want) {
		t.Fatalf("claim after a1 delivered: %v, want %v", ids(got), want)
	}
	// Past the leases and b1's NextAt: a2, b1 and d1 again (still pending); "later", due now and enqueued
	// before c2, is rc's head, so c2 waits behind it.
	got, err = s.ClaimWebhookEvents(ctx, []string{"h1"}, "n3", t0.Add(2*time.Hour), time.Minute, 10)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"a2", "b1", "d1", "later"}; !slices.Equal(ids(got), want) {
		t.Fatalf("claim after the leases: %v, want %v", ids(got), want)
	}
	if p, err := s.PendingWebhookEvents(ctx, t0.Add(2*time.Hour)); err != nil || p != 6 {
		t.Fatalf("pending: %d, %v; want 6", p, err)
	}
	log, err := s.RecentWebhookEvents(ctx, 2)
	if err != nil || len(log) != 2 || log[0].ID != "b1" || log[0].LastError != "HTTP 500" || log[0].Attempts != 1 || log[1].ID != "a1" || log[1].State != store.WebhookDelivered {
		t.Fatalf("log: %+v, %v", log, err)
	}

	// Two owners claiming at once never both get one event.
	var evs []*store.WebhookEvent
	for i := range 40 {
		evs = append(evs, mk(fmt.Sprintf("m%02d", i), "h3", fmt.Sprintf("r%02d", i%10), t0))
	}
	if _, err := s.EnqueueWebhookEvents(ctx, evs); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	seen := map[string]string{}
	var wg sync.WaitGroup
	for _, owner := range []string{"p", "q"} {
		wg.Go(func() {
			for range 6 {
				c, err := s.ClaimWebhookEvents(ctx, []string{"h3"}, owner, t0, time.Hour, 3)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				for _, e := range c {
					if o, dup := seen[e.ID]; dup {
						t.Errorf("%s claimed by %s and %s", e.ID, o, owner)
					}
					seen[e.ID] = owner
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(seen) != 10 {
		t.Errorf("claimed %d events of 10 records, want each record's head: %v", len(seen), seen)
	}

	// The prune deletes what is done with (a1, updated at t0+2s) and what is pending since before (the
	// rest), not an event due after it.
	if _, err := s.EnqueueWebhookEvents(ctx, []*store.WebhookEvent{mk("future", "h1", "re", t0.Add(10*time.Hour))}); err != nil {
		t.Fatal(err)
	}
	if n, err := s.PruneWebhookEvents(ctx, t0.Add(3*time.Hour)); err != nil || n != 47 {
		t.Fatalf("prune: %d, %v; want 47", n, err)
	}
	if p, err := s.PendingWebhookEvents(ctx, t0.Add(11*time.Hour)); err != nil || p != 1 {
		t.Fatalf("pending after the prune: %d, %v; want 1 (future)", p, err)
	}

	if v, err := s.WebhookState(ctx, "cursor"); err != nil || v != "" {
		t.Fatalf("state unset: %q, %v", v, err)
	}
	for _, v := range []string{"one", "two", ""} {
		if err := s.SetWebhookState(ctx, "cursor", v); err != nil {
			t.Fatal(err)
		}
		if got, err := s.WebhookState(ctx, "cursor"); err != nil || got != v {
			t.Fatalf("state: %q, %v; want %q", got, err, v)
		}
	}
}
