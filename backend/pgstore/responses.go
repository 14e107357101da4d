package pgstore

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/directaid/directaid/backend/store"
	"github.com/directaid/directaid/schema"
)

var _ store.Responses = (*Store)(nil)

// CreateResponse implements store.Responses: in one transaction with the record's row locked (FOR
// SHARE), so that a response never outlives a record erased meanwhile.
func (s *Store) CreateResponse(ctx context.Context, r *store.Response) error {
	doc, err := json.Marshal(r)
	if err != nil {
		return err
	}
	return s.call(ctx, func(ctx context.Context) error {
		return pgx.BeginFunc(ctx, s.db.Pool, func(tx pgx.Tx) error {
			// The record's row locked FOR UPDATE: its responses are created one at a time, so that the count
			// below cannot change before this one commits.
			var one int
			err := tx.QueryRow(ctx, `SELECT 1 FROM directaid_records WHERE id = $1 FOR UPDATE`, r.RecordID).Scan(&one)
			if errors.Is(err, pgx.ErrNoRows) {
				return store.ErrNotFound
			}
			if err != nil {
				return err
			}
			var n int
			var taken bool
			if err := tx.QueryRow(ctx, `SELECT count(*), coalesce(bool_or(id = $2), false) FROM directaid_responses WHERE record_id = $1`,
				r.RecordID, r.ID).Scan(&n, &taken); err != nil {
				return err
			}
			switch {
			case taken:
				return store.ErrResponseExists
			case n >= store.MaxResponsesPerRecord:
				return store.ErrTooManyResponses
			}
			tag, err := tx.Exec(ctx, `INSERT INTO directaid_responses (record_id, id, created_at, status, expires_at, counted, doc)
				VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT DO NOTHING`, r.RecordID, r.ID, r.CreatedAt, r.Status, r.ExpiresAt, !r.Uncounted, doc)
			if err == nil && tag.RowsAffected() == 0 {
				err = store.ErrResponseExists
			}
			return err
		})
	})
}

func decodeResponse(doc []byte) (*store.Response, error) {
	r := new(store.Response)
	if err := json.Unmarshal(doc, r); err != nil {
		return nil, err
	}
	r.CreatedAt, r.UpdatedAt, r.ExpiresAt = r.CreatedAt.UTC(), r.UpdatedAt.UTC(), r.ExpiresAt.UTC()
	return r, nil
}

// UpdateResponse implements store.Responses: the row is locked while fn runs.
func (s *Store) UpdateResponse(ctx context.Context, recordID, id string, fn func(*store.Response) error) (*store.Response, error) {
	var out *store.Response
	err := s.call(ctx, func(ctx context.Context) error {
		return pgx.BeginFunc(ctx, s.db.Pool, func(tx pgx.Tx) error {
			var doc []byte
			err := tx.QueryRow(ctx, `SELECT doc FROM directaid_responses WHERE record_id = $1 AND id = $2 FOR UPDATE`, recordID, id).Scan(&doc)
			if errors.Is(err, pgx.ErrNoRows) {
				return store.ErrNotFound
			}
			if err != nil {
				return err
			}
			r, err := decodeResponse(doc)
			if err != nil {
				return err
			}
			if err := fn(r); err != nil {
				return err
			}
			r.RecordID, r.ID = recordID, id
			if doc, err = json.Marshal(r); err != nil {
				return err
			}
			_, err = tx.Exec(ctx, `UPDATE directaid_responses SET status = $3, expires_at = $4, counted = $5, doc = $6 WHERE record_id = $1 AND id = $2`,
				recordID, id, r.Status, r.ExpiresAt, !r.Uncounted, doc)
			out = r
			return err
		})
	})
	return out, err
}

// RecordResponses implements store.Responses.
func (s *Store) RecordResponses(ctx context.Context, recordID string) ([]*store.Response, error) {
	return s.queryResponses(ctx, `SELECT doc FROM directaid_responses WHERE record_id = $1 ORDER BY created_at DESC, id DESC`, recordID)
}

// queryResponses runs a query of response documents and decodes them.
func (s *Store) queryResponses(ctx context.Context, sql string, args ...any) ([]*store.Response, error) {
	var out []*store.Response
	err := s.call(ctx, func(ctx context.Context) error {
		rows, err := s.db.Pool.Query(ctx, sql, args...)
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (*store.Response, error) {
			var doc []byte
			if err := row.Scan(&doc); err != nil {
				return nil, err
			}
			return decodeResponse(doc)
		})
		return err
	})
	return out, err
}

// ResponseCounts implements store.Responses: one statement for the whole page of ids.
func (s *Store) ResponseCounts(ctx context.Context, ids []string, at time.Time) (map[string]int, error) {
	counts := map[string]int{}
	if len(ids) == 0 {
		return counts, nil
	}
	err := s.call(ctx, func(ctx context.Context) error {
		rows, err := s.db.Pool.Query(ctx, `SELECT record_id, count(*) FROM directaid_responses
			WHERE record_id = ANY($1) AND status = $2 AND expires_at > $3 AND counted GROUP BY record_id`, ids, store.ResponseActive, at)
		if err != nil {
			return err
		}
		var id string
		var n int
		_, err = pgx.ForEachRow(rows, []any{&id, &n}, func() error { counts[id] = n; return nil })
		return err
	})
	return counts, err
}

// HiddenResponses implements store.Responses.
func (s *Store) HiddenResponses(ctx context.Context) ([]*store.Response, error) {
	return s.queryResponses(ctx, `SELECT doc FROM directaid_responses WHERE status = $1 ORDER BY record_id, id`, schema.ResponseHidden)
}

// DeleteResponses implements store.Responses.
func (s *Store) DeleteResponses(ctx context.Context, recordID string) error {
	return s.call(ctx, func(ctx context.Context) error {
		_, err := s.db.Pool.Exec(ctx, `DELETE FROM directaid_responses WHERE record_id = $1`, recordID)
		return err
	})
}

// ScanResponses implements store.Transfer, from one snapshot.
func (s *Store) ScanResponses(ctx context.Context, fn func(*store.Response) error) error {
	var doc []byte
	return s.scanSnapshot(ctx, `SELECT doc FROM directaid_responses ORDER BY record_id, id`, []any{&doc}, func() error {
		r, err := decodeResponse(doc)
		if err != nil {
			return err
		}
		return fn(r)
	})
}

// ImportResponses implements store.Transfer, in one transaction; each response's record is locked (FOR
// SHARE) as by CreateResponse.
func (s *Store) ImportResponses(ctx context.Context, rs []*store.Response) (store.ImportResult, error) {
	var res store.ImportResult
	if err := s.ready(ctx); err != nil {
		return res, fail(err)
	}
	err := pgx.BeginFunc(ctx, s.db.Pool, func(tx pgx.Tx) error {
		res = store.ImportResult{}
		for _, r := range rs {
			var one int
			err := tx.QueryRow(ctx, `SELECT 1 FROM directaid_records WHERE id = $1 FOR SHARE`, r.RecordID).Scan(&one)
			if errors.Is(err, pgx.ErrNoRows) {
				res.Conflicts = append(res.Conflicts, r.RecordID)
				continue
			}
			if err != nil {
				return err
			}
			doc, err := json.Marshal(r)
			if err != nil {
				return err
			}
			tag, err := tx.Exec(ctx, `INSERT INTO directaid_responses (record_id, id, created_at, status, expires_at, counted, doc)
				VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT DO NOTHING`, r.RecordID, r.ID, r.CreatedAt, r.Status, r.ExpiresAt, !r.Uncounted, doc)
			if err != nil {
				return err
			}
			if tag.RowsAffected() == 1 {
				res.Created++
				continue
			}
			var stored []byte
			if err := tx.QueryRow(ctx, `SELECT doc FROM directaid_responses WHERE record_id = $1 AND id = $2`, r.RecordID, r.ID).Scan(&stored); err != nil {
				return err
			}
			old, err := decodeResponse(stored)
			if err != nil {
				return err
			}
			if store.SameResponse(old, r) {
				res.Present++
			} else {
				res.Conflicts = append(res.Conflicts, r.RecordID)
			}
		}
		return nil
	})
	return res, fail(err)
}
