package places

import (
	"math"
	"sync"
)

// cellDeg is the side of a grid cell in degrees: about 22 km, one or two places a cell on average, so
// that a point's nearest place is nearly always found in the 3×3 cells around it.
const cellDeg = 0.2

// grid buckets the places that have a point (every one but the departamentos) by cell of cellDeg × cellDeg
// degrees over their bounding box; the cells hold indexes into all, ascending.
type grid struct {
	all        []Place
	lat0, lon0 float64
	rows, cols int
	start      []int32 // cell c's places are at[start[c]:start[c+1]]
	at         []int32
}

var loadGrid = sync.OnceValue(func() *grid { return newGrid(load().all) })

func newGrid(all []Place) *grid {
	g := &grid{all: all, lat0: math.Inf(1), lon0: math.Inf(1)}
	latMax, lonMax := math.Inf(-1), math.Inf(-1)
	for _, p := range all {
		if len(p.Code) == 2 {
			continue
		}
		g.lat0, g.lon0 = min(g.lat0, p.Lat), min(g.lon0, p.Lon)
		latMax, lonMax = max(latMax, p.Lat), max(lonMax, p.Lon)
	}
	if math.IsInf(g.lat0, 1) {
		return g
	}
	g.rows = int((latMax-g.lat0)/cellDeg) + 1
	g.cols = int((lonMax-g.lon0)/cellDeg) + 1
	g.start = make([]int32, g.rows*g.cols+1)
	cell := make([]int, len(all))
	for i, p := range all {
		cell[i] = -1
		if len(p.Code) != 2 {
			r, c := g.cellOf(p.Lat, p.Lon)
			cell[i] = r*g.cols + c
			g.start[cell[i]+1]++
		}
	}
	for c := 1; c < len(g.start); c++ {
		g.start[c] += g.start[c-1]
	}
	g.at = make([]int32, g.start[len(g.start)-1])
	fill := append([]int32(nil), g.start[:len(g.start)-1]...)
	for i, c := range cell {
		if c >= 0 {
			g.at[fill[c]] = int32(i)
			fill[c]++
		}
	}
	return g
}

// cellOf is the cell of a point, clamped to the grid: a point outside it searches from the nearest edge.
func (g *grid) cellOf(lat, lon float64) (int, int) {
	return clampCell((lat-g.lat0)/cellDeg, g.rows), clampCell((lon-g.lon0)/cellDeg, g.cols)
}

func clampCell(x float64, n int) int {
	switch {
	case x < 0:
		return 0
	case x >= float64(n):
		return n - 1
	}
	return int(x)
}

// nearest is nearestScan's answer (the lowest index among the places at the least distance) found by
// searching the cells in rings around the point's cell. A place in ring r+1 or beyond is more than r
// cells away in latitude or in longitude, so once k·(r·cellDeg)² exceeds the best distance so far no
// place outside the rings searched can be nearer, nor as near.
func (g *grid) nearest(lat, lon float64) int {
	if g.rows == 0 || math.IsNaN(lat) || math.IsNaN(lon) || math.IsInf(lat, 0) || math.IsInf(lon, 0) {
		return nearestScan(g.all, lat, lon)
	}
	k := math.Cos(lat * math.Pi / 180)
	k *= k
	r0, c0 := g.cellOf(lat, lon)
	last := max(r0, g.rows-1-r0, c0, g.cols-1-c0) // the ring that reaches the farthest corner
	best, bestD := -1, math.Inf(1)
	for ring := 0; ring <= last; ring++ {
		for r := max(r0-ring, 0); r <= min(r0+ring, g.rows-1); r++ {
			step := 1
			if r != r0-ring && r != r0+ring {
				step = 2 * ring // an inner row of the ring: only its two ends
			}
			for c := c0 - ring; c <= c0+ring; c += step {
				if c < 0 || c >= g.cols {
					continue
				}
				cell := r*g.cols + c
				for _, i := range g.at[g.start[cell]:g.start[cell+1]] {
					p := &g.all[i]
					dy, dx := p.Lat-lat, p.Lon-lon
					if d := dy*dy + k*dx*dx; d < bestD || (d == bestD && int(i) < best) {
						best, bestD = int(i), d
					}
				}
			}
		}
		// The bound is shrunk by a relative 1e-9 so that rounding in the cells' edges never makes it too large.
		if edge := float64(ring) * cellDeg; best >= 0 && k*edge*edge*(1-1e-9) > bestD {
			break
		}
	}
	return best
}

// nearestScan is the nearest place by a scan of every place: the reference the grid answers as.
func nearestScan(all []Place, lat, lon float64) int {
	k := math.Cos(lat * math.Pi / 180)
	k *= k
	best, bestD := -1, math.Inf(1)
	for i, p := range all {
		if len(p.Code) == 2 {
			continue
		}
		dy, dx := p.Lat-lat, p.Lon-lon
		if d := dy*dy + k*dx*dx; d < bestD {
			best, bestD = i, d
		}
	}
	return best
}
