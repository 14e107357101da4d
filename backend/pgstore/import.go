package pgstore

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/directaid/directaid/backend/store"
)

// ImportResult counts what Import did with a batch of records: a conflict's id or (source, externalId)
// is stored with other content.
type ImportResult = store.ImportResult

// Import stores records exactly as given (id, createdAt and every field), in one transaction, for
// `directaid migrate`. It can be run again over the same records: what is already stored identically is
// counted as present, and what differs is reported as a conflict and never overwritten. The records are
// written by one multi-row INSERT (its statement triggers keep the counters, 0009 and 0011, once per
// batch) that also adds their tokens to the word counters; the ones already there are then read back in one
// query.
func (s *Store) Import(ctx context.Context, recs []*store.Record) (ImportResult, error) {
	var res ImportResult
	if err := s.ready(ctx); err != nil {
		return res, fail(err)
	}
	var rr recordRows
	var tokIDs, toks []string
	for _, rec := range recs {
		stored := *rec
		stored.Normalize()
		ms := stored.UpdatedAt.UnixMilli() // the change feed's stamp is kept
		stored.UpdatedAt = time.Time{}     // updated_ms is the authority (decode)
		for _, tok := range store.TextTokens(store.SearchText(&stored)) {
			tokIDs, toks = append(tokIDs, rec.ID), append(toks, tok)
		}
		pdoc, err := takePersonal(&stored) // in directaid_personal (0010)
		if err != nil {
			return res, err
		}
		doc, err := json.Marshal(&stored)
		if err != nil {
			return res, err
		}
		rr.add(&stored, doc, pdoc, ms)
	}
	err := pgx.BeginFunc(ctx, s.db.Pool, func(tx pgx.Tx) error {
		res = ImportResult{}
		// Writers of the change feed hold its lock shared (see feedLock); so does an import.
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock_shared($1)`, feedLock); err != nil {
			return err
		}
		// No conflict target: a record whose id or pair is taken is not inserted either way. Imports add
		// to the word counters' bulkShard (see words.go).
		rows, err := tx.Query(ctx, `WITH `+insertRows("v.stamp", "", "id, status")+`,
			w AS (INSERT INTO directaid_words AS c (status, token, shard, n)
				SELECT ins.status, t.tok, `+bulkShard+`, count(*) FROM ins JOIN unnest($18::text[], $19::text[]) AS t(id, tok) ON t.id = ins.id
				GROUP BY 1, 2 ORDER BY ins.status COLLATE "C", t.tok
				ON CONFLICT (status, token, shard) DO UPDATE SET n = c.n + EXCLUDED.n)
			SELECT id FROM ins`, append(rr.args(), tokIDs, toks)...)
		if err != nil {
			return err
		}
		created := map[string]bool{}
		var id string
		if _, err := pgx.ForEachRow(rows, []any{&id}, func() error { created[id] = true; return nil }); err != nil {
			return err
		}
		var taken []*store.Record
		for _, rec := range recs {
			if created[rec.ID] {
				res.Created++
			} else {
				taken = append(taken, rec)
			}
		}
		same, err := storedSame(ctx, tx, taken)
		if err != nil {
			return err
		}
		for i, rec := range taken {
			if same[i] {
				res.Present++
			} else {
				res.Conflicts = append(res.Conflicts, rec.ID)
			}
		}
		return nil
	})
	return res, fail(err)
}

// storedSame reports, for each of recs, whether it is stored under its id and pair with the same
// content: the records stored under their ids or pairs are read in one query.
func storedSame(ctx context.Context, tx pgx.Tx, recs []*store.Record) ([]bool, error) {
	if len(recs) == 0 {
		return nil, nil
	}
	ids, srcs, exts := make([]string, len(recs)), make([][]byte, len(recs)), make([][]byte, len(recs))
	for i, rec := range recs {
		ids[i], srcs[i], exts[i] = rec.ID, []byte(rec.Source), []byte(rec.ExternalID)
	}
	rows, err := tx.Query(ctx, `SELECT id, source, external_id, `+recordCols+` FROM directaid_records WHERE id = ANY($1)
		UNION ALL SELECT id, source, external_id, `+recordCols+` FROM directaid_records
		WHERE (source, external_id) IN (SELECT * FROM unnest($2::bytea[], $3::bytea[]))`, ids, srcs, exts)
	if err != nil {
		return nil, err
	}
	byID := map[string]*store.Record{}
	byPair := map[pairKey]string{}
	var id string
	var src, ext, doc, pdoc []byte
	var ms int64
	if _, err := pgx.ForEachRow(rows, []any{&id, &src, &ext, &doc, &ms, &pdoc}, func() error {
		rec, err := decode(doc, ms, pdoc)
		byID[id], byPair[pairKey{string(src), string(ext)}] = rec, id
		return err
	}); err != nil {
		return nil, err
	}
	out := make([]bool, len(recs))
	for i, rec := range recs {
		stored := byID[rec.ID]
		// The same when one record holds both its id and its pair, with its content.
		if stored == nil || byPair[pairKey{rec.Source, rec.ExternalID}] != rec.ID {
			continue
		}
		want := *rec
		want.Normalize()
		a, err1 := json.Marshal(stored)
		b, err2 := json.Marshal(&want)
		if err := errors.Join(err1, err2); err != nil {
			return nil, err
		}
		out[i] = bytes.Equal(a, b)
	}
	return out, nil
}

var _ store.Transfer = (*Store)(nil)

// Scan implements store.Transfer, in id order, from one snapshot.
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

// VacuumAnalyze vacuums every table and refreshes the planner's statistics, for after a bulk Import. The
// statistics still describe the tables as they were: until autovacuum's analyze came, a radius list over
// 9,000 imported records took 21 ms instead of 5 (its edge cells' box scans planned for an empty table).
// And no page of the imported rows is marked all-visible until a vacuum: the index-only scans (the radius
// walk, the counters) visit the heap for each row meanwhile.
func (s *Store) VacuumAnalyze(ctx context.Context) error {
	if err := s.ready(ctx); err != nil {
		return fail(err)
	}
	_, err := s.db.Pool.Exec(ctx, `VACUUM (ANALYZE)`)
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
