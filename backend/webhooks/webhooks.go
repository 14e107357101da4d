// Package webhooks tells the apps that publish what happens to their records: a match, a response, a
// change of status, an expiry coming. Events are derived from the store's change feed (and, for
// responses, from the service as it stores one) into a persisted outbox (store.WebhookOutbox), and a
// dispatcher POSTs them, signed, to each webhook, at least once, in order per record, retried with
// backoff for a day; on PostgreSQL the outbox's leases make one node deliver each event. Plain Go, no Caddy.
package webhooks

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/directaid/directaid/backend/store"
	"github.com/directaid/directaid/schema"
)

// Hook is one webhook: where events go, the secret that signs them, and the sources whose records it
// follows.
type Hook struct {
	URL     string
	Secret  string
	Sources []string
	// Timeout bounds one attempt, from the connection to the end of the answer (0: DefaultTimeout).
	Timeout time.Duration
}

// DefaultTimeout bounds an attempt when the hook sets no timeout.
const DefaultTimeout = 10 * time.Second

// ExpiringNotice is how long before a record's expiresAt its expiring event is due.
const ExpiringNotice = 24 * time.Hour

// The event types.
const (
	TypeMatch    = schema.WebhookMatch
	TypeResponse = schema.WebhookResponse
	TypeStatus   = schema.WebhookStatus
	TypeExpiring = schema.WebhookExpiring
)

// CheckHook checks a hook as the configuration gives it: an absolute http(s) URL, a secret of at least 16
// bytes, at least one source.
func CheckHook(h Hook) error {
	u, err := url.Parse(h.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.Fragment != "" {
		return fmt.Errorf("webhook %q must be an absolute http(s) URL without credentials or fragment", h.URL)
	}
	if len(h.Secret) < 16 {
		return fmt.Errorf("webhook %q: secret must have at least 16 characters", h.URL)
	}
	if len(h.Sources) == 0 {
		return fmt.Errorf("webhook %q: name at least one source", h.URL)
	}
	for _, s := range h.Sources {
		if s == "" || len(s) > 100 {
			return fmt.Errorf("webhook %q: source %q must have 1 to 100 characters", h.URL, s)
		}
	}
	if h.Timeout < 0 || h.Timeout > 5*time.Minute {
		return fmt.Errorf("webhook %q: timeout must be positive and at most 5m", h.URL)
	}
	return nil
}

// Config is what Service runs with.
type Config struct {
	Hooks []Hook
	// Store holds the records and must implement store.WebhookOutbox.
	Store store.Store
	// Matches answers the matches of a record (backend.Service.MatchesFor).
	Matches func(ctx context.Context, id string) (*schema.HelpMatches, error)
	// PublicURL is the base of the links in events (public_url; "" makes them paths).
	PublicURL string
	Metrics   *Metrics
	Log       *zap.Logger
	// Client sends the deliveries (nil: a client that follows no redirect).
	Client *http.Client
}

// Service derives and delivers the events of one configuration; Run runs it until its context ends.
type Service struct {
	cfg    Config
	outbox store.WebhookOutbox
	hooks  map[string]*Hook // by URL
	urls   []string
	owner  string // this node's lease owner
	log    *zap.Logger
	client *http.Client
	wake   chan struct{}
	now    func() time.Time
}

// ErrNoOutbox is New's error for a store without an outbox.
var ErrNoOutbox = errors.New("the store keeps no webhook outbox")

// New checks cfg and returns its service (nil when cfg has no hook).
func New(cfg Config) (*Service, error) {
	if len(cfg.Hooks) == 0 {
		return nil, nil
	}
	ob, ok := cfg.Store.(store.WebhookOutbox)
	if !ok {
		return nil, ErrNoOutbox
	}
	s := &Service{cfg: cfg, outbox: ob, hooks: map[string]*Hook{}, log: cfg.Log, client: cfg.Client, wake: make(chan struct{}, 1), now: time.Now}
	for i := range cfg.Hooks {
		h := &cfg.Hooks[i]
		if err := CheckHook(*h); err != nil {
			return nil, err
		}
		if s.hooks[h.URL] != nil {
			return nil, fmt.Errorf("webhook %q is declared twice", h.URL)
		}
		if h.Timeout == 0 {
			h.Timeout = DefaultTimeout
		}
		s.hooks[h.URL] = h
		s.urls = append(s.urls, h.URL)
	}
	if s.log == nil {
		s.log = zap.NewNop()
	}
	if s.client == nil {
		s.client = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	var b [8]byte
	_, _ = rand.Read(b[:])
	s.owner = hex.EncodeToString(b[:])
	return s, nil
}

// hooksOf are the hooks that follow source.
func (s *Service) hooksOf(source string) []*Hook {
	var out []*Hook
	for _, u := range s.urls {
		if h := s.hooks[u]; slices.Contains(h.Sources, source) {
			out = append(out, h)
		}
	}
	return out
}

// The body of a delivery and its parts: the wire contract's (schema), which the OpenAPI document gives.
type (
	Event         = schema.WebhookEvent
	EventRecord   = schema.WebhookRecord
	EventMatch    = schema.WebhookMatchInfo
	EventResponse = schema.WebhookResponseCount
	EventStatus   = schema.WebhookStatusChange
	EventExpiring = schema.WebhookExpiry
)

// eventID is the id of an event: the same for the same event of the same hook, whoever derives it.
func eventID(hook string, parts ...string) string {
	h := sha256.New()
	h.Write([]byte(hook))
	for _, p := range parts {
		h.Write([]byte{0})
		h.Write([]byte(p))
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}

func (s *Service) recordURL(id string) string { return s.cfg.PublicURL + schema.RecordPath(id) }

func (s *Service) eventRecord(rec *store.Record) EventRecord {
	return EventRecord{ID: rec.ID, Source: rec.Source, ExternalID: rec.ExternalID, Status: rec.Status, URL: s.recordURL(rec.ID)}
}

// outboxEvent makes the outbox's event of ev for hook, due at due.
func outboxEvent(hook string, ev *Event, due, now time.Time) (*store.WebhookEvent, error) {
	ev.ID = eventID(hook, idParts(ev)...)
	body, err := json.Marshal(ev)
	if err != nil {
		return nil, err
	}
	return &store.WebhookEvent{ID: ev.ID, Hook: hook, RecordID: ev.Record.ID, Type: ev.Type, CreatedAt: now, DueAt: due, NextAt: due, Body: body}, nil
}

// idParts is what makes an event itself: its type, record, and what happened.
func idParts(ev *Event) []string {
	p := []string{ev.Type, ev.Record.ID}
	switch {
	case ev.Match != nil:
		p = append(p, ev.Match.ID)
	case ev.Status != nil:
		p = append(p, ev.OccurredAt.Format(time.RFC3339Nano), ev.Status.To)
	case ev.Expiring != nil:
		p = append(p, ev.Expiring.ExpiresAt.Format(time.RFC3339Nano))
	}
	return p
}

// enqueue stores evs (one per hook of rec), wakes the dispatcher, and returns how many were not stored
// before.
func (s *Service) enqueue(ctx context.Context, evs []*store.WebhookEvent) (int, error) {
	if len(evs) == 0 {
		return 0, nil
	}
	n, err := s.outbox.EnqueueWebhookEvents(ctx, evs)
	if err != nil {
		return 0, err
	}
	if n > 0 {
		select {
		case s.wake <- struct{}{}:
		default:
		}
	}
	return n, nil
}

// Responded enqueues the response event of a new response to record id (one per hook that follows the
// record's source). The service calls it once the response is stored, before it answers.
func (s *Service) Responded(ctx context.Context, id, responseID string) {
	// The response is stored: its event must be too, even if the client has gone meanwhile.
	if err := s.responded(context.WithoutCancel(ctx), id, responseID); err != nil {
		s.log.Error("webhook response event not enqueued", zap.String("id", id), zap.Error(err))
	}
}

func (s *Service) responded(ctx context.Context, id, responseID string) error {
	rec, err := s.cfg.Store.Get(ctx, id)
	if err != nil {
		return err
	}
	_, err = s.enqueueResponse(ctx, rec, responseID)
	return err
}

// responseLookBack is how far back a node's start looks for responses whose event may not be in the
// outbox: a node that died between storing a response and enqueueing its event enqueues it at its next
// start. An event's id is its hook, type, record and response, so an event already stored is not stored
// again (the outbox keeps events 7 days, far longer than the look-back).
const responseLookBack = 24 * time.Hour

// recoverResponses enqueues the events of the responses created within responseLookBack that the outbox
// does not hold, and returns how many it stored.
func (s *Service) recoverResponses(ctx context.Context) (int, error) {
	since := s.now().Add(-responseLookBack)
	type pair struct{ record, response string }
	var recent []pair
	err := s.cfg.Store.ScanResponses(ctx, func(r *store.Response) error {
		if !r.CreatedAt.Before(since) {
			recent = append(recent, pair{r.RecordID, r.ID})
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	stored := 0
	for _, p := range recent {
		rec, err := s.cfg.Store.Get(ctx, p.record)
		if errors.Is(err, store.ErrNotFound) {
			continue // erased since
		}
		if err != nil {
			return stored, err
		}
		n, err := s.enqueueResponse(ctx, rec, p.response)
		if err != nil {
			return stored, err
		}
		stored += n
	}
	return stored, nil
}

// enqueueResponse stores the response event of responseID to rec for each hook that follows rec's
// source, and returns how many were not stored before.
func (s *Service) enqueueResponse(ctx context.Context, rec *store.Record, responseID string) (int, error) {
	id := rec.ID
	hooks := s.hooksOf(rec.Source)
	if len(hooks) == 0 {
		return 0, nil
	}
	now := s.now().UTC()
	// Every active response, those left out of the public count too: the publisher reads them all (GET
	// …/responses' active), and a count of 0 would say that nothing waits.
	rs, err := s.cfg.Store.RecordResponses(ctx, id)
	if err != nil {
		return 0, err
	}
	active := 0
	for _, r := range rs {
		if r.ActiveAt(now) {
			active++
		}
	}
	var evs []*store.WebhookEvent
	for _, h := range hooks {
		ev := &Event{Type: TypeResponse, OccurredAt: now.Truncate(time.Millisecond), Record: s.eventRecord(rec), Response: &EventResponse{Count: active}}
		ev.ID = eventID(h.URL, TypeResponse, id, responseID)
		body, err := json.Marshal(ev)
		if err != nil {
			return 0, err
		}
		evs = append(evs, &store.WebhookEvent{ID: ev.ID, Hook: h.URL, RecordID: id, Type: TypeResponse, CreatedAt: now, DueAt: now, NextAt: now, Body: body})
	}
	return s.enqueue(ctx, evs)
}

// Run derives and delivers events until ctx ends.
func (s *Service) Run(ctx context.Context) {
	var wg sync.WaitGroup
	wg.Go(func() { s.runRecover(ctx) })
	wg.Go(func() { s.runDerive(ctx) })
	wg.Go(func() { s.runDispatch(ctx) })
	wg.Wait()
}

// runRecover runs recoverResponses once, at start, until it succeeds or ctx ends.
func (s *Service) runRecover(ctx context.Context) {
	for {
		n, err := s.recoverResponses(ctx)
		if err == nil {
			if n > 0 {
				s.log.Warn("webhooks: response events missing from the outbox were enqueued at start", zap.Int("events", n))
			}
			return
		}
		if ctx.Err() != nil {
			return
		}
		s.log.Warn("webhooks: looking for response events missing from the outbox failed; retrying", zap.Error(err))
		if !sleep(ctx, 5*time.Second) {
			return
		}
	}
}
