package pgstore

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/directaid/directaid/backend/store"
)

var _ store.Transfer = (*Store)(nil)

// Secrets implements store.Transfer.
func (s *Store) Secrets(ctx context.Context) (map[string][]byte, error) {
	out := map[string][]byte{}
	err := s.call(ctx, func(ctx context.Context) error {
		rows, err := s.db.Pool.Query(ctx, `SELECT name, value FROM directaid_secrets`)
		if err != nil {
			return err
		}
		var name string
		var value []byte
		_, err = pgx.ForEachRow(rows, []any{&name, &value}, func() error {
			out[name] = append([]byte(nil), value...)
			return nil
		})
		return err
	})
	return out, err
}

// PutSecret implements store.Transfer.
func (s *Store) PutSecret(ctx context.Context, name string, value []byte, replace bool) ([]byte, error) {
	var out []byte
	err := s.call(ctx, func(ctx context.Context) error {
		// The SELECT does not see a row that another writer committed during the statement: ask again.
		for {
			err := s.db.Pool.QueryRow(ctx, `WITH put AS (
				INSERT INTO directaid_secrets (name, value) VALUES ($1, $2)
				ON CONFLICT (name) DO UPDATE SET value = $2 WHERE $3
				RETURNING value)
			SELECT value FROM put UNION ALL SELECT value FROM directaid_secrets WHERE name = $1 AND NOT EXISTS (SELECT 1 FROM put)`,
				name, value, replace).Scan(&out)
			if !errors.Is(err, pgx.ErrNoRows) {
				return err
			}
		}
	})
	return out, err
}

// ScanReports implements store.Transfer, from one snapshot.
func (s *Store) ScanReports(ctx context.Context, fn func(store.Report) error) error {
	var r store.Report
	return s.scanSnapshot(ctx, `SELECT record_id, reporter, reason, note, at, reviewed FROM directaid_reports ORDER BY record_id, reporter COLLATE "C"`,
		[]any{&r.RecordID, &r.Reporter, &r.Reason, &r.Note, &r.At, &r.Reviewed}, func() error {
			r.At = r.At.UTC()
			return fn(r)
		})
}

// ScanDisownings implements store.Transfer, from one snapshot.
func (s *Store) ScanDisownings(ctx context.Context, fn func(store.Disowning) error) error {
	var d store.Disowning
	return s.scanSnapshot(ctx, `SELECT key, record_id, reporter, publisher, at FROM directaid_disowned ORDER BY key, record_id COLLATE "C"`,
		[]any{&d.Key, &d.RecordID, &d.Reporter, &d.Publisher, &d.At}, func() error {
			d.At = d.At.UTC()
			return fn(d)
		})
}

// ImportDisownings implements store.Transfer, in one transaction.
func (s *Store) ImportDisownings(ctx context.Context, ds []store.Disowning) (store.ImportResult, error) {
	var res store.ImportResult
	err := s.call(ctx, func(ctx context.Context) error {
		return pgx.BeginFunc(ctx, s.db.Pool, func(tx pgx.Tx) error {
			res = store.ImportResult{}
			batch := &pgx.Batch{}
			for _, d := range ds {
				batch.Queue(`INSERT INTO directaid_disowned (key, record_id, reporter, publisher, at) VALUES ($1, $2, $3, $4, $5)
					ON CONFLICT (key, record_id) DO NOTHING`, d.Key, d.RecordID, d.Reporter, d.Publisher, d.At)
			}
			br := tx.SendBatch(ctx, batch)
			for range ds {
				tag, err := br.Exec()
				if err != nil {
					_ = br.Close()
					return err
				}
				if tag.RowsAffected() == 1 {
					res.Created++
				} else {
					res.Present++
				}
			}
			return br.Close()
		})
	})
	return res, err
}

// ImportReports implements store.Transfer, in one transaction. Times are compared as stored
// (timestamptz keeps microseconds).
func (s *Store) ImportReports(ctx context.Context, reps []store.Report) (store.ImportResult, error) {
	var res store.ImportResult
	err := s.call(ctx, func(ctx context.Context) error {
		return pgx.BeginFunc(ctx, s.db.Pool, func(tx pgx.Tx) error {
			res = store.ImportResult{}
			batch := &pgx.Batch{}
			for _, r := range reps {
				// 'created' when inserted, 'same' or 'differs' when the reporter's report is there, none
				// when the record is missing.
				batch.Queue(`WITH rec AS (SELECT id FROM directaid_records WHERE id = $1),
					ins AS (INSERT INTO directaid_reports (record_id, reporter, reason, note, at, reviewed)
						SELECT id, $2, $3, $4, $5, $6 FROM rec ON CONFLICT (record_id, reporter) DO NOTHING RETURNING 1)
					SELECT 'created' FROM ins
					UNION ALL
					SELECT CASE WHEN reason = $3 AND note = $4 AND at = $5 AND reviewed = $6 THEN 'same' ELSE 'differs' END
						FROM directaid_reports WHERE record_id = $1 AND reporter = $2 AND NOT EXISTS (SELECT 1 FROM ins)`,
					r.RecordID, r.Reporter, r.Reason, r.Note, r.At, r.Reviewed)
			}
			br := tx.SendBatch(ctx, batch)
			for _, r := range reps {
				var what string
				err := br.QueryRow().Scan(&what)
				switch {
				case errors.Is(err, pgx.ErrNoRows) || what == "differs":
					res.Conflicts = append(res.Conflicts, r.RecordID)
				case err != nil:
					_ = br.Close()
					return err
				case what == "created":
					res.Created++
				default:
					res.Present++
				}
			}
			return br.Close()
		})
	})
	return res, err
}

// ImportAudit implements store.Transfer, in one transaction that keeps other writers of the trail out
// (their bigserial must not hand out a Seq given here).
func (s *Store) ImportAudit(ctx context.Context, entries []store.AuditEntry) (int, error) {
	added := 0
	err := s.call(ctx, func(ctx context.Context) error {
		return pgx.BeginFunc(ctx, s.db.Pool, func(tx pgx.Tx) error {
			added = 0
			if _, err := tx.Exec(ctx, `LOCK TABLE directaid_audit IN EXCLUSIVE MODE`); err != nil {
				return err
			}
			have := map[string]int{}
			var last int64
			rows, err := tx.Query(ctx, `SELECT seq, doc FROM directaid_audit ORDER BY seq`)
			if err != nil {
				return err
			}
			var seq int64
			var doc []byte
			if _, err := pgx.ForEachRow(rows, []any{&seq, &doc}, func() error {
				var e store.AuditEntry
				if err := json.Unmarshal(doc, &e); err != nil {
					return err
				}
				have[store.AuditKey(e)]++
				last = seq
				return nil
			}); err != nil {
				return err
			}
			batch := &pgx.Batch{}
			for _, e := range entries {
				if k := store.AuditKey(e); have[k] > 0 {
					have[k]--
					continue
				}
				seq := max(e.Seq, last+1)
				last = seq
				e.Seq = 0 // the column is the authority (Audit)
				e.At = e.At.UTC()
				doc, err := json.Marshal(e)
				if err != nil {
					return err
				}
				batch.Queue(`INSERT INTO directaid_audit (seq, doc) VALUES ($1, $2)`, seq, doc)
				added++
			}
			if added == 0 {
				return nil
			}
			// Later appends (bigserial) continue after the last seq given here.
			batch.Queue(`SELECT setval(pg_get_serial_sequence('directaid_audit', 'seq'), $1)`, last)
			return tx.SendBatch(ctx, batch).Close()
		})
	})
	return added, err
}
