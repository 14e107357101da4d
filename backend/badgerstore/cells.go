package badgerstore

import (
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
	var visit func(cell string) error
	visit = func(cell string) error {
		lat0, lat1, lon0, lon1 := geohashBox(cell)
		if minDistKm(spec.Lat, spec.Lon, lat0, lat1, lon0, lon1) > spec.RadiusKm {
			return nil
		}
		if len(cell) >= cellCountMin {
			a, err := getAggregate(txn, cellCountKey(cell))
			switch {
			case err != nil:
				return err
			case maxDistKm(spec.Lat, spec.Lon, lat0, lat1, lon0, lon1) <= spec.RadiusKm:
				n += a.count(f)
				return nil
			case len(cell) >= geoPrecision || a.count(status) <= maxEdgeScan:
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
