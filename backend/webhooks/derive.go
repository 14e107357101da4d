package webhooks

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/directaid/directaid/backend/store"
	"github.com/directaid/directaid/schema"
)

// Events from the change feed: every node reads the store's changes (store.ListSpec.Since) after the
// position the webhooks keep in the store (stateCursor), derives each change's events and enqueues them.
// An event's id is a function of the event, so that two nodes, or one reading a change twice (it starts
// deriveLookBack before the position it kept), enqueue it once.

const (
	derivePoll     = 500 * time.Millisecond
	derivePage     = 500
	deriveLookBack = 10 * time.Second
	stateCursor    = "cursor"
	stateStatus    = "status/" // + record id → the last status seen of a record some hook follows
)

// cursor is a position in the change feed: after the change of record id at Unix ms ms ("" id: after
// every change of ms), in the stores' order (updatedAt, then id).
type cursor struct {
	ms int64
	id string
}

func (c cursor) String() string { return strconv.FormatInt(c.ms, 10) + "~" + c.id }

func parseCursor(s string) (cursor, bool) {
	ms, id, ok := strings.Cut(s, "~")
	n, err := strconv.ParseInt(ms, 10, 64)
	return cursor{n, id}, ok && err == nil
}

// spec is the store query of the changes after c.
func (c cursor) spec() *store.ListSpec {
	s := &store.ListSpec{Limit: derivePage, NoTotal: true}
	if c.id == "" {
		s.Since = time.UnixMilli(c.ms)
	} else {
		// One ms earlier, so that the changes of ms after id are there; After skips up to id.
		s.Since, s.After = time.UnixMilli(c.ms-1), &store.Cursor{ID: c.id, Updated: c.ms}
	}
	return s
}

// runDerive reads the change feed every derivePoll until ctx ends.
func (s *Service) runDerive(ctx context.Context) {
	start := cursor{ms: s.now().Add(-deriveLookBack).UnixMilli()}
	for {
		v, err := s.outbox.WebhookState(ctx, stateCursor)
		if err == nil {
			if c, ok := parseCursor(v); ok {
				start = cursor{ms: c.ms - deriveLookBack.Milliseconds()}
			}
			break
		}
		s.log.Warn("webhooks: the change feed's position is unreadable; retrying", zap.Error(err))
		if !sleep(ctx, time.Second) {
			return
		}
	}
	pos := start
	var failing quiet
	for {
		next, err := s.derive(ctx, pos)
		pos = next
		wait := derivePoll
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			failing.warn(s.log, "webhooks: deriving events failed; retrying", err)
			wait = time.Second
		} else {
			failing.ok(s.log, "webhooks: deriving events works again")
		}
		if !sleep(ctx, wait) {
			return
		}
	}
}

// quiet logs a failure that repeats (the database down for a while) once a minute, with how many times
// it happened since, and once when it ends: a line a poll would flood the log.
type quiet struct {
	since, logged time.Time
	n             int
}

func (q *quiet) warn(log *zap.Logger, msg string, err error) {
	now := time.Now()
	if q.n == 0 {
		q.since = now
	}
	q.n++
	if now.Sub(q.logged) >= time.Minute {
		log.Warn(msg, zap.Error(err), zap.Int("failures", q.n), zap.Time("since", q.since))
		q.logged = now
	}
}

func (q *quiet) ok(log *zap.Logger, msg string) {
	if q.n > 1 {
		log.Info(msg, zap.Int("failures", q.n), zap.Duration("for", time.Since(q.since)))
	}
	*q = quiet{}
}

func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// derive enqueues the events of the changes after pos, page by page, and returns the position after the
// last change whose events are enqueued.
func (s *Service) derive(ctx context.Context, pos cursor) (cursor, error) {
	for range 20 {
		res, err := s.cfg.Store.List(ctx, pos.spec())
		if err != nil {
			return pos, err
		}
		if len(res.Records) == 0 {
			return pos, nil
		}
		for _, rec := range res.Records {
			if err := s.deriveRecord(ctx, rec); err != nil {
				return pos, fmt.Errorf("record %s: %w", rec.ID, err)
			}
			pos = cursor{ms: rec.UpdatedAt.UnixMilli(), id: rec.ID}
		}
		if err := s.outbox.SetWebhookState(ctx, stateCursor, pos.String()); err != nil {
			return pos, err
		}
		if res.Next == nil {
			return pos, nil
		}
	}
	return pos, nil
}

// deriveRecord enqueues the events of one change: the matches a new open record is to records some hook
// follows, and, when a hook follows the record itself, its change of status and its coming expiry.
func (s *Service) deriveRecord(ctx context.Context, rec *store.Record) error {
	now := s.now().UTC().Truncate(time.Millisecond) // times in events to the millisecond, as every other the API writes
	var evs []*store.WebhookEvent
	if rec.Revision == 0 && rec.Status == store.StatusOpen && !rec.ExpiredAt(now) {
		m, err := s.matchEvents(ctx, rec, now)
		if err != nil {
			return err
		}
		evs = append(evs, m...)
	}
	hooks := s.hooksOf(rec.Source)
	key, last := stateStatus+rec.ID, ""
	if len(hooks) > 0 {
		var err error
		if last, err = s.outbox.WebhookState(ctx, key); err != nil {
			return err
		}
		// A status first seen as open is where a record starts: no event. Any other change is one.
		if last != rec.Status && (last != "" || rec.Status != store.StatusOpen) {
			for _, h := range hooks {
				ev, err := outboxEvent(h.URL, &Event{Type: TypeStatus, OccurredAt: rec.UpdatedAt.UTC(), Record: s.eventRecord(rec),
					Status: &EventStatus{From: last, To: rec.Status}}, now, now)
				if err != nil {
					return err
				}
				evs = append(evs, ev)
			}
		}
		if rec.Status == store.StatusOpen && !rec.ExpiresAt.IsZero() {
			due := rec.ExpiresAt.Add(-ExpiringNotice).UTC()
			for _, h := range hooks {
				ev, err := outboxEvent(h.URL, &Event{Type: TypeExpiring, OccurredAt: later(due, now), Record: s.eventRecord(rec),
					Expiring: &EventExpiring{ExpiresAt: rec.ExpiresAt.UTC()}}, due, now)
				if err != nil {
					return err
				}
				evs = append(evs, ev)
			}
		}
	}
	if _, err := s.enqueue(ctx, evs); err != nil {
		return err
	}
	if len(hooks) > 0 && last != rec.Status { // once its event is enqueued
		return s.outbox.SetWebhookState(ctx, key, rec.Status)
	}
	return nil
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// matchEvents are the match events of a new open record x: one for each record its matches list that a
// hook follows (the matches of x, by the rule of GET help/{id}/matches with its default radius and its
// largest limit, are the records whose matches x joins).
func (s *Service) matchEvents(ctx context.Context, x *store.Record, now time.Time) ([]*store.WebhookEvent, error) {
	m, err := s.cfg.Matches(ctx, x.ID)
	if err != nil {
		if errors.Is(err, store.ErrUnreachable) || ctx.Err() != nil {
			return nil, err
		}
		s.log.Warn("webhooks: the matches of a new record are unreadable; no match events for it", zap.String("id", x.ID), zap.Error(err))
		return nil, nil
	}
	var out []*store.WebhookEvent
	for _, item := range m.Items {
		r, err := s.cfg.Store.Get(ctx, item.ID)
		if errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if r.Status != store.StatusOpen || r.CreatedAt.After(x.CreatedAt) {
			// A record newer than x (published before x's change was read) gets no event about x: x is
			// its match's older record, which its own change tells.
			continue
		}
		var dist *float64
		if item.Location != nil {
			dist = item.Location.DistanceKm
		}
		approximate := dist != nil && (x.LocationPrecision == schema.PrecisionPlace || r.LocationPrecision == schema.PrecisionPlace)
		for _, h := range s.hooksOf(r.Source) {
			ev, err := outboxEvent(h.URL, &Event{Type: TypeMatch, OccurredAt: x.CreatedAt.UTC(), Record: s.eventRecord(r),
				Match: &EventMatch{ID: x.ID, URL: s.recordURL(x.ID), DistanceKm: dist, Approximate: approximate}}, now, now)
			if err != nil {
				return nil, err
			}
			out = append(out, ev)
		}
	}
	return out, nil
}
