package store

import (
	"math"
	"math/rand/v2"
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
			if _, _, err := RadiusTotal(spec, a); err != nil {
				t.Fatal(err)
			}
			all := CircleCells(spec, math.MaxInt)
			have := map[string]bool{}
			for _, c := range all {
				have[c] = true
			}
			for _, c := range a.asked {
				if !have[c] {
					t.Fatalf("%+v: RadiusTotal asked for %s, not in CircleCells (%d cells)", spec, c, len(all))
				}
			}
			if len(all) > 1 && CircleCells(spec, len(all)-1) != nil {
				t.Fatalf("%+v: CircleCells went past its bound", spec)
			}
		}
	}
}
