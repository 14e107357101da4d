package storetest

import (
	"cmp"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/directaid/directaid/backend/store"
)

// testExpiring: Expiring answers exactly the open records due by a given instant, soonest first, bounded by
// limit, and follows every Update (a renewal moves a record, any other status takes it out, a reopening
// puts it back) and Create (records never due, or not open, are not in it).
func testExpiring(t *testing.T, s store.Store) {
	base := time.Date(2031, 3, 1, 12, 0, 0, 0, time.UTC)
	var recs []*store.Record
	for i := range 30 {
		rec := Record("expiry", fmt.Sprintf("e-%d", i))
		rec.Status = store.StatusOpen
		switch {
		case i%10 == 9: // never expires (stored before expiry existed)
		case i%10 == 8:
			rec.Status, rec.ExpiresAt = store.StatusResolved, base.Add(time.Duration(i)*time.Minute)
		default:
			rec.ExpiresAt = base.Add(time.Duration(i) * time.Minute)
		}
		stored, created, err := s.Create(ctx, rec)
		if err != nil || !created {
			t.Fatalf("Create %d: created %v, %v", i, created, err)
		}
		recs = append(recs, stored)
	}
	check := func(step string) {
		t.Helper()
		now := current(t, s, idsOf(recs))
		for _, at := range []time.Time{base.Add(-time.Hour), base, base.Add(7 * time.Minute), base.Add(7*time.Minute - time.Millisecond),
			base.Add(20*time.Minute + 30*time.Second), base.Add(48 * time.Hour)} {
			var want []*store.Record
			for _, r := range now {
				if r.ExpiredAt(at) {
					want = append(want, r)
				}
			}
			slices.SortFunc(want, func(a, b *store.Record) int { return cmp.Compare(a.ExpiresAt.UnixMilli(), b.ExpiresAt.UnixMilli()) })
			for _, limit := range []int{1, 3, 100} {
				got, err := s.Expiring(ctx, at, limit)
				if err != nil {
					t.Fatalf("%s: Expiring(%v, %d): %v", step, at, limit, err)
				}
				w := idsOf(want[:min(limit, len(want))])
				if !slices.Equal(got, w) && !(len(got) == 0 && len(w) == 0) {
					t.Errorf("%s: Expiring(%v, %d) = %v, want %v", step, at.Sub(base), limit, got, w)
				}
			}
		}
	}
	check("created")
	// Marked expired (the sweep), resolved, withdrawn, hidden: out of the index.
	update(t, s, recs[0].ID, setStatus(store.StatusExpired))
	update(t, s, recs[1].ID, setStatus(store.StatusResolved))
	update(t, s, recs[2].ID, setStatus(store.StatusWithdrawn))
	update(t, s, recs[3].ID, setStatus(store.StatusHidden))
	// Renewed: moves to its new instant; reopened with a new one: back in; a change of content only: stays.
	update(t, s, recs[4].ID, func(r *store.Record) error { r.ExpiresAt = base.Add(25*time.Minute + time.Second); return nil })
	update(t, s, recs[1].ID, func(r *store.Record) error {
		r.Status, r.ExpiresAt = store.StatusOpen, base.Add(5*time.Minute+time.Second)
		return nil
	})
	update(t, s, recs[5].ID, func(r *store.Record) error { r.ContactHidden = true; return nil })
	check("updated")
	// An expired record renewed (the publisher's renew after the sweep) is due again at its new instant.
	update(t, s, recs[0].ID, func(r *store.Record) error {
		r.Status, r.ExpiresAt = store.StatusOpen, base.Add(90*time.Second)
		return nil
	})
	check("renewed")
}
