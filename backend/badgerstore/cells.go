package badgerstore

import (
	"bytes"
	"encoding/binary"
	"errors"

	"github.com/dgraph-io/badger/v4"

	"github.com/directaid/directaid/backend/store"
)

// Counters per geohash cell, so that the total of a radius list does not read the whole circle
// (store.RadiusTotal decides it from them, as PostgreSQL's directaid_cells). Counters exist at several
// precisions (coarse ones inside a big circle, fine ones near its edge) and per scope: every record, its
// emergency, its municipio, both (scopesOf); each is an aggregate (index.go), so it counts by status,
// type, category and urgency, and an Update moves a record's counts with its entries.
var prefixCellCount = []byte("ie\x00") // + scope + 0x00 + geohash of length cellCountMin…geoPrecision → aggregate

const cellCountMin = store.CellCountMin

// cellCountKey is the key of the counter of cell in scope; a scope's cells are contiguous and ascending.
func cellCountKey(scope, cell string) []byte {
	return appendCellCountKey(make([]byte, 0, len(prefixCellCount)+len(scope)+1+len(cell)), scope, cell)
}

func appendCellCountKey(b []byte, scope, cell string) []byte {
	return append(append(append(append(b, prefixCellCount...), scope...), 0), cell...)
}

// scopeOf names what a list counts in: "" every record, a slug, "@" + a municipio code, or both ("@"
// is in neither a slug nor a code, 0x00 ends a scope in keys).
func scopeOf(slug, municipio string) string {
	if municipio == "" {
		return slug
	}
	return slug + "@" + municipio
}

// errNoEmergency refuses a record without an emergency slug (Create): the service always sets one, and
// without it scopesOf would count the record twice in scope "" (and indexEntries file it under a
// partition "" that no list reads).
var errNoEmergency = errors.New("badgerstore: a record needs an emergency slug")

// scopesOf are the scopes rec counts in; rec has an emergency slug (errNoEmergency).
func scopesOf(rec *store.Record) []string {
	if rec.MunicipioCode == "" {
		return []string{"", rec.EmergencySlug}
	}
	return []string{"", rec.EmergencySlug, scopeOf("", rec.MunicipioCode), scopeOf(rec.EmergencySlug, rec.MunicipioCode)}
}

// addCells counts rec in the counters of its cells in every scope (n = -1 takes it out).
func (d *aggDelta) addCells(rec *store.Record, c counted, n int64) {
	if rec.Latitude == nil || rec.Longitude == nil {
		return
	}
	if d.cells == nil {
		d.cells = map[string]*aggregate{}
	}
	gh := geohash(*rec.Latitude, *rec.Longitude, geoPrecision)
	var buf [64]byte
	for _, scope := range scopesOf(rec) {
		k := append(append(append(buf[:0], prefixCellCount...), scope...), 0)
		for p := cellCountMin; p <= geoPrecision; p++ {
			addKeyed(d.cells, append(k, gh[:p]...), c, n)
		}
	}
}

// addKeyed counts c in m's aggregate of key, which it copies only when the aggregate is new.
func addKeyed(m map[string]*aggregate, key []byte, c counted, n int64) {
	a := m[string(key)]
	if a == nil {
		a = &aggregate{}
		m[string(key)] = a
	}
	a.addCounted(c, n)
}

// countRadius is the total of a radius list (store.RadiusTotal, words aside) from this snapshot.
func countRadius(txn *badger.Txn, spec *store.ListSpec, f *filter, cover *store.Cover) (int, bool, error) {
	return store.RadiusTotalOf(spec, &cellCounter{txn, spec, f}, cover)
}

// cellCounter is store.CellCounter over the cell counters and the geographic index of one snapshot.
type cellCounter struct {
	txn  *badger.Txn
	spec *store.ListSpec
	f    *filter
}

// CellCounts implements store.CellCounter: one forward cursor over the counters of a level in every
// scope (All), and one over those of the spec's scope (Matching) when it has one.
func (c *cellCounter) CellCounts(cells []string) ([]store.CellCount, error) {
	status := &filter{-1, -1, -1, c.f.st}
	every := newCounterCursor(c.txn)
	defer every.close()
	scope := scopeOf(c.spec.EmergencySlug, c.spec.Municipio)
	var scoped *counterCursor
	if scope != "" {
		scoped = newCounterCursor(c.txn)
		defer scoped.close()
	}
	out := make([]store.CellCount, len(cells))
	var key []byte // one buffer for every key: the cursor keeps none
	for i, cell := range cells {
		key = appendCellCountKey(key[:0], "", cell)
		err := every.get(key, func(v []byte) (err error) {
			out[i].Matching, out[i].All, err = countEncoded(v, c.f, status)
			return err
		})
		if err == nil && scoped != nil {
			out[i].Matching = 0
			if out[i].All > 0 {
				key = appendCellCountKey(key[:0], scope, cell)
				err = scoped.get(key, func(v []byte) (err error) {
					out[i].Matching, _, err = countEncoded(v, c.f, status)
					return err
				})
			}
		}
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// CountCells implements store.CellCounter: the cells' entries of the geographic index.
func (c *cellCounter) CountCells(cells []string) (int, error) {
	it := c.txn.NewIterator(badger.IteratorOptions{Prefix: geoPrefix(uint8(c.f.st))})
	defer it.Close()
	n := 0
	for _, cell := range cells {
		err := scanCell(it, cell, c.spec, c.f, func(g *geoItem) {
			if inMunicipio(c.txn, c.spec, c.f, g.inv) {
				n++
			}
		})
		if err != nil {
			return 0, err
		}
	}
	return n, nil
}

// counterCursor reads cell counters in ascending key order, which is the order countRadius visits cells
// in (sorted cover cells, each before its children). A Next costs about a fourteenth of a Seek through
// every level's tables (BenchmarkUniformCellCounts), so the cursor steps to a key at most maxDenseGap
// keys ahead and seeks one further — how far is known from the cells' names before stepping (denseGap).
type counterCursor struct {
	it     *badger.Iterator
	seeked bool
}

// maxDenseGap is the most counters that may lie between the cursor and the next key for the cursor to
// step there rather than seek.
const maxDenseGap = 12

func newCounterCursor(txn *badger.Txn) *counterCursor {
	return &counterCursor{it: txn.NewIterator(badger.IteratorOptions{Prefix: prefixCellCount})}
}

func (c *counterCursor) close() { c.it.Close() }

// get calls fn with the value of key, or with nil when there is none; keys must come in ascending order.
// It keeps no reference to key.
func (c *counterCursor) get(key []byte, fn func(v []byte) error) error {
	it := c.it
	if c.seeked && it.Valid() {
		if cur := it.Item().Key(); bytes.Compare(cur, key) < 0 && denseGap(cur, key) > maxDenseGap {
			c.seeked = false
		}
	}
	for c.seeked && it.Valid() && bytes.Compare(it.Item().Key(), key) < 0 { // at most maxDenseGap keys
		it.Next()
	}
	if !c.seeked {
		it.Seek(key)
		c.seeked = true
	}
	if !it.Valid() || !bytes.Equal(it.Item().Key(), key) {
		return fn(nil)
	}
	return it.Item().Value(fn)
}

// geohashDigit is the value of each geohash character plus one (0: not one).
var geohashDigit = func() (d [256]uint8) {
	for i := range len(store.GeohashAlphabet) {
		d[store.GeohashAlphabet[i]] = uint8(i + 1)
	}
	return d
}()

// denseGap bounds how many counter keys lie after from up to and including to (from < to, counters of
// one scope): their distance where every cell of every precision cellCountMin…geoPrecision has a
// counter. Keys too far apart to say (another scope, a cell outside that range) are a large gap.
func denseGap(from, to []byte) int {
	const far = 1 << 30
	n := len(prefixCellCount)
	for n < len(from) && n < len(to) && from[n] == to[n] && from[n] != 0 {
		n++
	}
	if n >= len(from) || n >= len(to) || from[n] != 0 || to[n] != 0 { // scopes differ
		return far
	}
	rf, okf := denseRank(from[n+1:])
	rt, okt := denseRank(to[n+1:])
	if !okf || !okt {
		return far
	}
	return rt - rf
}

// denseRank is a cell's position in the preorder of every cell of precisions cellCountMin…geoPrecision.
func denseRank(cell []byte) (int, bool) {
	if len(cell) < cellCountMin || len(cell) > geoPrecision {
		return 0, false
	}
	r := 0
	for i := range cellCountMin - 1 { // the prefix above the counters: whole subtrees before it
		d := geohashDigit[cell[i]]
		if d == 0 {
			return 0, false
		}
		r = r*32 + int(d-1)
	}
	r *= 32 * denseSubtree(cellCountMin)
	for i := cellCountMin - 1; i < len(cell); i++ {
		d := geohashDigit[cell[i]]
		if d == 0 {
			return 0, false
		}
		if i >= cellCountMin {
			r++ // the parent comes first
		}
		r += int(d-1) * denseSubtree(i+1)
	}
	return r, true
}

// denseSubtree is how many cells of precisions p…geoPrecision a cell of precision p holds, itself included.
func denseSubtree(p int) int {
	n := 1
	for range geoPrecision - p {
		n = 1 + 32*n
	}
	return n
}

var errBadAggregate = errors.New("bad aggregate")

// countEncoded counts, in an encoded aggregate (nil: none), the records that match f and those that
// match status, without decoding it into a map.
func countEncoded(v []byte, f, status *filter) (matching, all int, err error) {
	if v == nil {
		return 0, 0, nil
	}
	bad := errBadAggregate
	if len(v) == 0 || v[0] != 1 {
		return 0, 0, bad
	}
	v = v[1:]
	for range 2 { // people, newest
		if _, m := binary.Uvarint(v); m <= 0 {
			return 0, 0, bad
		} else {
			v = v[m:]
		}
	}
	n, m := binary.Uvarint(v)
	if m <= 0 {
		return 0, 0, bad
	}
	v = v[m:]
	for range n {
		k, m := binary.Uvarint(v)
		if m <= 0 {
			return 0, 0, bad
		}
		v = v[m:]
		c, m := binary.Uvarint(v)
		if m <= 0 {
			return 0, 0, bad
		}
		v = v[m:]
		st, t, cat, u := cellParts(uint16(k))
		if status.matchStatus(st) {
			all += int(c)
			if f.matchStatus(st) && f.matchCodes(t, cat, u) {
				matching += int(c)
			}
		}
	}
	return matching, all, nil
}
