package badgerstore

import (
	"errors"

	"github.com/dgraph-io/badger/v4"

	"github.com/directaid/directaid/backend/store"
)

// Counters per geohash cell, so that the total of a radius list does not read the whole circle
// (store.RadiusTotal decides it from them, as PostgreSQL's directaid_cells). Counters exist at several
// precisions (coarse ones inside a big circle, fine ones near its edge) and per scope: every record, its
// emergency, its municipio, both (scopesFor); each counts by status, type, category and urgency, and an
// Update moves a record's counts. They are kept in memory, and stored by checkpoints with a journal
// between them (cellmem.go).
var prefixCellCount = []byte("ie\x00") // + scope + 0x00 + geohash of length cellCountMin…geoPrecision → encodeCellCount

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

var errBadAggregate = errors.New("bad aggregate")

// errNoEmergency refuses a record without an emergency slug (Create): the service always sets one, and
// without it scopesFor would count the record twice in scope "" (and indexEntries file it under a
// partition "" that no list reads).
var errNoEmergency = errors.New("badgerstore: a record needs an emergency slug")

// scopesFor are the scopes a record of emergency slug in municipio ("": none) counts in; a record has an
// emergency slug (errNoEmergency).
func scopesFor(slug, municipio string) []string {
	if municipio == "" {
		return []string{"", slug}
	}
	return []string{"", slug, scopeOf("", municipio), scopeOf(slug, municipio)}
}

// addCells counts rec in the counters of its cells in every scope (n = -1 takes it out): a change for
// the cell table (cellmem.go), which the transaction journals.
func (d *aggDelta) addCells(rec *store.Record, c counted, n int64) {
	if rec.Latitude == nil || rec.Longitude == nil {
		return
	}
	d.cellOps = append(d.cellOps, cellOp{rec.EmergencySlug, rec.MunicipioCode, geohash(*rec.Latitude, *rec.Longitude, geoPrecision), c.cell, n})
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

// countRadius is the total of a radius list (store.RadiusTotal, words aside) from this snapshot, whose
// cell counters are cells.
func countRadius(cells *cellView, txn *badger.Txn, spec *store.ListSpec, f *filter, cover *store.Cover) (int, bool, error) {
	return store.RadiusTotalOf(spec, &cellCounter{cells, txn, spec, f}, cover)
}

// cellCounter is store.CellCounter over the cell counters and the geographic index of one snapshot.
type cellCounter struct {
	cells *cellView
	txn   *badger.Txn
	spec  *store.ListSpec
	f     *filter
}

// CellCounts implements store.CellCounter: the counters of the cells in every scope (All), and in the
// spec's scope (Matching) when it has one.
func (c *cellCounter) CellCounts(cells []string) ([]store.CellCount, error) {
	status := &filter{-1, -1, -1, c.f.st}
	scope := scopeOf(c.spec.EmergencySlug, c.spec.Municipio)
	out := make([]store.CellCount, len(cells))
	err := c.cells.read(func(get cellGetter) error {
		for i, cell := range cells {
			out[i].Matching, out[i].All = countIn(get, "", cell, c.f, status)
			if scope != "" {
				out[i].Matching = 0
				if out[i].All > 0 {
					out[i].Matching, _ = countIn(get, scope, cell, c.f, status)
				}
			}
		}
		return nil
	})
	return out, err
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
