package badgerstore

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"slices"

	"github.com/dgraph-io/badger/v4"

	"github.com/directaid/directaid/backend/store"
)

// Counters per geohash cell, so that the exact total of a radius list does not read the whole circle:
// a cell wholly inside the circle adds its counter, one wholly outside nothing, and only the cells the
// circle's edge crosses are read entry by entry (at geoPrecision). Counters exist at several precisions
// (coarse ones inside a big circle, fine ones near its edge); each is an aggregate (index.go), so it counts
// by status, type, category and urgency, and an Update moves a record's counts with its entries. They
// hold every emergency: a radius total with emergencySlug reads the entries as before.
var prefixCellCount = []byte("ie\x00") // + geohash of length cellCountMin…geoPrecision → aggregate

const (
	cellCountMin = 4 // 39 km × 20 km: coarser cells are split before counting
	// maxEdgeScan: a cell on the circle's edge holding at most this many entries is read, not split.
	maxEdgeScan = 64
)

func cellCountKey(cell string) []byte { return append(slices.Clone(prefixCellCount), cell...) }

// addCells counts rec in the counters of its cells (n = -1 takes it out).
func (d *aggDelta) addCells(rec *store.Record, n int64) {
	if rec.Latitude == nil || rec.Longitude == nil {
		return
	}
	if d.cells == nil {
		d.cells = map[string]*aggregate{}
	}
	gh := geohash(*rec.Latitude, *rec.Longitude, geoPrecision)
	for p := cellCountMin; p <= geoPrecision; p++ {
		if d.cells[gh[:p]] == nil {
			d.cells[gh[:p]] = &aggregate{}
		}
		d.cells[gh[:p]].add(rec, n)
	}
}

// maxDistKm is an upper bound of the distance (as store.HaversineKm measures it) from (lat, lon) to any
// point of the box: along a meridian or a parallel the distance has no maximum inside a segment, so the
// farthest point is a corner; a hair is added for rounding.
func maxDistKm(lat, lon, lat0, lat1, lon0, lon1 float64) float64 {
	d := 0.0
	for _, c := range [4][2]float64{{lat0, lon0}, {lat0, lon1}, {lat1, lon0}, {lat1, lon1}} {
		d = math.Max(d, store.HaversineKm(lat, lon, c[0], c[1]))
	}
	return d*(1+1e-9) + 1e-9
}

// countRadius counts the records within the circle that match the filters: counters for the cells
// inside it, entries for those on its edge.
func countRadius(txn *badger.Txn, spec *store.ListSpec, f *filter) (int, error) {
	it := txn.NewIterator(badger.IteratorOptions{Prefix: geoPrefix(uint8(f.st))})
	defer it.Close()
	n := 0
	scan := func(cell string) error {
		return scanCell(it, cell, spec, f, func(g *geoItem) {
			if inMunicipio(txn, spec, f, g.inv) {
				n++
			}
		})
	}
	if spec.EmergencySlug != "" || spec.Municipio != "" { // the counters are by cell, not by emergency or municipio
		for _, cell := range coverCells(spec.Lat, spec.Lon, spec.RadiusKm) {
			if err := scan(cell); err != nil {
				return 0, err
			}
		}
		return n, nil
	}
	status := &filter{-1, -1, -1, f.st}
	counters := newCounterCursor(txn)
	defer counters.close()
	var visit func(cell string) error
	visit = func(cell string) error {
		lat0, lat1, lon0, lon1 := geohashBox(cell)
		if minDistKm(spec.Lat, spec.Lon, lat0, lat1, lon0, lon1) > spec.RadiusKm {
			return nil
		}
		if len(cell) >= cellCountMin {
			var matching, all int
			err := counters.get(cellCountKey(cell), func(v []byte) (err error) {
				matching, all, err = countEncoded(v, f, status)
				return err
			})
			switch {
			case err != nil:
				return err
			case maxDistKm(spec.Lat, spec.Lon, lat0, lat1, lon0, lon1) <= spec.RadiusKm:
				n += matching
				return nil
			case len(cell) >= geoPrecision || all <= maxEdgeScan:
				// On the edge: read its entries (splitting a cell that holds few costs more seeks than it saves).
				return scan(cell)
			}
		}
		for i := range len(geohashAlphabet) {
			if err := visit(cell + geohashAlphabet[i:i+1]); err != nil {
				return err
			}
		}
		return nil
	}
	for _, cell := range coverCells(spec.Lat, spec.Lon, spec.RadiusKm) {
		if err := visit(cell); err != nil {
			return 0, err
		}
	}
	return n, nil
}

// counterCursor reads cell counters in ascending key order, which is the order countRadius visits cells
// in (sorted cover cells, each before its children): a key a few entries ahead is reached by Next, which
// costs far less than a Get or a Seek through every level of the tree.
type counterCursor struct {
	it     *badger.Iterator
	seeked bool
}

// maxCounterSteps is how many keys the cursor steps over before it seeks instead.
const maxCounterSteps = 48

func newCounterCursor(txn *badger.Txn) *counterCursor {
	return &counterCursor{it: txn.NewIterator(badger.IteratorOptions{Prefix: prefixCellCount})}
}

func (c *counterCursor) close() { c.it.Close() }

// get calls fn with the value of key, or with nil when there is none; keys must come in ascending order.
func (c *counterCursor) get(key []byte, fn func(v []byte) error) error {
	it := c.it
	for steps := 0; c.seeked && it.Valid() && bytes.Compare(it.Item().Key(), key) < 0; steps++ {
		if steps == maxCounterSteps {
			c.seeked = false
			break
		}
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
