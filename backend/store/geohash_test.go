package store

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

func TestCoverCellsContainCircle(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for range 200 {
		lat, lon := -4+rng.Float64()*17, -79+rng.Float64()*12
		r := 0.5 + rng.Float64()*99.5
		cells := CoverCells(lat, lon, r)
		if len(cells) == 0 || len(cells) > maxCoverCells {
			t.Fatalf("r=%v: %d cells", r, len(cells))
		}
		for range 200 { // random points inside the circle must fall in a covering cell
			pLat, pLon := lat+(rng.Float64()*2-1)*r/111, lon+(rng.Float64()*2-1)*r/111
			if HaversineKm(lat, lon, pLat, pLon) > r {
				continue
			}
			gh := Geohash(pLat, pLon, GeoPrecision)
			if !slices.ContainsFunc(cells, func(c string) bool { return strings.HasPrefix(gh, c) }) {
				t.Fatalf("point %v,%v at %.3f km of %v,%v (r=%v) is in no cell of %v", pLat, pLon, HaversineKm(lat, lon, pLat, pLon), lat, lon, r, cells)
			}
		}
	}
	if got := Geohash(4.5339, -75.6811, 5); got != "d2g6f" && len(got) != 5 {
		t.Fatal(got)
	}
}

// coverCellsCellByCell is CoverCells as it was written before Cover: a Geohash and a MinDistKm per cell
// of the box.
func coverCellsCellByCell(lat, lon, radiusKm float64) []string {
	const kmPerDegLat = EarthRadiusKm * math.Pi / 180
	dLatR := radiusKm/kmPerDegLat*1.01 + 1e-6
	cosLat := math.Max(math.Cos(lat*math.Pi/180), 0.01)
	dLonR := math.Asin(math.Min(1, math.Sin(radiusKm/EarthRadiusKm)/cosLat))*180/math.Pi*1.01 + 1e-6
	minLat, maxLat := math.Max(lat-dLatR, -90), math.Min(lat+dLatR, 90)
	minLon, maxLon := math.Max(lon-dLonR, -180), math.Min(lon+dLonR, 180)
	for p := GeoPrecision; p >= 1; p-- {
		h, w := GeohashCellSize(p)
		rows := int(math.Floor((maxLat+90)/h) - math.Floor((minLat+90)/h) + 1)
		cols := int(math.Floor((maxLon+180)/w) - math.Floor((minLon+180)/w) + 1)
		if rows*cols > maxCoverCells && p > 1 {
			continue
		}
		var cells []string
		for r := math.Floor((minLat+90)/h) * h; r <= maxLat+90; r += h {
			for c := math.Floor((minLon+180)/w) * w; c <= maxLon+180; c += w {
				cLat0, cLon0 := r-90, c-180
				if MinDistKm(lat, lon, cLat0, cLat0+h, cLon0, cLon0+w) > radiusKm {
					continue
				}
				cells = append(cells, Geohash(math.Min(cLat0+h/2, 90), math.Min(cLon0+w/2, 180), p))
			}
		}
		slices.Sort(cells)
		return slices.Compact(cells)
	}
	return nil
}

// TestCoverMatchesCellByCell: Cover's cells and distances are, to the bit, those computed cell by cell
// (the radius walk's order and the totals depend on them), over Colombia and at the poles and the
// antimeridian, where cells past the edge are clamped.
func TestCoverMatchesCellByCell(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	points := [][2]float64{{90, 0}, {-90, 0}, {89.999, 179.999}, {-89.99, -179.99}, {0, 180}, {0, -180}, {4.6, -75.85}, {12.5, 179.9999}}
	for range 400 {
		points = append(points, [2]float64{-4 + rng.Float64()*17, -79 + rng.Float64()*12})
	}
	for range 100 {
		points = append(points, [2]float64{-90 + rng.Float64()*180, -180 + rng.Float64()*360})
	}
	for i, pt := range points {
		lat, lon := pt[0], pt[1]
		for _, r := range []float64{0.3, 1, 5, 5 + rng.Float64()*20, 50 + rng.Float64()*150} {
			want := coverCellsCellByCell(lat, lon, r)
			g := NewCover(lat, lon, r)
			if got := CoverCells(lat, lon, r); !slices.Equal(got, want) {
				t.Fatalf("point %d (%v, %v) r=%v: cells\n%v, want\n%v", i, lat, lon, r, got, want)
			}
			for k := range g.Cells {
				c := &g.Cells[k]
				lat0, lat1, lon0, lon1 := GeohashBox(c.Cell)
				if want := MinDistKm(lat, lon, lat0, lat1, lon0, lon1); c.MinKm != want {
					t.Fatalf("point (%v, %v) r=%v cell %s: MinKm %v, want %v", lat, lon, r, c.Cell, c.MinKm, want)
				}
				if got, want := g.MaxKm(c), MaxDistKm(lat, lon, lat0, lat1, lon0, lon1); got != want {
					t.Fatalf("point (%v, %v) r=%v cell %s: MaxKm %v, want %v", lat, lon, r, c.Cell, got, want)
				}
			}
		}
	}
}

// TestInterleaveMatchesBitLoop: interleave's spread bits are the geohash bits taken one at a time,
// longitude first, at every precision.
func TestInterleaveMatchesBitLoop(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for p := 1; p <= 12; p++ {
		latBits, lonBits := 5*p/2, (5*p+1)/2
		for range 2000 {
			row, col := rng.IntN(1<<latBits), rng.IntN(1<<lonBits)
			var want uint64
			lb, ob := latBits, lonBits
			for k := range latBits + lonBits {
				if k%2 == 0 {
					ob--
					want = want<<1 | uint64(col>>ob&1)
				} else {
					lb--
					want = want<<1 | uint64(row>>lb&1)
				}
			}
			if got := interleave(row, col, latBits, lonBits); got != want {
				t.Fatalf("p=%d row %d col %d: %b, want %b", p, row, col, got, want)
			}
		}
	}
}

// geohashBoxBisect is GeohashBox as it was written before: the range halved bit by bit.
func geohashBoxBisect(cell string) (lat0, lat1, lon0, lon1 float64) {
	lat0, lat1, lon0, lon1 = -90, 90, -180, 180
	even := true
	for i := 0; i < len(cell); i++ {
		ch := strings.IndexByte(GeohashAlphabet, cell[i])
		for b := 4; b >= 0; b-- {
			bit := ch>>b&1 == 1
			if even {
				if mid := (lon0 + lon1) / 2; bit {
					lon0 = mid
				} else {
					lon1 = mid
				}
			} else {
				if mid := (lat0 + lat1) / 2; bit {
					lat0 = mid
				} else {
					lat1 = mid
				}
			}
			even = !even
		}
	}
	return lat0, lat1, lon0, lon1
}

// TestGeohashBoxMatchesBisection: GeohashBox from the cell's row and column gives, to the bit, the
// bounds of the bisection, at every precision, at the poles and the antimeridian.
func TestGeohashBoxMatchesBisection(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	cells := []string{"", "0", "z", "zzzzzzzzzzzz", "000000000000", "pbpbpbpbpbpb", "d2g6f", "d2g6fA"}
	for range 20000 {
		b := make([]byte, 1+rng.IntN(12))
		for i := range b {
			b[i] = GeohashAlphabet[rng.IntN(32)]
		}
		cells = append(cells, string(b))
	}
	for _, c := range cells {
		a0, a1, o0, o1 := GeohashBox(c)
		b0, b1, p0, p1 := geohashBoxBisect(c)
		if a0 != b0 || a1 != b1 || o0 != p0 || o1 != p1 {
			t.Fatalf("%q: %v %v %v %v, bisection %v %v %v %v", c, a0, a1, o0, o1, b0, b1, p0, p1)
		}
	}
}
