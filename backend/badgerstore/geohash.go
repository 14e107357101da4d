package badgerstore

import "github.com/directaid/directaid/backend/store"

// The geohash cells of the geographic index are the store package's, shared with PostgreSQL's cell
// counters (store.RadiusTotal).

const (
	geohashAlphabet = store.GeohashAlphabet
	geoPrecision    = store.GeoPrecision
)

func geohash(lat, lon float64, precision int) string { return store.Geohash(lat, lon, precision) }

func geohashBox(cell string) (lat0, lat1, lon0, lon1 float64) { return store.GeohashBox(cell) }

func geohashCellSize(precision int) (dLat, dLon float64) { return store.GeohashCellSize(precision) }

func minDistKm(lat, lon, lat0, lat1, lon0, lon1 float64) float64 {
	return store.MinDistKm(lat, lon, lat0, lat1, lon0, lon1)
}
