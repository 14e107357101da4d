package badgerstore

import (
	"math"
	"slices"
	"strings"

	"github.com/directaid/directaid/backend/store"
)

const geohashAlphabet = "0123456789bcdefghjkmnpqrstuvwxyz"

// geoPrecision is the geohash length of the geographic index: cells of about 1.2 km × 0.6 km, so the
// cells covering a 5 km circle (about 120) hold little outside it. A geohash prefix is the cell that
// contains its longer cells, so larger radii scan shorter prefixes (4.9 km × 4.9 km at length 5) of the
// same keys.
const geoPrecision = 6

// geohash encodes a point with the given number of characters.
func geohash(lat, lon float64, precision int) string {
	latLo, latHi, lonLo, lonHi := -90.0, 90.0, -180.0, 180.0
	var sb strings.Builder
	even := true
	bit, ch := 0, 0
	for sb.Len() < precision {
		if even {
			mid := (lonLo + lonHi) / 2
			if lon >= mid {
				ch, lonLo = ch<<1|1, mid
			} else {
				ch, lonHi = ch<<1, mid
			}
		} else {
			mid := (latLo + latHi) / 2
			if lat >= mid {
				ch, latLo = ch<<1|1, mid
			} else {
				ch, latHi = ch<<1, mid
			}
		}
		even = !even
		if bit++; bit == 5 {
			sb.WriteByte(geohashAlphabet[ch])
			bit, ch = 0, 0
		}
	}
	return sb.String()
}

// geohashCellSize is the height and width in degrees of a cell of the given precision.
func geohashCellSize(precision int) (dLat, dLon float64) {
	bits := 5 * precision
	lonBits := (bits + 1) / 2
	latBits := bits / 2
	return 180 / math.Exp2(float64(latBits)), 360 / math.Exp2(float64(lonBits))
}

// maxCoverCells bounds the cells a radius query visits (one Seek each); a larger circle uses shorter
// (coarser) cells.
const maxCoverCells = 256

// coverCells returns the sorted geohash prefixes whose cells together contain the circle of radiusKm
// around (lat, lon): the cells of the circle's bounding box, less the corner cells that lie wholly
// outside the circle. The precision is the finest (at most geoPrecision) that needs no more than
// maxCoverCells cells.
func coverCells(lat, lon, radiusKm float64) []string {
	const kmPerDegLat = store.EarthRadiusKm * math.Pi / 180
	dLatR := radiusKm / kmPerDegLat
	cosLat := math.Max(math.Cos(lat*math.Pi/180), 0.01)
	dLonR := radiusKm / (kmPerDegLat * cosLat)
	minLat, maxLat := math.Max(lat-dLatR, -90), math.Min(lat+dLatR, 90)
	minLon, maxLon := math.Max(lon-dLonR, -180), math.Min(lon+dLonR, 180)
	for p := geoPrecision; p >= 1; p-- {
		h, w := geohashCellSize(p)
		rows := int(math.Floor((maxLat+90)/h) - math.Floor((minLat+90)/h) + 1)
		cols := int(math.Floor((maxLon+180)/w) - math.Floor((minLon+180)/w) + 1)
		if rows*cols > maxCoverCells && p > 1 {
			continue
		}
		var cells []string
		for r := math.Floor((minLat+90)/h) * h; r <= maxLat+90; r += h {
			for c := math.Floor((minLon+180)/w) * w; c <= maxLon+180; c += w {
				cLat0, cLon0 := r-90, c-180
				// Nearest point of the cell to the centre: if it is outside the circle, so is the cell. The
				// clamped point is only nearly the nearest on a sphere, hence the margin.
				nLat := math.Max(cLat0, math.Min(lat, cLat0+h))
				nLon := math.Max(cLon0, math.Min(lon, cLon0+w))
				if store.HaversineKm(lat, lon, nLat, nLon) > radiusKm*1.02+0.1 {
					continue
				}
				cells = append(cells, geohash(math.Min(cLat0+h/2, 90), math.Min(cLon0+w/2, 180), p))
			}
		}
		slices.Sort(cells)
		return slices.Compact(cells)
	}
	return nil
}
