package pgstore

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/directaid/directaid/backend/store"
	"github.com/directaid/directaid/backend/store/recordjson"
)

// Publications are written by group commit, as in the Badger store: the Creates waiting when a writer
// is free form one transaction of at most maxBatch records, written by one multi-row INSERT … ON CONFLICT
// DO NOTHING with its word counters summed per batch (and its count rows per statement, migration 0009),
// so that a batch costs one round trip, one commit and one WAL flush, and each counter row is updated
// once per batch instead of once per record. A Create returns once its batch has committed. A lone
// Create is a batch of one: no waiting for company.
const (
	maxBatch = 64
	// writers is the number of batches in flight: each its own connection (and so its own counter
	// shard), so that one batch's commit overlaps the next one's statement.
	writers = 2
)

// createReq is a Create waiting for its batch: the row is prepared by the caller's goroutine.
type createReq struct {
	ctx    context.Context
	stored store.Record // as it will be stored (status set, updatedAt from the row)
	doc    []byte
	pdoc   []byte // the personal text, in directaid_personal (0010); nil for none
	floor  int64  // the least updated_ms
	toks   []string
	done   chan createRes
}

type createRes struct {
	rec     *store.Record
	created bool
	err     error
}

// pairKey is the idempotency pair as a map key.
type pairKey struct{ source, externalID string }

func (r *createReq) pair() pairKey { return pairKey{r.stored.Source, r.stored.ExternalID} }

func (s *Store) create(ctx context.Context, rec *store.Record) (*store.Record, bool, error) {
	if err := s.ready(ctx); err != nil {
		return nil, false, err
	}
	r, err := s.newCreateReq(ctx, rec)
	if err != nil {
		return nil, false, err
	}
	s.startWriters.Do(func() {
		for range writers {
			go s.writer()
		}
	})
	select {
	case s.queue <- r:
	case <-ctx.Done():
		return nil, false, ctx.Err()
	case <-s.stop:
		return nil, false, store.ErrClosed
	}
	// Once queued, the batch decides (a record may be committed even if ctx ends meanwhile, as before
	// batching a commit could outlive a timeout): wait for it unless ctx ends first.
	select {
	case res := <-r.done:
		return res.rec, res.created, res.err
	case <-ctx.Done():
		return nil, false, ctx.Err()
	}
}

// newCreateReq prepares the row of rec in the caller's goroutine.
func (s *Store) newCreateReq(ctx context.Context, rec *store.Record) (*createReq, error) {
	r := &createReq{ctx: ctx, stored: *rec, done: make(chan createRes, 1)}
	if r.stored.Status == "" {
		r.stored.Status = store.StatusOpen
	}
	r.stored.UpdatedAt = time.Time{} // updated_ms is the authority (decode)
	pub := r.stored
	var err error
	if r.pdoc, err = takePersonal(&pub); err != nil {
		return nil, err
	}
	if r.doc, err = recordjson.Encode(&pub); err != nil {
		return nil, err
	}
	r.floor = max(s.Now().UnixMilli(), rec.CreatedAt.UnixMilli(), rec.UpdatedAt.UnixMilli())
	r.toks = store.TextTokens(store.SearchText(&r.stored))
	return r, nil
}

// writer commits batches of waiting Creates until the store closes.
func (s *Store) writer() {
	batch := make([]*createReq, 0, maxBatch)
	for {
		select {
		case <-s.stop:
			return
		case r := <-s.queue:
			batch = append(batch[:0], r)
		}
	fill:
		for len(batch) < maxBatch {
			select {
			case r := <-s.queue:
				batch = append(batch, r)
			default:
				break fill
			}
		}
		s.commit(batch)
	}
}

// commit writes batch and answers each of its Creates exactly: the first of a pair is created (or finds
// the stored record), any later Create of the same pair in the batch gets the same stored record, not
// created.
func (s *Store) commit(batch []*createReq) {
	ctx, cancel := context.WithTimeout(context.Background(), s.Timeout)
	defer cancel()
	var live, leads []*createReq
	firstOf := map[pairKey]*createReq{}
	for _, r := range batch {
		if err := r.ctx.Err(); err != nil { // its caller has gone: nothing to write
			r.done <- createRes{err: err}
			continue
		}
		live = append(live, r)
		if _, ok := firstOf[r.pair()]; !ok {
			firstOf[r.pair()] = r
			leads = append(leads, r)
		}
	}
	if len(leads) == 0 {
		return
	}
	began := time.Now()
	res, err := s.insertBatch(ctx, leads)
	if err == nil && s.Observer != nil {
		s.Observer.ObserveCommit(len(leads), time.Since(began))
	}
	if err != nil && len(leads) > 1 && !Unavailable(err) {
		// One bad record (or a deadlock with another node) must not fail the others: each alone.
		res, err = map[*createReq]createRes{}, nil
		for _, r := range leads {
			one, err := s.insertBatch(ctx, []*createReq{r})
			if err != nil {
				one = map[*createReq]createRes{r: {err: err}}
			}
			res[r] = one[r]
		}
	}
	for _, r := range live {
		got := res[firstOf[r.pair()]]
		switch {
		case err != nil:
			r.done <- createRes{err: err}
		case r == firstOf[r.pair()] || got.err != nil:
			r.done <- got
		default:
			r.done <- createRes{rec: copyRecord(got.rec)}
		}
	}
}

// copyRecord is a copy of rec that shares nothing a caller could change.
func copyRecord(rec *store.Record) *store.Record {
	b, err := json.Marshal(rec)
	if err != nil {
		c := *rec
		return &c
	}
	out := new(store.Record)
	if json.Unmarshal(b, out) != nil {
		c := *rec
		return &c
	}
	return out
}

// maxIDTries bounds how many ids a Create tries: an id source that keeps giving taken ids is a bug, and
// the Create fails rather than loop.
const maxIDTries = 64

// insertBatch inserts the records of reqs (distinct pairs), never over another record: a record whose id
// another holds (in the database or earlier in reqs) is inserted again with a fresh id from the id source.
func (s *Store) insertBatch(ctx context.Context, reqs []*createReq) (map[*createReq]createRes, error) {
	out := make(map[*createReq]createRes, len(reqs))
	for try := 0; len(reqs) > 0; try++ {
		if try == maxIDTries {
			for _, r := range reqs {
				out[r] = createRes{err: fmt.Errorf("pgstore: %d ids in a row were taken (last %s)", maxIDTries, r.stored.ID)}
			}
			break
		}
		got, taken, err := s.insertOnce(ctx, reqs)
		if err != nil {
			return nil, err
		}
		maps.Copy(out, got)
		for _, r := range taken {
			if err := r.setID(s.newID(r)); err != nil {
				return nil, err
			}
		}
		reqs = taken
	}
	return out, nil
}

// newID is a fresh id for r from the store's id source.
func (s *Store) newID(r *createReq) string {
	ids := s.IDs
	if ids == nil {
		ids = store.NewIDNear
	}
	return ids(r.stored.CreatedAt, r.stored.Latitude, r.stored.Longitude)
}

// setID gives r the id id, and its doc with it.
func (r *createReq) setID(id string) (err error) {
	r.stored.ID = id
	pub := r.stored
	if _, err = takePersonal(&pub); err != nil {
		return err
	}
	r.doc, err = recordjson.Encode(&pub)
	return err
}

// insertOnce inserts the records of reqs (distinct pairs) in one implicit transaction, in one round
// trip: the shared feed lock (see feedLock), then one statement inserting the rows in pair order (so that
// two batches racing for the same pairs never wait for each other crosswise) and adding the tokens of the
// rows it inserted to the word counters (0007), summed per (status, token) and in key order, before the
// count rows (0009's statement trigger runs at the statement's end), as Update takes them. The pairs
// already stored are then read in a statement of their own, which sees them even when their transaction
// committed after ours began. A row that conflicts on its id instead (its pair is not stored) is not
// inserted: it is returned in taken. Two of reqs never share an id: the later gets a fresh one first.
func (s *Store) insertOnce(ctx context.Context, reqs []*createReq) (out map[*createReq]createRes, taken []*createReq, err error) {
	reqs = slices.Clone(reqs)
	slices.SortFunc(reqs, func(a, b *createReq) int {
		if c := bytes.Compare([]byte(a.stored.Source), []byte(b.stored.Source)); c != 0 {
			return c
		}
		return bytes.Compare([]byte(a.stored.ExternalID), []byte(b.stored.ExternalID))
	})
	var rr recordRows
	var tokIDs, toks []string
	byID := make(map[string]*createReq, len(reqs))
	for _, r := range reqs {
		for try := 0; byID[r.stored.ID] != nil; try++ {
			if try == maxIDTries {
				return nil, nil, fmt.Errorf("pgstore: %d ids in a row were taken (last %s)", maxIDTries, r.stored.ID)
			}
			if err := r.setID(s.newID(r)); err != nil {
				return nil, nil, err
			}
		}
		rr.add(&r.stored, r.doc, r.pdoc, r.floor)
		for _, t := range r.toks {
			tokIDs, toks = append(tokIDs, r.stored.ID), append(toks, t)
		}
		byID[r.stored.ID] = r
	}
	out = make(map[*createReq]createRes, len(reqs))
	b := &pgx.Batch{}
	b.Queue(`SELECT pg_advisory_xact_lock_shared($1)`, feedLock)
	// ON CONFLICT without a target: a taken pair and a taken id both leave the row out, never overwrite.
	b.Queue(`WITH `+insertRows(fmt.Sprintf(nextStamp, "v.stamp"), "", "id, status, updated_ms")+`,
		w AS (INSERT INTO directaid_words AS c (status, token, shard, n)
			SELECT ins.status, t.tok, directaid_shard(), count(*) FROM ins JOIN unnest($18::text[], $19::text[]) AS t(id, tok) ON t.id = ins.id
			GROUP BY 1, 2 ORDER BY ins.status COLLATE "C", t.tok
			ON CONFLICT (status, token, shard) DO UPDATE SET n = c.n + EXCLUDED.n)
		SELECT id, updated_ms FROM ins`, append(rr.args(), tokIDs, toks)...).Query(func(rows pgx.Rows) error {
		var id string
		var ms int64
		_, err := pgx.ForEachRow(rows, []any{&id, &ms}, func() error {
			r := byID[id]
			if r == nil {
				return fmt.Errorf("pgstore: the insert returned an id it was not given: %q", id)
			}
			rec := r.stored
			rec.UpdatedAt = time.UnixMilli(ms).UTC()
			out[r] = createRes{rec: &rec, created: true}
			return nil
		})
		return err
	})
	if err := s.db.Pool.SendBatch(ctx, b).Close(); err != nil {
		return nil, nil, err
	}
	// The pairs that were already stored.
	var srcs, exts [][]byte
	for _, r := range reqs {
		if _, ok := out[r]; !ok {
			srcs, exts = append(srcs, []byte(r.stored.Source)), append(exts, []byte(r.stored.ExternalID))
		}
	}
	if len(srcs) == 0 {
		return out, nil, nil
	}
	rows, err := s.db.Pool.Query(ctx, `SELECT source, external_id, `+recordCols+` FROM directaid_records
		WHERE (source, external_id) IN (SELECT * FROM unnest($1::bytea[], $2::bytea[]))`, srcs, exts)
	if err != nil {
		return nil, nil, err
	}
	found := map[pairKey]createRes{}
	var src, ext, doc, pdoc []byte
	var ms int64
	if _, err := pgx.ForEachRow(rows, []any{&src, &ext, &doc, &ms, &pdoc}, func() error {
		rec, err := decode(doc, ms, pdoc)
		found[pairKey{string(src), string(ext)}] = createRes{rec: rec, err: err}
		return nil
	}); err != nil {
		return nil, nil, err
	}
	for _, r := range reqs {
		if _, ok := out[r]; !ok {
			if got, ok := found[r.pair()]; ok {
				out[r] = got
			} else {
				taken = append(taken, r) // not inserted, pair not stored: its id is another record's
			}
		}
	}
	return out, taken, nil
}

// recordRows are records as the columns of directaid_records, passed as one array per column to one
// multi-row INSERT (insertRows): $1–$16, and $17 the personal docs.
type recordRows struct {
	ids, slugs, types, cats, urgs, searches, statuses, munis []string
	sources, extIDs, docs, pdocs                             [][]byte
	createdAts                                               []time.Time
	neededs                                                  []*int32
	locs                                                     []*string
	expires                                                  []*time.Time
	stamps                                                   []int64
}

// add appends rec as stored (status set, personal text out of doc), with its doc, its personal doc (nil
// for none) and stamp (what insertRows makes of it).
func (r *recordRows) add(rec *store.Record, doc, pdoc []byte, stamp int64) {
	needed, loc, expires, search := columns(rec)
	r.ids, r.sources, r.extIDs, r.createdAts = append(r.ids, rec.ID), append(r.sources, []byte(rec.Source)), append(r.extIDs, []byte(rec.ExternalID)), append(r.createdAts, rec.CreatedAt)
	r.slugs, r.types, r.cats, r.urgs = append(r.slugs, rec.EmergencySlug), append(r.types, rec.Type), append(r.cats, rec.Category), append(r.urgs, rec.Urgency)
	r.statuses, r.munis = append(r.statuses, rec.Status), append(r.munis, rec.MunicipioCode)
	r.neededs, r.locs, r.expires, r.searches = append(r.neededs, needed), append(r.locs, loc), append(r.expires, expires), append(r.searches, search)
	r.docs, r.pdocs, r.stamps = append(r.docs, doc), append(r.pdocs, pdoc), append(r.stamps, stamp)
}

func (r *recordRows) args() []any {
	return []any{r.ids, r.sources, r.extIDs, r.createdAts, r.slugs, r.types, r.cats, r.urgs, r.neededs, r.locs, r.searches,
		r.docs, r.statuses, r.expires, r.stamps, r.munis, r.pdocs}
}

// insertRows is the SQL of three CTEs over recordRows' arguments: v, the rows; ins, inserting them in
// order with updated_ms = stamp (SQL over v), ON CONFLICT conflict (a target, or none) DO NOTHING,
// returning returning; and p,
// the personal docs of the rows inserted (directaid_personal, 0010).
func insertRows(stamp, conflict, returning string) string {
	return `v AS (SELECT * FROM unnest($1::text[], $2::bytea[], $3::bytea[], $4::timestamptz[], $5::text[], $6::text[],
			$7::text[], $8::text[], $9::int[], $10::text[], $11::text[], $12::bytea[], $13::text[], $14::timestamptz[], $15::bigint[], $16::text[])
			WITH ORDINALITY AS v(id, source, external_id, created_at, emergency_slug, type, category, urgency, needed_people, loc,
			search_text, doc, status, expires_at, stamp, municipio_code, i)),
		ins AS (INSERT INTO directaid_records (id, source, external_id, created_at, emergency_slug, type,
			category, urgency, needed_people, loc, search_text, doc, status, expires_at, updated_ms, municipio_code)
			SELECT id, source, external_id, created_at, emergency_slug, type, category, urgency, needed_people, loc::point,
			search_text, doc, status, expires_at, ` + stamp + `, municipio_code FROM v ORDER BY i
			ON CONFLICT ` + conflict + ` DO NOTHING RETURNING ` + returning + `),
		p AS (INSERT INTO directaid_personal (id, doc)
			SELECT t.id, t.pdoc FROM ins JOIN unnest($1::text[], $17::bytea[]) AS t(id, pdoc) ON t.id = ins.id WHERE t.pdoc IS NOT NULL)`
}
