package pgstore

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/directaid/directaid/backend/store"
)

// ImportResult counts what Import did with a batch of records: a conflict's id or (source, externalId)
// is stored with other content.
type ImportResult = store.ImportResult

// Import stores records exactly as given (id, createdAt and every field), in one transaction, for
// `directaid migrate`. It can be run again over the same records: what is already stored identically is
// counted as present, and what differs is reported as a conflict and never overwritten.
func (s *Store) Import(ctx context.Context, recs []*store.Record) (ImportResult, error) {
	var res ImportResult
	if err := s.ready(ctx); err != nil {
		return res, fail(err)
	}
	err := pgx.BeginFunc(ctx, s.db.Pool, func(tx pgx.Tx) error {
		res = ImportResult{}
		// Writers of the change feed hold its lock shared (see feedLock); so does an import.
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock_shared($1)`, feedLock); err != nil {
			return err
		}
		batch := &pgx.Batch{}
		for _, rec := range recs {
			args, err := importRow(rec)
			if err != nil {
				return err
			}
			// No conflict target: a record whose id or pair is taken is not inserted either way.
			batch.Queue(`WITH ins AS (INSERT INTO directaid_records (id, source, external_id, created_at, emergency_slug, type,
				category, urgency, needed_people, loc, search_text, doc, status, expires_at, updated_ms, municipio_code)
				VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10::point, $11, $12, $13, $14, $15, $16)
				ON CONFLICT DO NOTHING RETURNING id),
				p AS (INSERT INTO directaid_personal (id, doc) SELECT id, $17 FROM ins WHERE $17::bytea IS NOT NULL)
				SELECT id FROM ins`, args...)
		}
		br := tx.SendBatch(ctx, batch)
		var taken []*store.Record
		words := map[wordKey]int64{}
		for _, rec := range recs {
			var id string
			err := br.QueryRow().Scan(&id)
			switch {
			case err == nil:
				res.Created++
				stored := *rec
				stored.Normalize()
				addWordDelta(words, &stored, 1)
			case errors.Is(err, pgx.ErrNoRows):
				taken = append(taken, rec)
			default:
				_ = br.Close()
				return fmt.Errorf("record %s: %w", rec.ID, err)
			}
		}
		if err := br.Close(); err != nil {
			return err
		}
		if err := addWords(ctx, tx, words, bulkShard); err != nil {
			return err
		}
		for _, rec := range taken {
			same, err := storedSame(ctx, tx, rec)
			if err != nil {
				return err
			}
			if same {
				res.Present++
			} else {
				res.Conflicts = append(res.Conflicts, rec.ID)
			}
		}
		return nil
	})
	return res, fail(err)
}

// importRow is the row of rec as it is: its status, and its updatedAt as the change feed's stamp, are
// kept (a record stored before statuses existed reads as open, updated when created).
func importRow(rec *store.Record) ([]any, error) {
	stored := *rec
	stored.Normalize()
	ms := stored.UpdatedAt.UnixMilli()
	stored.UpdatedAt = time.Time{}     // updated_ms is the authority (decode)
	pdoc, err := takePersonal(&stored) // in directaid_personal (0010)
	if err != nil {
		return nil, err
	}
	doc, err := json.Marshal(&stored)
	if err != nil {
		return nil, err
	}
	needed, loc, expires, search := columns(&stored)
	return []any{rec.ID, []byte(rec.Source), []byte(rec.ExternalID), rec.CreatedAt, rec.EmergencySlug, rec.Type, rec.Category,
		rec.Urgency, needed, loc, search, doc, stored.Status, expires, ms, rec.MunicipioCode, pdoc}, nil
}

// storedSame reports whether rec is stored under its id and pair with the same content.
func storedSame(ctx context.Context, tx pgx.Tx, rec *store.Record) (bool, error) {
	rows, err := tx.Query(ctx, `SELECT `+recordCols+` FROM directaid_records WHERE id = $1 OR (source = $2 AND external_id = $3)`,
		rec.ID, []byte(rec.Source), []byte(rec.ExternalID))
	if err != nil {
		return false, err
	}
	type row struct {
		Doc  []byte
		Ms   int64
		Pdoc []byte
	}
	found, err := pgx.CollectRows(rows, pgx.RowToStructByPos[row])
	if err != nil || len(found) != 1 {
		return false, err
	}
	stored, err := decode(found[0].Doc, found[0].Ms, found[0].Pdoc)
	if err != nil {
		return false, err
	}
	want := *rec
	want.Normalize()
	a, err1 := json.Marshal(stored)
	b, err2 := json.Marshal(&want)
	return stored.ID == rec.ID && bytes.Equal(a, b), errors.Join(err1, err2)
}

var _ store.Scanner = (*Store)(nil)

// Scan implements store.Scanner, in id order, from one snapshot.
func (s *Store) Scan(ctx context.Context, fn func(*store.Record) error) error {
	var doc, pdoc []byte
	var ms int64
	// A merge join of the two tables in id order, rather than recordCols' lookup per record.
	return s.scanSnapshot(ctx, `SELECT r.doc, r.updated_ms, p.doc FROM directaid_records r LEFT JOIN directaid_personal p USING (id) ORDER BY id`,
		[]any{&doc, &ms, &pdoc}, func() error {
			rec, err := decode(doc, ms, pdoc)
			if err != nil {
				return err
			}
			return fn(rec)
		})
}

// scanSnapshot runs query in one read-only snapshot, scanning each row into dest before calling each.
func (s *Store) scanSnapshot(ctx context.Context, query string, dest []any, each func() error) error {
	if err := s.ready(ctx); err != nil {
		return fail(err)
	}
	tx, err := s.db.Pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return fail(err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	rows, err := tx.Query(ctx, query)
	if err != nil {
		return fail(err)
	}
	_, err = pgx.ForEachRow(rows, dest, each)
	return fail(err)
}

// Count is the number of records stored.
func (s *Store) Count(ctx context.Context) (int, error) {
	if err := s.ready(ctx); err != nil {
		return 0, fail(err)
	}
	var n int
	err := s.db.Pool.QueryRow(ctx, `SELECT count(*) FROM directaid_records`).Scan(&n)
	return n, fail(err)
}
