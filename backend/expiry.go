package backend

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/directaid/directaid/backend/store"
)

// Expiry. An open record whose expiresAt has passed is expired: readers see it so at
// once (readAt), and the sweep (ExpireDue, run every ExpiryPeriod by RunExpiry) marks it through
// Store.Update, so that its updatedAt moves, mirrors learn it through `since`, it leaves the open indexes
// and lists, and the audit trail says so with actor "system". An expired record shows no phone anywhere;
// its publisher's renew opens it again with a new expiresAt.

// ActionExpire is the audit trail's action of the sweep.
const ActionExpire = "expire"

const (
	// ExpiryPeriod is how often RunExpiry sweeps, give or take expiryJitter.
	ExpiryPeriod = time.Minute
	expiryJitter = 15 * time.Second
	// expiryBatch bounds each read of the expiry index, expiryMaxBatches one sweep (the rest waits for
	// the next: readers already see those records expired).
	expiryBatch      = 200
	expiryMaxBatches = 50
)

// readAt is rec as a reader sees it at now: an open record past its expiresAt reads as expired even
// before the sweep has marked it (a copy; rec is not changed).
func readAt(rec *store.Record, now time.Time) *store.Record {
	if !rec.ExpiredAt(now) {
		return rec
	}
	r := *rec
	r.Status = store.StatusExpired
	return &r
}

// ExpireDue marks expired every open record whose expiresAt has passed (up to expiryBatch ×
// expiryMaxBatches of them) and returns how many it marked. Several nodes may sweep at once: a record
// that another sweep (or a renewal) changed first is left as it is, so the race is harmless.
func (s *Service) ExpireDue(ctx context.Context) (int, error) {
	marked := 0
	for range expiryMaxBatches {
		now := s.now().UTC().Truncate(time.Millisecond)
		ids, err := s.store.Expiring(ctx, now, expiryBatch)
		if err != nil {
			return marked, err
		}
		n := 0
		for _, id := range ids {
			changed, err := s.expire(ctx, id, now)
			if err != nil {
				return marked, err
			}
			if changed {
				n++
			}
		}
		marked += n
		// A short batch is the last; one that marked nothing would only come back the same.
		if len(ids) < expiryBatch || n == 0 {
			break
		}
	}
	return marked, nil
}

// expire marks record id expired if it still is open and due at now.
func (s *Service) expire(ctx context.Context, id string, now time.Time) (bool, error) {
	_, err := s.update(auditStatus(ctx, ActionExpire, store.ActorSystem), id, func(r *store.Record) error {
		if !r.ExpiredAt(now) {
			return errNoChange // renewed, resolved or marked by another sweep since the index was read
		}
		r.Status, r.UpdatedAt = store.StatusExpired, now
		return nil
	})
	switch {
	case errors.Is(err, errNoChange), errors.Is(err, store.ErrNotFound):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("expire %s: %w", id, err)
	}
	return true, nil
}

// RunExpiry sweeps (ExpireDue) soon after it starts, then every ExpiryPeriod with a random jitter (so that
// the nodes of one database do not sweep in step), until ctx ends. report receives each sweep's outcome.
func (s *Service) RunExpiry(ctx context.Context, report func(marked int, err error)) {
	wait := rand.N(expiryJitter)
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		n, err := s.ExpireDue(ctx)
		if ctx.Err() != nil {
			return
		}
		if report != nil {
			report(n, err)
		}
		wait = ExpiryPeriod - expiryJitter + rand.N(2*expiryJitter)
	}
}
