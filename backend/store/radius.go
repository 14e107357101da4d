package store

import (
	"math"
	"slices"
	"strings"
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
// The inside cells' sum is asked of the fewest counters that give it (grouping): a 5 km circle's ~100
// inside cells of precision 6 cost ~40 counters instead, its ~60 edge cells the same.

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
	// CellCounts returns the counters of cells (ascending, of precisions CellCountMin…GeoPrecision).
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
	first := cover.firstLevel(spec)
	level := first.level
	var g grouping
	var known []knownCell // the cells of the level before that were split, with their counters
	// Level by level (one precision each), parents before their children. The first is the cover's.
	for len(level) > 0 {
		p := len(level[0].cell)
		var reads []string
		var terms []term
		if first != nil {
			reads, terms, first = first.reads, first.terms, nil
		} else {
			for i := range level {
				level[i].inside = cellInside(spec, level[i].cell)
			}
			reads, terms = g.choose(level, known), g.terms
		}
		counts, err := c.CellCounts(reads)
		if err != nil {
			return 0, false, err
		}
		count := func(t *term) CellCount {
			if t.read >= 0 {
				return counts[t.read]
			}
			i, _ := slices.BinarySearchFunc(known, t.cell, func(k knownCell, cell string) int { return strings.Compare(k.cell, cell) })
			return known[i].count
		}
		for i := range terms {
			t := &terms[i]
			inside += int(t.sign) * count(t).Matching
			for _, cell := range level[t.lo:t.hi] {
				if !cell.inside {
					inside -= int(t.sign) * counts[cell.read].Matching
				}
			}
		}
		var next []levelCell
		var split []knownCell
		for _, cell := range level {
			if cell.inside {
				continue
			}
			k := counts[cell.read]
			switch {
			case k.Matching == 0:
			case p >= GeoPrecision || k.All <= maxEdgeScan:
				edges = append(edges, edge{cell.cell, k.Matching})
				cost += k.All
			default:
				next = appendChildCells(next, spec, cell.cell)
				split = append(split, knownCell{cell.cell, k})
			}
		}
		level, known = next, split
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

// levelCell is a cell of one level of RadiusTotal: wholly inside the circle, or crossed by its edge
// (then read is where grouping.choose put it among the counters to read); code is its geohash as a
// number (GeohashCode), whose prefixes grouping compares.
type levelCell struct {
	cell   string
	code   uint64
	inside bool
	read   int32
}

// firstLevel is the first level RadiusTotal counts (the cover's cells, or their children when coarser
// than CellCountMin) and what grouping chose for it: CircleCells and RadiusTotalOf share it.
type firstLevel struct {
	level []levelCell
	terms []term
	reads []string
}

// firstLevel returns the first level of spec's total over the cover, computed on first use.
func (g *Cover) firstLevel(spec *ListSpec) *firstLevel {
	if g.first.level != nil {
		return &g.first
	}
	level := make([]levelCell, len(g.Cells))
	for i := range g.Cells {
		level[i] = levelCell{cell: g.Cells[i].Cell, inside: g.MaxKm(&g.Cells[i]) <= spec.RadiusKm}
	}
	for len(level) > 0 && len(level[0].cell) < CellCountMin {
		var next []levelCell
		for _, cell := range level {
			next = appendChildCells(next, spec, cell.cell)
		}
		level = next
		for i := range level {
			level[i].inside = cellInside(spec, level[i].cell)
		}
	}
	g.first = firstLevel{level: level}
	if len(level) > 0 {
		var gr grouping
		g.first.reads = gr.choose(level, nil)
		g.first.terms = gr.terms
	}
	return &g.first
}

// knownCell is a cell whose counters were read at the level before.
type knownCell struct {
	cell  string
	count CellCount
}

// term is a counter whose Matching a level's inside sum adds (sign 1) or takes off (-1).
type term struct {
	cell string
	sign int32
	name int32 // when cell is not set yet: where its name starts in grouping.names
	read int32 // where choose put it among the counters to read; -1: a known cell's
	// A prefix's counter comes with its edge cells', level[lo:hi] (those not inside), the other sign.
	lo, hi int32
}

// grouping chooses which counters give the sum of a level's inside cells, the fewest it can: a cell's
// counter is the sum of its 32 children's, so the inside cells under a coarser cell are also its counter
// less its edge cells' (read anyway) and its other children's (outside the circle, or holding no cell of
// the level). Inside a circle, one counter a precision coarser replaces tens of cells; near its edge a few
// cells outside replace many inside. The cells under a split edge cell of the level before (known, read
// already) cost only their outside children; the cover's cells may group up to CellCountMin.
type grouping struct {
	level  []levelCell // sorted, of precision p
	p, top int         // cells group under their prefixes of length top…p-1
	known  bool        // the prefixes of length top are known cells
	terms  []term
	names  []byte // the names of the cells of terms that are not of the level, one string at the end
}

// choose sets the terms of level's inside sum and returns the cells whose counters to read: the edge
// cells and the terms' (but the known ones), ascending.
func (g *grouping) choose(level []levelCell, known []knownCell) []string {
	g.level, g.p = level, len(level[0].cell)
	if g.terms == nil {
		g.terms, g.names = make([]term, 0, len(level)/2), make([]byte, 0, 16*g.p)
	}
	g.terms = g.terms[:0]
	g.known = len(known) > 0
	switch {
	case g.known:
		g.top = g.p - 1
	case g.p > CellCountMin:
		g.top = CellCountMin
	default:
		g.top = g.p
	}
	g.names = g.names[:0]
	for i := range level {
		level[i].code = GeohashCode(level[i].cell)
	}
	for i := 0; i < len(level); {
		j := g.group(i, len(level), g.top)
		g.emit(i, j, g.top, true, 1)
		i = j
	}
	names := string(g.names)
	// The terms come in order (a prefix before its children, children in order), as the edge cells do:
	// merged, not sorted.
	reads := make([]string, 0, len(level)+len(g.terms))
	e := 0
	for i := range g.terms {
		t := &g.terms[i]
		if t.cell == "" {
			t.cell = names[t.name : int(t.name)+g.p]
		}
		if g.known && len(t.cell) == g.top {
			t.read = -1
			continue
		}
		for ; e < len(level) && level[e].cell < t.cell; e++ {
			if !level[e].inside {
				level[e].read = int32(len(reads))
				reads = append(reads, level[e].cell)
			}
		}
		t.read = int32(len(reads))
		reads = append(reads, t.cell)
	}
	for ; e < len(level); e++ {
		if !level[e].inside {
			level[e].read = int32(len(reads))
			reads = append(reads, level[e].cell)
		}
	}
	return reads
}

// group is the end of the cells from lo (before hi) that share lo's prefix of length q.
func (g *grouping) group(lo, hi, q int) int {
	j, shift := lo+1, 5*(g.p-q)
	for j < hi && g.level[j].code>>shift == g.level[lo].code>>shift {
		j++
	}
	return j
}

// costs are how many counters give the sum of the inside cells of level[lo:hi] (all under one prefix
// of length q), and the sum of the other cells under it that are not edge cells (minus).
func (g *grouping) costs(lo, hi, q int) (plus, minus int) {
	if q == g.p {
		if g.level[lo].inside {
			return 1, 0
		}
		return 0, 0
	}
	sp, sm := g.childCosts(lo, hi, q)
	if g.known && q == g.top {
		return min(sp, sm), min(sp, sm)
	}
	return min(sp, 1+sm), min(sm, 1+sp)
}

// childCosts sums costs over the children of the prefix of length q: a child holding no cell of the
// level is one counter of the minus sum.
func (g *grouping) childCosts(lo, hi, q int) (plus, minus int) {
	groups := 0
	for i := lo; i < hi; groups++ {
		j := g.group(i, hi, q+1)
		a, b := g.costs(i, j, q+1)
		plus, minus, i = plus+a, minus+b, j
	}
	return plus, minus + len(GeohashAlphabet) - groups
}

// emit appends the terms of the plus (or minus) sum of level[lo:hi], under one prefix of length q.
func (g *grouping) emit(lo, hi, q int, plus bool, sign int32) {
	if q == g.p {
		if plus && g.level[lo].inside {
			g.terms = append(g.terms, term{cell: g.level[lo].cell, sign: sign})
		}
		return
	}
	sp, sm := g.childCosts(lo, hi, q)
	var coarse bool // the prefix's counter less its edge cells and the other sum
	switch {
	case g.known && q == g.top:
		coarse = sm < sp
	case plus:
		coarse = 1+sm < sp
	default:
		coarse = 1+sp < sm
	}
	if coarse {
		g.terms = append(g.terms, term{cell: g.level[lo].cell[:q], sign: sign, lo: int32(lo), hi: int32(hi)})
		plus, sign = !plus, -sign
	}
	// The children: those holding cells of the level, and (minus) the others.
	prefix := g.level[lo].cell[:q]
	next := 0
	for i := lo; i < hi; {
		j := g.group(i, hi, q+1)
		ch := int(g.level[i].code >> (5 * (g.p - q - 1)) & 31)
		for ; !plus && next < ch; next++ {
			g.other(prefix, next, sign)
		}
		next = ch + 1
		g.emit(i, j, q+1, plus, sign)
		i = j
	}
	for ; !plus && next < len(GeohashAlphabet); next++ {
		g.other(prefix, next, sign)
	}
}

// other appends the term of the child ch of prefix, which holds no cell of the level.
func (g *grouping) other(prefix string, ch int, sign int32) {
	if len(prefix)+1 == g.p { // named in g.names, made a string with the others
		g.terms = append(g.terms, term{sign: sign, name: int32(len(g.names))})
		g.names = append(append(g.names, prefix...), GeohashAlphabet[ch])
		return
	}
	g.terms = append(g.terms, term{cell: prefix + GeohashAlphabet[ch:ch+1], sign: sign})
}

// CircleCells returns every cell whose counters RadiusTotal may ask for spec (CellCounts), all levels
// in one list, so that a store can read them in one go before it knows which it needs; nil when there
// would be more than max. The first level's are known from the circle alone; below, any child of an
// edge cell that may be split. cover is the circle's (NewCover), for RadiusTotalOf's use too.
func CircleCells(spec *ListSpec, cover *Cover, max int) []string {
	first := cover.firstLevel(spec)
	level := first.level
	var split []string
	for i := range level {
		if !level[i].inside && len(level[i].cell) < GeoPrecision {
			split = append(split, level[i].cell)
		}
	}
	all := slices.Clip(first.reads) // the cover's, appended to as a copy
	for len(split) > 0 && len(all) <= max {
		var next []string
		for _, cell := range split {
			if len(all)+len(GeohashAlphabet) > max {
				return nil
			}
			names := childNames(cell)
			code, p := GeohashCode(cell)<<5, len(cell)+1
			for i := range len(GeohashAlphabet) {
				child := names[i*p : (i+1)*p]
				all = append(all, child)
				lat0, lat1, lon0, lon1 := geohashBoxOf(code|uint64(i), p)
				if p < GeoPrecision && MinDistKm(spec.Lat, spec.Lon, lat0, lat1, lon0, lon1) <= spec.RadiusKm &&
					MaxDistKm(spec.Lat, spec.Lon, lat0, lat1, lon0, lon1) > spec.RadiusKm {
					next = append(next, child)
				}
			}
		}
		split = next
	}
	if len(all) > max {
		return nil
	}
	return all
}

// cellInside reports whether cell lies wholly within the circle of spec.
func cellInside(spec *ListSpec, cell string) bool {
	lat0, lat1, lon0, lon1 := GeohashBox(cell)
	return MaxDistKm(spec.Lat, spec.Lon, lat0, lat1, lon0, lon1) <= spec.RadiusKm
}

// appendChildCells appends the cells of cell one precision finer that the circle reaches, in order.
func appendChildCells(out []levelCell, spec *ListSpec, cell string) []levelCell {
	code, p := GeohashCode(cell)<<5, len(cell)+1
	var names string // the children's names, made on the first one kept
	for i := range len(GeohashAlphabet) {
		lat0, lat1, lon0, lon1 := geohashBoxOf(code|uint64(i), p)
		if MinDistKm(spec.Lat, spec.Lon, lat0, lat1, lon0, lon1) <= spec.RadiusKm {
			if names == "" {
				names = childNames(cell)
			}
			out = append(out, levelCell{cell: names[i*p : (i+1)*p]})
		}
	}
	return out
}

// childNames is the names of cell's 32 children back to back, one allocation for them all.
func childNames(cell string) string {
	var b strings.Builder
	b.Grow(len(GeohashAlphabet) * (len(cell) + 1))
	for i := range len(GeohashAlphabet) {
		b.WriteString(cell)
		b.WriteByte(GeohashAlphabet[i])
	}
	return b.String()
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
