package webhooks

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/directaid/directaid/backend/store"
)

const (
	// inFlight bounds the attempts a node makes at once; each webhook takes at most its share of them
	// (hookShare), so that a receiver that hangs delays only its own events.
	inFlight = 16
	// dispatchPoll is how often the dispatcher looks for due events when nothing wakes it.
	dispatchPoll = 500 * time.Millisecond
	// leaseMargin is how much longer than its attempt's timeout a claim holds an event.
	leaseMargin = 30 * time.Second
	// Retention is how long the outbox keeps an event once done with (the delivery log's depth).
	Retention = 7 * 24 * time.Hour
	// countEvery is how often the pending gauge is counted; pruneEvery, how often old events are deleted.
	countEvery = 5 * time.Second
	pruneEvery = time.Hour
)

// hookShare is how many of a node's inFlight attempts one of n webhooks may hold at once.
func hookShare(n int) int { return max(1, inFlight/max(1, n)) }

// runDispatch claims due events and delivers them, at most inFlight at once and each webhook at most its
// hookShare, until ctx ends.
func (s *Service) runDispatch(ctx context.Context) {
	lease := time.Duration(0)
	for _, h := range s.hooks {
		lease = max(lease, h.Timeout+leaseMargin)
	}
	slots := make(chan struct{}, inFlight)
	share := hookShare(len(s.urls))
	hookSlots := make(map[string]chan struct{}, len(s.urls))
	for _, u := range s.urls {
		hookSlots[u] = make(chan struct{}, share)
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	var counted, pruned time.Time
	var failing quiet
	for {
		for _, u := range s.urls {
			free := min(inFlight-len(slots), share-len(hookSlots[u]))
			if free <= 0 {
				continue
			}
			evs, err := s.outbox.ClaimWebhookEvents(ctx, []string{u}, s.owner, s.now().UTC(), lease, free)
			switch {
			case err != nil && ctx.Err() == nil:
				failing.warn(s.log, "webhooks: claiming events failed; retrying", err)
			case err == nil:
				failing.ok(s.log, "webhooks: claiming events works again")
			}
			for _, ev := range evs {
				slots <- struct{}{}
				hookSlots[u] <- struct{}{}
				wg.Go(func() {
					defer func() { <-slots; <-hookSlots[u] }()
					s.deliver(ctx, ev)
					s.poke() // the record's next event may go now
				})
			}
		}
		if now := s.now(); now.Sub(counted) >= countEvery {
			if n, err := s.outbox.PendingWebhookEvents(ctx, now); err == nil {
				counted = now
				s.cfg.Metrics.setPending(n)
			}
		}
		if now := s.now(); now.Sub(pruned) >= pruneEvery {
			if n, err := s.outbox.PruneWebhookEvents(ctx, now.Add(-Retention)); err == nil {
				pruned = now
				if n > 0 {
					s.log.Info("webhooks: old events deleted from the outbox", zap.Int("events", n))
				}
			}
		}
		t := time.NewTimer(dispatchPoll)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-s.wake:
		case <-t.C:
		}
		t.Stop()
	}
}

func (s *Service) poke() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// deliver makes one attempt at ev and stores its outcome.
func (s *Service) deliver(ctx context.Context, ev *store.WebhookEvent) {
	h := s.hooks[ev.Hook]
	result := ""
	if ev.Type == TypeExpiring && !s.stillExpiring(ctx, ev) {
		ev.State, result = store.WebhookSkipped, ResultSkipped
	} else {
		code, err := s.post(ctx, h, ev)
		if ctx.Err() != nil {
			// Stopping: give the event back as it was, for the next dispatcher (this node's after a restart, or another's).
			ev.NextAt = s.now().UTC()
			s.finish(ev, "")
			return
		}
		ev.Attempts++
		ev.LastStatus = code
		ev.LastError = ""
		if err == nil {
			ev.State, result = store.WebhookDelivered, ResultDelivered
		} else {
			ev.LastError = err.Error()
			next, ok := nextAttempt(ev.Attempts, later(ev.DueAt, ev.CreatedAt), s.now())
			ev.NextAt, result = next.UTC(), ResultRetry
			if !ok {
				ev.State, result = store.WebhookFailed, ResultFailed
			}
		}
	}
	ev.UpdatedAt = s.now().UTC()
	s.finish(ev, result)
}

// finish stores ev's outcome (with a context of its own: it must land even while the node stops).
func (s *Service) finish(ev *store.WebhookEvent, result string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if result != "" {
		s.cfg.Metrics.delivery(result)
	}
	if err := s.outbox.FinishWebhookAttempt(ctx, ev, s.owner); err != nil {
		// Its lease ended (another node may be delivering it) or the store is unreachable: the event stays
		// pending and is attempted again once the lease ends.
		s.log.Warn("webhooks: an attempt's outcome was not stored; the event will be attempted again",
			zap.String("event", ev.ID), zap.String("result", result), zap.Error(err))
	}
}

// stillExpiring reports whether an expiring event is still true: the record open, with the expiresAt
// the event announces, not yet past.
func (s *Service) stillExpiring(ctx context.Context, ev *store.WebhookEvent) bool {
	var body Event
	if json.Unmarshal(ev.Body, &body) != nil || body.Expiring == nil {
		return false
	}
	rec, err := s.cfg.Store.Get(ctx, ev.RecordID)
	if err != nil {
		return !errors.Is(err, store.ErrNotFound) // unreadable: send it rather than lose it
	}
	return rec.Status == store.StatusOpen && rec.ExpiresAt.Equal(body.Expiring.ExpiresAt) && s.now().Before(rec.ExpiresAt)
}

// post sends ev to h once, signed now: nil on a 2xx answer; else the reason, in the operator's words.
func (s *Service) post(ctx context.Context, h *Hook, ev *store.WebhookEvent) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, h.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.URL, bytes.NewReader(ev.Body))
	if err != nil {
		return 0, fmt.Errorf("petición inválida: %v", err)
	}
	ts := s.now().Unix()
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "directaid-webhooks/1")
	req.Header.Set(HeaderTimestamp, strconv.FormatInt(ts, 10))
	req.Header.Set(HeaderSignature, Sign([]byte(h.Secret), ts, ev.Body))
	req.Header.Set(HeaderEventID, ev.ID)
	req.Header.Set(HeaderEventType, ev.Type)
	resp, err := s.client.Do(req)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return 0, fmt.Errorf("sin respuesta completa en %s", h.Timeout)
		}
		return 0, fmt.Errorf("sin respuesta: %v", err)
	}
	_, err = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	switch {
	case resp.StatusCode < 200 || resp.StatusCode > 299:
		return resp.StatusCode, fmt.Errorf("respuesta HTTP %d", resp.StatusCode)
	case err != nil && errors.Is(err, context.DeadlineExceeded):
		return resp.StatusCode, fmt.Errorf("sin respuesta completa en %s", h.Timeout)
	}
	return resp.StatusCode, nil
}

// Delivery is one event as the delivery log shows it (GET /directaid/webhooks on the admin endpoint).
type Delivery struct {
	ID         string    `json:"id"`
	Hook       string    `json:"hook"`
	RecordID   string    `json:"recordId"`
	Type       string    `json:"type"`
	State      string    `json:"state"`
	Attempts   int       `json:"attempts"`
	LastStatus int       `json:"lastStatus,omitempty"`
	LastError  string    `json:"lastError,omitempty"`
	CreatedAt  time.Time `json:"createdAt"`
	DueAt      time.Time `json:"dueAt"`
	NextAt     time.Time `json:"nextAt,omitzero"`
	UpdatedAt  time.Time `json:"updatedAt"`
}

// HookInfo is a configured webhook as the log shows it (never its secret).
type HookInfo struct {
	URL     string   `json:"url"`
	Sources []string `json:"sources"`
}

// Log is the delivery log.
type Log struct {
	Hooks   []HookInfo `json:"hooks"`
	Pending int        `json:"pending"`
	Items   []Delivery `json:"items"`
}

// Deliveries reads the delivery log: the configured hooks, the pending count and the limit events
// whose last attempt (or enqueueing) is the latest.
func (s *Service) Deliveries(ctx context.Context, limit int) (*Log, error) {
	out := &Log{Hooks: []HookInfo{}, Items: []Delivery{}}
	if s == nil {
		return out, nil
	}
	for _, u := range s.urls {
		out.Hooks = append(out.Hooks, HookInfo{URL: u, Sources: s.hooks[u].Sources})
	}
	var err error
	if out.Pending, err = s.outbox.PendingWebhookEvents(ctx, s.now()); err != nil {
		return nil, err
	}
	evs, err := s.outbox.RecentWebhookEvents(ctx, limit)
	if err != nil {
		return nil, err
	}
	for _, e := range evs {
		d := Delivery{ID: e.ID, Hook: e.Hook, RecordID: e.RecordID, Type: e.Type, State: e.State, Attempts: e.Attempts, LastStatus: e.LastStatus,
			LastError: e.LastError, CreatedAt: e.CreatedAt, DueAt: e.DueAt, UpdatedAt: e.UpdatedAt}
		if e.State == store.WebhookPending {
			d.NextAt = e.NextAt
		}
		out.Items = append(out.Items, d)
	}
	return out, nil
}
