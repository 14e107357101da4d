// Package badgerstore is the embedded Store: records, their idempotency keys and the read indexes in one
// Badger database, written through a group commit.
package badgerstore

import (
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dgraph-io/badger/v4"

	"github.com/directaid/directaid/backend/store"
	"github.com/directaid/directaid/backend/store/recordjson"
)

var (
	_ store.Store     = (*Store)(nil)
	_ store.Backupper = (*Store)(nil)
)

// Key layout. The pair key length-prefixes source, so ("a|b","c") and ("a","b|c") never collide.
var (
	prefixPair   = []byte("k\x00") // + uvarint(len(source)) + source + externalId → id
	prefixRecord = []byte("r\x00") // + id → record JSON
)

func pairKey(source, externalID string) []byte {
	k := make([]byte, 0, len(prefixPair)+binary.MaxVarintLen64+len(source)+len(externalID))
	k = append(k, prefixPair...)
	k = binary.AppendUvarint(k, uint64(len(source)))
	k = append(k, source...)
	return append(k, externalID...)
}

func recordKey(id string) []byte { return append(append([]byte{}, prefixRecord...), id...) }

// Options sizes the embedded database.
type Options struct {
	Dir string
	// Logger receives Badger's own messages (never record contents); nil discards them.
	Logger badger.Logger
	// GCInterval is the period of the maintenance cycle (Maintain: erasure rewrite, value-log garbage
	// collection); 0 means DefaultMaintenanceInterval.
	GCInterval time.Duration
	// MaxTextChecks and MaxTotalTextChecks bound the records a q search reads for a page and for its
	// total (see List); 0 means 5000 and 2000. Tests lower them.
	MaxTextChecks, MaxTotalTextChecks int
	// MinFreeBytes is the free space of the disk below which writes are refused with store.ErrUnavailable
	// until space is back to it plus 10% (ops.go, diskGuard); 0 means DefaultMinFreeBytes. Open also
	// refuses, with ErrNoSpaceToOpen, a disk with less free space than opening takes (space.go). Negative:
	// neither check.
	MinFreeBytes int64
	// WriteState is told when the store starts refusing writes for want of space (with the reason) and
	// when it accepts them again (nil): once per change, not per write.
	WriteState func(refusing error)
	// Observer receives commit and GC figures; nil discards them.
	Observer store.Observer
	// Now is the clock of the updatedAt stamps (tests move it); nil means time.Now.
	Now func() time.Time
	// IDs makes the fresh id of a Create whose id another record holds; nil means store.NewIDNear.
	IDs store.IDSource

	// freeSpace reads the free bytes of the disk of a directory (tests fake a full disk); nil: freeBytes.
	freeSpace func(dir string) (int64, error)
}

// maxBatch bounds a group commit; a larger backlog simply forms the next batch.
const maxBatch = 512

// createReq is a Create, or an Update when fn is set.
type createReq struct {
	rec *store.Record
	// entries are the record's keys and values (pair key first, then the record without UpdatedAt),
	// encoded by the caller so that the single writer only checks, stamps and writes: encoding in
	// parallel keeps the serial part of a batch short.
	entries []kv
	id      string
	fn      func(*store.Record) error
	audit   store.AuditFunc // an update's audit entries, written with it (store.WithAudit)
	done    chan createRes
}

type createRes struct {
	stored  *store.Record
	created bool
	err     error
}

// Store is the embedded Store. Writes go through one goroutine that commits whatever has queued
// up as one transaction; with SyncWrites every transaction is fsynced before Badger reports it done, so a
// batch costs one sync however many publishes it holds (group commit), and a record becomes visible to
// readers only once it is durable.
type Store struct {
	vocab   vocabulary
	db      *badger.DB
	reqs    chan *createReq
	quit    chan struct{}
	stopped chan struct{} // closed when the writer has exited
	wg      sync.WaitGroup
	failMu  sync.Mutex
	failErr error
	// commitMu is held by each batch's commit, modWrite and the erasure rewrite: one write at a time.
	// A backup takes no lock a writer takes: it reads one snapshot (backup.go).
	commitMu sync.Mutex
	// ckptMu is held while a checkpoint of the counters is written (writeCheckpoint): one at a time, and
	// the erasure rewrite, which blocks Badger's writes, waits for it (after commitMu).
	ckptMu   sync.Mutex
	backups  backupState
	snap     atomic.Pointer[snapshot] // renewed after every write (renewSnapshot)
	snapMu   sync.Mutex               // orders renewals: a later write's snapshot never gives way to an earlier one
	snapDone bool                     // Close dropped the snapshot: renewals stop (under snapMu)
	dir      string
	guard    *diskGuard
	obs      store.Observer
	// erased is set when an update removed personal data since the last maintenance cycle (erase.go).
	erased  atomic.Bool
	maintMu sync.Mutex
	// lastStamp is the greatest UpdatedAt (Unix ms) written; only the writer touches it after Open.
	lastStamp int64
	now       func() time.Time
	ids       store.IDSource

	maxTextChecks, maxTotalTextChecks int
	maxWordTokens                     int // tests set it to 0 to check the path without the word index

	// disowned are the keys of the standing disownings (moderation.go), reloaded under disownMu.
	disowned atomic.Pointer[disownedKeys]
	disownMu sync.Mutex

	counters  counterCache // the writer's (index.go)
	cells     *cellTable   // the cell and word counters (cellmem.go)
	blockSeqs blockSeqs    // the word blocks' keys (postings.go)
	adv       *adviser     // Badger's tables, advised MADV_RANDOM (advise_linux.go); only gcLoop after Open
}

// snapshot is a read transaction that the reads share: Create's retry check and the readers' List, Get,
// change feeds and panorama (view). A read in a transaction of its own would take Badger's oracle lock
// and then wait, as every new Badger transaction does, for the commit in progress (a whole sync): under
// load the oracle's watermark goroutine falls behind, its channel fills, and every new transaction
// queues on the lock held by one blocked in it (the 5 km radius p99 at 16 clients: README). Every write
// renews the snapshot before it returns (the writer after each batch, modWrite, the erasure rewrite), so
// a read that follows an acknowledged write sees it. A read-only Badger transaction is used by many
// goroutines at once here: Get and iterators of a read-only Txn touch only its read timestamp and an
// atomic iterator count (Badger v4.9.6); make test runs TestSnapshotReadsConcurrent under -race.
// What a snapshot finds was committed, hence synced: SyncWrites makes a record visible only once it is
// durable. Create's retry check may miss the latest batch; a pair it does not find goes to the writer,
// which checks again in the batch's own transaction.
type snapshot struct {
	txn   *badger.Txn
	refs  atomic.Int32 // the store's reference plus one per reader; the transaction ends at zero
	cells *cellTable   // the cell counters, which keep what the snapshot does not see until it ends
	batch uint64       // the last batch of cell counters the snapshot sees (cellmem.go)
}

func (s *Store) renewSnapshot() {
	s.snapMu.Lock()
	defer s.snapMu.Unlock()
	if s.snapDone {
		return
	}
	sn := &snapshot{txn: s.db.NewTransaction(false), cells: s.cells}
	// A failed read of the marker leaves batch 0: the snapshot's cell reads then fail (errCellsTooOld),
	// as its other reads would.
	sn.batch, _ = visibleBatch(sn.txn)
	s.cells.hold(sn.batch)
	sn.refs.Store(1)
	if old := s.snap.Swap(sn); old != nil {
		old.release()
	}
}

// dropSnapshot releases the store's snapshot for good (Close): reads then get store.ErrClosed.
func (s *Store) dropSnapshot() {
	s.snapMu.Lock()
	defer s.snapMu.Unlock()
	s.snapDone = true
	if sn := s.snap.Swap(nil); sn != nil {
		sn.release()
	}
}

// view runs fn in the shared snapshot (see snapshot): the reads' View.
func (s *Store) view(fn func(txn *badger.Txn) error) error {
	sn := s.acquireSnapshot()
	if sn == nil {
		return store.ErrClosed
	}
	defer sn.release()
	return fn(sn.txn)
}

// acquireSnapshot returns the current snapshot with a reference taken, or nil once the store is closing.
func (s *Store) acquireSnapshot() *snapshot {
	for {
		sn := s.snap.Load()
		if sn == nil {
			return nil
		}
		for n := sn.refs.Load(); n > 0; n = sn.refs.Load() {
			if sn.refs.CompareAndSwap(n, n+1) {
				return sn
			}
		}
		// Released between Load and CompareAndSwap: its successor is already stored.
	}
}

func (sn *snapshot) release() {
	if sn.refs.Add(-1) == 0 {
		sn.txn.Discard()
		sn.cells.let(sn.batch)
	}
}

// badgerOptions are the options Open gives Badger.
func badgerOptions(o Options) badger.Options {
	// Sized for a small server (`make bench` measures it). Badger builds each table in memory, so memory
	// follows table sizes: 8 MB memtables (a flush holds about three times that) and 1 MB tables at every
	// level (a compaction runs a dozen table builders at once, and by default table size doubles per
	// level). Values stay in the LSM tree and its WAL (ValueThreshold ≫ a record): a failed WAL sync
	// reaches the committer, whereas Badger only logs a failed value-log sync. docs/performance.md
	// ("Badger's options for this workload") has what each value was measured against.
	opts := badger.DefaultOptions(o.Dir).
		WithSyncWrites(true).
		WithDetectConflicts(false). // one writer goroutine: nothing to conflict with
		WithLogger(o.Logger).
		WithMemTableSize(8 << 20).
		WithNumMemtables(2).
		WithBaseTableSize(1 << 20).
		WithBlockCacheSize(16 << 20).
		WithIndexCacheSize(8 << 20).
		WithValueLogFileSize(64 << 20).
		// Every level-0 table spans the whole key space (pair keys and geohashes are random), so each
		// L0 compaction rewrites the base level: merging 8 tables at a time, not 3, cuts what
		// compaction writes per record, and with it the slowdown as the DB grows. Not 16: every read
		// merges every level-0 table, Close keeps level 0, and 8 published as fast as 16 over 1M
		// records (docs/performance.md).
		WithNumLevelZeroTables(8).
		WithNumLevelZeroTablesStall(32).
		WithNumCompactors(2).
		// Levels below 0 grow tenfold from the base level, whose target is at least BaseLevelSize.
		// Badger's 10 MB made a 1.3 GB database four levels (10, 10, 110 and 1,100 MB), the first two
		// holding alike and each rewriting every byte on its way down; 128 MB makes it two (127 and
		// 1,109 MB): over 1M records about 11% more publications a second, and lists a quarter faster.
		WithBaseLevelSize(128 << 20).
		// Level 0 stays as it is at Close (see settleCompactions): compacting it there pushed the base
		// level over its target, and the restart owed the compactions below it.
		WithCompactL0OnClose(false)
	opts.TableSizeMultiplier = 1
	if o.Logger == nil {
		opts = opts.WithLogger(nil)
	}
	return opts
}

// Open opens (or creates) the database in o.Dir.
func Open(o Options) (*Store, error) {
	if err := removeEmptyMemtables(o.Dir, o.Logger); err != nil {
		return nil, fmt.Errorf("open badger at %s: %w", o.Dir, err)
	}
	opts := badgerOptions(o)
	if o.MinFreeBytes >= 0 {
		if err := checkOpenSpace(o.Dir, openSpace(opts), o.freeSpace); err != nil {
			return nil, err
		}
	}
	preloadTableTails(o.Dir) // Open reads every table's index: 64 KB each, not read-around (advise_linux.go)
	db, err := badger.Open(opts)
	if err != nil {
		return nil, fmt.Errorf("open badger at %s: %w", o.Dir, err)
	}
	s := &Store{db: db, reqs: make(chan *createReq, maxBatch), quit: make(chan struct{}), stopped: make(chan struct{}),
		maxTextChecks: cmp.Or(o.MaxTextChecks, maxTextChecks), maxTotalTextChecks: cmp.Or(o.MaxTotalTextChecks, maxTotalTextChecks), maxWordTokens: maxWordTokens,
		dir: o.Dir, guard: newDiskGuard(o.Dir, cmp.Or(o.MinFreeBytes, DefaultMinFreeBytes), o.freeSpace, o.WriteState), obs: o.Observer, now: o.Now}
	if s.now == nil {
		s.now = time.Now
	}
	if s.ids = o.IDs; s.ids == nil {
		s.ids = store.NewIDNear
	}
	if err := cmp.Or(s.ensureIndexes(), s.loadCounters(), s.loadDisowned()); err != nil {
		_ = db.Close()
		return nil, err
	}
	if s.lastStamp, err = lastChange(db); err != nil {
		_ = db.Close()
		return nil, err
	}
	s.adv = newAdviser(o.Dir)
	_, _ = s.adv.advise() // the tables Open mapped; advice is a hint, a failure costs only read-around
	s.renewSnapshot()
	// A start on a disk short of space says so now (WriteState), not at the first write: the node serves
	// reads, and readiness says why it takes no writes.
	_ = s.guard.check(true)
	s.wg.Add(2)
	go s.writer()
	gc := o.GCInterval
	if gc <= 0 {
		gc = DefaultMaintenanceInterval
	}
	go s.gcLoop(gc)
	return s, nil
}

// refused counts a write that the disk guard refused (store.Observer) and returns the guard's reason.
func (s *Store) refused(err error) error {
	if s.obs != nil {
		s.obs.ObserveWriteRefused()
	}
	return err
}

func (s *Store) failure() error {
	s.failMu.Lock()
	defer s.failMu.Unlock()
	return s.failErr
}

// Create implements Store.
func (s *Store) Create(ctx context.Context, rec *store.Record) (*store.Record, bool, error) {
	return s.CreateCompleting(ctx, rec, nil)
}

// CreateCompleting implements store.Completer: complete runs after the pair's read found no record.
func (s *Store) CreateCompleting(ctx context.Context, rec *store.Record, complete func(*store.Record)) (*store.Record, bool, error) {
	if rec.EmergencySlug == "" { // an Update cannot take it away (store.ErrImmutable)
		return nil, false, errNoEmergency
	}
	if err := s.failure(); err != nil {
		return nil, false, err
	}
	if err := s.guard.check(false); err != nil {
		// A retry of a stored record is still answered: it writes nothing.
		if existing, gerr := s.getByPairSnapshot(rec.Source, rec.ExternalID); gerr == nil {
			return existing, false, nil
		}
		return nil, false, s.refused(err)
	}
	// Retries are common (flaky mobile networks): answer them from a read, without the writer.
	if existing, err := s.getByPairSnapshot(rec.Source, rec.ExternalID); err == nil {
		return existing, false, nil
	} else if !errors.Is(err, store.ErrNotFound) {
		if s.db.IsClosed() { // Badger does not wrap ErrDBClosed; a shutdown answers 503 (retry), not 500
			return nil, false, store.ErrClosed
		}
		return nil, false, err
	}
	if complete != nil {
		complete(rec)
	}
	if rec.Status == "" {
		rec.Status = store.StatusOpen
	}
	rec.UpdatedAt = time.Time{} // the writer stamps it
	entries, err := createEntries(rec)
	if err != nil {
		return nil, false, err
	}
	return s.submit(ctx, &createReq{rec: rec, entries: entries, done: make(chan createRes, 1)})
}

// createEntries are the keys and values of a new record without UpdatedAt: its pair key first, then the
// record, then its index entries.
func createEntries(rec *store.Record) ([]kv, error) {
	val, err := recordjson.Encode(rec)
	if err != nil {
		return nil, err
	}
	return append([]kv{{pairKey(rec.Source, rec.ExternalID), []byte(rec.ID)}, {recordKey(rec.ID), val}}, indexEntries(rec)...), nil
}

// maxIDTries bounds how many ids a Create tries: an id source that keeps giving taken ids is a bug, and
// the Create fails rather than loop.
const maxIDTries = 64

// freeID gives rec (not yet stamped) an id no record of txn holds — its own unless taken, else fresh ones
// from the id source — and returns its entries (entries when its id was free). The check reads txn,
// which sees the writes of its own batch too, so two Creates of one batch never share an id either.
func (s *Store) freeID(txn *badger.Txn, rec *store.Record, entries []kv) ([]kv, error) {
	for try := 0; ; try++ {
		_, err := txn.Get(recordKey(rec.ID))
		if errors.Is(err, badger.ErrKeyNotFound) {
			if try == 0 {
				return entries, nil
			}
			return createEntries(rec)
		}
		if err != nil {
			return nil, err
		}
		if try == maxIDTries {
			return nil, fmt.Errorf("badgerstore: %d ids in a row were taken (last %s)", maxIDTries, rec.ID)
		}
		rec.ID = s.ids(rec.CreatedAt, rec.Latitude, rec.Longitude)
	}
}

// Update implements Store.
func (s *Store) Update(ctx context.Context, id string, fn func(*store.Record) error) (*store.Record, error) {
	if err := s.failure(); err != nil {
		return nil, err
	}
	if err := s.guard.check(false); err != nil {
		return nil, s.refused(err)
	}
	erased := false
	track := func(r *store.Record) error {
		old := *r
		if err := fn(r); err != nil {
			return err
		}
		erased = erasesPersonal(&old, r)
		return nil
	}
	rec, _, err := s.submit(ctx, &createReq{id: id, fn: track, audit: store.AuditOf(ctx), done: make(chan createRes, 1)})
	if err == nil && erased {
		s.noteErasure()
	}
	return rec, err
}

// submit queues req for the writer and waits for its outcome.
func (s *Store) submit(ctx context.Context, req *createReq) (*store.Record, bool, error) {
	select {
	case s.reqs <- req:
	case <-s.quit:
		return nil, false, store.ErrClosed
	case <-ctx.Done():
		return nil, false, ctx.Err()
	}
	// Once queued, wait for the outcome even if the client went away: the write may happen.
	select {
	case res := <-req.done:
		return res.stored, res.created, res.err
	case <-s.stopped:
		select {
		case res := <-req.done:
			return res.stored, res.created, res.err
		default:
			return nil, false, store.ErrClosed
		}
	}
}

func (s *Store) writer() {
	defer s.wg.Done()
	defer close(s.stopped)
	batch := make([]*createReq, 0, maxBatch)
	for {
		select {
		case r := <-s.reqs:
			batch = append(batch[:0], r)
		case <-s.quit:
			// Answer what is still queued so no caller waits forever.
			for {
				select {
				case r := <-s.reqs:
					r.done <- createRes{err: store.ErrClosed}
				default:
					return
				}
			}
		}
	drain:
		for len(batch) < maxBatch {
			select {
			case r := <-s.reqs:
				batch = append(batch, r)
			default:
				break drain
			}
		}
		s.commit(batch)
	}
}

// commit writes one batch in as few transactions as Badger's size limit allows, then answers every waiter.
func (s *Store) commit(batch []*createReq) {
	res := make([]createRes, len(batch))
	err := s.failure()
	began := time.Now()
	s.commitMu.Lock()
	for start := 0; start < len(batch) && err == nil; {
		var n int
		n, err = s.commitTxn(batch[start:], res[start:])
		start += n
	}
	s.commitMu.Unlock()
	if err == nil && s.obs != nil {
		s.obs.ObserveCommit(len(batch), time.Since(began))
	}
	if err != nil {
		s.fail(err)
		for i := range res {
			res[i] = createRes{err: err}
		}
	}
	s.renewSnapshot()
	for i, r := range batch {
		r.done <- res[i]
	}
	if err == nil { // after the answers; a checkpoint is written beside the next batches, which do not wait for it
		s.commitMu.Lock()
		if s.cells.journaled >= s.cells.checkpointAt && s.ckptMu.TryLock() {
			s.wg.Add(1) // the writer's own count keeps Close's Wait from ending first
			go s.checkpointBeside(s.cells.takeCheckpoint())
		}
		s.commitMu.Unlock()
	}
}

// fail records that the disk refused a write or a sync: what Badger holds may not be durable. The store
// refuses every write from then on rather than acknowledge a record that a crash could lose.
func (s *Store) fail(err error) {
	s.failMu.Lock()
	if s.failErr == nil {
		s.failErr = fmt.Errorf("store failed: %w", err)
	}
	s.failMu.Unlock()
}

// commitTxn commits a prefix of reqs in one transaction and reports how many it took.
//
// Every record it writes gets an UpdatedAt after lastStamp: transactions commit one after another, so a
// reader's snapshot never lacks a change older than one it sees (the change feed relies on it).
func (s *Store) commitTxn(reqs []*createReq, res []createRes) (int, error) {
	txn := s.db.NewTransaction(true)
	defer txn.Discard()
	// The record, its pair key and its index entries go in together or not at all (index.go).
	w := newIndexWriter(s)
	floor := max(s.now().UnixMilli(), s.lastStamp+1)
	top := s.lastStamp
	stamp := func(rec *store.Record, at time.Time) {
		ms := max(floor, at.UnixMilli())
		rec.UpdatedAt = time.UnixMilli(ms).UTC()
		top = max(top, ms)
	}
	n := 0
	for i, r := range reqs {
		if r.fn != nil {
			old, err := getTxn(txn, r.id)
			if errors.Is(err, store.ErrNotFound) {
				res[i] = createRes{err: err}
				n++
				continue
			}
			if err != nil {
				return n, err
			}
			rec, err := store.ApplyUpdate(old, r.fn)
			if err != nil {
				res[i] = createRes{err: err}
				n++
				continue
			}
			stamp(rec, rec.UpdatedAt)
			val, err := recordjson.Encode(rec)
			if err != nil {
				return n, err
			}
			entries := append(append([]kv{{recordKey(rec.ID), val}}, indexEntries(rec)...), changeEntries(rec)...)
			if r.audit != nil { // in the same transaction as the change, and in its size
				audit, err := auditEntries(txn, r.audit.Entries(old, rec))
				if err != nil {
					return n, err
				}
				entries = append(entries, audit...)
			}
			ok, err := w.replace(txn, old, rec, entries)
			if err != nil {
				return n, err
			}
			if !ok {
				break
			}
			res[i] = createRes{stored: rec}
			n++
			continue
		}
		existing, err := getByPairTxn(txn, r.entries[0].k)
		if err == nil {
			res[i] = createRes{stored: existing}
			n++
			continue
		}
		if !errors.Is(err, store.ErrNotFound) {
			return n, err
		}
		// Never an overwrite: a record whose id another holds gets a fresh one here.
		rec := *r.rec
		entries, err := s.freeID(txn, &rec, r.entries)
		if err != nil {
			res[i] = createRes{err: err}
			n++
			continue
		}
		stamp(&rec, rec.CreatedAt)
		// The record was encoded without UpdatedAt: add it as the last member.
		val := entries[1].v
		val = append(append(val[:len(val)-1:len(val)-1], `,"updatedAt":"`...), rec.UpdatedAt.Format(time.RFC3339Nano)+`"}`...)
		entries = append(slices.Clone(entries), changeEntries(&rec)...)
		entries[1].v = val
		ok, err := w.put(txn, &rec, entries)
		if err != nil {
			return n, err
		}
		if !ok {
			break // commit what fits; the rest goes in the next transaction
		}
		r.rec.ID, r.rec.UpdatedAt = rec.ID, rec.UpdatedAt
		res[i] = createRes{stored: r.rec, created: true}
		n++
	}
	return n, s.commitRecords(txn, w, top)
}

// commitRecords writes the counters w gathered and commits txn; top becomes the last stamp.
func (s *Store) commitRecords(txn *badger.Txn, w *indexWriter, top int64) error {
	cached, err := w.finish(txn)
	if err != nil {
		return err
	}
	undo, err := s.cells.stage(txn, w.agg.cellOps, wordOps(w.agg.words))
	if err != nil {
		return err
	}
	// Before the commit: a reader may see a token without its postings, never the reverse.
	s.vocab.add(w.agg.tokens())
	if err := txn.Commit(); err != nil {
		undo()
		return err
	}
	cached()
	s.lastStamp = top
	return nil
}

// lastChange is the greatest UpdatedAt (Unix ms) in the change index, 0 when it is empty.
func lastChange(db *badger.DB) (int64, error) {
	var last int64
	p := partitionPrefix(prefixChange, allPartition)
	err := db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: p, Reverse: true})
		defer it.Close()
		it.Seek(append(slices.Clone(p), 0xff))
		if it.ValidForPrefix(p) {
			last = int64(binary.BigEndian.Uint64(it.Item().Key()[len(p):]))
		}
		return nil
	})
	return last, err
}

func getByPairTxn(txn *badger.Txn, pk []byte) (*store.Record, error) {
	item, err := txn.Get(pk)
	if errors.Is(err, badger.ErrKeyNotFound) {
		return nil, store.ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	id, err := item.ValueCopy(nil)
	if err != nil {
		return nil, err
	}
	rec, err := getTxn(txn, string(id))
	if errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("pair index points to missing record %s", id)
	}
	return rec, err
}

func getTxn(txn *badger.Txn, id string) (*store.Record, error) {
	item, err := txn.Get(recordKey(id))
	if errors.Is(err, badger.ErrKeyNotFound) {
		return nil, store.ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	var rec *store.Record
	err = item.Value(func(v []byte) (err error) { rec, err = recordjson.Decode(v); return err })
	return rec, err
}

// getByPairSnapshot looks the pair up in the shared snapshot (see snapshot).
func (s *Store) getByPairSnapshot(source, externalID string) (rec *store.Record, err error) {
	err = s.view(func(txn *badger.Txn) error {
		rec, err = getByPairTxn(txn, pairKey(source, externalID))
		return err
	})
	return rec, err
}

// Lookup implements Store.
func (s *Store) Lookup(_ context.Context, source, externalID string) (*store.Record, error) {
	return s.getByPairSnapshot(source, externalID)
}

// Get implements Store.
func (s *Store) Get(_ context.Context, id string) (rec *store.Record, err error) {
	err = s.view(func(txn *badger.Txn) error {
		rec, err = getTxn(txn, id)
		return err
	})
	return rec, err
}

// adviseEvery is how often the tables that flushes and compactions mapped since are advised.
const adviseEvery = 10 * time.Second

func (s *Store) gcLoop(every time.Duration) {
	defer s.wg.Done()
	t := time.NewTicker(every)
	defer t.Stop()
	adv := time.NewTicker(adviseEvery)
	defer adv.Stop()
	for {
		select {
		case <-adv.C:
			_, _ = s.adv.advise()
		case <-t.C:
			_ = s.Maintain(context.Background()) // a failed erasure rewrite is retried next cycle
		case <-s.quit:
			return
		}
	}
}

// Close stops the writer, answers queued callers with store.ErrClosed and closes the database.
func (s *Store) Close() error {
	select {
	case <-s.quit:
		return nil
	default:
	}
	close(s.quit)
	s.wg.Wait()
	s.backups.reading.Lock() // for good: the backups' reads of Badger end, later ones find it closed
	s.dropSnapshot()
	s.blockSeqs.release()
	var err error
	if s.failure() == nil {
		s.commitMu.Lock()
		err = s.checkpointCells() // a restart then replays no journal
		s.commitMu.Unlock()
	}
	settleCompactions(s.db, closeSettleMax)
	return errors.Join(err, s.db.Close())
}

// closeSettleMax bounds how long Close waits for Badger's pending compactions.
const closeSettleMax = 10 * time.Second

// settleCompactions waits, at most limit, until Badger has no level left to compact, so that a restart
// owes none: those compactions read whole tables, in 4 KB faults (MADV_RANDOM, advise_linux.go) from a
// cold page cache, and took the disk and a core from the first reads for tens of seconds. Before Close
// the tables are still cached.
func settleCompactions(db *badger.DB, limit time.Duration) {
	for deadline := time.Now().Add(limit); compactionPending(db) && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
	}
}

// compactionPending says whether Badger has a level to compact: Levels gives a Score only to the levels
// it would compact (size over target, or too many level-0 tables), and keeps it while they compact.
func compactionPending(db *badger.DB) bool {
	for _, l := range db.Levels() {
		if l.Score >= 1 {
			return true
		}
	}
	return false
}
