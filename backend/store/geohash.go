package store

import (
	"math"
	"slices"
	"strings"
)

const GeohashAlphabet = "0123456789bcdefghjkmnpqrstuvwxyz"

// GeoPrecision is the geohash length of the geographic index: cells of about 1.2 km × 0.6 km, so the
// cells covering a 5 km circle (about 120) hold little outside it. A geohash prefix is the cell that
// contains its longer cells, so larger radii scan shorter prefixes (4.9 km × 4.9 km at length 5) of the
// same keys.
const GeoPrecision = 6

// Geohash encodes a point with the given number of characters.
func Geohash(lat, lon float64, precision int) string {
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
			sb.WriteByte(GeohashAlphabet[ch])
			bit, ch = 0, 0
		}
	}
	return sb.String()
}

// GeohashCellSize is the height and width in degrees of a cell of the given precision.
func GeohashCellSize(precision int) (dLat, dLon float64) {
	bits := 5 * precision
	lonBits := (bits + 1) / 2
	latBits := bits / 2
	return 180 / math.Exp2(float64(latBits)), 360 / math.Exp2(float64(lonBits))
}

// maxCoverCells bounds the cells a radius query visits (one Seek each); a larger circle uses shorter
// (coarser) cells.
const maxCoverCells = 256

// CoverCells returns the sorted geohash prefixes whose cells together contain the circle of radiusKm
// around (lat, lon): the cells of the circle's bounding box, less the corner cells that lie wholly
// outside the circle. The precision is the finest (at most GeoPrecision) that needs no more than
// maxCoverCells cells.
func CoverCells(lat, lon, radiusKm float64) []string {
	const kmPerDegLat = EarthRadiusKm * math.Pi / 180
	dLatR := radiusKm/kmPerDegLat*1.01 + 1e-6
	// The widest longitude of a circle on the sphere (asin(sin r / cos lat)), with a margin; cells of
	// the box that lie wholly outside the circle are dropped by MinDistKm below.
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

// GeohashBox is the cell of a geohash: its latitude and longitude bounds in degrees.
func GeohashBox(cell string) (lat0, lat1, lon0, lon1 float64) {
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

// MinDistKm is a lower bound of the distance (as HaversineKm measures it) from (lat, lon) to any
// point of the box. Two bounds, both exact on the sphere, the larger wins: the difference in latitude
// (no path is shorter than it), and the distance to the great circle of the box's nearer meridian, which
// every path to the box crosses. A hair is taken off for rounding, so that the bound is never above a
// distance computed for a point in the box.
func MinDistKm(lat, lon, lat0, lat1, lon0, lon1 float64) float64 {
	const rad = math.Pi / 180
	d := 0.0
	if lat < lat0 {
		d = (lat0 - lat) * rad
	} else if lat > lat1 {
		d = (lat - lat1) * rad
	}
	dLon := 0.0
	if lon < lon0 {
		dLon = lon0 - lon
	} else if lon > lon1 {
		dLon = lon - lon1
	}
	if dLon >= 90 {
		// Beyond a quarter turn the meridian bound does not hold as written; Colombia is far smaller.
		dLon = 0
	}
	if dLon > 0 {
		d = math.Max(d, math.Asin(math.Min(1, math.Cos(lat*rad)*math.Sin(dLon*rad))))
	}
	return math.Max(0, d*EarthRadiusKm*(1-1e-9)-1e-9)
}
