package places

import (
	"math/rand/v2"
	"testing"
)

// The grid answers every point exactly as the scan of every place does: random points over Colombia and
// far beyond it, every place's own point (15 points are shared by two places: ties, the first by code
// wins), and points halfway between neighbouring places.
func TestNearestGridAnswersAsTheScan(t *testing.T) {
	all := load().all
	g := loadGrid()
	check := func(t *testing.T, lat, lon float64) {
		t.Helper()
		if got, want := g.nearest(lat, lon), nearestScan(all, lat, lon); got != want {
			t.Fatalf("nearest(%v, %v) = %s (%s), the scan says %s (%s)", lat, lon, all[got].Code, all[got].Name, all[want].Code, all[want].Name)
		}
	}
	// The parts run in parallel: each is a scan of every place per point. With -short (the race phase of
	// make test, where a scan costs ten times as much) a tenth of the random points.
	colombia, world := 50_000, 2_000
	if testing.Short() {
		colombia, world = 5_000, 200
	}
	t.Run("random points", func(t *testing.T) {
		t.Parallel()
		rng := rand.New(rand.NewPCG(1, 2))
		for range colombia {
			check(t, -4.5+rng.Float64()*18.5, -82+rng.Float64()*15.5)
		}
		for range world {
			check(t, -90+rng.Float64()*180, -180+rng.Float64()*360)
		}
	})
	t.Run("places and midpoints", func(t *testing.T) {
		t.Parallel()
		prev := -1
		for i, p := range all {
			if len(p.Code) == 2 {
				continue
			}
			check(t, p.Lat, p.Lon)
			if prev >= 0 {
				check(t, (p.Lat+all[prev].Lat)/2, (p.Lon+all[prev].Lon)/2)
			}
			prev = i
		}
		for _, pt := range [][2]float64{{90, 0}, {-90, 180}, {0, 0}, {4.5, -75.6}, {13.384, -81.73}, {-4.1995, -66.9637}} {
			check(t, pt[0], pt[1])
		}
	})
}

// Ties go to the first place by code, in the grid as in the scan, also across cells.
func TestNearestGridTies(t *testing.T) {
	all := []Place{
		{Code: "01"},
		{Code: "01001", Lat: 1, Lon: 1},
		{Code: "01002", Lat: 1, Lon: 1},
		{Code: "01003", Lat: 1, Lon: 1.5},
		{Code: "01004", Lat: 1, Lon: 0.5},
		{Code: "01005", Lat: 3, Lon: 3},
	}
	g := newGrid(all)
	for _, pt := range [][2]float64{{1, 1}, {1, 1.25}, {1, 0.75}, {0, 0}, {2, 2}, {2.9, 1}, {1, 1.2}, {5, 5}} {
		if got, want := g.nearest(pt[0], pt[1]), nearestScan(all, pt[0], pt[1]); got != want {
			t.Errorf("nearest(%v) = %s, the scan says %s", pt, all[got].Code, all[want].Code)
		}
	}
	if got := g.nearest(1, 1); all[got].Code != "01001" {
		t.Errorf("a tie at (1, 1) gave %s, want the first by code, 01001", all[got].Code)
	}
	if g := newGrid([]Place{{Code: "01"}}); g.rows != 0 {
		t.Errorf("a list without points has a grid of %d rows", g.rows)
	}
}

// BenchmarkNearest compares the grid with the scan of every place on points over the Eje Cafetero.
func BenchmarkNearest(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	pts := make([][2]float64, 1024)
	for i := range pts {
		pts[i] = [2]float64{4.1 + rng.Float64()*0.8, -76 + rng.Float64()*0.8}
	}
	all, g := load().all, loadGrid()
	b.Run("grid", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			g.nearest(pts[i%len(pts)][0], pts[i%len(pts)][1])
		}
	})
	b.Run("scan", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			nearestScan(all, pts[i%len(pts)][0], pts[i%len(pts)][1])
		}
	})
}

// BenchmarkSearch is a search by name as buscar_lugar and GET places make it: a few names as people type them.
func BenchmarkSearch(b *testing.B) {
	qs := []string{"el caimo", "calarca", "santa rosa", "armenia quindio", "la florida pereira", "xyz"}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		Search(qs[i%len(qs)], 60, "63", "66", "17")
	}
}
