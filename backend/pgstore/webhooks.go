package pgstore

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/directaid/directaid/backend/store"
)

var _ store.WebhookOutbox = (*Store)(nil)

// EnqueueWebhookEvents implements store.WebhookOutbox: one INSERT … ON CONFLICT DO NOTHING per event, in
// order, in one transaction. A second node inserting the same event waits for the first one's transaction
// and then inserts nothing, so that a record's events get their seq in the order every node derives them.
func (s *Store) EnqueueWebhookEvents(ctx context.Context, evs []*store.WebhookEvent) (int, error) {
	n := 0
	err := s.call(ctx, func(ctx context.Context) error {
		n = 0
		return pgx.BeginFunc(ctx, s.db.Pool, func(tx pgx.Tx) error {
			for _, e := range evs {
				tag, err := tx.Exec(ctx, `INSERT INTO directaid_webhook_events (id, hook, record_id, type, created_at, due_at, next_at, body, state, updated_at)
					VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 'pending', $5) ON CONFLICT (id) DO NOTHING`,
					e.ID, e.Hook, e.RecordID, e.Type, e.CreatedAt, e.DueAt, e.NextAt, e.Body)
				if err != nil {
					return err
				}
				n += int(tag.RowsAffected())
			}
			return nil
		})
	})
	return n, err
}

const webhookColumns = `e.id, e.seq, e.hook, e.record_id, e.type, e.created_at, e.due_at, e.next_at, e.body, e.state, e.attempts,
	e.last_status, e.last_error, e.updated_at, e.lease_owner, e.lease_until`

func scanWebhookEvents(rows pgx.Rows) ([]*store.WebhookEvent, error) {
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (*store.WebhookEvent, error) {
		ev := new(store.WebhookEvent)
		var until *time.Time
		err := row.Scan(&ev.ID, &ev.Seq, &ev.Hook, &ev.RecordID, &ev.Type, &ev.CreatedAt, &ev.DueAt, &ev.NextAt, &ev.Body, &ev.State,
			&ev.Attempts, &ev.LastStatus, &ev.LastError, &ev.UpdatedAt, &ev.LeaseOwner, &until)
		ev.CreatedAt, ev.DueAt, ev.NextAt, ev.UpdatedAt = ev.CreatedAt.UTC(), ev.DueAt.UTC(), ev.NextAt.UTC(), ev.UpdatedAt.UTC()
		if until != nil {
			ev.LeaseUntil = until.UTC()
		}
		return ev, err
	})
}

// ClaimWebhookEvents implements store.WebhookOutbox. The head of each (hook, record) is read from the
// statement's snapshot; the rows picked are locked FOR UPDATE SKIP LOCKED, and a row that another node
// leased or finished meanwhile fails the recheck of its state and lease, so that no two nodes hold one
// event and a record's next event waits for the one before it.
func (s *Store) ClaimWebhookEvents(ctx context.Context, hooks []string, owner string, now time.Time, lease time.Duration, limit int) ([]*store.WebhookEvent, error) {
	var out []*store.WebhookEvent
	err := s.call(ctx, func(ctx context.Context) error {
		rows, err := s.db.Pool.Query(ctx, `WITH heads AS (
				SELECT DISTINCT ON (hook, record_id) id FROM directaid_webhook_events
				WHERE state = 'pending' AND due_at <= $2 AND hook = ANY($1)
				ORDER BY hook, record_id, seq
			), picked AS (
				SELECT e.id FROM directaid_webhook_events e JOIN heads h ON h.id = e.id
				WHERE e.state = 'pending' AND e.next_at <= $2 AND (e.lease_until IS NULL OR e.lease_until <= $2)
				ORDER BY e.next_at, e.seq LIMIT $5
				FOR UPDATE OF e SKIP LOCKED
			)
			UPDATE directaid_webhook_events e SET lease_owner = $3, lease_until = $4 FROM picked WHERE e.id = picked.id
			RETURNING `+webhookColumns, hooks, now, owner, now.Add(lease), limit)
		if err != nil {
			return err
		}
		out, err = scanWebhookEvents(rows)
		return err
	})
	return out, err
}

// FinishWebhookAttempt implements store.WebhookOutbox.
func (s *Store) FinishWebhookAttempt(ctx context.Context, ev *store.WebhookEvent, owner string) error {
	return s.call(ctx, func(ctx context.Context) error {
		tag, err := s.db.Pool.Exec(ctx, `UPDATE directaid_webhook_events SET state = $3, attempts = $4, last_status = $5, last_error = $6,
				next_at = $7, updated_at = $8, lease_owner = '', lease_until = NULL
			WHERE id = $1 AND lease_owner = $2 AND state = 'pending'`,
			ev.ID, owner, ev.State, ev.Attempts, ev.LastStatus, ev.LastError, ev.NextAt, ev.UpdatedAt)
		if err == nil && tag.RowsAffected() == 0 {
			err = store.ErrNotFound
		}
		return err
	})
}

// RecentWebhookEvents implements store.WebhookOutbox.
func (s *Store) RecentWebhookEvents(ctx context.Context, limit int) ([]*store.WebhookEvent, error) {
	var out []*store.WebhookEvent
	err := s.call(ctx, func(ctx context.Context) error {
		rows, err := s.db.Pool.Query(ctx, `SELECT `+webhookColumns+` FROM directaid_webhook_events e ORDER BY e.updated_at DESC, e.id DESC LIMIT $1`, limit)
		if err != nil {
			return err
		}
		out, err = scanWebhookEvents(rows)
		return err
	})
	return out, err
}

// PendingWebhookEvents implements store.WebhookOutbox.
func (s *Store) PendingWebhookEvents(ctx context.Context, now time.Time) (int, error) {
	n := 0
	err := s.call(ctx, func(ctx context.Context) error {
		return s.db.Pool.QueryRow(ctx, `SELECT count(*) FROM directaid_webhook_events WHERE state = 'pending' AND due_at <= $1`, now).Scan(&n)
	})
	return n, err
}

// PruneWebhookEvents implements store.WebhookOutbox.
func (s *Store) PruneWebhookEvents(ctx context.Context, before time.Time) (int, error) {
	n := 0
	err := s.call(ctx, func(ctx context.Context) error {
		tag, err := s.db.Pool.Exec(ctx, `DELETE FROM directaid_webhook_events
			WHERE (state = 'pending' AND due_at < $1) OR (state <> 'pending' AND updated_at < $1)`, before)
		n = int(tag.RowsAffected())
		return err
	})
	return n, err
}

// WebhookState implements store.WebhookOutbox.
func (s *Store) WebhookState(ctx context.Context, key string) (string, error) {
	v := ""
	err := s.call(ctx, func(ctx context.Context) error {
		err := s.db.Pool.QueryRow(ctx, `SELECT value FROM directaid_webhook_state WHERE key = $1`, key).Scan(&v)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		return err
	})
	return v, err
}

// SetWebhookState implements store.WebhookOutbox.
func (s *Store) SetWebhookState(ctx context.Context, key, value string) error {
	return s.call(ctx, func(ctx context.Context) error {
		var err error
		if value == "" {
			_, err = s.db.Pool.Exec(ctx, `DELETE FROM directaid_webhook_state WHERE key = $1`, key)
		} else {
			_, err = s.db.Pool.Exec(ctx, `INSERT INTO directaid_webhook_state (key, value) VALUES ($1, $2)
				ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value`, key, value)
		}
		return err
	})
}
