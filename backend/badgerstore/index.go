package badgerstore

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"

	"github.com/dgraph-io/badger/v4"

	"github.com/directaid/directaid/backend/store"
	"github.com/directaid/directaid/schema"
)

// Secondary indexes of the read side. They are written in the same transaction as the record (see
// commitTxn), so a reader never sees a record without its index entries or the reverse.
//
// Index keys end in the record id with every byte inverted: ids sort by creation time, so a forward
// scan (Badger's fast direction) yields newest first, and "after this id" is a plain Seek. The time, kind
// and geographic indexes are partitioned by status (a list reads one status); the change index holds
// every status, ordered by UpdatedAt, and an update moves a record's entry to its new time.
var (
	prefixTime   = []byte("it\x00") // + status code + partition (or municipioPartition) + 0x00 + inv(id) → summary
	prefixKind   = []byte("ik\x00") // + status code + partition + 0x00 + type code + category code + inv(id) → summary
	prefixGeo    = []byte("ig\x00") // + status code + geohash(geoPrecision) + inv(id) → summary
	prefixText   = []byte("ix\x00") // + id → the seq of the record's word blocks (8 bytes, postings.go), then its folded title and description, for q
	prefixAgg    = []byte("ia\x00") // + slug → aggregate of every record of the emergency
	prefixMuni   = []byte("im\x00") // + scopeOf(slug or "", municipio code) → aggregate of the municipio's records (of the emergency)
	prefixChange = []byte("ic\x00") // + partition + 0x00 + uint64 BE updatedAt ms + id → status, type, category, urgency codes
	prefixExpiry = []byte("io\x00") // + uint64 BE expiresAt ms + id → nothing; open records that expire only
	// prefixHour held hourly aggregates (index version 2); a reindex drops them.
	prefixHour = []byte("ih\x00")
	// keyIndexVersion marks that every record is indexed (set by the backfill of older databases).
	keyIndexVersion = []byte("m\x00index")
)

const (
	indexVersion = "12" // 12: word counters in memory, in the cell counters' journal and checkpoints; 11: cell counters in memory, with a journal and checkpoints; 10: word postings in blocks; 9: cell counters per emergency, municipio and both, aggregates per municipio; 8: no postings or counters for function words, change entries without the summary; 7: the expiry index off "ie", the cell counters' prefix it shared in 6; 6: the expiry index; 5: counters per geohash cell; 4: the word index of q; 3: statuses and the change index; 2: geographic index keyed by 6-character geohashes
	// allPartition is the partition of the time and kind indexes that holds every emergency; slugs are
	// [a-z0-9-], so it cannot collide with one.
	allPartition = "*"
)

// statusCode is the position of a status in store.Statuses (which only grows at the end).
func statusCode(st string) uint8 {
	if i := slices.Index(store.Statuses, st); i >= 0 {
		return uint8(i)
	}
	return 0
}

// statusPart is the partition of the time and kind indexes for one status and one emergency (or all):
// the status code is always one byte, so it cannot run into the slug.
func statusPart(st uint8, partition string) string { return string(rune('0'+st)) + partition }

func geoPrefix(st uint8) []byte { return append(slices.Clone(prefixGeo), '0'+st) }

// changeKey is the key of a record's entry in the change index of partition.
func changeKey(partition string, updated int64, id string) []byte {
	k := binary.BigEndian.AppendUint64(partitionPrefix(prefixChange, partition), uint64(updated))
	return append(k, id...)
}

// changeEntries are the change index entries of rec as stored (UpdatedAt set). The feed filters by
// status, type, category and urgency only (the emergency is the partition), so that is all they hold.
func changeEntries(rec *store.Record) []kv {
	v := []byte{statusCode(rec.Status), typeCode(rec.Type), catCode(rec.Category), urgCode(rec.Urgency)}
	ms := rec.UpdatedAt.UnixMilli()
	return []kv{{changeKey(allPartition, ms, rec.ID), v}, {changeKey(rec.EmergencySlug, ms, rec.ID), v}}
}

func invID(id string) []byte {
	b := []byte(id)
	for i := range b {
		b[i] = ^b[i]
	}
	return b
}

func idFromInv(b []byte) string {
	out := make([]byte, len(b))
	for i, c := range b {
		out[i] = ^c
	}
	return string(out)
}

func partitionPrefix(base []byte, partition string) []byte {
	k := make([]byte, 0, len(base)+len(partition)+1+2+16)
	k = append(k, base...)
	k = append(k, partition...)
	return append(k, 0)
}

// municipioPartition is the time-index partition of a DIVIPOLA municipio's records: "@" cannot start a
// slug, nor is it allPartition.
func municipioPartition(code string) string { return "@" + code }

func kindPrefix(partition string, typ, cat uint8) []byte {
	return append(partitionPrefix(prefixKind, partition), typ, cat)
}

// Codes of the enumerations in summaries and aggregates. Codes are positions in the schema's lists, which
// only ever grow at the end.
func typeCode(t string) uint8 {
	if t == schema.TypeOffer {
		return 1
	}
	return 0
}

func typeName(c uint8) string {
	if c == 1 {
		return schema.TypeOffer
	}
	return schema.TypeRequest
}

func catCode(c string) uint8 {
	if i := slices.Index(schema.Categories, c); i >= 0 {
		return uint8(i)
	}
	return uint8(len(schema.Categories) - 1) // "otro"; validation makes this unreachable
}

func categoryName(c uint8) string {
	if int(c) < len(schema.Categories) {
		return schema.Categories[c]
	}
	return "otro"
}

func urgencyName(u uint8) string {
	if u >= 1 && int(u) <= len(schema.Urgencies) {
		return schema.Urgencies[u-1]
	}
	return ""
}

// urgCode is 0 for none (offers), else 1 + the position in schema.Urgencies.
func urgCode(u string) uint8 {
	return uint8(slices.Index(schema.Urgencies, u) + 1)
}

// entry is what an index value holds about a record: enough to filter and measure distance without
// reading the record.
type entry struct {
	id       string
	typ, cat uint8
	urg      uint8
	hasLoc   bool
	lat, lon float64
	slug     string
	dist     float64 // set by radius queries
}

func summaryOf(rec *store.Record) []byte {
	b := make([]byte, 0, 22+len(rec.EmergencySlug))
	var flags byte
	if rec.Latitude != nil && rec.Longitude != nil {
		flags = 1
	}
	b = append(b, 1, typeCode(rec.Type), catCode(rec.Category), urgCode(rec.Urgency), flags)
	if flags == 1 {
		b = binary.BigEndian.AppendUint64(b, math.Float64bits(*rec.Latitude))
		b = binary.BigEndian.AppendUint64(b, math.Float64bits(*rec.Longitude))
	}
	b = append(b, byte(len(rec.EmergencySlug)))
	return append(b, rec.EmergencySlug...)
}

func decodeSummary(id string, v []byte) (entry, error) {
	e := entry{id: id}
	if len(v) < 6 || v[0] != 1 {
		return e, fmt.Errorf("index entry of %s: bad summary", id)
	}
	e.typ, e.cat, e.urg, e.hasLoc = v[1], v[2], v[3], v[4] == 1
	v = v[5:]
	if e.hasLoc {
		if len(v) < 17 {
			return e, fmt.Errorf("index entry of %s: short summary", id)
		}
		e.lat = math.Float64frombits(binary.BigEndian.Uint64(v))
		e.lon = math.Float64frombits(binary.BigEndian.Uint64(v[8:]))
		v = v[16:]
	}
	if int(v[0]) != len(v)-1 {
		return e, fmt.Errorf("index entry of %s: bad slug", id)
	}
	e.slug = string(v[1:])
	return e, nil
}

type kv struct{ k, v []byte }

// indexEntries are the index keys of a record, but for the change index (changeEntries), whose key
// depends on UpdatedAt, set only when the record is written.
func indexEntries(rec *store.Record) []kv {
	sum := summaryOf(rec)
	inv := invID(rec.ID)
	st := statusCode(rec.Status)
	out := make([]kv, 0, 8)
	for _, p := range []string{allPartition, rec.EmergencySlug} {
		out = append(out,
			kv{append(partitionPrefix(prefixTime, statusPart(st, p)), inv...), sum},
			kv{append(kindPrefix(statusPart(st, p), typeCode(rec.Type), catCode(rec.Category)), inv...), sum})
	}
	if rec.MunicipioCode != "" {
		out = append(out, kv{append(partitionPrefix(prefixTime, statusPart(st, municipioPartition(rec.MunicipioCode))), inv...), sum})
	}
	if rec.Latitude != nil && rec.Longitude != nil {
		k := append(append(geoPrefix(st), geohash(*rec.Latitude, *rec.Longitude, geoPrecision)...), inv...)
		out = append(out, kv{k, sum})
	}
	if k := expiryKey(rec); k != nil {
		out = append(out, kv{k, nil})
	}
	text := store.SearchText(rec)
	// The seq of the record's word blocks is the writer's to set (indexWriter.write and replace); 0 until then.
	out = append(out, kv{append(slices.Clone(prefixText), rec.ID...), append(make([]byte, blockSeqLen, blockSeqLen+len(text)), text...)})
	return append(out, wordEntries(st, text, sum, inv)...)
}

// aggregate counts records by status × type × category × urgency, with the people needed by open
// requests and the newest creation time. In a delta, counts may be negative (a record changed status).
type aggregate struct {
	cells  map[uint16]int64
	people int64
	newest int64 // Unix ms
}

func cellKey(st, typ, cat, urg uint8) uint16 {
	return uint16(st)<<10 | uint16(typ)<<9 | uint16(cat)<<3 | uint16(urg)
}

func cellParts(k uint16) (st, typ, cat, urg uint8) {
	return uint8(k >> 10), uint8(k >> 9 & 1), uint8(k >> 3 & 63), uint8(k & 7)
}

// counted is what an aggregate counts of a record, worked out once for every counter it goes into.
type counted struct {
	cell    uint16
	people  int64 // the people an open request needs, else 0
	created int64 // Unix ms
}

func countOf(rec *store.Record) counted {
	c := counted{cell: cellKey(statusCode(rec.Status), typeCode(rec.Type), catCode(rec.Category), urgCode(rec.Urgency)),
		created: rec.CreatedAt.UnixMilli()}
	if rec.Type == schema.TypeRequest && rec.Status == store.StatusOpen && rec.NeededPeople != nil && *rec.NeededPeople > 0 {
		c.people = int64(*rec.NeededPeople)
	}
	return c
}

// addCounted counts a record n times (n = -1 takes it out).
func (a *aggregate) addCounted(c counted, n int64) {
	if a.cells == nil {
		a.cells = map[uint16]int64{}
	}
	a.cells[c.cell] += n
	a.people += c.people * n
	if n > 0 {
		a.newest = max(a.newest, c.created)
	}
}

func (a *aggregate) merge(b *aggregate) {
	if a.cells == nil {
		a.cells = map[uint16]int64{}
	}
	for k, n := range b.cells {
		if a.cells[k] += n; a.cells[k] == 0 {
			delete(a.cells, k)
		}
	}
	a.people += b.people
	a.newest = max(a.newest, b.newest)
}

// count sums the cells that match the filters.
func (a *aggregate) count(f *filter) int {
	n := 0
	for k, c := range a.cells {
		st, t, cat, u := cellParts(k)
		if f.matchStatus(st) && f.matchCodes(t, cat, u) {
			n += int(c)
		}
	}
	return n
}

func (a *aggregate) encode() []byte {
	keys := slices.Sorted(func(yield func(uint16) bool) {
		for k := range a.cells {
			if !yield(k) {
				return
			}
		}
	})
	b := []byte{1}
	b = binary.AppendUvarint(b, uint64(max(a.people, 0)))
	b = binary.AppendVarint(b, a.newest)
	b = binary.AppendUvarint(b, uint64(len(keys)))
	for _, k := range keys {
		b = binary.AppendUvarint(b, uint64(k))
		b = binary.AppendUvarint(b, uint64(max(a.cells[k], 0)))
	}
	return b
}

func decodeAggregate(v []byte) (*aggregate, error) {
	bad := errors.New("bad aggregate")
	if len(v) == 0 || v[0] != 1 {
		return nil, bad
	}
	v = v[1:]
	a := &aggregate{cells: map[uint16]int64{}}
	var n, k, c, people uint64
	var m int
	if people, m = binary.Uvarint(v); m <= 0 {
		return nil, bad
	}
	a.people = int64(people)
	v = v[m:]
	if a.newest, m = binary.Varint(v); m <= 0 {
		return nil, bad
	}
	v = v[m:]
	if n, m = binary.Uvarint(v); m <= 0 {
		return nil, bad
	}
	v = v[m:]
	for range n {
		if k, m = binary.Uvarint(v); m <= 0 {
			return nil, bad
		}
		v = v[m:]
		if c, m = binary.Uvarint(v); m <= 0 {
			return nil, bad
		}
		v = v[m:]
		a.cells[uint16(k)] = int64(c)
	}
	return a, nil
}

func getAggregate(txn *badger.Txn, key []byte) (*aggregate, error) {
	item, err := txn.Get(key)
	if errors.Is(err, badger.ErrKeyNotFound) {
		return &aggregate{cells: map[uint16]int64{}}, nil
	}
	if err != nil {
		return nil, err
	}
	var a *aggregate
	err = item.Value(func(v []byte) error {
		a, err = decodeAggregate(v)
		return err
	})
	return a, err
}

// aggDelta collects the aggregate changes of one transaction, written once per key at its end.
type aggDelta struct {
	all   map[string]*aggregate // per emergency slug
	munis map[string]*aggregate // per municipio and per (emergency, municipio), by key
	words map[string]int64      // records per status and token (words.go)
	// cellOps are the changes of the cell counters (cells.go), which the cell table journals (cellmem.go).
	cellOps []cellOp
}

func (d *aggDelta) add(rec *store.Record, n int64) {
	d.addCounters(rec, n)
	d.addWords(rec, n)
}

// addCounters counts rec n times in every counter but the word counters.
func (d *aggDelta) addCounters(rec *store.Record, n int64) {
	if d.all == nil {
		d.all = map[string]*aggregate{}
	}
	c := countOf(rec)
	slug := rec.EmergencySlug
	if d.all[slug] == nil {
		d.all[slug] = &aggregate{}
	}
	d.all[slug].addCounted(c, n)
	if rec.MunicipioCode != "" {
		if d.munis == nil {
			d.munis = map[string]*aggregate{}
		}
		for _, scope := range []string{scopeOf("", rec.MunicipioCode), scopeOf(slug, rec.MunicipioCode)} {
			addKeyed(d.munis, muniKey(scope), c, n)
		}
	}
	d.addCells(rec, c, n)
}

// counterCache holds the aggregates as last committed, so that a batch adds its deltas without reading
// them back from the LSM tree. Only the writer goroutine uses it (every aggregate write goes through
// commitTxn once the store is open); a miss reads the stored value.
type counterCache struct {
	aggs map[string][]byte // key → encoded aggregate
}

// maxCachedCounters bounds the cache to a few MB (an emergency's aggregate and two per municipio);
// past it, it starts over empty and refills from reads.
const maxCachedCounters = 1 << 16

// write adds the aggregate deltas to the stored aggregates, and returns what to put into the cache once
// the transaction has committed. The cell and word counters are the cell table's (cellTable.stage).
func (d *aggDelta) write(txn *badger.Txn, c *counterCache) (commit func(), err error) {
	if c.aggs == nil || len(c.aggs) > maxCachedCounters {
		c.aggs = map[string][]byte{}
	}
	aggs := make(map[string][]byte, len(d.all)+len(d.munis))
	var m merger
	put := func(key []byte, a *aggregate) error {
		old, ok := c.aggs[string(key)]
		if !ok {
			item, err := txn.Get(key)
			switch {
			case err == nil:
				if old, err = item.ValueCopy(nil); err != nil {
					return err
				}
			case !errors.Is(err, badger.ErrKeyNotFound):
				return err
			}
		}
		v, err := m.merge(old, a)
		if err != nil {
			return err
		}
		aggs[string(key)] = v
		return txn.Set(key, v)
	}
	for slug, a := range d.all {
		if err := put(aggKey(slug), a); err != nil {
			return nil, err
		}
	}
	for k, a := range d.munis {
		if err := put([]byte(k), a); err != nil {
			return nil, err
		}
	}
	return func() { maps.Copy(c.aggs, aggs) }, nil
}

// merger merges a delta into an encoded aggregate as decodeAggregate, merge and encode would, without
// their map: the stored pairs are sorted by key, so are the delta's (a batch rewrites a record's dozen
// counters; the map was a fifth of a publish's allocations). Its buffers serve one batch's keys in turn.
type merger struct {
	keys []uint16
	body []byte
}

func (m *merger) merge(v []byte, d *aggregate) ([]byte, error) {
	var people, newest int64
	var n uint64
	if v != nil {
		if len(v) == 0 || v[0] != 1 {
			return nil, errBadAggregate
		}
		p, a := binary.Uvarint(v[1:])
		if a <= 0 {
			return nil, errBadAggregate
		}
		v = v[1+a:]
		if newest, a = binary.Varint(v); a <= 0 {
			return nil, errBadAggregate
		}
		v = v[a:]
		if n, a = binary.Uvarint(v); a <= 0 {
			return nil, errBadAggregate
		}
		people, v = int64(p), v[a:]
	}
	m.keys = m.keys[:0]
	for k := range d.cells {
		m.keys = append(m.keys, k)
	}
	slices.Sort(m.keys)
	body, count := m.body[:0], uint64(0)
	emit := func(k uint16, c int64) {
		if c != 0 { // merge drops a cell whose sum is 0
			body = binary.AppendUvarint(binary.AppendUvarint(body, uint64(k)), uint64(max(c, 0)))
			count++
		}
	}
	i := 0
	for range n {
		k, a := binary.Uvarint(v)
		if a <= 0 {
			return nil, errBadAggregate
		}
		c, b := binary.Uvarint(v[a:])
		if b <= 0 {
			return nil, errBadAggregate
		}
		v = v[a+b:]
		for ; i < len(m.keys) && m.keys[i] < uint16(k); i++ {
			emit(m.keys[i], d.cells[m.keys[i]])
		}
		if i < len(m.keys) && m.keys[i] == uint16(k) {
			emit(uint16(k), int64(c)+d.cells[m.keys[i]])
			i++
		} else if c == 0 { // stored as 0 (clamped), kept as merge keeps it
			body = binary.AppendUvarint(binary.AppendUvarint(body, k), 0)
			count++
		} else {
			emit(uint16(k), int64(c))
		}
	}
	for ; i < len(m.keys); i++ {
		emit(m.keys[i], d.cells[m.keys[i]])
	}
	m.body = body
	out := make([]byte, 0, 1+3*binary.MaxVarintLen64+len(body))
	out = binary.AppendUvarint(append(out, 1), uint64(max(people+d.people, 0)))
	out = binary.AppendUvarint(binary.AppendVarint(out, max(newest, d.newest)), count)
	return append(out, body...), nil
}

func aggKey(slug string) []byte { return append(slices.Clone(prefixAgg), slug...) }

// muniKey is the key of a municipio's aggregate in scope (scopeOf with a municipio).
func muniKey(scope string) []byte { return append(slices.Clone(prefixMuni), scope...) }

// indexWriter puts records and their index entries into one write transaction, keeping under Badger's
// transaction size so that a record is never split from its indexes (a record that does not fit goes
// into the next transaction whole). Word postings are gathered into blocks (postings.go) and written by
// finish, with the counters.
type indexWriter struct {
	size, count       int64
	maxSize, maxCount int64
	agg               aggDelta
	postings          postingWriter
	s                 *Store
	seq               uint64 // the seq of the block the records' postings go to now
	inBlock           int    // the records given seq
}

// Reserve for what is written at the end, per record at most: its emergency's aggregate, its two
// municipio aggregates and one spare, and its two changes (old and new) in the cell journal (a slug of
// at most 255 bytes each).
const aggReservePerRecord = 4*400 + 2*300

func newIndexWriter(s *Store) *indexWriter {
	return &indexWriter{maxSize: s.db.MaxBatchSize() * 3 / 4, maxCount: s.db.MaxBatchCount() * 3 / 4, s: s}
}

// entriesSize is what entries add to the transaction, counted as if each posting were a key of its own
// with its token's counter: more than its share of a block, never less.
func entriesSize(entries []kv) int64 {
	var size int64
	for _, e := range entries {
		size += int64(len(e.k)+len(e.v)) + 32
		if bytes.HasPrefix(e.k, prefixWord) {
			size += int64(len(e.k)) + 16
		}
	}
	return size
}

// blockSeq is the seq of the block a record's postings go to: a new one every maxBlockPostings records.
func (w *indexWriter) blockSeq() (uint64, error) {
	if w.seq == 0 || w.inBlock == maxBlockPostings {
		seq, err := w.s.blockSeqs.next(w.s.db)
		if err != nil {
			return 0, err
		}
		w.seq, w.inBlock = seq, 0
	}
	w.inBlock++
	return w.seq, nil
}

// write writes entries, a record's: its postings into the blocks of seq, which its text entry records.
func (w *indexWriter) write(txn *badger.Txn, entries []kv, seq uint64) error {
	for _, e := range entries {
		switch {
		case bytes.HasPrefix(e.k, prefixWord):
			w.postings.add(e.k, e.v, seq)
			continue
		case bytes.HasPrefix(e.k, prefixText):
			binary.BigEndian.PutUint64(e.v, seq)
		}
		if err := txn.Set(e.k, e.v); err != nil {
			return err
		}
	}
	return nil
}

// put writes rec's entries unless they would overflow the transaction; ok=false means "commit first".
func (w *indexWriter) put(txn *badger.Txn, rec *store.Record, entries []kv) (ok bool, err error) {
	size := aggReservePerRecord + entriesSize(entries)
	count := int64(2 * len(entries))
	if w.count > 0 && (w.size+size > w.maxSize || w.count+count > w.maxCount) {
		return false, nil
	}
	seq, err := w.blockSeq()
	if err != nil {
		return false, err
	}
	if err := w.write(txn, entries, seq); err != nil {
		return false, err
	}
	w.size, w.count = w.size+size, w.count+count
	w.agg.addCounters(rec, 1)
	w.agg.addWordKeys(entries, 1)
	return true, nil
}

// replace swaps old's index entries for rec's (entries, built like put's); ok=false means "commit first".
// An entry that old and rec have alike (key and value) is left as it is; rec's postings go to the blocks
// of old's seq, or of a new one when the status changes.
func (w *indexWriter) replace(txn *badger.Txn, old, rec *store.Record, entries []kv) (ok bool, err error) {
	dels := append(indexEntries(old), changeEntries(old)...)
	size := aggReservePerRecord + entriesSize(entries) + entriesSize(dels)
	for _, e := range slices.Concat(dels, entries) {
		if bytes.HasPrefix(e.k, prefixWord) {
			size += maxBlockBytes // the block it leaves or joins, rewritten
		}
	}
	count := int64(2 * (len(entries) + len(dels)))
	if w.count > 0 && (w.size+size > w.maxSize || w.count+count > w.maxCount) {
		return false, nil
	}
	// The stored text entry names the blocks of old's postings.
	var oldSeq uint64
	item, err := txn.Get(append(slices.Clone(prefixText), old.ID...))
	switch {
	case err == nil:
		if err := item.Value(func(v []byte) error { oldSeq = textSeq(v); return nil }); err != nil {
			return false, err
		}
	case !errors.Is(err, badger.ErrKeyNotFound):
		return false, err
	}
	if oldSeq == 0 { // no text entry (or one without a seq): an index that lacks it gets one, with a seq
		if oldSeq, err = w.blockSeq(); err != nil {
			return false, err
		}
	}
	// A record that changes status moves every posting: to a block of the transaction, which the writer
	// need not read first; else they stay in the blocks of its seq.
	seq := oldSeq
	if statusCode(old.Status) != statusCode(rec.Status) {
		if seq, err = w.blockSeq(); err != nil {
			return false, err
		}
	}
	for _, e := range dels {
		if bytes.HasPrefix(e.k, prefixText) {
			binary.BigEndian.PutUint64(e.v, oldSeq)
		}
	}
	for _, e := range entries {
		if bytes.HasPrefix(e.k, prefixText) {
			binary.BigEndian.PutUint64(e.v, seq)
		}
	}
	kept := make(map[string][]byte, len(entries))
	for _, e := range entries {
		kept[string(e.k)] = e.v
	}
	unchanged := make(map[string]bool, len(dels))
	for _, e := range dels {
		if v, ok := kept[string(e.k)]; ok && bytes.Equal(v, e.v) {
			unchanged[string(e.k)] = true
			continue
		}
		if bytes.HasPrefix(e.k, prefixWord) {
			err = w.postings.remove(txn, e.k, oldSeq)
		} else {
			err = txn.Delete(e.k)
		}
		if err != nil {
			return false, err
		}
	}
	for _, e := range entries {
		switch {
		case unchanged[string(e.k)]:
			continue
		case bytes.HasPrefix(e.k, prefixWord) && seq != oldSeq:
			w.postings.add(e.k, e.v, seq)
		case bytes.HasPrefix(e.k, prefixWord):
			err = w.postings.put(txn, e.k, e.v, seq)
		default:
			err = txn.Set(e.k, e.v)
		}
		if err != nil {
			return false, err
		}
	}
	w.size, w.count = w.size+size, w.count+count
	w.agg.addCounters(old, -1)
	w.agg.addWordKeys(dels, -1)
	w.agg.addCounters(rec, 1)
	w.agg.addWordKeys(entries, 1)
	return true, nil
}

// finish writes the word blocks and the counters the transaction gathered; the returned function puts
// the counters into the cache once the transaction has committed.
func (w *indexWriter) finish(txn *badger.Txn) (commit func(), err error) {
	if err := w.postings.flush(txn); err != nil {
		return nil, err
	}
	return w.agg.write(txn, &w.s.counters)
}

// ensureIndexes indexes every record of a database written before the indexes existed (or whose
// indexing was interrupted). It runs before the writer starts.
func (s *Store) ensureIndexes() error {
	done := false
	err := s.db.View(func(txn *badger.Txn) error {
		item, err := txn.Get(keyIndexVersion)
		if errors.Is(err, badger.ErrKeyNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		return item.Value(func(v []byte) error { done = string(v) == indexVersion; return nil })
	})
	if err != nil || done {
		return err
	}
	if err := s.db.DropPrefix(prefixTime, prefixKind, prefixGeo, prefixText, prefixAgg, prefixMuni, prefixHour, prefixChange, prefixWord, prefixVocab, prefixCellCount, prefixCellJournal, prefixExpiry); err != nil {
		return fmt.Errorf("reindex: %w", err)
	}
	var all aggDelta
	cells := newCellTable()
	var after []byte
	for {
		var recs []*store.Record
		err := s.db.View(func(txn *badger.Txn) error {
			it := txn.NewIterator(badger.IteratorOptions{Prefix: prefixRecord, PrefetchValues: true, PrefetchSize: 100})
			defer it.Close()
			it.Seek(prefixRecord)
			if after != nil {
				it.Seek(after)
				if it.Valid() && string(it.Item().Key()) == string(after) {
					it.Next()
				}
			}
			for ; it.Valid() && len(recs) < 1000; it.Next() {
				rec := &store.Record{}
				if err := it.Item().Value(func(v []byte) error { return json.Unmarshal(v, rec) }); err != nil {
					return err
				}
				rec.Normalize()
				recs = append(recs, rec)
				after = it.Item().KeyCopy(nil)
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("reindex: %w", err)
		}
		if len(recs) == 0 {
			break
		}
		for len(recs) > 0 {
			txn := s.db.NewTransaction(true)
			w := newIndexWriter(s)
			n := 0
			for _, rec := range recs {
				ok, err := w.put(txn, rec, append(indexEntries(rec), changeEntries(rec)...))
				if err != nil {
					txn.Discard()
					return fmt.Errorf("reindex: %w", err)
				}
				if !ok {
					break
				}
				all.add(rec, 1)
				cells.take(&all)
				n++
			}
			if err := w.postings.flush(txn); err != nil { // the counters are written whole below
				txn.Discard()
				return fmt.Errorf("reindex: %w", err)
			}
			if err := txn.Commit(); err != nil {
				return fmt.Errorf("reindex: %w", err)
			}
			recs = recs[n:]
		}
	}
	// Aggregates are computed whole and overwrite what is there, so an interrupted run is simply redone;
	// the marker goes last.
	wb := s.db.NewWriteBatch()
	defer wb.Cancel()
	for slug, a := range all.all {
		if err := wb.Set(aggKey(slug), a.encode()); err != nil {
			return fmt.Errorf("reindex: %w", err)
		}
	}
	for k, a := range all.munis {
		if err := wb.Set([]byte(k), a.encode()); err != nil {
			return fmt.Errorf("reindex: %w", err)
		}
	}
	// The cell and word counters as of the last batch journaled: the journal is empty now.
	batch, err := s.viewBatch()
	if err != nil {
		return fmt.Errorf("reindex: %w", err)
	}
	for k, c := range cells.all() {
		if err := wb.Set([]byte(k), encodeCellCount(batch, c)); err != nil {
			return fmt.Errorf("reindex: %w", err)
		}
	}
	for tok, n := range cells.wordCounts() {
		if err := wb.Set(vocabKey(tok), encodeWordCount(batch, n)); err != nil {
			return fmt.Errorf("reindex: %w", err)
		}
	}
	if err := wb.Flush(); err != nil {
		return fmt.Errorf("reindex: %w", err)
	}
	return s.db.Update(func(txn *badger.Txn) error { return txn.Set(keyIndexVersion, []byte(indexVersion)) })
}
