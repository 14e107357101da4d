package store

import (
	"math"
)

// The total of a radius list, decided from counters per geohash cell that both stores keep alike: per
// cell of precision CellCountMin…GeoPrecision, the records by status, type, category and urgency, of
// every emergency and municipio and also per emergency, per municipio and per (emergency, municipio). A
// cell wholly inside the circle adds its counter; a cell wholly outside adds nothing; the cells the
// circle's edge crosses are read entry by entry while that is cheap (their entries, summed, at most
// RadiusEdgeBudget), else each adds the share of its counter that the share of its area inside the circle
// gives, and the total is an estimate (exact false). The estimate lies within
// [inside, inside + the edge cells' counters]; at the density of 1M records over the Eje Cafetero, a
// 1–20 km circle's estimate is off by 0.19% on average, at most 2.5% (TestRadiusEstimateError, 300 circles).

const (
	// CellCountMin is the coarsest precision of the cell counters (39 km × 20 km): coarser cells are split.
	CellCountMin = 4
	// RadiusEdgeBudget is how many entries of the edge cells a total reads to be exact: a sparse area or
	// a small circle costs little, a dense one (thousands) is estimated instead.
	RadiusEdgeBudget = 1024
	// maxEdgeScan: an edge cell coarser than GeoPrecision holding at most this many records is read (or
	// estimated) whole, not split (splitting a cell that holds few costs more than it saves).
	maxEdgeScan = 64
)

// CellCount is what the counters of one cell say: the records of a list's emergency and municipio that
// match its status, type, category and urgency, and all those of its status in every emergency and
// municipio (what reading the cell's entries costs: the geographic index holds them all).
type CellCount struct{ Matching, All int }

// CellCounter is what a store gives RadiusTotal for one radius list (its spec is the store's).
type CellCounter interface {
	// CellCounts returns the counters of cells (ascending, all of one precision, CellCountMin…GeoPrecision).
	CellCounts(cells []string) ([]CellCount, error)
	// CountCells counts exactly the records of cells (ascending, any precision up to GeoPrecision) within
	// the circle that match the spec (words aside).
	CountCells(cells []string) (int, error)
}

// RadiusTotal is the total of the radius list spec (its words aside) and whether it is exact.
func RadiusTotal(spec *ListSpec, c CellCounter) (total int, exact bool, err error) {
	return RadiusTotalOf(spec, c, NewCover(spec.Lat, spec.Lon, spec.RadiusKm))
}

// RadiusTotalOf is RadiusTotal given the circle's cover (NewCover), which a radius list has computed for
// its walk already.
func RadiusTotalOf(spec *ListSpec, c CellCounter, cover *Cover) (total int, exact bool, err error) {
	type edge struct {
		cell     string
		matching int
	}
	var edges []edge
	inside, cost := 0, 0
	level := make([]string, len(cover.Cells))
	for i := range cover.Cells {
		level[i] = cover.Cells[i].Cell
	}
	// Level by level (one precision each), parents before their children, so a store can read each
	// level's counters in one ordered pass (Badger) or one query (PostgreSQL). The first is the cover's.
	for first := true; len(level) > 0; first = false {
		var next []string
		if len(level[0]) < CellCountMin {
			for _, cell := range level {
				next = appendChildren(next, spec, cell)
			}
			level = next
			continue
		}
		counts, err := c.CellCounts(level)
		if err != nil {
			return 0, false, err
		}
		for i, cell := range level {
			k := counts[i]
			if k.Matching == 0 {
				continue
			}
			var maxKm float64
			if first {
				maxKm = cover.MaxKm(&cover.Cells[i])
			} else {
				lat0, lat1, lon0, lon1 := GeohashBox(cell)
				maxKm = MaxDistKm(spec.Lat, spec.Lon, lat0, lat1, lon0, lon1)
			}
			switch {
			case maxKm <= spec.RadiusKm:
				inside += k.Matching
			case len(cell) >= GeoPrecision || k.All <= maxEdgeScan:
				edges = append(edges, edge{cell, k.Matching})
				cost += k.All
			default:
				next = appendChildren(next, spec, cell)
			}
		}
		level = next
	}
	if cost <= RadiusEdgeBudget {
		cells := make([]string, len(edges))
		for i, e := range edges {
			cells[i] = e.cell
		}
		n, err := c.CountCells(cells)
		return inside + n, true, err
	}
	est := 0.0
	for _, e := range edges {
		lat0, lat1, lon0, lon1 := GeohashBox(e.cell)
		est += float64(e.matching) * insideShare(spec.Lat, spec.Lon, spec.RadiusKm, lat0, lat1, lon0, lon1)
	}
	return inside + int(math.Round(est)), false, nil
}

// CircleCells returns every cell whose counters RadiusTotal may ask for spec (CellCounts), all levels
// in one list, so that a store can read them in one go before it knows which it needs; nil when there
// would be more than max.
func CircleCells(spec *ListSpec, max int) []string {
	var all []string
	for level := CoverCells(spec.Lat, spec.Lon, spec.RadiusKm); len(level) > 0; {
		if len(level[0]) >= CellCountMin {
			if all = append(all, level...); len(all) > max {
				return nil
			}
		}
		if len(level[0]) >= GeoPrecision {
			break
		}
		var next []string
		for _, cell := range level {
			next = appendChildren(next, spec, cell)
		}
		level = next
	}
	return all
}

// appendChildren appends the cells of cell one precision finer that the circle reaches, in order.
func appendChildren(out []string, spec *ListSpec, cell string) []string {
	for i := range len(GeohashAlphabet) {
		child := cell + GeohashAlphabet[i:i+1]
		lat0, lat1, lon0, lon1 := GeohashBox(child)
		if MinDistKm(spec.Lat, spec.Lon, lat0, lat1, lon0, lon1) <= spec.RadiusKm {
			out = append(out, child)
		}
	}
	return out
}

// MaxDistKm is an upper bound of the distance (as HaversineKm measures it) from (lat, lon) to any point of
// the box: along a meridian or a parallel the distance has no maximum inside a segment, so the farthest
// point is a corner; a hair is added for rounding.
func MaxDistKm(lat, lon, lat0, lat1, lon0, lon1 float64) float64 {
	d := 0.0
	for _, c := range [4][2]float64{{lat0, lon0}, {lat0, lon1}, {lat1, lon0}, {lat1, lon1}} {
		d = math.Max(d, HaversineKm(lat, lon, c[0], c[1]))
	}
	return maxDistOf(d)
}

// maxDistOf is MaxDistKm from the greatest distance to a corner.
func maxDistOf(d float64) float64 { return d*(1+1e-9) + 1e-9 }

// insideShare is the share of the box's area within radiusKm of (lat, lon), on a flat projection around
// the centre (a cell is at most tens of km across; only an estimate uses it): 16 strips across the box's
// longitudes, each with the exact length of its midline inside the circle.
func insideShare(lat, lon, radiusKm, lat0, lat1, lon0, lon1 float64) float64 {
	const kmPerDeg = EarthRadiusKm * math.Pi / 180
	const strips = 16
	kx := kmPerDeg * math.Cos(lat*math.Pi/180)
	x0, x1 := (lon0-lon)*kx, (lon1-lon)*kx
	y0, y1 := (lat0-lat)*kmPerDeg, (lat1-lat)*kmPerDeg
	in := 0.0
	for i := range strips {
		x := x0 + (float64(i)+0.5)*(x1-x0)/strips
		if h := radiusKm*radiusKm - x*x; h > 0 {
			s := math.Sqrt(h)
			in += max(0, min(y1, s)-max(y0, -s))
		}
	}
	return min(1, in/strips/(y1-y0))
}
