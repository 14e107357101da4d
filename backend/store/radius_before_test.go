package store

import (
	"crypto/sha256"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// radiusCellsDigest is the SHA-256 of everything NewCover, CircleCells and RadiusTotalOf give over 1,200
// random circles of 0.1–50 km (over Colombia, dense and sparse, scoped or not, at the poles and across the
// antimeridian): the cells and their distances' bits, the cells prefetched, the total, its exactness and
// the counters asked, as main computed them at 262b940, before their CPU was cut (branch radiuscpu2).
const radiusCellsDigest = "5db8b0165625aca3ba2589a576326ddcca9e1e2c006a2fc928b1b92185e560e3"

// TestRadiusCellsMatchBefore: the cells and totals of radius lists are, to the bit, those computed before
// (radiusCellsDigest). A change that means to change them changes the digest too.
func TestRadiusCellsMatchBefore(t *testing.T) {
	rng := rand.New(rand.NewPCG(42, 43))
	type area struct{ lat, lon, dLat, dLon float64 }
	areas := []area{{-4, -79, 17, 12}, {4.4, -76.0, 0.8, 0.6}, {89.5, -180, 0.5, 360}, {-90, -180, 0.5, 360}, {-5, 179.5, 10, 0.5}, {-5, -180, 10, 0.5}}
	h := sha256.New()
	circles := 0
	for ai, a := range areas {
		pts := make([][2]float64, 30_000)
		for i := range pts {
			lon := a.lon + rng.Float64()*a.dLon
			if lon >= 180 {
				lon -= 360
			}
			pts[i] = [2]float64{a.lat + rng.Float64()*a.dLat, lon}
		}
		for _, n := range []int{len(pts), 300} {
			m := newMemCells(pts[:n])
			scoped := newScopedCells(nil, pts[:n])
			scoped.memCells = m
			for k := range 100 {
				lon := a.lon + rng.Float64()*a.dLon
				if lon >= 180 {
					lon -= 360
				}
				r := 0.1 + rng.Float64()*49.9
				if ai == 0 && k%2 == 0 {
					r = 0.1 + rng.Float64()*5
				}
				spec := &ListSpec{Near: true, RadiusKm: r, Lat: a.lat + rng.Float64()*a.dLat, Lon: lon}
				m.spec = spec
				var c CellCounter = m
				if k%2 == 1 {
					c = scoped
				}
				asked := &askingCells{CellCounter: c}
				cover := NewCover(spec.Lat, spec.Lon, spec.RadiusKm)
				for i := range cover.Cells {
					fmt.Fprintf(h, "%s %x %x;", cover.Cells[i].Cell, math.Float64bits(cover.Cells[i].MinKm), math.Float64bits(cover.MaxKm(&cover.Cells[i])))
				}
				all := CircleCells(spec, cover, math.MaxInt)
				fmt.Fprintf(h, "%v|%d|", all, len(CircleCells(spec, cover, 1024)))
				tot, exact, err := RadiusTotalOf(spec, asked, cover)
				fmt.Fprintf(h, "%d %v %v %v\n", tot, exact, err, asked.asked)
				circles++
			}
		}
	}
	if got := fmt.Sprintf("%x", h.Sum(nil)); got != radiusCellsDigest {
		t.Fatalf("%d circles: digest %s, want %s", circles, got, radiusCellsDigest)
	}
}

// askingCells records the cells a total asks counters for, of any CellCounter.
type askingCells struct {
	CellCounter
	asked []string
}

func (a *askingCells) CellCounts(cells []string) ([]CellCount, error) {
	a.asked = append(a.asked, cells...)
	return a.CellCounter.CellCounts(cells)
}
