package pgstore

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/directaid/directaid/backend/store"
)

var _ store.Moderation = (*Store)(nil)

// call runs fn with the store's timeout once the schema is ready, marking an unreachable server's errors.
func (s *Store) call(ctx context.Context, fn func(ctx context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, s.Timeout)
	defer cancel()
	if err := s.ready(ctx); err != nil {
		return fail(err)
	}
	return fail(fn(ctx))
}

// AddReport implements store.Moderation.
func (s *Store) AddReport(ctx context.Context, r store.Report) (int, error) {
	if r.At.IsZero() {
		r.At = time.Now().UTC()
	}
	var n int
	err := s.call(ctx, func(ctx context.Context) error {
		return pgx.BeginFunc(ctx, s.db.Pool, func(tx pgx.Tx) error {
			var one int
			err := tx.QueryRow(ctx, `SELECT 1 FROM directaid_records WHERE id = $1 FOR UPDATE`, r.RecordID).Scan(&one)
			if errors.Is(err, pgx.ErrNoRows) {
				return store.ErrNotFound
			}
			if err != nil {
				return err
			}
			_, err = tx.Exec(ctx, `INSERT INTO directaid_reports (record_id, reporter, reason, note, at, reviewed)
				VALUES ($1, $2, $3, $4, $5, false)
				ON CONFLICT (record_id, reporter) DO UPDATE SET reason = $3, note = $4, at = $5`,
				r.RecordID, r.Reporter, r.Reason, r.Note, r.At)
			if err != nil {
				return err
			}
			return tx.QueryRow(ctx, `SELECT count(*) FROM directaid_reports WHERE record_id = $1 AND NOT reviewed`, r.RecordID).Scan(&n)
		})
	})
	return n, err
}

// Reports implements store.Moderation.
func (s *Store) Reports(ctx context.Context, id string) ([]store.Report, error) {
	var out []store.Report
	err := s.call(ctx, func(ctx context.Context) error {
		rows, err := s.db.Pool.Query(ctx, `SELECT record_id, reporter, reason, note, at, reviewed FROM directaid_reports
			WHERE record_id = $1 ORDER BY at, reporter`, id)
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.Report, error) {
			var r store.Report
			err := row.Scan(&r.RecordID, &r.Reporter, &r.Reason, &r.Note, &r.At, &r.Reviewed)
			r.At = r.At.UTC()
			return r, err
		})
		return err
	})
	return out, err
}

// Reported implements store.Moderation.
func (s *Store) Reported(ctx context.Context) ([]string, error) {
	var out []string
	err := s.call(ctx, func(ctx context.Context) error {
		rows, err := s.db.Pool.Query(ctx, `SELECT DISTINCT record_id FROM directaid_reports WHERE NOT reviewed ORDER BY record_id`)
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, pgx.RowTo[string])
		return err
	})
	return out, err
}

// Disown implements store.Moderation.
func (s *Store) Disown(ctx context.Context, d store.Disowning) error {
	if d.At.IsZero() {
		d.At = time.Now().UTC()
	}
	return s.call(ctx, func(ctx context.Context) error {
		_, err := s.db.Pool.Exec(ctx, `INSERT INTO directaid_disowned (key, record_id, reporter, publisher, at) VALUES ($1, $2, $3, $4, $5)
			ON CONFLICT (key, record_id) DO UPDATE SET reporter = $3, publisher = $4, at = $5`, d.Key, d.RecordID, d.Reporter, d.Publisher, d.At)
		return err
	})
}

// Disowned implements store.Moderation.
func (s *Store) Disowned(ctx context.Context, key, publisher string, since time.Time) (bool, error) {
	var found bool
	err := s.call(ctx, func(ctx context.Context) error {
		return s.db.Pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM directaid_disowned WHERE key = $1 AND publisher IN ($2, '') AND at > $3)`,
			key, publisher, since).Scan(&found)
	})
	return found, err
}

// Reclaim implements store.Moderation.
func (s *Store) Reclaim(ctx context.Context, key, id, reporter string) error {
	if key == "" && id == "" {
		return errors.New("reclaim: neither a key nor a record")
	}
	return s.call(ctx, func(ctx context.Context) error {
		_, err := s.db.Pool.Exec(ctx, `DELETE FROM directaid_disowned WHERE ($1 = '' OR key = $1) AND ($2 = '' OR record_id = $2)
			AND ($3 = '' OR reporter = $3)`, key, id, reporter)
		return err
	})
}

// ReviewReports implements store.Moderation.
func (s *Store) ReviewReports(ctx context.Context, id, reporter string, dropNotes bool) error {
	return s.call(ctx, func(ctx context.Context) error {
		_, err := s.db.Pool.Exec(ctx, `UPDATE directaid_reports SET reviewed = true,
			note = CASE WHEN $2 THEN '' ELSE note END WHERE record_id = $1 AND ($3 = '' OR reporter = $3)`, id, dropNotes, reporter)
		return err
	})
}

// AppendAudit implements store.Moderation.
func (s *Store) AppendAudit(ctx context.Context, e store.AuditEntry) error {
	if e.At.IsZero() {
		e.At = time.Now().UTC()
	}
	e.Seq = 0
	doc, err := json.Marshal(e)
	if err != nil {
		return err
	}
	return s.call(ctx, func(ctx context.Context) error {
		_, err := s.db.Pool.Exec(ctx, `INSERT INTO directaid_audit (doc) VALUES ($1)`, doc)
		return err
	})
}

// Audit implements store.Moderation.
func (s *Store) Audit(ctx context.Context, after int64, limit int) ([]store.AuditEntry, error) {
	var out []store.AuditEntry
	err := s.call(ctx, func(ctx context.Context) error {
		rows, err := s.db.Pool.Query(ctx, `SELECT seq, doc FROM directaid_audit WHERE seq > $1 ORDER BY seq LIMIT $2`, after, limit)
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.AuditEntry, error) {
			var e store.AuditEntry
			var seq int64
			var doc []byte
			if err := row.Scan(&seq, &doc); err != nil {
				return e, err
			}
			err := json.Unmarshal(doc, &e)
			e.Seq = seq
			return e, err
		})
		return err
	})
	return out, err
}

// Probe implements store.Store: an upsert of the one row of directaid_probe (migration 0021), committed
// like a publication (synchronous_commit on), so that it fails whenever a publication would: the server
// is unreachable, read-only (a standby after a failover) or out of disk, or the schema is not migrated yet.
func (s *Store) Probe(ctx context.Context) error {
	probe := func(ctx context.Context) error {
		_, err := s.db.Pool.Exec(ctx, `INSERT INTO directaid_probe (at) VALUES (clock_timestamp())
			ON CONFLICT (one) DO UPDATE SET at = EXCLUDED.at`)
		return err
	}
	err := s.call(ctx, probe)
	if errors.Is(err, store.ErrUnreachable) && ctx.Err() == nil {
		// A pooled connection that a restart of the server closed fails once (pgx then drops it); the
		// upsert is idempotent, so a second try on a live connection tells whether the server is back.
		err = s.call(ctx, probe)
	}
	return err
}

// Secret implements store.Moderation: the first node to ask makes it, every other reads that one.
func (s *Store) Secret(ctx context.Context, name string) ([]byte, error) {
	fresh := make([]byte, 32)
	_, _ = rand.Read(fresh)
	var out []byte
	err := s.call(ctx, func(ctx context.Context) error {
		if _, err := s.db.Pool.Exec(ctx, `INSERT INTO directaid_secrets (name, value) VALUES ($1, $2) ON CONFLICT DO NOTHING`, name, fresh); err != nil {
			return err
		}
		return s.db.Pool.QueryRow(ctx, `SELECT value FROM directaid_secrets WHERE name = $1`, name).Scan(&out)
	})
	return out, err
}
