package store

import (
	"context"
	"time"
)

// WebhookEvent is one event of the webhooks' outbox (package backend/webhooks): the body to POST to one
// webhook, and where its delivery stands.
type WebhookEvent struct {
	// ID identifies the event: the same event derived twice (by two nodes, or twice by one) has the same
	// ID, and the outbox keeps it once.
	ID string `json:"id"`
	// Hook is the webhook the event goes to (its URL).
	Hook string `json:"hook"`
	// RecordID is the record the event is about: a hook's events of one record go out in Seq order.
	RecordID string `json:"recordId"`
	// Seq is set by the store when it enqueues the event: greater than every Seq enqueued before.
	Seq int64 `json:"seq"`
	// Type is the event's type (match, response, status, expiring), for the delivery log.
	Type string `json:"type"`
	// CreatedAt is when it was enqueued.
	CreatedAt time.Time `json:"createdAt"`
	// DueAt is when the event happens: it is not delivered, and does not hold back the record's later
	// events, before then.
	DueAt time.Time `json:"dueAt"`
	// NextAt is when the next attempt may start.
	NextAt time.Time `json:"nextAt"`
	// Body is the JSON POSTed.
	Body []byte `json:"body"`
	// State is one of the WebhookState… constants.
	State string `json:"state"`
	// Attempts counts the attempts made; LastStatus and LastError tell how the last one ended (an HTTP
	// status, 0 when none came back).
	Attempts   int    `json:"attempts,omitempty"`
	LastStatus int    `json:"lastStatus,omitempty"`
	LastError  string `json:"lastError,omitempty"`
	// UpdatedAt is when the last attempt ended (CreatedAt before any).
	UpdatedAt time.Time `json:"updatedAt"`
	// LeaseOwner and LeaseUntil: a claimed event is delivered by its owner only until LeaseUntil.
	LeaseOwner string    `json:"leaseOwner,omitempty"`
	LeaseUntil time.Time `json:"leaseUntil,omitzero"`
}

// The states of a webhook event.
const (
	WebhookPending   = "pending"   // to deliver (or being delivered under a lease)
	WebhookDelivered = "delivered" // the receiver answered 2xx
	WebhookFailed    = "failed"    // given up: retried until its deadline without a 2xx
	WebhookSkipped   = "skipped"   // no longer true when due (an expiring record renewed, say): not sent
)

// WebhookOutbox is the webhooks' persisted outbox and their small state. Both stores implement it (as an
// interface apart from Store, so that a Store without webhooks stays whole); storetest checks it. Every
// write returns once durable.
type WebhookOutbox interface {
	// EnqueueWebhookEvents stores each event whose ID is not stored yet, as pending, with a new Seq
	// (in the order given), and returns how many it stored. Only ID, Hook, RecordID, Type, CreatedAt,
	// DueAt, NextAt and Body are read from the events.
	EnqueueWebhookEvents(ctx context.Context, evs []*WebhookEvent) (int, error)
	// ClaimWebhookEvents leases to owner, until now+lease, up to limit pending events of the hooks given
	// that are deliverable at now: for each (Hook, RecordID), only the one of least Seq among its pending
	// events due at now, when its NextAt has come and no other owner's lease holds it. A claimed event is
	// not claimed again, on any node, until its lease ends.
	ClaimWebhookEvents(ctx context.Context, hooks []string, owner string, now time.Time, lease time.Duration, limit int) ([]*WebhookEvent, error)
	// FinishWebhookAttempt stores the outcome of an attempt on an event owner holds: its State, Attempts,
	// LastStatus, LastError, NextAt and UpdatedAt, and ends the lease. ErrNotFound when the event is gone
	// or owner's lease on it has ended (another owner may hold it now): nothing is stored.
	FinishWebhookAttempt(ctx context.Context, ev *WebhookEvent, owner string) error
	// RecentWebhookEvents returns up to limit events, the latest UpdatedAt first (the delivery log).
	RecentWebhookEvents(ctx context.Context, limit int) ([]*WebhookEvent, error)
	// PendingWebhookEvents counts the pending events due at now (an expiring event waiting for its day is
	// not counted).
	PendingWebhookEvents(ctx context.Context, now time.Time) (int, error)
	// PruneWebhookEvents deletes the events delivered, given up or skipped whose UpdatedAt is before
	// before, and the pending ones whose DueAt is before before (never delivered: their webhook is gone
	// from the configuration), and returns how many.
	PruneWebhookEvents(ctx context.Context, before time.Time) (int, error)
	// WebhookState reads a value the webhooks keep (the change feed's position, a record's last status):
	// "" when none is stored.
	WebhookState(ctx context.Context, key string) (string, error)
	// SetWebhookState stores value under key ("" deletes it).
	SetWebhookState(ctx context.Context, key, value string) error
}
