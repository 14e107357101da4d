package store

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// memCells is CellCounter over points kept in memory, counted per cell as the stores count them.
type memCells struct {
	counts map[string]int          // cells of precision CellCountMin…GeoPrecision
	points map[string][][2]float64 // by cell of GeoPrecision
	spec   *ListSpec
	read   int // entries read by CountCells
}

func newMemCells(pts [][2]float64) *memCells {
	m := &memCells{counts: map[string]int{}, points: map[string][][2]float64{}}
	for _, p := range pts {
		gh := Geohash(p[0], p[1], GeoPrecision)
		for l := CellCountMin; l <= GeoPrecision; l++ {
			m.counts[gh[:l]]++
		}
		m.points[gh] = append(m.points[gh], p)
	}
	return m
}

func (m *memCells) CellCounts(cells []string) ([]CellCount, error) {
	out := make([]CellCount, len(cells))
	for i, c := range cells {
		out[i] = CellCount{m.counts[c], m.counts[c]}
	}
	return out, nil
}

func (m *memCells) CountCells(cells []string) (int, error) {
	n := 0
	for _, c := range cells {
		if len(c) < GeoPrecision {
			k, _ := m.CountCells(appendChildren(nil, m.spec, c))
			n += k
			continue
		}
		for _, p := range m.points[c] {
			m.read++
			if HaversineKm(m.spec.Lat, m.spec.Lon, p[0], p[1]) <= m.spec.RadiusKm {
				n++
			}
		}
	}
	return n, nil
}

// circle counts every record within the circle: the truth an estimate is measured against.
func (m *memCells) circle() (int, error) {
	return m.CountCells(CoverCells(m.spec.Lat, m.spec.Lon, m.spec.RadiusKm))
}

// TestRadiusEstimateError measures RadiusTotal's estimate against the exact count at the density of 1M
// records uniform over the Eje Cafetero (0.8° × 0.6°, as make bench's generator), around random points
// with random radii of 1–20 km, and checks that a sparse area gets an exact total. The figures are those
// the schema's description of totalExact and the README give.
func TestRadiusEstimateError(t *testing.T) {
	n := 1_000_000
	if testing.Short() {
		n = 250_000
	}
	// With -short, a quarter of the records in a quarter of the area: the same density.
	s := math.Sqrt(float64(n) / 1e6)
	lat0, lon0, dLat, dLon := 4.4, -76.0, 0.8*s, 0.6*s
	rng := rand.New(rand.NewPCG(16, 3))
	pts := make([][2]float64, n)
	for i := range pts {
		pts[i] = [2]float64{lat0 + rng.Float64()*dLat, lon0 + rng.Float64()*dLon}
	}
	m := newMemCells(pts)
	var sum, worst, sum5 float64
	estimated, n5 := 0, 0
	const queries = 300
	for i := range queries {
		r := 1 + rng.Float64()*19
		if i%3 == 0 {
			r = 5
		}
		// Centres at least r from the box's sides: the area around is as dense as the rest.
		mLat, mLon := r/111+0.01, r/111+0.01
		spec := &ListSpec{Near: true, RadiusKm: r, Lat: lat0 + mLat + rng.Float64()*(dLat-2*mLat), Lon: lon0 + mLon + rng.Float64()*(dLon-2*mLon)}
		if dLat < 2*mLat || dLon < 2*mLon {
			continue
		}
		m.spec = spec
		est, exact, err := RadiusTotal(spec, m)
		if err != nil {
			t.Fatal(err)
		}
		truth, _ := m.circle()
		if exact {
			if est != truth {
				t.Fatalf("%+v: exact total %d, truth %d", spec, est, truth)
			}
			continue
		}
		estimated++
		off := math.Abs(float64(est-truth)) / float64(truth)
		sum += off
		worst = max(worst, off)
		if r == 5 {
			sum5 += off
			n5++
		}
	}
	if estimated < queries/2 {
		t.Fatalf("%d of %d totals estimated at 1M density", estimated, queries)
	}
	t.Logf("%d records: %d totals estimated: relative error mean %.3f%%, max %.3f%%; 5 km: mean %.3f%% over %d",
		n, estimated, 100*sum/float64(estimated), 100*worst, 100*sum5/float64(max(n5, 1)), n5)
	if sum/float64(estimated) > 0.005 || worst > 0.04 {
		t.Errorf("estimate off by %.3f%% on average, %.3f%% at worst", 100*sum/float64(estimated), 100*worst)
	}

	// A sparse area (a thousandth of the density): the edge is read, the total exact.
	m = newMemCells(pts[:n/1000])
	for range 50 {
		spec := &ListSpec{Near: true, RadiusKm: 1 + rng.Float64()*19, Lat: lat0 + rng.Float64()*dLat, Lon: lon0 + rng.Float64()*dLon}
		m.spec = spec
		got, exact, err := RadiusTotal(spec, m)
		truth, _ := m.circle()
		if err != nil || !exact || got != truth {
			t.Fatalf("%+v: total %d (exact %v), truth %d, %v", spec, got, exact, truth, err)
		}
	}
}

// askedCells records the cells RadiusTotal asks counters for.
type askedCells struct {
	*memCells
	asked []string
}

func (a *askedCells) CellCounts(cells []string) ([]CellCount, error) {
	a.asked = append(a.asked, cells...)
	return a.memCells.CellCounts(cells)
}

// TestCircleCells checks that CircleCells holds every cell RadiusTotal asks for, dense or sparse, from a
// street to the widest radius, and gives up past its bound.
func TestCircleCells(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 7))
	pts := make([][2]float64, 200_000)
	for i := range pts {
		pts[i] = [2]float64{4.4 + rng.Float64()*0.8, -76.0 + rng.Float64()*0.6}
	}
	for _, m := range []*memCells{newMemCells(pts), newMemCells(pts[:500])} {
		for range 100 {
			spec := &ListSpec{Near: true, RadiusKm: 0.2 + rng.Float64()*49.8, Lat: 4.4 + rng.Float64()*0.8, Lon: -76.0 + rng.Float64()*0.6}
			m.spec = spec
			a := &askedCells{memCells: m}
			cover := NewCover(spec.Lat, spec.Lon, spec.RadiusKm)
			all := CircleCells(spec, cover, math.MaxInt) // first, as a store's prefetch: the cover serves both
			if _, _, err := RadiusTotalOf(spec, a, cover); err != nil {
				t.Fatal(err)
			}
			have := map[string]bool{}
			for _, c := range all {
				have[c] = true
			}
			for _, c := range a.asked {
				if !have[c] {
					t.Fatalf("%+v: RadiusTotal asked for %s, not in CircleCells (%d cells)", spec, c, len(all))
				}
			}
			if len(all) > 1 && CircleCells(spec, cover, len(all)-1) != nil {
				t.Fatalf("%+v: CircleCells went past its bound", spec)
			}
		}
	}
}

// appendChildren is appendChildCells as names.
func appendChildren(out []string, spec *ListSpec, cell string) []string {
	for _, c := range appendChildCells(nil, spec, cell) {
		out = append(out, c.cell)
	}
	return out
}

// oldRadiusTotalOf is RadiusTotalOf as it was before cells inside were grouped (the reference of
// TestGroupedTotalMatchesCellByCell): RadiusTotal given the circle's cover (NewCover), which a radius list has computed for
// its walk already.
func oldRadiusTotalOf(spec *ListSpec, c CellCounter, cover *Cover) (total int, exact bool, err error) {
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

// TestGroupedTotalMatchesCellByCell checks that RadiusTotal's grouped counters give the total, and its
// exactness, of reading every cell (oldRadiusTotalOf), over random circles of 0.1–50 km, dense and sparse,
// scoped (Matching below All), near the poles and across the antimeridian, and that it reads fewer counters.
func TestGroupedTotalMatchesCellByCell(t *testing.T) {
	rng := rand.New(rand.NewPCG(16, 3))
	type area struct{ lat, lon, dLat, dLon float64 }
	areas := []area{{4.4, -76.0, 0.8, 0.6}, {89.5, -180, 0.5, 360}, {-90, -180, 0.5, 360}, {-5, 179.5, 10, 0.5}, {-5, -180, 10, 0.5}}
	var asked, askedOld int
	for _, a := range areas {
		pts := make([][2]float64, 100_000)
		for i := range pts {
			lon := a.lon + rng.Float64()*a.dLon
			if lon >= 180 {
				lon -= 360
			}
			pts[i] = [2]float64{a.lat + rng.Float64()*a.dLat, lon}
		}
		for _, n := range []int{len(pts), 2000} {
			m, scopedM := newMemCells(pts[:n]), newScopedCells(nil, pts[:n])
			scopedM.memCells = m
			for range 60 {
				lon := a.lon + rng.Float64()*a.dLon
				if lon >= 180 {
					lon -= 360
				}
				spec := &ListSpec{Near: true, RadiusKm: 0.1 + rng.Float64()*49.9, Lat: a.lat + rng.Float64()*a.dLat, Lon: lon}
				m.spec = spec
				var scoped *scopedCells
				if rng.IntN(2) == 0 {
					scoped = scopedM
				}
				var c, cOld CellCounter = &countedCells{CellCounter: m}, &countedCells{CellCounter: m}
				if scoped != nil {
					c, cOld = &countedCells{CellCounter: scoped}, &countedCells{CellCounter: scoped}
				}
				got, exact, err := RadiusTotal(spec, c)
				want, wantExact, errOld := oldRadiusTotalOf(spec, cOld, NewCover(spec.Lat, spec.Lon, spec.RadiusKm))
				if err != nil || errOld != nil || got != want || exact != wantExact {
					t.Fatalf("%+v (scoped %v): total %d exact %v, cell by cell %d exact %v (%v, %v)", spec, scoped != nil, got, exact, want, wantExact, err, errOld)
				}
				asked += c.(*countedCells).asked
				askedOld += cOld.(*countedCells).asked
			}
		}
	}
	if asked >= askedOld {
		t.Fatalf("grouped counters read %d, cell by cell %d", asked, askedOld)
	}
	t.Logf("counters read: %d grouped, %d cell by cell", asked, askedOld)
}

// countedCells counts the counters asked for.
type countedCells struct {
	CellCounter
	asked int
}

func (c *countedCells) CellCounts(cells []string) ([]CellCount, error) {
	if !slices.IsSorted(cells) {
		return nil, fmt.Errorf("cells not ascending: %v", cells)
	}
	c.asked += len(cells)
	return c.CellCounter.CellCounts(cells)
}

// scopedCells matches only the points of odd hundredths of a degree of longitude (a scope or a kind):
// Matching is below All, as a scoped list's.
type scopedCells struct {
	*memCells
	matching *memCells
}

func newScopedCells(m *memCells, pts [][2]float64) *scopedCells {
	var in [][2]float64
	for _, p := range pts {
		if int(math.Floor(p[1]*100))%2 != 0 {
			in = append(in, p)
		}
	}
	return &scopedCells{m, newMemCells(in)}
}

func (s *scopedCells) CellCounts(cells []string) ([]CellCount, error) {
	out := make([]CellCount, len(cells))
	for i, c := range cells {
		out[i] = CellCount{s.matching.counts[c], s.counts[c]}
	}
	return out, nil
}

func (s *scopedCells) CountCells(cells []string) (int, error) {
	s.matching.spec = s.spec
	return s.matching.CountCells(cells)
}
