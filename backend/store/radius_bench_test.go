package store

import (
	"math/rand/v2"
	"testing"
)

// uniformCells is CellCounter at a uniform density (perCell records in every cell of GeoPrecision): the
// counters cost nothing, so a benchmark times the Go of the cover and the total alone.
type uniformCells struct{ perCell int }

func (u uniformCells) CellCounts(cells []string) ([]CellCount, error) {
	out := make([]CellCount, len(cells))
	for i, c := range cells {
		n := u.perCell << (5 * (GeoPrecision - len(c)))
		out[i] = CellCount{n, n}
	}
	return out, nil
}

func (u uniformCells) CountCells(cells []string) (int, error) { return len(cells), nil }

// BenchmarkRadiusCells is the Go CPU a radius list with its total spends on its cells, one op a circle
// of 64 at random points of the Eje Cafetero: "cover" is NewCover (the walk's cells), "badger" the cover
// and RadiusTotalOf (Badger's path), "pg" the cover, CircleCells (the counters prefetched) and
// RadiusTotalOf (PostgreSQL's). The counters are uniform at the density of 1M records over the box (126
// a cell of GeoPrecision: a 5 km total is estimated), "sparse" at 1 a cell (the edge is counted, exact).
// Instruction counts, steadier than time on a shared machine:
//
//	go test -c -o /tmp/store.test ./backend/store && GOGC=off valgrind --tool=callgrind \
//	  --toggle-collect='*radiusCellsOps*' /tmp/store.test -test.run '^$' -test.bench 'RadiusCells/pg-5km$' -test.benchtime 640x
func BenchmarkRadiusCells(b *testing.B) {
	for _, c := range []struct {
		name     string
		radiusKm float64
		perCell  int
		pg, tot  bool
	}{
		{"cover-5km", 5, 126, false, false},
		{"badger-5km", 5, 126, false, true},
		{"pg-5km", 5, 126, true, true},
		{"pg-5km-sparse", 5, 1, true, true},
		{"pg-1km", 1, 126, true, true},
		{"pg-20km", 20, 126, true, true},
	} {
		specs := make([]ListSpec, 64)
		rng := rand.New(rand.NewPCG(16, 5))
		for i := range specs {
			specs[i] = ListSpec{Near: true, Limit: 20, RadiusKm: c.radiusKm, Lat: 4.45 + rng.Float64()*0.7, Lon: -75.95 + rng.Float64()*0.5}
		}
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			radiusCellsOps(b, b.N, specs, uniformCells{c.perCell}, c.pg, c.tot)
		})
	}
}

// radiusCellsOps runs n ops of BenchmarkRadiusCells (a function of its own for callgrind's toggle).
func radiusCellsOps(b *testing.B, n int, specs []ListSpec, c CellCounter, pg, total bool) {
	for i := range n {
		spec := &specs[i%len(specs)]
		cover := NewCover(spec.Lat, spec.Lon, spec.RadiusKm)
		if pg && CircleCells(spec, cover, 1024) == nil && spec.RadiusKm <= 10 {
			b.Fatal("no cells prefetched")
		}
		if total {
			if _, _, err := RadiusTotalOf(spec, c, cover); err != nil {
				b.Fatal(err)
			}
		}
	}
}
