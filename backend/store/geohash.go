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
	return 180 / float64(uint64(1)<<latBits), 360 / float64(uint64(1)<<lonBits)
}

// maxCoverCells bounds the cells a radius query visits (one Seek each); a larger circle uses shorter
// (coarser) cells.
const maxCoverCells = 256

// CoverCells returns the sorted geohash prefixes whose cells together contain the circle of radiusKm
// around (lat, lon): the cells of the circle's bounding box, less the corner cells that lie wholly
// outside the circle. The precision is the finest (at most GeoPrecision) that needs no more than
// maxCoverCells cells.
func CoverCells(lat, lon, radiusKm float64) []string {
	g := NewCover(lat, lon, radiusKm)
	cells := make([]string, len(g.Cells))
	for i, c := range g.Cells {
		cells[i] = c.Cell
	}
	return cells
}

// Cover is CoverCells with what a radius query computes of each cell: the least distance to it and the
// greatest (MinDistKm and MaxDistKm of its box). Every cell is on one grid, so these come from a term
// per row and per column and a distance per grid corner, not from four great-circle distances and a
// parsed box per cell (the same figures: TestCoverMatchesCellByCell).
type Cover struct {
	Cells []CoverCell

	lat, lon   float64
	h, w       float64 // a cell's size in degrees
	r0, c0     int     // the grid's first row and column
	rows, cols int
	corners    []float64 // HaversineKm to the grid's corners, (rows+1) × (cols+1); 0 until computed
	// HaversineKm's terms of the corners: per row of corners its sine and cosines, per column its sine
	latSin, latCos, lonSin []float64
	first                  firstLevel // of RadiusTotalOf, shared with CircleCells (level nil until computed)
}

// CoverCell is a cell of a Cover; row and col are its place in the grid (-1 when its box is not the
// grid's: a cell past the pole or the antimeridian, whose geohash is the last one's).
type CoverCell struct {
	Cell     string
	MinKm    float64
	row, col int
}

// NewCover computes the cover of the circle (see CoverCells).
func NewCover(lat, lon, radiusKm float64) *Cover {
	const kmPerDegLat = EarthRadiusKm * math.Pi / 180
	dLatR := radiusKm/kmPerDegLat*1.01 + 1e-6
	// The widest longitude of a circle on the sphere (asin(sin r / cos lat)), with a margin; cells of
	// the box that lie wholly outside the circle are dropped by MinDistKm below.
	cosLat := math.Max(math.Cos(lat*math.Pi/180), 0.01)
	dLonR := math.Asin(math.Min(1, math.Sin(radiusKm/EarthRadiusKm)/cosLat))*180/math.Pi*1.01 + 1e-6
	minLat, maxLat := math.Max(lat-dLatR, -90), math.Min(lat+dLatR, 90)
	minLon, maxLon := math.Max(lon-dLonR, -180), math.Min(lon+dLonR, 180)
	g := &Cover{lat: lat, lon: lon}
	for p := GeoPrecision; p >= 1; p-- {
		h, w := GeohashCellSize(p)
		// h and w are powers of two, so these divisions and the cells' bounds (row × h - 90) are exact:
		// the bounds are those GeohashBox gives.
		r0, r1 := math.Floor((minLat+90)/h), math.Floor((maxLat+90)/h)
		c0, c1 := math.Floor((minLon+180)/w), math.Floor((maxLon+180)/w)
		rows, cols := int(r1-r0+1), int(c1-c0+1)
		if rows*cols > maxCoverCells && p > 1 {
			continue
		}
		g.h, g.w, g.r0, g.c0, g.rows, g.cols = h, w, int(r0), int(c0), rows, cols
		latBits, lonBits := 5*p/2, (5*p+1)/2
		lonTerm := make([]float64, cols)
		for j := range cols {
			cLon0 := float64(g.c0+j)*w - 180
			lonTerm[j] = minDistLon(lat, lon, cLon0, cLon0+w)
		}
		// The cells found, and their geohashes as numbers (the bits, which sort as the characters do)
		// with the cell's index in the low 16 bits: sorting plain integers costs little.
		found := make([]CoverCell, 0, rows*cols)
		keys := make([]uint64, 0, rows*cols)
		for i := range rows {
			cLat0 := float64(g.r0+i)*h - 90
			latTerm := minDistLat(lat, cLat0, cLat0+h)
			for j := range cols {
				d := minDistOf(latTerm, lonTerm[j])
				if d > radiusKm {
					continue
				}
				// The geohash of the cell's centre (clamped to the pole and the antimeridian, as Geohash
				// of the centre clamped would give): its row and column bits interleaved, longitude first.
				row, col := min(g.r0+i, 1<<latBits-1), min(g.c0+j, 1<<lonBits-1)
				c := CoverCell{MinKm: d, row: i, col: j}
				if row != g.r0+i || col != g.c0+j {
					c.row, c.col = -1, -1
				}
				keys = append(keys, interleave(row, col, latBits, lonBits)<<16|uint64(len(found)))
				found = append(found, c)
			}
		}
		slices.Sort(keys)
		keys = slices.CompactFunc(keys, func(a, b uint64) bool { return a>>16 == b>>16 })
		buf := make([]byte, len(keys)*p)
		for n, k := range keys {
			name := buf[n*p : (n+1)*p]
			for i := range name {
				name[i] = GeohashAlphabet[k>>(16+5*(p-1-i))&31]
			}
		}
		all := string(buf) // one allocation for every cell's name
		g.Cells = make([]CoverCell, len(keys))
		for n, k := range keys {
			c := &g.Cells[n]
			*c = found[k&0xffff]
			c.Cell = all[n*p : (n+1)*p]
			if c.row < 0 {
				lat0, lat1, lon0, lon1 := GeohashBox(c.Cell)
				c.MinKm = MinDistKm(lat, lon, lat0, lat1, lon0, lon1)
			}
		}
		return g
	}
	return g
}

// interleave is the geohash of the cell in row and column (of latBits and lonBits bits) as a number:
// the bits of the two, longitude first (so the last bit is the longitude's when lonBits > latBits).
func interleave(row, col, latBits, lonBits int) uint64 {
	if lonBits > latBits {
		return spreadBits(uint64(col)) | spreadBits(uint64(row))<<1
	}
	return spreadBits(uint64(row)) | spreadBits(uint64(col))<<1
}

// spreadBits moves bit i of x (below 2^32) to bit 2i.
func spreadBits(x uint64) uint64 {
	x = (x | x<<16) & 0x0000ffff0000ffff
	x = (x | x<<8) & 0x00ff00ff00ff00ff
	x = (x | x<<4) & 0x0f0f0f0f0f0f0f0f
	x = (x | x<<2) & 0x3333333333333333
	return (x | x<<1) & 0x5555555555555555
}

// MaxKm is MaxDistKm of c's box.
func (g *Cover) MaxKm(c *CoverCell) float64 {
	if c.row < 0 {
		lat0, lat1, lon0, lon1 := GeohashBox(c.Cell)
		return MaxDistKm(g.lat, g.lon, lat0, lat1, lon0, lon1)
	}
	if g.corners == nil {
		g.cornerTerms()
	}
	corner := func(row, col int) float64 {
		at := &g.corners[row*(g.cols+1)+col]
		if *at == 0 { // a corner at distance 0 is computed again: it costs nothing else
			*at = haversineOf(g.latSin[row], g.latCos[row], g.lonSin[col])
		}
		return *at
	}
	// The builtin max: math.Max is a call on amd64, and the same for distances (never NaN).
	d := max(0, corner(c.row, c.col), corner(c.row, c.col+1), corner(c.row+1, c.col), corner(c.row+1, c.col+1))
	return maxDistOf(d)
}

// cornerTerms computes HaversineKm's terms of the grid's corners, per row and per column (its sines and
// cosines), which MaxKm combines per corner.
func (g *Cover) cornerTerms() {
	const rad = math.Pi / 180
	n := (g.rows + 1) * (g.cols + 1)
	all := make([]float64, n+2*(g.rows+1)+g.cols+1) // one allocation
	g.corners, g.latSin, g.latCos, g.lonSin = all[:n], all[n:n+g.rows+1], all[n+g.rows+1:n+2*(g.rows+1)], all[n+2*(g.rows+1):]
	cosLat := math.Cos(g.lat * rad)
	for i := range g.rows + 1 {
		lat := float64(g.r0+i)*g.h - 90
		g.latSin[i], g.latCos[i] = math.Sin((lat-g.lat)*rad/2), cosLat*math.Cos(lat*rad)
	}
	for j := range g.cols + 1 {
		g.lonSin[j] = math.Sin((float64(g.c0+j)*g.w - 180 - g.lon) * rad / 2)
	}
}

// GeohashBox is the cell of a geohash: its latitude and longitude bounds in degrees. Its row and column
// are read from the bits; a cell's size is a power of two, so row × height - 90 is exact: the bounds halving
// the range bit by bit gives.
func GeohashBox(cell string) (lat0, lat1, lon0, lon1 float64) {
	return geohashBoxOf(GeohashCode(cell), len(cell))
}

// geohashBoxOf is GeohashBox of the geohash of p characters whose bits are code.
func geohashBoxOf(code uint64, p int) (lat0, lat1, lon0, lon1 float64) {
	row, col := compactBits(code), compactBits(code>>1)
	if (5*p)%2 == 1 { // the last bit is a longitude's
		row, col = col, row
	}
	h, w := GeohashCellSize(p)
	return float64(row)*h - 90, float64(row+1)*h - 90, float64(col)*w - 180, float64(col+1)*w - 180
}

// GeohashCode is a geohash (of at most 12 characters) as a number: its bits, 5 a character, which sort
// as the characters do among geohashes of one length.
func GeohashCode(cell string) uint64 {
	var code uint64
	for i := 0; i < len(cell); i++ {
		code = code<<5 | uint64(geohashValue[cell[i]])
	}
	return code
}

// geohashValue is the value of each character of GeohashAlphabet; any other reads as 31 (all bits set,
// as IndexByte's -1 did).
var geohashValue = func() (v [256]uint8) {
	for i := range v {
		v[i] = 31
	}
	for i := range len(GeohashAlphabet) {
		v[GeohashAlphabet[i]] = uint8(i)
	}
	return v
}()

// compactBits is spreadBits undone: bit 2i of x to bit i.
func compactBits(x uint64) uint64 {
	x &= 0x5555555555555555
	x = (x | x>>1) & 0x3333333333333333
	x = (x | x>>2) & 0x0f0f0f0f0f0f0f0f
	x = (x | x>>4) & 0x00ff00ff00ff00ff
	x = (x | x>>8) & 0x0000ffff0000ffff
	return (x | x>>16) & 0x00000000ffffffff
}

// MinDistKm is a lower bound of the distance (as HaversineKm measures it) from (lat, lon) to any
// point of the box. Two bounds, both exact on the sphere, the larger wins: the difference in latitude
// (no path is shorter than it), and the distance to the great circle of the box's nearer meridian, which
// every path to the box crosses. A hair is taken off for rounding, so that the bound is never above a
// distance computed for a point in the box.
func MinDistKm(lat, lon, lat0, lat1, lon0, lon1 float64) float64 {
	return minDistOf(minDistLat(lat, lat0, lat1), minDistLon(lat, lon, lon0, lon1))
}

// minDistLat is MinDistKm's latitude bound, in radians.
func minDistLat(lat, lat0, lat1 float64) float64 {
	const rad = math.Pi / 180
	if lat < lat0 {
		return (lat0 - lat) * rad
	} else if lat > lat1 {
		return (lat - lat1) * rad
	}
	return 0
}

// minDistLon is MinDistKm's meridian bound, in radians.
func minDistLon(lat, lon, lon0, lon1 float64) float64 {
	const rad = math.Pi / 180
	dLon := 0.0
	if lon < lon0 {
		dLon = lon0 - lon
	} else if lon > lon1 {
		dLon = lon - lon1
	}
	if dLon >= 90 || dLon <= 0 {
		// Beyond a quarter turn the meridian bound does not hold as written; Colombia is far smaller.
		return 0
	}
	return math.Asin(math.Min(1, math.Cos(lat*rad)*math.Sin(dLon*rad)))
}

// minDistOf is MinDistKm from its two bounds.
func minDistOf(dLat, dLon float64) float64 {
	return max(0, max(dLat, dLon)*EarthRadiusKm*(1-1e-9)-1e-9)
}
