package schema

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// TestMaskPhones: the numbers people type in a text, however written (separators of any kind, digits
// of any script, emoji between groups, two side by side, in a link), and none of the other runs of
// digits a request holds (amounts, dates, addresses, coordinates, a cédula, a list of sizes). A masked
// text keeps its length in characters.
func TestMaskPhones(t *testing.T) {
	const d = string(PhoneMask)
	n := func(groups ...int) string { // a masked number: groups of d separated by spaces
		var b []string
		for _, g := range groups {
			b = append(b, strings.Repeat(d, g))
		}
		return strings.Join(b, " ")
	}
	for in, want := range map[string]string{
		"Llamen al 3105556677 o +57 320 111 2233":      "Llamen al " + n(10) + " o +" + n(2, 3, 3, 4),
		"Mi número es 310-555-6677, gracias":           "Mi número es " + strings.Repeat(d, 3) + "-" + strings.Repeat(d, 3) + "-" + strings.Repeat(d, 4) + ", gracias",
		"https://wa.me/573105556677":                   "https://wa.me/" + n(12),
		"300 123 4567 310 987 6543":                    n(3, 3, 4, 3, 3, 4),
		"fijo 601 234 5678.":                           "fijo " + n(3, 3, 4) + ".",
		"Agua 300/123/4567 urgente":                    "Agua " + strings.Repeat(d, 3) + "/" + strings.Repeat(d, 3) + "/" + strings.Repeat(d, 4) + " urgente",
		"Ana ３００１２３４５６７":                               "Ana " + n(10),
		"300\u2009123\u202f4567":                       strings.Repeat(d, 3) + "\u2009" + strings.Repeat(d, 3) + "\u202f" + strings.Repeat(d, 4),
		"300–123—4567":                                 strings.Repeat(d, 3) + "–" + strings.Repeat(d, 3) + "—" + strings.Repeat(d, 4),
		"300\n123\n4567":                               strings.Repeat(d, 3) + "\n" + strings.Repeat(d, 3) + "\n" + strings.Repeat(d, 4),
		"300 📞 123 4567":                               strings.Repeat(d, 3) + " 📞 " + n(3, 4),
		"300 👍🏽 123 👍🏽 4567":                           strings.Repeat(d, 3) + " 👍🏽 " + strings.Repeat(d, 3) + " 👍🏽 " + strings.Repeat(d, 4),
		"300 🇨🇴 123 🇨🇴 4567":                           strings.Repeat(d, 3) + " 🇨🇴 " + strings.Repeat(d, 3) + " 🇨🇴 " + strings.Repeat(d, 4),
		"300 👨‍👩‍👧 123 ☎️ 4567":                        strings.Repeat(d, 3) + " 👨‍👩‍👧 " + strings.Repeat(d, 3) + " ☎️ " + strings.Repeat(d, 4),
		"300 ... 123 -- 4567":                          strings.Repeat(d, 3) + " ... " + strings.Repeat(d, 3) + " -- " + strings.Repeat(d, 4),
		"3001234567,3109876543":                        n(10) + "," + n(10),
		"3 0 0 1 2 3 4 5 6 7":                          n(1, 1, 1, 1, 1, 1, 1, 1, 1, 1),
		"Llamar a las 3 pm al 3001234567.":             "Llamar a las 3 pm al " + n(10) + ".",
		"+1 202 555 0143":                              "+" + n(1, 3, 3, 4),
		"Somos 12 familias, 45 personas":               "Somos 12 familias, 45 personas",
		"Cra 14 # 20-31, apto 401":                     "Cra 14 # 20-31, apto 401",
		"Cuesta 1.500.000 pesos, desde el 2026-11-29":  "Cuesta 1.500.000 pesos, desde el 2026-11-29",
		"La alcaldía destinó $3.200.000.000":           "La alcaldía destinó $3.200.000.000",
		"Presupuesto de 3,500,000,000 pesos":           "Presupuesto de 3,500,000,000 pesos",
		"Tallas 30 32 34 36 38":                        "Tallas 30 32 34 36 38",
		"kits de 10 20 30 40 50 60 70":                 "kits de 10 20 30 40 50 60 70",
		"Coordenadas 4.5339, -75.6811":                 "Coordenadas 4.5339, -75.6811",
		"Cédula 1.094.567.890":                         "Cédula 1.094.567.890",
		"Del 29/11/2026 - 30/11/2026, de 8:00 a 12:00": "Del 29/11/2026 - 30/11/2026, de 8:00 a 12:00",
		// A number written as a figure with thousands separators, as contactWhatsapp takes it too; money
		// stays: after a sign, before a currency's name, or round.
		"Escriba al 3.209.876.543 o al 3,209,876,543": "Escriba al " + strings.Join([]string{d, n(3), n(3), n(3)}, ".") + " o al " + strings.Join([]string{d, n(3), n(3), n(3)}, ","),
		"Se recogieron 3.209.876.543 pesos":           "Se recogieron 3.209.876.543 pesos",
		"Costó COP 3.209.876.543":                     "Costó COP 3.209.876.543",
		"Presupuesto 3.200.000.000 para la vereda":    "Presupuesto 3.200.000.000 para la vereda",
		// Letters typed for digits, beside digits, are the number's: Latin O and l, Cyrillic О and З.
		"Llamar al 3OO 123 4567":           "Llamar al " + n(3, 3, 4),
		"al 3oo-l23-4567 ya":               "al " + strings.Repeat(d, 3) + "-" + strings.Repeat(d, 3) + "-" + strings.Repeat(d, 4) + " ya",
		"3ОО 12З 4567":                     n(3, 3, 4),
		"Oso de peluche, lo dejo en la 30": "Oso de peluche, lo dejo en la 30",
		// Digits of other forms (superscript, circled), and a word of look-alike letters between digits.
		"Escriba al ³⁰⁰ ¹²³ ⁴⁵⁶⁷":                "Escriba al " + n(3, 3, 4),
		"o al ③⓪⓪①②③④⑤⑥⑦":                        "o al " + n(10),
		"o al ❸⓿⓿ ➊➋➌ ➍➎➏➐":                      "o al " + n(3, 3, 4),
		"o al 3 OO 123 4567":                     "o al " + n(1, 2, 3, 4),
		"o al 3ØØ 123 4567":                      "o al " + n(3, 3, 4),
		"Necesito 20l de agua y 5 kits":          "Necesito 20l de agua y 5 kits",
		"Somos 3 o 4 familias, 10 o 12 personas": "Somos 3 o 4 familias, 10 o 12 personas",
	} {
		got, masked := MaskPhones(in)
		if got != want {
			t.Errorf("%q:\n got %q\nwant %q", in, got, want)
		}
		if masked != (got != in) || utf8.RuneCountInString(got) != utf8.RuneCountInString(in) {
			t.Errorf("%q: masked %v, %d characters for %d", in, masked, utf8.RuneCountInString(got), utf8.RuneCountInString(in))
		}
	}
}

// FuzzMaskPhones: whatever the text, the masked one has as many characters, changes only digits and
// look-alike letters (each to PhoneMask), and says whether it changed anything; countDigits, its
// shortcut, counts at least what digitValues finds.
func FuzzMaskPhones(f *testing.F) {
	for _, s := range []string{"Llamar al 3OO 123 4567", "300 👍🏽 123 👍🏽 4567", "Cra 14 # 20-31", "+1 202 555 0143", "３００１２３４５６７", "3ОО 12З 4567", "³⁰⁰ ③⓪⓪ 3 OO 1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		if !utf8.ValidString(in) {
			return
		}
		got, masked := MaskPhones(in)
		a, b := []rune(in), []rune(got)
		n := 0
		for _, v := range digitValues(a) {
			if v >= 0 {
				n++
			}
		}
		if c := countDigits(in); c < n {
			t.Fatalf("%q: countDigits %d, fewer than digitValues' %d", in, c, n)
		}
		if len(a) != len(b) || masked != (got != in) {
			t.Fatalf("%q → %q (masked %v)", in, got, masked)
		}
		for i := range a {
			if a[i] == b[i] {
				continue
			}
			_, like := lookalike(a[i])
			if _, d := digitOf(a[i]); b[i] != PhoneMask || !(d || like) {
				t.Fatalf("%q → %q: %q became %q", in, got, a[i], b[i])
			}
		}
	})
}
