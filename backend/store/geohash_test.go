package store

import (
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
