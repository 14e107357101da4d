package badgerstore

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/dgraph-io/badger/v4"

	"github.com/directaid/directaid/backend/store"
)

// The cell counters (cells.go) and the word counters (words.go) are kept in memory (cellTable), so that
// publishing writes none of them: a record changes twelve cell counters (four scopes × three
// precisions) and one word counter per token, which were most of what the writer spent on it beyond the
// record and its lists, and most of its keys. What survives a crash is a journal and a checkpoint:
//
//   - Every transaction that changes counters writes one journal entry (prefixCellJournal + its batch
//     number: the changes as cellOps and wordOps, a few dozen bytes a record) and the number of the last
//     such batch (keyCellBatch), atomically with the records.
//   - Now and then the writer takes a checkpoint (takeCheckpoint), and a goroutine beside it stores the
//     counters changed since the last one (cell counters under prefixCellCount, word counters under
//     prefixVocab), each with the batch it is current as of, then deletes the journal up to that batch
//     (writeCheckpoint), while the writer goes on publishing. Neither step need be atomic: Open
//     (loadCells) applies an entry only to the counters stored as of an earlier batch, so a checkpoint
//     cut short by a crash is applied once, not twice.
//
// Reads are exact in their snapshot: a snapshot knows the last batch it sees (keyCellBatch), and the
// table keeps the changes of the batches after the oldest live snapshot's (log), which a read takes out.
var (
	prefixCellJournal = []byte("ij\x00")         // + batch (8 bytes, big-endian) → encodeJournal of its changes
	keyCellBatch      = []byte("m\x00cellbatch") // → the last batch (8 bytes, big-endian) journaled
	errCellsTooOld    = errors.New("badgerstore: the snapshot is older than the cell counters kept for it")
	errBadCellJournal = errors.New("bad cell journal entry")
)

// wordOp adds n to the word counter of stTok (a status code and a token, words.go).
type wordOp struct {
	stTok string
	n     int64
}

// wordOps are the word changes a transaction gathered (aggDelta.words), by token, none of them zero.
func wordOps(words map[string]int64) []wordOp {
	out := make([]wordOp, 0, len(words))
	for tok, n := range words {
		if n != 0 {
			out = append(out, wordOp{tok, n})
		}
	}
	slices.SortFunc(out, func(a, b wordOp) int { return strings.Compare(a.stTok, b.stTok) })
	return out
}

// cellOp counts a record n times (1 in, -1 out) in the counters of its cells in every scope.
type cellOp struct {
	slug, muni, gh string // its emergency, its municipio ("": none), its geohash of geoPrecision
	code           uint16 // cellKey of its status, type, category and urgency
	n              int64
}

// cells calls fn with each counter op changes: its scope and its cell (packCell). op.gh is a geohash of
// geoPrecision (addCells, decodeCellOps).
func (op *cellOp) cells(fn func(scope string, cell uint64)) {
	var packed [geoPrecision + 1]uint64
	for p := cellCountMin; p <= len(op.gh); p++ {
		packed[p], _ = packCell(op.gh[:p])
	}
	for _, scope := range scopesFor(op.slug, op.muni) {
		for p := cellCountMin; p <= len(op.gh); p++ {
			fn(scope, packed[p])
		}
	}
}

// geohashDigit is the value of each geohash character plus one (0: not one).
var geohashDigit = func() (d [256]uint8) {
	for i := range len(store.GeohashAlphabet) {
		d[store.GeohashAlphabet[i]] = uint8(i + 1)
	}
	return d
}()

// packCell is a cell of at most geoPrecision (< 8) characters as a number: its characters' values, 5
// bits each, then its length in 3 bits; ok is false for a name that is not a geohash cell.
func packCell(cell string) (v uint64, ok bool) {
	if len(cell) == 0 || len(cell) > geoPrecision {
		return 0, false
	}
	for i := range len(cell) {
		d := geohashDigit[cell[i]]
		if d == 0 {
			return 0, false
		}
		v = v<<5 | uint64(d-1)
	}
	return v<<3 | uint64(len(cell)), true
}

func unpackCell(v uint64) string {
	n := int(v & 7)
	b := make([]byte, n)
	v >>= 3
	for i := n - 1; i >= 0; i-- {
		b[i] = store.GeohashAlphabet[v&31]
		v >>= 5
	}
	return string(b)
}

// splitCellKey is the scope and cell of a counter's key (cellCountKey).
func splitCellKey(key []byte) (scope string, cell uint64, ok bool) {
	rest, found := bytes.CutPrefix(key, prefixCellCount)
	i := bytes.IndexByte(rest, 0)
	if !found || i < 0 {
		return "", 0, false
	}
	cell, ok = packCell(string(rest[i+1:]))
	return string(rest[:i]), cell, ok && len(rest)-i-1 >= cellCountMin
}

func cellJournalKey(batch uint64) []byte {
	return binary.BigEndian.AppendUint64(append([]byte{}, prefixCellJournal...), batch)
}

// encodeJournal is a journal entry: version 2, the cell changes, then the word changes (version 1, of
// index version 11, had no word changes).
func encodeJournal(ops []cellOp, words []wordOp) []byte {
	b := binary.AppendUvarint([]byte{2}, uint64(len(ops)))
	for _, op := range ops {
		for _, s := range []string{op.slug, op.muni, op.gh} {
			b = append(binary.AppendUvarint(b, uint64(len(s))), s...)
		}
		b = binary.AppendVarint(binary.AppendUvarint(b, uint64(op.code)), op.n)
	}
	b = binary.AppendUvarint(b, uint64(len(words)))
	for _, w := range words {
		b = binary.AppendVarint(append(binary.AppendUvarint(b, uint64(len(w.stTok))), w.stTok...), w.n)
	}
	return b
}

// journalReader reads a journal entry's parts in turn; the first fault sticks.
type journalReader struct {
	v   []byte
	bad bool
}

// fail marks the entry bad: every later read returns zero.
func (r *journalReader) fail() { r.bad, r.v = true, nil }

// skip moves past the m bytes of a varint just read, or fails when there was none (m <= 0).
func (r *journalReader) skip(m int) bool {
	if m <= 0 {
		r.fail()
		return false
	}
	r.v = r.v[m:]
	return true
}

func (r *journalReader) uvarint() uint64 {
	n, m := binary.Uvarint(r.v)
	if !r.skip(m) {
		return 0
	}
	return n
}

func (r *journalReader) varint() int64 {
	n, m := binary.Varint(r.v)
	if !r.skip(m) {
		return 0
	}
	return n
}

func (r *journalReader) str() string {
	l := r.uvarint()
	if l > uint64(len(r.v)) {
		r.fail()
		return ""
	}
	s := string(r.v[:l])
	r.v = r.v[l:]
	return s
}

// count reads a count of items and checks it against what is left (each item takes a byte at least).
func (r *journalReader) count() int {
	n := r.uvarint()
	if n > uint64(len(r.v)) {
		r.fail()
		return 0
	}
	return int(n)
}

func decodeJournal(v []byte) ([]cellOp, []wordOp, error) {
	if len(v) == 0 || (v[0] != 1 && v[0] != 2) {
		return nil, nil, errBadCellJournal
	}
	r := &journalReader{v: v[1:]}
	ops := make([]cellOp, r.count())
	for i := range ops {
		slug, muni, gh := r.str(), r.str(), r.str()
		code, n := r.uvarint(), r.varint()
		if _, ok := packCell(gh); r.bad || !ok || len(gh) < cellCountMin || slug == "" || code > 0xffff {
			return nil, nil, errBadCellJournal
		}
		ops[i] = cellOp{slug, muni, gh, uint16(code), n}
	}
	var words []wordOp
	if v[0] == 2 {
		words = make([]wordOp, r.count())
		for i := range words {
			tok, n := r.str(), r.varint()
			if r.bad || len(tok) < 2 {
				return nil, nil, errBadCellJournal
			}
			words[i] = wordOp{tok, n}
		}
	}
	if r.bad || len(r.v) != 0 {
		return nil, nil, errBadCellJournal
	}
	return ops, words, nil
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

// encodeWordCount is a word counter as stored: the batch it is current as of, then its count.
func encodeWordCount(asOf uint64, n int64) []byte {
	return binary.AppendUvarint(binary.AppendUvarint([]byte{2}, asOf), uint64(max(n, 0)))
}

func decodeWordCount(v []byte) (asOf uint64, n int64, err error) {
	r := &journalReader{}
	if len(v) > 0 && v[0] == 2 {
		r.v = v[1:]
		asOf, n = r.uvarint(), int64(r.uvarint())
	}
	if len(v) == 0 || v[0] != 2 || r.bad || len(r.v) != 0 || n < 0 {
		return 0, 0, errors.New("bad word counter")
	}
	return asOf, n, nil
}

// cellTable holds every cell counter and every word counter. The writer changes it under commitMu
// (stage, checkpoint); reads go through a cellView of their snapshot.
type cellTable struct {
	mu      sync.RWMutex
	scopes  map[string]map[uint64]*cellEntry // by scope, then by packCell
	words   map[string]*wordEntry            // by status code and token (stTok)
	batch   uint64                           // the last batch counted (committed, or in its commit)
	log     []cellBatch                      // the batches after trimmed, oldest first: what an older snapshot takes out
	trimmed uint64                           // the last batch no longer in log: a snapshot must see it
	live    map[uint64]int                   // the live snapshots, by the last batch each sees

	journaled    int // the counter updates journaled since the last checkpoint was taken (updates; the writer's, under commitMu)
	checkpointAt int // the journaled updates that call for a checkpoint (cellCheckpointUpdates; under commitMu)
}

// cellEntry is a counter in the table. One whose records are all gone stays until a checkpoint has
// stored it empty.
type cellEntry struct {
	pairs cellCount
	dirty bool // changed since the last checkpoint
}

// wordEntry is a word counter in the table; like a cellEntry, one at zero stays until a checkpoint.
type wordEntry struct {
	n     int64
	dirty bool
}

type cellBatch struct {
	batch uint64
	ops   []cellOp
	words []wordOp
}

func (b *cellBatch) changes() int { return len(b.ops) + len(b.words) }

// maxCellLog bounds the changes kept for live snapshots (about 100 bytes each): past it, the oldest go,
// and a read in a snapshot that old gets errCellsTooOld rather than a wrong count. A read counts at its
// start, so only a snapshot held by a stalled reader falls that far behind.
const maxCellLog = 1 << 18

// cellCheckpointUpdates is how many journaled counter updates (updates) call for a checkpoint: what Open
// replays at most. A record makes 14–16 (its cell change, twelve, and its share of its batch's word
// changes, which depends on how many records a batch holds), so a checkpoint comes every 130,000–150,000
// records and writes about a third of a key per record for the counters (the bench's 1M records change
// some 40,000).
var cellCheckpointUpdates = 1 << 21

// cellUpdatesPerOp is how many counters a cell change updates at most: four scopes × its precisions.
const cellUpdatesPerOp = 4 * (geoPrecision - cellCountMin + 1)

// updates is the measure of a journal entry's changes that checkpoints bound: the counter updates Open
// replays for it, each cell change counted as cellUpdatesPerOp.
func updates(ops []cellOp, words []wordOp) int { return cellUpdatesPerOp*len(ops) + len(words) }

func newCellTable() *cellTable {
	return &cellTable{scopes: map[string]map[uint64]*cellEntry{}, words: map[string]*wordEntry{}, live: map[uint64]int{},
		checkpointAt: cellCheckpointUpdates}
}

// apply counts ops and words n times (1 or -1) into the counters, marking them dirty when dirty is set.
func (t *cellTable) apply(ops []cellOp, words []wordOp, n int64, dirty bool) {
	for _, w := range words {
		t.countWord(w.stTok, w.n*n, dirty)
	}
	var last string
	var cells map[uint64]*cellEntry // last's
	for i := range ops {
		op := &ops[i]
		op.cells(func(scope string, cell uint64) {
			if cells == nil || scope != last {
				last, cells = scope, t.scopeCells(scope)
			}
			t.count(cells, cell, op.code, op.n*n, dirty)
		})
	}
}

// take counts the cell and word changes d gathered and empties them: a table that counts a whole store
// (reindex, Verify) need not hold a change per record.
func (t *cellTable) take(d *aggDelta) {
	t.apply(d.cellOps, nil, 1, false)
	d.cellOps = d.cellOps[:0]
	for tok, n := range d.words {
		t.countWord(tok, n, false)
	}
	clear(d.words)
}

// countWord adds n to the counter of stTok, marking it dirty when dirty is set (a counter at zero is
// dropped unless it is dirty).
func (t *cellTable) countWord(stTok string, n int64, dirty bool) {
	e := t.words[stTok]
	if e == nil {
		e = &wordEntry{}
		t.words[stTok] = e
	}
	e.n += n
	e.dirty = e.dirty || dirty
	if e.n == 0 && !e.dirty {
		delete(t.words, stTok)
	}
}

// wordCounts is every word counter that counts records (Verify, tests).
func (t *cellTable) wordCounts() map[string]int64 {
	out := map[string]int64{}
	for tok, e := range t.words {
		if e.n != 0 {
			out[tok] = e.n
		}
	}
	return out
}

// tokens are the tokens of the word counters (the vocabulary at Open).
func (t *cellTable) tokens() []string {
	out := make([]string, 0, len(t.words))
	for tok := range t.words {
		out = append(out, tok[1:])
	}
	return out
}

func (t *cellTable) scopeCells(scope string) map[uint64]*cellEntry {
	cells := t.scopes[scope]
	if cells == nil {
		cells = map[uint64]*cellEntry{}
		t.scopes[scope] = cells
	}
	return cells
}

// count adds n records of code to the counter of cell in cells, marking it dirty when dirty is set (a
// counter left empty is dropped unless it is dirty).
func (t *cellTable) count(cells map[uint64]*cellEntry, cell uint64, code uint16, n int64, dirty bool) {
	e := cells[cell]
	if e == nil {
		e = &cellEntry{}
		cells[cell] = e
	}
	e.pairs.add(code, n)
	e.dirty = e.dirty || dirty
	if len(e.pairs) == 0 && !e.dirty {
		delete(cells, cell)
	}
}

// get is the counter of cell in scope (nil: none).
func (t *cellTable) get(scope, cell string) cellCount {
	v, ok := packCell(cell)
	if !ok {
		return nil
	}
	if e := t.scopes[scope][v]; e != nil {
		return e.pairs
	}
	return nil
}

// all is every counter that counts records, by its key (Verify, tests).
func (t *cellTable) all() map[string]cellCount {
	out := map[string]cellCount{}
	for scope, cells := range t.scopes {
		for cell, e := range cells {
			if len(e.pairs) > 0 {
				out[string(cellCountKey(scope, unpackCell(cell)))] = slices.Clone(e.pairs)
			}
		}
	}
	return out
}

// stage journals ops and words in txn as the next batch and counts them, before txn commits: a snapshot
// taken before the commit does not see the batch (keyCellBatch) and takes it out. undo takes it back out
// when the commit fails.
func (t *cellTable) stage(txn *badger.Txn, ops []cellOp, words []wordOp) (undo func(), err error) {
	if len(ops) == 0 && len(words) == 0 {
		return func() {}, nil
	}
	b := t.batch + 1
	if err := txn.Set(cellJournalKey(b), encodeJournal(ops, words)); err != nil {
		return nil, err
	}
	if err := txn.Set(keyCellBatch, binary.BigEndian.AppendUint64(nil, b)); err != nil {
		return nil, err
	}
	t.mu.Lock()
	t.trim()
	t.apply(ops, words, 1, true)
	t.batch = b
	t.log = append(t.log, cellBatch{b, ops, words})
	t.mu.Unlock()
	t.journaled += updates(ops, words)
	return func() {
		t.mu.Lock()
		t.apply(ops, words, -1, true)
		t.batch = b - 1
		if i := len(t.log) - 1; i >= 0 && t.log[i].batch == b {
			t.log = t.log[:i]
		}
		t.mu.Unlock()
		t.journaled -= updates(ops, words)
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
		kept += b.changes()
	}
	i := 0
	for ; i < len(t.log) && (t.log[i].batch <= oldest || kept > maxCellLog); i++ {
		kept -= t.log[i].changes()
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
	t           *cellTable
	batch       uint64
	unseen      map[string]map[uint64]cellCount // what the batches after batch, up to upTo, take out
	unseenWords map[string]int64                // likewise, of the word counters
	upTo        uint64
}

func (t *cellTable) viewAt(txn *badger.Txn) (*cellView, error) {
	b, err := visibleBatch(txn)
	if err != nil {
		return nil, err
	}
	return &cellView{t: t, batch: b, upTo: b}, nil
}

// cellGetter returns what the counter of cell in scope counts in the table, and what the batches its
// view does not see add to it, taken out (nil: none); they stay valid until the read's fn returns.
type cellGetter func(scope, cell string) (base, unseen cellCount)

// read calls fn with the counters as the view sees them.
func (v *cellView) read(fn func(get cellGetter) error) error {
	t := v.t
	t.mu.RLock()
	defer t.mu.RUnlock()
	if v.batch < t.trimmed {
		return errCellsTooOld
	}
	if t.batch < v.upTo { // a batch the view took out failed to commit, and went
		v.unseen, v.unseenWords, v.upTo = nil, nil, v.batch
	}
	for _, b := range t.log {
		if b.batch <= v.upTo {
			continue
		}
		if v.unseen == nil {
			v.unseen = map[string]map[uint64]cellCount{}
		}
		for _, op := range b.ops {
			op.cells(func(scope string, cell uint64) {
				cells := v.unseen[scope]
				if cells == nil {
					cells = map[uint64]cellCount{}
					v.unseen[scope] = cells
				}
				c := cells[cell]
				c.add(op.code, -op.n)
				cells[cell] = c
			})
		}
		for _, w := range b.words {
			if v.unseenWords == nil {
				v.unseenWords = map[string]int64{}
			}
			v.unseenWords[w.stTok] -= w.n
		}
		v.upTo = b.batch
	}
	return fn(func(scope, cell string) (cellCount, cellCount) {
		var unseen cellCount
		if v.unseen != nil {
			if c, ok := packCell(cell); ok {
				unseen = v.unseen[scope][c]
			}
		}
		return t.get(scope, cell), unseen
	})
}

// wordCount is the word counter of stTok as the view sees it.
func (v *cellView) wordCount(stTok string) (n int64, err error) {
	err = v.read(func(cellGetter) error {
		if e := v.t.words[stTok]; e != nil {
			n = e.n
		}
		n += v.unseenWords[stTok]
		return nil
	})
	return n, err
}

// countIn is what the counter of cell in scope counts through get: the records that match f, and those
// that match status.
func countIn(get cellGetter, scope, cell string, f, status *filter) (matching, all int) {
	base, unseen := get(scope, cell)
	m, a := base.count(f, status)
	um, ua := unseen.count(f, status)
	return m + um, a + ua
}

// cellRef names a counter in the table.
type cellRef struct {
	scope string
	cell  uint64
}

// loadCells reads the counters as txn holds them: the stored ones, then the journal entries each has
// not counted yet.
func loadCells(txn *badger.Txn) (*cellTable, error) {
	t := newCellTable()
	asOf := map[cellRef]uint64{}
	it := txn.NewIterator(badger.IteratorOptions{Prefix: prefixCellCount, PrefetchValues: true, PrefetchSize: 256})
	for it.Rewind(); it.Valid(); it.Next() {
		scope, cell, ok := splitCellKey(it.Item().Key())
		var b uint64
		var c cellCount
		err := it.Item().Value(func(v []byte) (err error) {
			b, c, err = decodeCellCount(v)
			return err
		})
		if err == nil && !ok {
			err = fmt.Errorf("%w: not a cell counter's key", errBadAggregate)
		}
		if err != nil {
			it.Close()
			return nil, fmt.Errorf("%q: %w", it.Item().Key(), err)
		}
		asOf[cellRef{scope, cell}] = b
		if len(c) > 0 {
			t.scopeCells(scope)[cell] = &cellEntry{pairs: c}
		}
		t.batch = max(t.batch, b)
	}
	it.Close()
	wordAsOf := map[string]uint64{}
	it = txn.NewIterator(badger.IteratorOptions{Prefix: prefixVocab, PrefetchValues: true, PrefetchSize: 256})
	for it.Rewind(); it.Valid(); it.Next() {
		tok := string(it.Item().Key()[len(prefixVocab):])
		var b uint64
		var n int64
		if err := it.Item().Value(func(v []byte) (err error) { b, n, err = decodeWordCount(v); return err }); err != nil {
			it.Close()
			return nil, fmt.Errorf("%q: %w", it.Item().Key(), err)
		}
		wordAsOf[tok] = b
		if n != 0 {
			t.words[tok] = &wordEntry{n: n}
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
		var words []wordOp
		if err := it.Item().Value(func(v []byte) (err error) { ops, words, err = decodeJournal(v); return err }); err != nil {
			return nil, fmt.Errorf("%q: %w", key, err)
		}
		for _, w := range words {
			if wordAsOf[w.stTok] < b {
				t.countWord(w.stTok, w.n, true)
			}
		}
		for _, op := range ops {
			op.cells(func(scope string, cell uint64) {
				if asOf[cellRef{scope, cell}] < b { // else the checkpoint stored it counted
					t.count(t.scopeCells(scope), cell, op.code, op.n, true)
				}
			})
		}
		t.journaled += updates(ops, words)
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

// loadCounters loads the cell table and the vocabulary from the database (Open): the stored word
// counters' tokens, and those the journal holds that no checkpoint has stored yet.
func (s *Store) loadCounters() (err error) {
	if err := s.loadVocabulary(); err != nil {
		return err
	}
	err = s.db.View(func(txn *badger.Txn) error {
		s.cells, err = loadCells(txn)
		return err
	})
	if err == nil {
		s.vocab.add(s.cells.tokens())
	}
	return err
}

// viewBatch is the last batch the database holds.
func (s *Store) viewBatch() (b uint64, err error) {
	err = s.db.View(func(txn *badger.Txn) error {
		b, err = visibleBatch(txn)
		return err
	})
	return b, err
}

// cellCheckpoint is a checkpoint taken from the table (takeCheckpoint): the counters changed since the
// last one, as of batch b, for writeCheckpoint to store.
type cellCheckpoint struct {
	b    uint64
	puts []kv
}

// takeCheckpoint takes the counters (cell and word) changed since the last checkpoint, as of the last
// batch, marks them clean, and starts counting journaled updates again (commitMu held, so the last batch
// is committed). nil when nothing was journaled since.
func (t *cellTable) takeCheckpoint() *cellCheckpoint {
	if t.journaled == 0 {
		return nil
	}
	c := &cellCheckpoint{}
	t.mu.Lock()
	c.b = t.batch
	for scope, cells := range t.scopes {
		for cell, e := range cells {
			if !e.dirty {
				continue
			}
			// An empty one is stored too, so that the journal does not count it again.
			c.puts = append(c.puts, kv{cellCountKey(scope, unpackCell(cell)), encodeCellCount(c.b, e.pairs)})
			if e.dirty = false; len(e.pairs) == 0 {
				delete(cells, cell)
			}
		}
	}
	for tok, e := range t.words {
		if e.dirty {
			c.puts = append(c.puts, kv{vocabKey(tok), encodeWordCount(c.b, e.n)})
			if e.dirty = false; e.n == 0 {
				delete(t.words, tok)
			}
		}
	}
	t.mu.Unlock()
	t.journaled = 0
	return c
}

// checkpointHook, when a test sets it, runs as writeCheckpoint begins.
var checkpointHook func()

// writeCheckpoint stores c's counters, then deletes the journal up to c's batch (ckptMu held). It takes no
// lock of the writer's, which goes on publishing beside it: later batches journal their changes after
// c's batch, where it deletes nothing, and mark the counters they change dirty for the next checkpoint;
// Open applies an entry only to the counters stored as of an earlier batch. Once it fails, the store
// takes no more writes (fail): the journal it did not delete is what a restart replays.
func (s *Store) writeCheckpoint(c *cellCheckpoint) error {
	if checkpointHook != nil {
		checkpointHook()
	}
	if err := s.writeInSteps(c.puts, false); err != nil {
		return fmt.Errorf("checkpoint of the counters: %w", err)
	}
	// The journal up to c.b: every counter it changed is stored as of c.b now.
	var dels []kv
	err := s.db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: prefixCellJournal})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			k := it.Item().KeyCopy(nil)
			if binary.BigEndian.Uint64(k[len(prefixCellJournal):]) > c.b {
				break
			}
			dels = append(dels, kv{k: k})
		}
		return nil
	})
	if err = cmp.Or(err, s.writeInSteps(dels, true)); err != nil {
		return fmt.Errorf("checkpoint of the counters: %w", err)
	}
	return nil
}

// checkpointStep is how many keys a checkpoint writes in one transaction. Badger's write goroutine applies
// a transaction whole before the next, so the writer's batches wait for one step at most: written in one
// write batch, the 36,000 counters of 140,000 records held them up about as long as a checkpoint between
// batches did (docs/performance.md).
const checkpointStep = 1024

// writeInSteps puts entries, or deletes their keys (del), in transactions of checkpointStep keys.
func (s *Store) writeInSteps(entries []kv, del bool) error {
	for len(entries) > 0 {
		step := entries[:min(len(entries), checkpointStep)]
		entries = entries[len(step):]
		err := s.db.Update(func(txn *badger.Txn) error {
			for _, e := range step {
				var err error
				if del {
					err = txn.Delete(e.k)
				} else {
					err = txn.Set(e.k, e.v)
				}
				if err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// checkpointCells takes a checkpoint and writes it before it returns (Close, with commitMu held).
func (s *Store) checkpointCells() error {
	c := s.cells.takeCheckpoint()
	if c == nil {
		return nil
	}
	s.ckptMu.Lock()
	defer s.ckptMu.Unlock()
	return s.writeCheckpoint(c)
}

// checkpointBeside writes c beside the writer (a goroutine of s.wg that holds ckptMu, which it releases).
func (s *Store) checkpointBeside(c *cellCheckpoint) {
	defer s.wg.Done()
	defer s.ckptMu.Unlock()
	if c == nil {
		return
	}
	if err := s.writeCheckpoint(c); err != nil {
		s.fail(err)
	}
}
