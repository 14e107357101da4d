//go:build ignore

// gen writes places.tsv, the compact list this package embeds, from DANE's DIVIPOLA CSV (the columns
// cod_dpto, departamento, cod_mpio, municipio, cod_cp, centro_poblado, tipo, lat, lon):
//
//	go run gen.go divipola-centros-poblados.csv > places.tsv
//
// One line per place, sorted by code: "code<TAB>name<TAB>lat<TAB>lon". A 2-digit code is a
// departamento (no point), a 5-digit one a municipio (the point of its cabecera, or the mean of its
// centros poblados for the non-municipalized areas that have none), an 8-digit one a centro poblado
// (the cabeceras are not repeated: NNNNN000 is the municipio). Names are written for people: title
// case, the commas that the source wrote as periods restored. Coordinates keep 4 decimals (11 m),
// finer than a centro poblado's point deserves.
package main

import (
	"encoding/csv"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

var small = map[string]bool{"de": true, "del": true, "la": true, "las": true, "los": true, "el": true, "y": true,
	"e": true, "en": true, "a": true, "al": true, "o": true, "u": true, "por": true, "para": true, "con": true, "sin": true}

func title(s string) string {
	s = strings.ReplaceAll(s, ". ", ", ")
	words := strings.Fields(s)
	for i, w := range words {
		lw := strings.ToLower(w)
		switch {
		case i > 0 && small[lw]:
			words[i] = lw
		case strings.Count(w, ".") >= 2 && utf8.RuneCountInString(w) <= 6: // D.C.
			words[i] = w
		case isRoman(w):
			words[i] = w
		default:
			r, n := utf8.DecodeRuneInString(lw)
			words[i] = string(unicode.ToUpper(r)) + capAfter(lw[n:])
		}
	}
	return strings.Join(words, " ")
}

// capAfter capitalizes the letter after a hyphen or a parenthesis ("Armenia - Camparrusia" has spaces,
// "(Cab. Mpal.)" does not).
func capAfter(s string) string {
	var b strings.Builder
	up := false
	for _, r := range s {
		if up {
			r = unicode.ToUpper(r)
		}
		up = r == '-' || r == '(' || r == '/'
		b.WriteRune(r)
	}
	return b.String()
}

func isRoman(w string) bool {
	if len(w) < 2 {
		return false
	}
	for _, r := range w {
		if !strings.ContainsRune("IVX", r) {
			return false
		}
	}
	return true
}

func f4(s string) (float64, string) {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		panic(err)
	}
	out := strconv.FormatFloat(v, 'f', 4, 64)
	out = strings.TrimRight(strings.TrimRight(out, "0"), ".")
	return v, out
}

func main() {
	f, err := os.Open(os.Args[1])
	if err != nil {
		panic(err)
	}
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		panic(err)
	}
	lines := map[string]string{}
	type acc struct {
		name       string
		lat, lon   float64
		n          int
		hasCabecer bool
	}
	mpios := map[string]*acc{}
	for _, r := range rows[1:] {
		dpto, dname, mpio, mname, cp, cpname, tipo := r[0], r[1], r[2], r[3], r[4], r[5], r[6]
		lat, slat := f4(r[7])
		lon, slon := f4(r[8])
		lines[dpto] = dpto + "\t" + title(dname) + "\t\t"
		m := mpios[mpio]
		if m == nil {
			m = &acc{name: title(mname)}
			mpios[mpio] = m
		}
		if tipo == "CM" {
			lines[mpio] = mpio + "\t" + m.name + "\t" + slat + "\t" + slon
			m.hasCabecer = true
			continue
		}
		m.lat += lat
		m.lon += lon
		m.n++
		lines[cp] = cp + "\t" + title(cpname) + "\t" + slat + "\t" + slon
	}
	for code, m := range mpios {
		if !m.hasCabecer {
			_, slat := f4(fmt.Sprint(m.lat / float64(m.n)))
			_, slon := f4(fmt.Sprint(m.lon / float64(m.n)))
			lines[code] = code + "\t" + m.name + "\t" + slat + "\t" + slon
		}
	}
	codes := make([]string, 0, len(lines))
	for c := range lines {
		codes = append(codes, c)
	}
	sort.Strings(codes)
	for _, c := range codes {
		fmt.Println(lines[c])
	}
}
