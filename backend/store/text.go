package store

import (
	"math"
	"slices"
	"strings"
	"unicode"

	"golang.org/x/text/unicode/norm"
)

// EarthRadiusKm is the mean Earth radius (IUGG).
const EarthRadiusKm = 6371.0088

// HaversineKm is the great-circle distance between two points in kilometres: the distance of radius lists.
func HaversineKm(lat1, lon1, lat2, lon2 float64) float64 {
	const rad = math.Pi / 180
	dLat := (lat2 - lat1) * rad
	dLon := (lon2 - lon1) * rad
	return haversineOf(math.Sin(dLat/2), math.Cos(lat1*rad)*math.Cos(lat2*rad), math.Sin(dLon/2))
}

// haversineOf is HaversineKm from its terms, so that a grid's corners (Cover) compute them once a row
// and a column and get the same bits; the conversions keep a compiler from fusing differently per caller.
func haversineOf(sinLat, cosCos, sinLon float64) float64 {
	a := float64(sinLat*sinLat) + float64(float64(cosCos*sinLon)*sinLon)
	return 2 * EarthRadiusKm * math.Asin(math.Min(1, math.Sqrt(a)))
}

// FoldText lowercases s and strips accents ("Médico" → "medico", "NIÑOS" → "ninos") and collapses
// whitespace, so that searches ignore case and accents.
func FoldText(s string) string {
	var sb strings.Builder
	space := true
	for _, r := range norm.NFD.String(s) {
		switch {
		case unicode.Is(unicode.Mn, r):
			continue
		case unicode.IsSpace(r):
			if !space {
				sb.WriteByte(' ')
			}
			space = true
			continue
		}
		sb.WriteRune(unicode.ToLower(r))
		space = false
	}
	return strings.TrimSpace(sb.String())
}

// SearchText is what a q search looks in: the folded title and description.
func SearchText(rec *Record) string { return FoldText(rec.Title + "\n" + rec.Description) }

// MatchText reports whether every word of the folded query occurs in the folded text.
func MatchText(text string, words []string) bool {
	for _, w := range words {
		if !strings.Contains(text, w) {
			return false
		}
	}
	return true
}

// TextTokens are the distinct tokens of a folded text, sorted: its maximal runs of letters and digits (the
// unit of the stores' word counters).
func TextTokens(text string) []string {
	toks := strings.FieldsFunc(text, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
	slices.Sort(toks)
	return slices.Compact(toks)
}
