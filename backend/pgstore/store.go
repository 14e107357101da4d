package pgstore

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/directaid/directaid/backend/store"
	"github.com/directaid/directaid/backend/store/recordjson"
)

// Store is store.Store on PostgreSQL. Its answers are the Badger store's (storetest checks both): the
// pair is a UNIQUE constraint and one INSERT … ON CONFLICT DO NOTHING; a commit returns once it is on
// disk (synchronous_commit on); text search folds in Go, as Badger does, and matches substrings through a
// trigram index; a radius list takes the candidates in the bounding box from a GiST index and measures
// them with the same haversine as Badger.
type Store struct {
	db     *DB
	closed atomic.Bool
	// Timeout bounds each call, so that a server that stopped answering yields 503s, not hung requests.
	Timeout time.Duration
	// Now is the clock of the updatedAt stamps (tests move it).
	Now func() time.Time
	// IDs makes the fresh id of a Create whose id another record holds; nil means store.NewIDNear.
	IDs store.IDSource
	// Observer receives each group commit's size and duration, as Badger's does; nil discards them.
	Observer store.Observer

	// lists are the slots of the lists in PostgreSQL at once (listSlots); the others wait in the node.
	lists chan struct{}

	// The group commit of Create (create.go).
	queue        chan *createReq
	startWriters sync.Once
	stop         chan struct{}
	closeOnce    sync.Once
}

// NewStore returns the store on db. Close does not close db: its owner does.
func NewStore(db *DB) *Store {
	return &Store{db: db, Timeout: 10 * time.Second, Now: time.Now, lists: make(chan struct{}, listSlots(db.Pool.Config().MaxConns)),
		queue: make(chan *createReq), stop: make(chan struct{})}
}

// listSlots is how many lists a node runs in PostgreSQL at once: twice its cores, within the pool. More
// lists at once do not finish sooner; they make PostgreSQL's backends contend (its lock manager,
// switching between them) on the cores it has. At 1M records on 2 cores shared with PostgreSQL, 16
// clients of 5 km lists: 16 at once 973–1,079 req/s (PostgreSQL 1,023–1,099 µs a list, p99 50 ms), 4 at
// once 1,195–1,297 (786–852 µs, p99 22 ms); 2, 6 and 8 between (TestPGProbe with pool_max_conns as the
// bound, README "On PostgreSQL").
func listSlots(poolMax int32) int {
	return max(2, min(int(poolMax), 2*runtime.GOMAXPROCS(0)))
}

// fail marks the errors of an unreachable server as store.ErrUnreachable (503, retry).
func fail(err error) error {
	if err != nil && !errors.Is(err, store.ErrClosed) && !errors.Is(err, store.ErrNotFound) && Unavailable(err) {
		return fmt.Errorf("%w: %w", store.ErrUnreachable, err)
	}
	return err
}

// Create implements store.Store.
func (s *Store) Create(ctx context.Context, rec *store.Record) (*store.Record, bool, error) {
	ctx, cancel := context.WithTimeout(ctx, s.Timeout)
	defer cancel()
	stored, created, err := s.create(ctx, rec)
	return stored, created, fail(err)
}

// Get implements store.Store.
func (s *Store) Get(ctx context.Context, id string) (*store.Record, error) {
	ctx, cancel := context.WithTimeout(ctx, s.Timeout)
	defer cancel()
	rec, err := s.get(ctx, id)
	return rec, fail(err)
}

// Lookup implements store.Store, through the pair's unique index.
func (s *Store) Lookup(ctx context.Context, source, externalID string) (*store.Record, error) {
	ctx, cancel := context.WithTimeout(ctx, s.Timeout)
	defer cancel()
	if err := s.ready(ctx); err != nil {
		return nil, fail(err)
	}
	rec, err := s.scanOne(s.db.Pool.QueryRow(ctx, `SELECT `+recordCols+` FROM directaid_records WHERE source = $1 AND external_id = $2`,
		[]byte(source), []byte(externalID)))
	return rec, fail(err)
}

// List implements store.Store: count and page are read in one snapshot.
func (s *Store) List(ctx context.Context, spec *store.ListSpec) (*store.ListResult, error) {
	ctx, cancel := context.WithTimeout(ctx, s.Timeout)
	defer cancel()
	res, err := s.list(ctx, spec)
	return res, fail(err)
}

// Aggregates implements store.Store.
func (s *Store) Aggregates(ctx context.Context, slugs []string) (map[string]*store.Aggregate, error) {
	ctx, cancel := context.WithTimeout(ctx, s.Timeout)
	defer cancel()
	res, err := s.aggregates(ctx, slugs)
	return res, fail(err)
}

func (s *Store) ready(ctx context.Context) error {
	if s.closed.Load() {
		return store.ErrClosed
	}
	return s.db.Ready(ctx)
}

// feedLock is the key of the advisory lock that keeps the change feed exact. Every write holds it shared
// from before it reads the newest updated_ms (its stamp is greater) until it commits; a feed read takes it
// exclusively while its snapshot is taken. So a write that commits after a feed's snapshot has a stamp
// greater than every stamp that snapshot shows, and a mirror paging by (updated_ms, id) misses nothing,
// whichever node wrote it.
const feedLock int64 = 0x6469726563746166 // "directaf"

// nextStamp is the SQL of a write's updated_ms: at least $floor, and after every change already committed.
const nextStamp = `greatest(%s, (SELECT coalesce(max(updated_ms), 0) + 1 FROM directaid_records))`

// columns are the values of the filtered columns of rec, in the order of the INSERT and the UPDATE.
func columns(rec *store.Record) (needed *int32, loc *string, expires *time.Time, search string) {
	if rec.Latitude != nil && rec.Longitude != nil {
		p := fmt.Sprintf("(%s,%s)", fmtFloat(*rec.Longitude), fmtFloat(*rec.Latitude))
		loc = &p
	}
	if rec.NeededPeople != nil {
		n := int32(*rec.NeededPeople)
		needed = &n
	}
	if !rec.ExpiresAt.IsZero() {
		e := rec.ExpiresAt
		expires = &e
	}
	return needed, loc, expires, strings.ReplaceAll(store.SearchText(rec), "\x00", " ")
}

// Update implements store.Store: the row is locked (FOR UPDATE) while fn runs, so updates of one record
// apply one after another on every node.
func (s *Store) Update(ctx context.Context, id string, fn func(*store.Record) error) (*store.Record, error) {
	ctx, cancel := context.WithTimeout(ctx, s.Timeout)
	defer cancel()
	rec, err := s.update(ctx, id, fn)
	return rec, fail(err)
}

func (s *Store) update(ctx context.Context, id string, fn func(*store.Record) error) (*store.Record, error) {
	if err := s.ready(ctx); err != nil {
		return nil, err
	}
	var out *store.Record
	err := pgx.BeginFunc(ctx, s.db.Pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock_shared($1)`, feedLock); err != nil {
			return err
		}
		old, err := s.scanOne(tx.QueryRow(ctx, `SELECT `+recordColsOf(id)+` FROM directaid_records WHERE id = $1 FOR UPDATE`, id))
		if err != nil {
			return err
		}
		rec, err := store.ApplyUpdate(old, fn)
		if err != nil {
			return err
		}
		floor := max(s.Now().UnixMilli(), rec.UpdatedAt.UnixMilli(), old.UpdatedAt.UnixMilli()+1)
		rec.UpdatedAt = time.Time{}
		pub := *rec
		pdoc, err := takePersonal(&pub)
		if err != nil {
			return err
		}
		doc, err := recordjson.Encode(&pub)
		if err != nil {
			return err
		}
		if err := putPersonalRow(ctx, tx, old, id, pdoc); err != nil {
			return err
		}
		needed, loc, expires, search := columns(rec)
		words := map[wordKey]int64{}
		addWordDelta(words, old, -1)
		addWordDelta(words, rec, 1)
		if err := addWords(ctx, tx, words, "directaid_shard()"); err != nil {
			return err
		}
		var ms int64
		err = tx.QueryRow(ctx, `UPDATE directaid_records SET category = $2, urgency = $3, needed_people = $4, loc = $5::point,
			search_text = $6, doc = $7, status = $8, expires_at = $9, updated_ms = `+fmt.Sprintf(nextStamp, "$10::bigint")+`
			WHERE id = $1 RETURNING updated_ms`,
			id, rec.Category, rec.Urgency, needed, loc, search, doc, rec.Status, expires, floor).Scan(&ms)
		if err != nil {
			return err
		}
		rec.UpdatedAt = time.UnixMilli(ms).UTC()
		if audit := store.AuditOf(ctx); audit != nil { // in the same transaction as the change
			for _, e := range audit.Entries(old, rec) {
				doc, err := json.Marshal(e)
				if err != nil {
					return err
				}
				if _, err := tx.Exec(ctx, `INSERT INTO directaid_audit (doc) VALUES ($1)`, doc); err != nil {
					return err
				}
			}
		}
		out = rec
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// putPersonalRow stores record id's personal doc (nil: none) when it differs from old's: an erasure
// deletes the row, and leaves no version of it behind in the records table.
func putPersonalRow(ctx context.Context, tx pgx.Tx, old *store.Record, id string, pdoc []byte) error {
	was := *old
	before, err := takePersonal(&was)
	if err != nil || bytes.Equal(before, pdoc) {
		return err
	}
	if pdoc == nil {
		_, err = tx.Exec(ctx, `DELETE FROM `+personalTable(id)+` WHERE id = $1`, id)
	} else {
		_, err = tx.Exec(ctx, `INSERT INTO `+personalTable(id)+` (id, doc) VALUES ($1, $2) ON CONFLICT (id) DO UPDATE SET doc = EXCLUDED.doc`, id, pdoc)
	}
	return err
}

// scanOne reads one row of recordCols: store.ErrNotFound when there is none.
func (s *Store) scanOne(row pgx.Row) (*store.Record, error) {
	var doc, pdoc []byte
	var ms int64
	err := row.Scan(&doc, &ms, &pdoc)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, store.ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	return decode(doc, ms, pdoc)
}

// fmtFloat writes f exactly (shortest round-trip form), so that the point holds the same float64.
func fmtFloat(f float64) string { return fmt.Sprintf("%v", f) }

// decode reads a stored record: doc (recordjson, as Badger's records), with updatedAt from its column and
// the personal text of pdoc (a directaid_personal doc; nil for none).
func decode(doc []byte, updatedMs int64, pdoc []byte) (*store.Record, error) {
	rec, err := recordjson.Decode(doc)
	if err != nil {
		return nil, fmt.Errorf("pgstore: stored record does not decode: %w", err)
	}
	if err := putPersonal(rec, pdoc); err != nil {
		return nil, err
	}
	rec.UpdatedAt = time.UnixMilli(updatedMs).UTC() // after Decode's Normalize, which set it to createdAt
	return rec, nil
}

func (s *Store) get(ctx context.Context, id string) (*store.Record, error) {
	if err := s.ready(ctx); err != nil {
		return nil, err
	}
	return s.scanOne(s.db.Pool.QueryRow(ctx, `SELECT `+recordColsOf(id)+` FROM directaid_records WHERE id = $1`, id))
}

// where builds the filter of spec (not the cursor) with its arguments.
func where(spec *store.ListSpec) (string, []any) { return filters(spec, true) }

// filters is where, with or without the change feed's lower bound on updated_ms (see feedTotal).
func filters(spec *store.ListSpec, since bool) (string, []any) {
	var conds []string
	var args []any
	add := func(cond string, arg any) {
		args = append(args, arg)
		conds = append(conds, strings.ReplaceAll(cond, "$?", fmt.Sprintf("$%d", len(args))))
	}
	if spec.EmergencySlug != "" {
		add("emergency_slug = $?", spec.EmergencySlug)
	}
	if spec.Type != "" {
		add("type = $?", spec.Type)
	}
	if spec.Category != "" {
		add("category = $?", spec.Category)
	}
	if spec.Urgency != "" {
		add("urgency = $?", spec.Urgency)
	}
	if st := spec.StatusOr(); st != "" {
		add("status = $?", st)
	}
	if spec.Municipio != "" {
		add("municipio_code = $?", spec.Municipio)
	}
	if ms := spec.SinceMillis(); ms >= 0 && since {
		add("updated_ms > $?", ms)
	}
	if spec.Near {
		// The bounding box of the circle (the GiST index), measured exactly afterwards.
		dLat := spec.RadiusKm/kmPerDegLat + 1e-9
		cosLat := math.Cos(math.Min(89.9, math.Abs(spec.Lat)+dLat) * math.Pi / 180)
		dLon := math.Min(180, spec.RadiusKm/(kmPerDegLat*cosLat)+1e-9)
		add("loc <@ $?::box", fmt.Sprintf("((%v,%v),(%v,%v))", spec.Lon-dLon, spec.Lat-dLat, spec.Lon+dLon, spec.Lat+dLat))
	}
	// The words last: without them the same filter's arguments are a prefix of these (wordsTotal).
	for _, w := range spec.Words {
		add(`search_text LIKE $?`, "%"+likeEscape(w)+"%")
	}
	if len(conds) == 0 {
		return "TRUE", args
	}
	return strings.Join(conds, " AND "), args
}

func likeEscape(w string) string {
	return strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`, "\x00", " ").Replace(w)
}

func (s *Store) list(ctx context.Context, spec *store.ListSpec) (*store.ListResult, error) {
	if err := s.ready(ctx); err != nil {
		return nil, err
	}
	feed := spec.SinceMillis() >= 0
	if feed && (len(spec.Words) > 0 || spec.Near || spec.Municipio != "") {
		return nil, store.ErrSinceCombined
	}
	select {
	case s.lists <- struct{}{}:
		defer func() { <-s.lists }()
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	conn, err := s.db.Pool.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Release()
	if spec.Near {
		return s.listNear(ctx, conn, spec)
	}
	if !feed && len(spec.Words) == 0 {
		return s.listCounted(ctx, conn, spec)
	}
	locked := false
	if feed {
		// Wait for the writes in flight and hold new ones off while the snapshot is taken (see feedLock).
		if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1)`, feedLock); err != nil {
			return nil, err
		}
		locked = true
		defer func() {
			if locked { // a lock left on a pooled connection would stop every write: drop the connection
				_ = conn.Conn().Close(context.WithoutCancel(ctx))
			}
		}()
	}
	// pgx prepares every statement; after five runs PostgreSQL may plan one for any parameters, and the
	// generic plan of a list (a box, a LIKE pattern) cannot see how selective they are: lists are planned
	// each time (writes keep their cached plans).
	tx, err := conn.BeginTx(ctx, pgx.TxOptions{BeginQuery: `BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY;
		SET LOCAL plan_cache_mode = force_custom_plan`})
	if err != nil {
		return nil, err
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	cond, args := where(spec)
	res := &store.ListResult{TotalExact: true}
	// The first statement takes the snapshot. A feed's lock goes in its round trip: writes wait for the
	// snapshot only, not for the total read after it (up to 4,002 changes, the counters, the newest).
	switch {
	case feed:
		b := &pgx.Batch{}
		b.Queue(`SELECT 1`)
		b.Queue(`SELECT pg_advisory_unlock($1)`, feedLock)
		if err := tx.SendBatch(ctx, b).Close(); err != nil {
			return nil, err
		}
		locked = false
		if !spec.NoTotal {
			res.Total, res.TotalExact, err = feedTotal(ctx, tx, spec)
		}
	case spec.NoTotal:
		_, err = tx.Exec(ctx, `SELECT 1`)
	default:
		// A q list: counted after the page (wordsTotal), which takes the snapshot.
	}
	if err != nil {
		return nil, err
	}
	order := "id DESC"
	if feed {
		order = "updated_ms, id"
		if c := spec.After; c != nil {
			args = append(args, c.Updated, c.ID)
			cond += fmt.Sprintf(" AND (updated_ms, id) > ($%d, $%d)", len(args)-1, len(args))
		}
	} else if spec.After != nil {
		args = append(args, spec.After.ID)
		cond += fmt.Sprintf(" AND id < $%d", len(args))
	}
	args = append(args, spec.Limit+1)
	rows, err := tx.Query(ctx, fmt.Sprintf(`SELECT id, doc, updated_ms FROM directaid_records WHERE %s ORDER BY %s LIMIT $%d`, cond, order, len(args)), args...)
	if err != nil {
		return nil, err
	}
	var page pageRows
	if err := page.scan(rows); err != nil {
		return nil, err
	}
	if n := len(page.ids); n > spec.Limit {
		page.cut(spec.Limit)
		res.Next = &store.Cursor{ID: page.ids[spec.Limit-1]}
		if feed {
			res.Next.Updated = page.ms[spec.Limit-1]
		}
	}
	b := &pgx.Batch{}
	b.Queue(genericPlans)
	page.queuePersonal(b, page.ids)
	b.Queue(`SET LOCAL plan_cache_mode = force_custom_plan`) // wordsTotal's patterns
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return nil, err
	}
	if res.Records, err = page.records(); err != nil {
		return nil, err
	}
	if spec.NoTotal {
		res.Total, res.TotalExact = len(res.Records), spec.After == nil && res.Next == nil
	} else if len(spec.Words) > 0 {
		if err := wordsTotal(ctx, tx, spec, res); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// listCounted answers a list with no words, radius nor change feed in 2 round trips: the transaction's
// start, its total from the counters and the page's records (planned for these values) in one pipeline;
// their personal rows by id (a generic plan: see listNear) and the end in another.
func (s *Store) listCounted(ctx context.Context, conn *pgxpool.Conn, spec *store.ListSpec) (*store.ListResult, error) {
	cond, args := where(spec)
	res := &store.ListResult{TotalExact: true}
	first := &pgx.Batch{}
	first.BeginTx(pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	first.Queue(`SET LOCAL plan_cache_mode = force_custom_plan`)
	if !spec.NoTotal {
		first.Queue(countersQuery(spec, cond), args...).QueryRow(func(row pgx.Row) error { return row.Scan(&res.Total) })
	}
	pargs := slices.Clone(args)
	pcond := cond
	if spec.After != nil {
		pargs = append(pargs, spec.After.ID)
		pcond += fmt.Sprintf(" AND id < $%d", len(pargs))
	}
	pargs = append(pargs, spec.Limit+1)
	var page pageRows
	first.Queue(fmt.Sprintf(`SELECT id, doc, updated_ms FROM directaid_records WHERE %s ORDER BY id DESC LIMIT $%d`, pcond, len(pargs)),
		pargs...).Query(page.scan)
	tx, end, err := begin(ctx, conn, first)
	defer end()
	if err != nil {
		return nil, err
	}
	if len(page.ids) > spec.Limit {
		page.cut(spec.Limit)
		res.Next = &store.Cursor{ID: page.ids[spec.Limit-1]}
	}
	second := &pgx.Batch{}
	second.Queue(genericPlans)
	page.queuePersonal(second, page.ids)
	second.Queue(`ROLLBACK`) // read only: nothing to commit
	if err := tx.SendBatch(ctx, second).Close(); err != nil {
		return nil, err
	}
	if res.Records, err = page.records(); err != nil {
		return nil, err
	}
	if spec.NoTotal {
		res.Total, res.TotalExact = len(res.Records), spec.After == nil && res.Next == nil
	}
	return res, nil
}

// pageRows are a page's records as read without their personal rows (id, doc, updated_ms), which
// queuePersonal reads from their partitions of directaid_personal (see personalTable).
type pageRows struct {
	ids      []string
	docs     [][]byte
	ms       []int64
	personal map[string][]byte
}

func (p *pageRows) scan(rows pgx.Rows) error {
	var id string
	var doc pgtype.DriverBytes // copied once, by the Clone
	var ms int64
	_, err := pgx.ForEachRow(rows, []any{&id, &doc, &ms}, func() error {
		p.ids, p.docs, p.ms = append(p.ids, id), append(p.docs, slices.Clone(doc)), append(p.ms, ms)
		return nil
	})
	return err
}

func (p *pageRows) cut(n int) { p.ids, p.docs, p.ms = p.ids[:n], p.docs[:n], p.ms[:n] }

// genericPlans sets generic plans for the rest of the transaction: the statements by id, planned once
// per connection (queuePersonal's, whose custom plans would be planned with each page).
const genericPlans = `SET LOCAL plan_cache_mode = force_generic_plan`

// queuePersonal queues on b the reading of the personal rows of the page's records ids (known before
// their records are read, for a radius page), one statement per partition that holds some (a page of 20
// spans ~17 of the 64). The caller sets generic plans first (genericPlans) unless they are already.
func (p *pageRows) queuePersonal(b *pgx.Batch, ids []string) {
	p.personal = make(map[string][]byte, len(ids))
	var parts [personalParts][]string
	for _, id := range ids {
		k := personalPart(id)
		parts[k] = append(parts[k], id)
	}
	read := func(rows pgx.Rows) error {
		var id string
		var pdoc pgtype.DriverBytes // copied once, by the Clone
		_, err := pgx.ForEachRow(rows, []any{&id, &pdoc}, func() error {
			p.personal[id] = slices.Clone(pdoc)
			return nil
		})
		return err
	}
	for k, ids := range parts {
		if len(ids) > 0 {
			b.Queue(`SELECT id, doc FROM `+personalPartition(k)+` WHERE id = ANY($1)`, ids).Query(read)
		}
	}
}

func (p *pageRows) records() ([]*store.Record, error) {
	if len(p.ids) == 0 {
		return nil, nil
	}
	recs := make([]*store.Record, len(p.ids))
	for i, id := range p.ids {
		rec, err := decode(p.docs[i], p.ms[i], p.personal[id])
		if err != nil {
			return nil, err
		}
		recs[i] = rec
	}
	return recs, nil
}

// begin sends b, which starts a transaction (Batch.BeginTx), on conn: the transaction, and what to defer
// to roll it back unless it ended.
func begin(ctx context.Context, conn *pgxpool.Conn, b *pgx.Batch) (pgx.Tx, func(), error) {
	br := conn.SendBatch(ctx, b)
	tx := br.Tx()
	end := func() {
		if conn.Conn().PgConn().TxStatus() != 'I' {
			_ = tx.Rollback(context.WithoutCancel(ctx))
		}
	}
	return tx, end, br.Close()
}

// countersTotal is the total of a spec with no words, radius nor change feed (or a feed's filters but
// since) from directaid_counts, kept by emergency, status, type, category, urgency and municipio, whose
// columns are named as the records' for these filters (where(spec) gives cond and args): without a municipio, its rows of every
// municipio (migration 0012).
func countersTotal(ctx context.Context, tx pgx.Tx, spec *store.ListSpec, cond string, args []any) (n int, err error) {
	err = tx.QueryRow(ctx, countersQuery(spec, cond), args...).Scan(&n)
	return n, err
}

// countersQuery is countersTotal's statement.
func countersQuery(spec *store.ListSpec, cond string) string {
	if spec.Municipio == "" {
		cond += " AND municipio_code = ''"
	}
	return `SELECT coalesce(sum(n), 0)::bigint FROM directaid_counts WHERE ` + cond
}

// feedTotal is the total of a change feed, as Badger's: from bounded walks of its changes (see
// store.FeedWalk and store.FeedTotal) after since; when those are not all read, at or before since, and
// the counters; when neither are, back from the newest change to the newest matching one.
func feedTotal(ctx context.Context, tx pgx.Tx, spec *store.ListSpec) (n int, exact bool, err error) {
	since := spec.SinceMillis()
	after, err := feedWalk(ctx, tx, spec, ">", false, store.MaxFeedCount)
	if err != nil || after.Done {
		n, exact = store.FeedTotal(0, after, store.FeedWalk{}, since, 0)
		return n, exact, err
	}
	before, err := feedWalk(ctx, tx, spec, "<=", false, store.MaxFeedCount)
	var all int
	if err == nil {
		fcond, fargs := filters(spec, false)
		all, err = countersTotal(ctx, tx, spec, fcond, fargs)
	}
	var newest store.FeedWalk
	if err == nil && !before.Done && after.Matches > 0 {
		newest, err = feedWalk(ctx, tx, spec, "", true, 0)
	}
	if err != nil {
		return 0, false, err
	}
	n, exact = store.FeedTotal(all, after, before, since, newest.Last)
	return n, exact, nil
}

// feedWalk is one walk of a change feed's total over the changes of its emergency whose updated_ms is
// sinceOp (">", "<=", or "": any) since, oldest first or newest first, as Badger's walkFeed: it reads at most store.MaxFeedRead
// rows (LIMIT, one more to tell whether there are more) and stops after the bound+1-th that passes the
// feed's other filters (a run condition on the matches before each row: PostgreSQL 15 ends the scan there).
func feedWalk(ctx context.Context, tx pgx.Tx, spec *store.ListSpec, sinceOp string, newestFirst bool, bound int) (w store.FeedWalk, err error) {
	var more int
	q, args := feedWalkQuery(spec, sinceOp, newestFirst, bound)
	err = tx.QueryRow(ctx, q, args...).Scan(&w.Matches, &w.Last, &more)
	w.Done = more == 0 && w.Matches <= bound
	return w, err
}

// feedWalkQuery is feedWalk's statement: its matches, the last change time read and whether there are more.
func feedWalkQuery(spec *store.ListSpec, sinceOp string, newestFirst bool, bound int) (string, []any) {
	other := *spec
	other.EmergencySlug = ""
	match, args := filters(&other, false)
	part := "TRUE"
	if spec.EmergencySlug != "" {
		args = append(args, spec.EmergencySlug)
		part = fmt.Sprintf("emergency_slug = $%d", len(args))
	}
	if sinceOp != "" {
		args = append(args, spec.SinceMillis())
		part += fmt.Sprintf(" AND updated_ms %s $%d", sinceOp, len(args))
	}
	order, last := "updated_ms, id", "max"
	if newestFirst {
		order, last = "updated_ms DESC, id DESC", "min"
	}
	return fmt.Sprintf(`SELECT count(*) FILTER (WHERE m AND rn <= %[1]d), coalesce(%[2]s(updated_ms) FILTER (WHERE rn <= %[1]d), 0),
		count(*) FILTER (WHERE rn > %[1]d)
		FROM (SELECT updated_ms, m, row_number() OVER w AS rn, count(*) FILTER (WHERE m) OVER w AS k
			FROM (SELECT updated_ms, id, coalesce(%[3]s, false) AS m FROM directaid_records WHERE %[4]s ORDER BY %[5]s LIMIT %[6]d) e
			WINDOW w AS (ORDER BY %[5]s ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)) s
		WHERE k <= %[7]d`, store.MaxFeedRead, last, match, part, order, store.MaxFeedRead+1, bound), args
}

type candidate struct {
	id   string
	dist float64
	doc  []byte // the record's doc and updated_ms, when the walk reads them (walkDocs)
	ms   int64
}

// listNear answers a radius list. The page walks the GiST index best-first (KNN: nearest in flat degrees
// first) and measures each candidate with the same haversine as Badger; a record at δ flat degrees from the
// centre is at least δ·minKmPerDeg km away, so the walk stops once that bound passes the radius or the
// last distance the page needs. The total comes from the cell counters (store.RadiusTotal); with q, from
// wordsTotal.
//
// Two round trips in the common case, each a pipeline of statements that do not depend on each other:
// the transaction's start, the walk and the counters of the circle's cells (pgCells.prefetch); then the
// count of the edge cells if the total needs it, the page's records and the transaction's end (with q
// and a total, after wordsTotal). A first page filtered by nothing but its status, open, reads its
// records' docs in the walk (walkDocs).
func (s *Store) listNear(ctx context.Context, conn *pgxpool.Conn, spec *store.ListSpec) (*store.ListResult, error) {
	cond, args := where(spec)
	res := &store.ListResult{TotalExact: true}
	need := spec.Limit + 1
	// Every point the walk accepts lies in the bounding box, and so does (up to the bulge of a great circle
	// of at most 2·MaxRadiusKm, far below a degree) the shortest path to it.
	maxLat := math.Min(90, math.Abs(spec.Lat)+spec.RadiusKm/kmPerDegLat+1)
	minKmPerDeg := kmPerDegLat * math.Cos(maxLat*math.Pi/180) * (1 - 1e-9)
	centre := fmt.Sprintf("(%v,%v)", spec.Lon, spec.Lat)
	args = append(args, centre)
	order := fmt.Sprintf("loc <-> $%d::point", len(args))
	docs := walkDocs(spec)
	cols := ""
	if docs {
		cols = ", doc, updated_ms"
	}
	query := fmt.Sprintf(`SELECT id, loc[1], loc[0], %s%s FROM directaid_records WHERE %s ORDER BY %s LIMIT $%d`, order, cols, cond, order, len(args)+1)
	var page []candidate
	read, done := 0, false
	walk := func(rows pgx.Rows) error {
		page, read, done = page[:0], 0, false
		var id, doc pgtype.DriverBytes // in pgx's buffer: copied for the page's rows only
		var lat, lon, flat float64
		var ms int64
		dest := []any{&id, &lat, &lon, &flat}
		if docs {
			dest = append(dest, &doc, &ms)
		}
		_, err := pgx.ForEachRow(rows, dest, func() error {
			read++
			if done {
				return nil
			}
			bound := flat * minKmPerDeg
			if bound > spec.RadiusKm || (len(page) == need && bound > page[need-1].dist) {
				done = true // nothing further on can be inside, or nearer than the page's last
				return nil
			}
			d := store.HaversineKm(spec.Lat, spec.Lon, lat, lon)
			if d > spec.RadiusKm || len(page) == need && d > page[need-1].dist {
				return nil
			}
			c := candidate{id: string(id), dist: d}
			if !afterCursor(spec.After, d, c.id) {
				return nil
			}
			i, _ := slices.BinarySearchFunc(page, c, nearer)
			if i < need {
				if len(page) == need {
					page = page[:need-1]
				}
				if docs {
					c.doc, c.ms = slices.Clone(doc), ms
				}
				page = slices.Insert(page, i, c)
			}
			return nil
		})
		return err
	}
	first := &pgx.Batch{}
	first.BeginTx(pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	cells := &pgCells{ctx: ctx, spec: spec, with: &pgx.Batch{}}
	if len(spec.Words) == 0 {
		// Generic plans, planned once per connection, for the statements whose plan does not depend on
		// their parameters' values: the counters of a list of cells, the records and personal rows by id,
		// and the walk (the planner estimates any `loc <@ box` at 0.1% of the rows, whatever the box;
		// planned per call, it cost ~200 µs at 1M records). The walk, not a sort of the box: when the index
		// does not cover the filters (or the table's pages are not yet all-visible) the planner read and
		// sorted every record of the box instead (~17k in 5 km at 1M density: 12 ms a list). The
		// statements after it sort nothing.
		first.Queue(`SELECT set_config('plan_cache_mode', 'force_generic_plan', true), set_config('enable_sort', 'off', true)`)
		if !spec.NoTotal {
			cells.prefetch(first)
		}
	} else {
		// pgx prepares every statement; after five runs PostgreSQL may plan one for any parameters, and the
		// generic plan of a list with q (a LIKE pattern) cannot see how selective it is: planned each time.
		// With q, the words' index may well be the better start than the walk.
		first.Queue(`SET LOCAL plan_cache_mode = force_custom_plan`)
	}
	// The walk's flat order differs from the haversine's by the cosine of the latitude (a few percent in
	// Colombia): twice the page is enough to pass the page's last distance (at the bench's 1M points never
	// a second batch); each row read beyond it costs PostgreSQL a KNN step.
	batch := max(2*need, 32)
	if docs {
		// Each row read costs a heap fetch (~4 µs at 1M records, half the walk's cost): the page and one
		// or two more pass its last distance at Colombia's latitudes (3,000 centres over the bench's 1M
		// points: 22 rows read 2,599 times, 23 374 times, 24 27 times); one more for a margin.
		batch = need + 4
	}
	first.Queue(query, append(args, batch)...).Query(walk)
	tx, end, err := begin(ctx, conn, first)
	defer end()
	if err != nil {
		return nil, err
	}
	cells.tx = tx
	for !done && read == batch {
		batch *= 4
		rows, err := tx.Query(ctx, query, append(args, batch)...)
		if err != nil {
			return nil, err
		}
		if err := walk(rows); err != nil {
			return nil, err
		}
	}
	if len(page) > spec.Limit {
		page = page[:spec.Limit]
		last := page[len(page)-1]
		res.Next = &store.Cursor{ID: last.id, Dist: last.dist, HasDist: true}
	}
	ids := make([]string, len(page))
	for i, c := range page {
		ids[i] = c.id
	}
	var rows pageRows
	if len(spec.Words) > 0 {
		cells.with.Queue(genericPlans) // as the statements by id without q
	}
	rows.queuePersonal(cells.with, ids)
	if docs {
		for _, c := range page {
			rows.ids, rows.docs, rows.ms = append(rows.ids, c.id), append(rows.docs, c.doc), append(rows.ms, c.ms)
		}
	} else {
		cells.with.Queue(`SELECT id, doc, updated_ms FROM directaid_records WHERE id = ANY($1)`, ids).Query(rows.scan)
	}
	if len(spec.Words) == 0 || spec.NoTotal {
		cells.with.Queue(`ROLLBACK`) // read only: nothing to commit
	} else {
		cells.with.Queue(`SET LOCAL plan_cache_mode = force_custom_plan`) // wordsTotal's patterns
	}
	switch {
	case spec.NoTotal:
		res.Total, res.TotalExact = len(page), spec.After == nil && res.Next == nil
	case len(spec.Words) > 0:
		// wordsTotal, after the records
	case spec.After == nil && res.Next == nil:
		res.Total = len(page) // the page is the whole list
	default:
		// From the cell counters (migration 0011), as Badger decides it.
		res.Total, res.TotalExact, err = cells.total()
		res.Total = max(res.Total, len(page))
	}
	if err != nil {
		return nil, err
	}
	if err := cells.flush(); err != nil {
		return nil, err
	}
	recs, err := rows.records()
	if err != nil {
		return nil, err
	}
	byID := make(map[string]*store.Record, len(recs))
	for i, r := range recs {
		byID[rows.ids[i]] = r
	}
	for _, c := range page {
		res.Records = append(res.Records, byID[c.id])
		res.Distances = append(res.Distances, c.dist)
	}
	if !spec.NoTotal && len(spec.Words) > 0 {
		if err := wordsTotal(ctx, tx, spec, res); err != nil {
			return nil, err
		}
	}
	return res, nil
}

const kmPerDegLat = store.EarthRadiusKm * math.Pi / 180

// walkDocs reports whether a radius list's walk reads its records' docs (the KNN scan fetches each row's
// heap tuple) rather than reading the page's records by id afterwards: for a first page of open records
// without q, kind nor scope. At 1M records it spares PostgreSQL ~100-170 µs a list (the walk and the
// records by id read ~118 buffers, the walk with its 29 rows' tuples ~35, when it read 29). A filter the GiST entry
// answers (a kind, an emergency, a status other than open) would fetch the tuple of every row it drops
// too, and a later page those of the pages before it: they keep the walk from the index alone.
func walkDocs(spec *store.ListSpec) bool {
	return len(spec.Words) == 0 && spec.After == nil && spec.StatusOr() == store.StatusOpen && spec.EmergencySlug == "" &&
		spec.Municipio == "" && spec.Type == "" && spec.Category == "" && spec.Urgency == ""
}

// nearer orders radius lists: nearest first, then newest (greatest id) first.
func nearer(a, b candidate) int {
	if a.dist != b.dist {
		if a.dist < b.dist {
			return -1
		}
		return 1
	}
	return strings.Compare(b.id, a.id)
}

// afterCursor reports whether a record at distance d with id comes after cursor c in a radius list.
func afterCursor(c *store.Cursor, d float64, id string) bool {
	return c == nil || nearer(candidate{id: id, dist: d}, candidate{id: c.ID, dist: c.Dist}) > 0
}

// countNear counts the records of cond within the radius. PostgreSQL measures every candidate of the box
// with its own haversine; those its measure puts within a hair of the radius are measured again here with
// store.HaversineKm (Badger's), which decides, so the total is Badger's to the last record.
func countNear(ctx context.Context, tx pgx.Tx, spec *store.ListSpec, cond string, args []any) (int, error) {
	const slack = 1e-9
	n := len(args)
	args = append(args, spec.Lat, spec.Lon, spec.RadiusKm*(1-slack)-slack, spec.RadiusKm*(1+slack)+slack)
	hav := fmt.Sprintf(`2 * %v * asin(least(1, sqrt(sin(radians(loc[1] - $%[2]d) / 2) ^ 2
		+ cos(radians($%[2]d)) * cos(radians(loc[1])) * sin(radians(loc[0] - $%[3]d) / 2) ^ 2)))`, store.EarthRadiusKm, n+1, n+2)
	var inside int
	var lats, lons []float64
	err := tx.QueryRow(ctx, fmt.Sprintf(`SELECT count(*) FILTER (WHERE d < $%[1]d), coalesce(array_agg(lat) FILTER (WHERE d >= $%[1]d), '{}'),
		coalesce(array_agg(lon) FILTER (WHERE d >= $%[1]d), '{}')
		FROM (SELECT loc[1] AS lat, loc[0] AS lon, %[3]s AS d FROM directaid_records WHERE %[4]s) m WHERE d <= $%[2]d`, n+3, n+4, hav, cond),
		args...).Scan(&inside, &lats, &lons)
	if err != nil {
		return 0, err
	}
	for i := range lats {
		if store.HaversineKm(spec.Lat, spec.Lon, lats[i], lons[i]) <= spec.RadiusKm {
			inside++
		}
	}
	return inside, nil
}

func (s *Store) aggregates(ctx context.Context, slugs []string) (map[string]*store.Aggregate, error) {
	if err := s.ready(ctx); err != nil {
		return nil, err
	}
	out := make(map[string]*store.Aggregate, len(slugs))
	for _, slug := range slugs {
		out[slug] = &store.Aggregate{Counts: map[[3]string]int{}}
	}
	// The counters (migration 0006) of every municipio (0012), summed over their shards.
	rows, err := s.db.Pool.Query(ctx, `SELECT emergency_slug, status, type, category, urgency, sum(n)::bigint, sum(people)::bigint, max(newest)
		FROM directaid_counts WHERE emergency_slug = ANY($1) AND municipio_code = '' GROUP BY 1, 2, 3, 4, 5`, slugs)
	if err != nil {
		return nil, err
	}
	var slug, status, typ, cat, urg string
	var n, people int
	var newest *time.Time
	_, err = pgx.ForEachRow(rows, []any{&slug, &status, &typ, &cat, &urg, &n, &people, &newest}, func() error {
		a := out[slug]
		if newest != nil && newest.After(a.Newest) {
			a.Newest = newest.UTC()
		}
		if n <= 0 {
			return nil
		}
		if a.Statuses == nil {
			a.Statuses = map[string]int{}
		}
		a.Statuses[status] += n
		if status == store.StatusOpen {
			a.Counts[[3]string{typ, cat, urg}] += n
			a.NeededPeople += people
		}
		return nil
	})
	return out, err
}

// Close implements store.Store: later calls fail with store.ErrClosed.
func (s *Store) Close() error {
	s.closed.Store(true)
	s.closeOnce.Do(func() { close(s.stop) })
	return nil
}

var _ store.Store = (*Store)(nil)

// DiskUsage implements store.DiskUser: the bytes of directaid's tables on the database server, by part
// (table: the rows; index; toast: large values), for the same series as Badger's files. The free space of
// the server's disk is not visible from a node: free is -1.
func (s *Store) DiskUsage() (map[string]int64, int64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), s.Timeout)
	defer cancel()
	var table, index, toast int64
	err := s.db.Pool.QueryRow(ctx, `SELECT coalesce(sum(pg_relation_size(c.oid)), 0)::bigint,
			coalesce(sum(pg_indexes_size(c.oid)), 0)::bigint,
			coalesce(sum(CASE WHEN c.reltoastrelid <> 0 THEN pg_total_relation_size(c.reltoastrelid) ELSE 0 END), 0)::bigint
		FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE c.relkind = 'r' AND n.nspname = current_schema() AND c.relname LIKE 'directaid\_%'`).Scan(&table, &index, &toast)
	if err != nil {
		return nil, -1, fail(err)
	}
	return map[string]int64{"table": table, "index": index, "toast": toast}, -1, nil
}
