package store

import (
	"math"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

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
// whitespace, so that searches ignore case and accents. Every publication folds its title and
// description, so text of Latin-1 letters (Spanish, with or without accents) takes a table (foldLatin1)
// instead of the Unicode decomposition, which takes four times as long (BenchmarkFoldText); any other
// text goes through foldUnicode, what the table is made of.
func FoldText(s string) string {
	buf := make([]byte, 0, len(s))
	space := true
	for i := 0; i < len(s); i++ {
		c := s[i]
		var f foldedRune
		switch {
		case c < utf8.RuneSelf:
			f = foldLatin1[c]
		case c == 0xc2 || c == 0xc3: // U+0080–U+00FF
			if i+1 == len(s) || s[i+1]&0xc0 != 0x80 {
				return foldUnicode(s)
			}
			f = foldLatin1[rune(c&0x1f)<<6|rune(s[i+1]&0x3f)]
			i++
		default:
			return foldUnicode(s)
		}
		switch {
		case f.space:
			if !space {
				buf = append(buf, ' ')
			}
			space = true
		case f.n > 0:
			buf = append(buf, f.b[:f.n]...)
			space = false
		}
	}
	if n := len(buf); n > 0 && buf[n-1] == ' ' {
		buf = buf[:n-1]
	}
	return string(buf)
}

// foldedRune is what FoldText makes of one rune below U+0100: a space, or up to 4 bytes (none for a
// rune it drops).
type foldedRune struct {
	b     [4]byte
	n     uint8
	space bool
}

// foldLatin1 is foldUnicode of each rune below U+0100, alone. Below U+0100 the decomposition of a string
// is that of its runes one after another (each decomposes into a starter and marks, and FoldText drops
// the marks, so their canonical order does not matter), hence FoldText of such text is the runes' folds
// with whitespace collapsed as foldUnicode collapses it.
var foldLatin1 = func() (t [0x100]foldedRune) {
	for r := range rune(0x100) {
		if unicode.IsSpace(r) {
			t[r].space = true
			continue
		}
		f := foldUnicode(string(r))
		if len(f) > len(t[r].b) {
			panic("store: a Latin-1 rune folds to more than 4 bytes")
		}
		t[r].n = uint8(copy(t[r].b[:], f))
	}
	return t
}()

// foldUnicode is FoldText for any text: the canonical decomposition (NFD), without its nonspacing
// marks, lowercased, with runs of whitespace made one space and none at either end.
func foldUnicode(s string) string {
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

// QueryWords are the words of a search: q folded (FoldText), each word of letters longer than four less
// its plural ending and then, a plural, its final o or a («personas atrapadas» → «person atrapad»,
// «camiones» → «camion», «carrotanques» → «carrotanque»; «medico» stays). A word matches as a substring
// (MatchText), so a plural finds the singular and the plural, the masculine and the feminine, that
// people write either way («persona atrapada», «rescate de animales atrapados»), and a singular finds its
// plural; a singular keeps its gender («medico» finds «médicos», not «medicinas»).
func QueryWords(q string) []string {
	words := strings.Fields(FoldText(q))
	for i, w := range words {
		words[i] = stem(w)
	}
	return words
}

// stem is a folded word of ASCII letters longer than four less its plural ending («-s» after a vowel,
// «-es» after a consonant) and then, when it had one, a final o or a still leaving more than four
// letters; any other word as it is.
func stem(w string) string {
	if len(w) <= 4 {
		return w
	}
	for i := 0; i < len(w); i++ {
		if w[i] < 'a' || w[i] > 'z' {
			return w
		}
	}
	vowel := func(c byte) bool { return strings.IndexByte("aeiou", c) >= 0 }
	switch n := len(w); {
	case strings.HasSuffix(w, "es") && !vowel(w[n-3]):
		w = w[:n-2]
	case w[n-1] == 's' && vowel(w[n-2]):
		w = w[:n-1]
	default:
		return w // a singular
	}
	if n := len(w); n > 4 && (w[n-1] == 'o' || w[n-1] == 'a') {
		w = w[:n-1]
	}
	return w
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
