package badgerstore

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/dgraph-io/badger/v4"
)

// The cell counters (cells.go) are kept in memory (cellTable), so that publishing writes none of them:
// a record changes twelve counters (four scopes × three precisions), which were a third of what the
// writer spent on it and most of its keys. What survives a crash is a journal and a checkpoint:
//
//   - Every transaction that changes counters writes one journal entry (prefixCellJournal + its batch
//     number: the changes as cellOps, a few dozen bytes a record) and the number of the last such
//     batch (keyCellBatch), atomically with the records.
//   - Now and then (checkpointCells) the writer stores the counters changed since the last checkpoint
//     under prefixCellCount, each with the batch it is current as of, then deletes the journal up to
//     that batch. Neither step need be atomic: Open (loadCells) applies an entry only to the counters
//     stored as of an earlier batch, so a checkpoint cut short by a crash is applied once, not twice.
//
// Reads are exact in their snapshot: a snapshot knows the last batch it sees (keyCellBatch), and the
// table keeps the changes of the batches after the oldest live snapshot's (log), which a read takes out.
var (
	prefixCellJournal = []byte("ij\x00")         // + batch (8 bytes, big-endian) → encodeCellOps of its changes
	keyCellBatch      = []byte("m\x00cellbatch") // → the last batch (8 bytes, big-endian) journaled
	errCellsTooOld    = errors.New("badgerstore: the snapshot is older than the cell counters kept for it")
	errBadCellJournal = errors.New("bad cell journal entry")
)

// cellOp counts a record n times (1 in, -1 out) in the counters of its cells in every scope.
type cellOp struct {
	slug, muni, gh string // its emergency, its municipio ("": none), its geohash of geoPrecision
	code           uint16 // cellKey of its status, type, category and urgency
	n              int64
}

// keys calls fn with the key of each counter op changes; fn must not keep key.
func (op *cellOp) keys(buf []byte, fn func(key []byte)) {
	for _, scope := range scopesFor(op.slug, op.muni) {
		k := appendCellCountKey(buf[:0], scope, "")
		for p := cellCountMin; p <= len(op.gh); p++ {
			fn(append(k, op.gh[:p]...))
		}
	}
}

func cellJournalKey(batch uint64) []byte {
	return binary.BigEndian.AppendUint64(append([]byte{}, prefixCellJournal...), batch)
}

func encodeCellOps(ops []cellOp) []byte {
	b := binary.AppendUvarint([]byte{1}, uint64(len(ops)))
	for _, op := range ops {
		for _, s := range []string{op.slug, op.muni, op.gh} {
			b = append(binary.AppendUvarint(b, uint64(len(s))), s...)
		}
		b = binary.AppendVarint(binary.AppendUvarint(b, uint64(op.code)), op.n)
	}
	return b
}

func decodeCellOps(v []byte) ([]cellOp, error) {
	if len(v) == 0 || v[0] != 1 {
		return nil, errBadCellJournal
	}
	v = v[1:]
	n, m := binary.Uvarint(v)
	if m <= 0 || n > uint64(len(v)) {
		return nil, errBadCellJournal
	}
	v = v[m:]
	ops := make([]cellOp, n)
	for i := range ops {
		var parts [3]string
		for j := range parts {
			l, m := binary.Uvarint(v)
			if m <= 0 || l > uint64(len(v)-m) {
				return nil, errBadCellJournal
			}
			parts[j], v = string(v[m:m+int(l)]), v[m+int(l):]
		}
		code, m := binary.Uvarint(v)
		if m <= 0 || code > 0xffff {
			return nil, errBadCellJournal
		}
		v = v[m:]
		c, m := binary.Varint(v)
		if m <= 0 {
			return nil, errBadCellJournal
		}
		v = v[m:]
		if len(parts[2]) < cellCountMin || len(parts[2]) > geoPrecision || parts[0] == "" {
			return nil, errBadCellJournal
		}
		ops[i] = cellOp{parts[0], parts[1], parts[2], uint16(code), c}
	}
	if len(v) != 0 {
		return nil, errBadCellJournal
	}
	return ops, nil
}

// cellCount is one counter: records per cellKey, sorted by it, none at zero.
type cellCount []cellPair

type cellPair struct {
	code uint16
	n    int64
}

func (c *cellCount) add(code uint16, n int64) {
	if n == 0 {
		return
	}
	i, found := slices.BinarySearchFunc(*c, code, func(p cellPair, code uint16) int { return int(p.code) - int(code) })
	switch {
	case !found:
		*c = slices.Insert(*c, i, cellPair{code, n})
	case (*c)[i].n+n == 0:
		*c = slices.Delete(*c, i, i+1)
	default:
		(*c)[i].n += n
	}
}

// count counts the records that match f and those that match status, as countEncoded does.
func (c cellCount) count(f, status *filter) (matching, all int) {
	for _, p := range c {
		st, t, cat, u := cellParts(p.code)
		if status.matchStatus(st) {
			all += int(p.n)
			if f.matchStatus(st) && f.matchCodes(t, cat, u) {
				matching += int(p.n)
			}
		}
	}
	return matching, all
}

// encodeCellCount is a counter as stored: the batch it is current as of, then its pairs.
func encodeCellCount(asOf uint64, c cellCount) []byte {
	b := binary.AppendUvarint(binary.AppendUvarint([]byte{2}, asOf), uint64(len(c)))
	for _, p := range c {
		b = binary.AppendVarint(binary.AppendUvarint(b, uint64(p.code)), p.n)
	}
	return b
}

func decodeCellCount(v []byte) (asOf uint64, c cellCount, err error) {
	bad := fmt.Errorf("%w: a cell counter", errBadAggregate)
	if len(v) == 0 || v[0] != 2 {
		return 0, nil, bad
	}
	v = v[1:]
	asOf, m := binary.Uvarint(v)
	if m <= 0 {
		return 0, nil, bad
	}
	v = v[m:]
	n, m := binary.Uvarint(v)
	if m <= 0 || n > uint64(len(v)) {
		return 0, nil, bad
	}
	v = v[m:]
	for range n {
		code, m := binary.Uvarint(v)
		if m <= 0 || code > 0xffff {
			return 0, nil, bad
		}
		v = v[m:]
		k, m := binary.Varint(v)
		if m <= 0 {
			return 0, nil, bad
		}
		v = v[m:]
		c.add(uint16(code), k)
	}
	if len(v) != 0 {
		return 0, nil, bad
	}
	return asOf, c, nil
}

// cellTable holds every cell counter. The writer changes it under commitMu (stage, checkpoint); reads
// go through a cellView of their snapshot.
type cellTable struct {
	mu      sync.RWMutex
	counts  map[string]*cellCount // by cellCountKey
	batch   uint64                // the last batch counted (committed, or in its commit)
	log     []cellBatch           // the batches after trimmed, oldest first: what an older snapshot takes out
	trimmed uint64                // the last batch no longer in log: a snapshot must see it
	live    map[uint64]int        // the live snapshots, by the last batch each sees

	// The writer's alone (under commitMu):
	dirty     map[string]struct{} // counters changed since the last checkpoint
	journaled int                 // cellOps journaled since the last checkpoint
}

type cellBatch struct {
	batch uint64
	ops   []cellOp
}

// maxCellLog bounds the changes kept for live snapshots (about 100 bytes each): past it, the oldest go,
// and a read in a snapshot that old gets errCellsTooOld rather than a wrong count. A read counts at its
// start, so only a snapshot held by a stalled reader falls that far behind.
const maxCellLog = 1 << 18

// cellCheckpointOps is how many journaled changes (about one per record) call for a checkpoint: about
// a third of a key per record is then written for the counters (the bench's 1M records change some
// 40,000), and Open replays at most that many.
var cellCheckpointOps = 1 << 17

func newCellTable() *cellTable {
	return &cellTable{counts: map[string]*cellCount{}, live: map[uint64]int{}, dirty: map[string]struct{}{}}
}

// apply counts ops n times (1 or -1) into the counters, marking them dirty when dirty is set.
func (t *cellTable) apply(ops []cellOp, n int64, dirty bool) {
	var buf [96]byte
	for i := range ops {
		op := &ops[i]
		op.keys(buf[:0], func(key []byte) { t.count(key, op.code, op.n*n, dirty) })
	}
}

// count adds n records of code to the counter of key, marking it dirty when dirty is set.
func (t *cellTable) count(key []byte, code uint16, n int64, dirty bool) {
	c := t.counts[string(key)]
	if c == nil {
		c = &cellCount{}
		t.counts[string(key)] = c
	}
	if c.add(code, n); len(*c) == 0 {
		delete(t.counts, string(key))
	}
	if dirty {
		t.dirty[string(key)] = struct{}{}
	}
}

// stage journals ops in txn as the next batch and counts them, before txn commits: a snapshot taken
// before the commit does not see the batch (keyCellBatch) and takes it out. undo takes it back out when
// the commit fails.
func (t *cellTable) stage(txn *badger.Txn, ops []cellOp) (undo func(), err error) {
	if len(ops) == 0 {
		return func() {}, nil
	}
	b := t.batch + 1
	if err := txn.Set(cellJournalKey(b), encodeCellOps(ops)); err != nil {
		return nil, err
	}
	if err := txn.Set(keyCellBatch, binary.BigEndian.AppendUint64(nil, b)); err != nil {
		return nil, err
	}
	t.mu.Lock()
	t.trim()
	t.apply(ops, 1, true)
	t.batch = b
	t.log = append(t.log, cellBatch{b, ops})
	t.mu.Unlock()
	t.journaled += len(ops)
	return func() {
		t.mu.Lock()
		t.apply(ops, -1, true)
		t.batch = b - 1
		if i := len(t.log) - 1; i >= 0 && t.log[i].batch == b {
			t.log = t.log[:i]
		}
		t.mu.Unlock()
		t.journaled -= len(ops)
	}, nil
}

// trim drops from log the batches every live snapshot sees, and the oldest beyond maxCellLog (mu held).
func (t *cellTable) trim() {
	oldest := t.batch
	for b := range t.live {
		oldest = min(oldest, b)
	}
	kept := 0
	for _, b := range t.log {
		kept += len(b.ops)
	}
	i := 0
	for ; i < len(t.log) && (t.log[i].batch <= oldest || kept > maxCellLog); i++ {
		kept -= len(t.log[i].ops)
		t.trimmed = t.log[i].batch
	}
	t.log = slices.Delete(t.log, 0, i)
}

// visibleBatch is the last batch txn sees.
func visibleBatch(txn *badger.Txn) (uint64, error) {
	item, err := txn.Get(keyCellBatch)
	if errors.Is(err, badger.ErrKeyNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	var b uint64
	err = item.Value(func(v []byte) error {
		if len(v) != 8 {
			return errBadCellJournal
		}
		b = binary.BigEndian.Uint64(v)
		return nil
	})
	return b, err
}

// hold registers a live snapshot that sees batch; its release calls let.
func (t *cellTable) hold(batch uint64) {
	t.mu.Lock()
	t.live[batch]++
	t.mu.Unlock()
}

func (t *cellTable) let(batch uint64) {
	t.mu.Lock()
	if t.live[batch]--; t.live[batch] <= 0 {
		delete(t.live, batch)
	}
	t.mu.Unlock()
}

// cellView reads the counters as a snapshot that sees batch does. One read uses it at a time.
type cellView struct {
	t      *cellTable
	batch  uint64
	unseen map[string]cellCount // what the batches after batch, up to upTo, take out
	upTo   uint64
}

func (t *cellTable) viewAt(txn *badger.Txn) (*cellView, error) {
	b, err := visibleBatch(txn)
	if err != nil {
		return nil, err
	}
	return &cellView{t: t, batch: b, upTo: b}, nil
}

// cellGetter returns what key counts in the table and what the batches its view does not see add to
// it, taken out (both nil: none); they stay valid until the read's fn returns.
type cellGetter func(key []byte) (base, unseen cellCount)

// read calls fn with the counters as the view sees them.
func (v *cellView) read(fn func(get cellGetter) error) error {
	t := v.t
	t.mu.RLock()
	defer t.mu.RUnlock()
	if v.batch < t.trimmed {
		return errCellsTooOld
	}
	if t.batch < v.upTo { // a batch the view took out failed to commit, and went
		v.unseen, v.upTo = nil, v.batch
	}
	for _, b := range t.log {
		if b.batch <= v.upTo {
			continue
		}
		if v.unseen == nil {
			v.unseen = map[string]cellCount{}
		}
		var buf [96]byte
		for _, op := range b.ops {
			op.keys(buf[:0], func(key []byte) {
				c := v.unseen[string(key)]
				c.add(op.code, -op.n)
				v.unseen[string(key)] = c
			})
		}
		v.upTo = b.batch
	}
	return fn(func(key []byte) (cellCount, cellCount) {
		var base cellCount
		if c := t.counts[string(key)]; c != nil {
			base = *c
		}
		return base, v.unseen[string(key)]
	})
}

// countIn is what key counts through get: the records that match f, and those that match status.
func countIn(get cellGetter, key []byte, f, status *filter) (matching, all int) {
	base, unseen := get(key)
	m, a := base.count(f, status)
	um, ua := unseen.count(f, status)
	return m + um, a + ua
}

// loadCells reads the counters as txn holds them: the stored ones, then the journal entries each has
// not counted yet.
func loadCells(txn *badger.Txn) (*cellTable, error) {
	t := newCellTable()
	asOf := map[string]uint64{}
	it := txn.NewIterator(badger.IteratorOptions{Prefix: prefixCellCount, PrefetchValues: true, PrefetchSize: 256})
	for it.Rewind(); it.Valid(); it.Next() {
		var b uint64
		var c cellCount
		err := it.Item().Value(func(v []byte) (err error) {
			b, c, err = decodeCellCount(v)
			return err
		})
		if err != nil {
			it.Close()
			return nil, fmt.Errorf("%q: %w", it.Item().Key(), err)
		}
		k := string(it.Item().Key())
		asOf[k] = b
		if len(c) > 0 {
			t.counts[k] = &c
		}
		t.batch = max(t.batch, b)
	}
	it.Close()
	it = txn.NewIterator(badger.IteratorOptions{Prefix: prefixCellJournal, PrefetchValues: true})
	defer it.Close()
	for it.Rewind(); it.Valid(); it.Next() {
		key := it.Item().Key()
		if len(key) != len(prefixCellJournal)+8 {
			return nil, fmt.Errorf("%q: %w", key, errBadCellJournal)
		}
		b := binary.BigEndian.Uint64(key[len(prefixCellJournal):])
		var ops []cellOp
		if err := it.Item().Value(func(v []byte) (err error) { ops, err = decodeCellOps(v); return err }); err != nil {
			return nil, fmt.Errorf("%q: %w", key, err)
		}
		var buf [96]byte
		for _, op := range ops {
			op.keys(buf[:0], func(key []byte) {
				if asOf[string(key)] < b { // else the checkpoint stored it counted
					t.count(key, op.code, op.n, true)
				}
			})
		}
		t.journaled += len(ops)
		t.batch = max(t.batch, b)
	}
	b, err := visibleBatch(txn)
	if err != nil {
		return nil, err
	}
	t.batch = max(t.batch, b)
	t.trimmed = t.batch
	return t, nil
}

// loadCells loads the cell table from the database (Open).
func (s *Store) loadCells() (err error) {
	return s.db.View(func(txn *badger.Txn) error {
		s.cells, err = loadCells(txn)
		return err
	})
}

// viewBatch is the last batch the database holds.
func (s *Store) viewBatch() (b uint64, err error) {
	err = s.db.View(func(txn *badger.Txn) error {
		b, err = visibleBatch(txn)
		return err
	})
	return b, err
}

// checkpointCells stores the counters changed since the last checkpoint as of the last batch, then
// deletes the journal up to it. The writer calls it between batches (commitMu held), and Close.
func (s *Store) checkpointCells() error {
	t := s.cells
	if len(t.dirty) == 0 && t.journaled == 0 {
		return nil
	}
	t.mu.RLock()
	b := t.batch
	wb := s.db.NewWriteBatch()
	defer wb.Cancel()
	var err error
	for k := range t.dirty {
		if c := t.counts[k]; c != nil {
			err = wb.Set([]byte(k), encodeCellCount(b, *c))
		} else {
			err = wb.Set([]byte(k), encodeCellCount(b, nil)) // kept, so that the journal does not count it again
		}
		if err != nil {
			break
		}
	}
	t.mu.RUnlock()
	if err = cmp.Or(err, wb.Flush()); err != nil {
		return fmt.Errorf("checkpoint of the cell counters: %w", err)
	}
	// The journal up to b: every counter it changed is stored as of b now.
	del := s.db.NewWriteBatch()
	defer del.Cancel()
	err = s.db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: prefixCellJournal})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			k := it.Item().KeyCopy(nil)
			if binary.BigEndian.Uint64(k[len(prefixCellJournal):]) > b {
				break
			}
			if err := del.Delete(k); err != nil {
				return err
			}
		}
		return nil
	})
	if err = cmp.Or(err, del.Flush()); err != nil {
		return fmt.Errorf("checkpoint of the cell counters: %w", err)
	}
	clear(t.dirty)
	t.journaled = 0
	return nil
}
