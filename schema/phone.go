package schema

import (
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The documented shape of contactWhatsapp. parsePhone (libphonenumber, Colombia as the default region)
// decides; PhonePattern is what a client can check before sending, and the schema enforces it too. Every
// value parsePhone accepts matches it (phone_test.go enumerates and fuzzes that): the JSON value is
// trimmed first, then only digits, spaces, + - . ( ) are allowed, + only before the first digit, and a
// valid number has at least 6 digits with + (the shortest national numbers, e.g. Austria's +43 1234) and
// at least 8 without (Colombian numbers have 8, 10 or 11 digits; an international prefix such as 005 adds
// three). The upper bound is maxLength.

// PhonePattern is the JSON Schema pattern of contactWhatsapp. It uses only syntax that ECMA-262 (what
// JSON Schema specifies) and Go's regexp read alike.
var PhonePattern = func() string {
	ws := trimmedSpace()
	sep := `[ ().-]`
	return `^` + ws + `*` + sep + `*(?:\++` + sep + `*(?:[0-9]` + sep + `*){6,}|(?:[0-9]` + sep + `*){8,})` + ws + `*$`
}()

// trimmedSpace is a character class of what strings.TrimSpace removes around a JSON string before it is
// validated (unicode.IsSpace), written with escapes both regexp dialects read.
func trimmedSpace() string {
	esc := map[rune]string{'\t': `\t`, '\n': `\n`, '\v': `\v`, '\f': `\f`, '\r': `\r`, ' ': ` `}
	var b strings.Builder
	b.WriteByte('[')
	for r := rune(0); r <= 0xFFFF; r++ {
		if !unicode.IsSpace(r) {
			continue
		}
		if e, ok := esc[r]; ok {
			b.WriteString(e)
			continue
		}
		// A run of consecutive spaces (U+2000 to U+200A) as a range.
		hi := r
		for unicode.IsSpace(hi+1) && hi+1 <= 0xFFFF {
			hi++
		}
		b.WriteRune(r)
		if hi > r {
			b.WriteByte('-')
			b.WriteRune(hi)
			r = hi
		}
	}
	b.WriteByte(']')
	return b.String()
}

// PhoneExamples are values of contactWhatsapp that the server accepts (a test checks each).
var PhoneExamples = []string{"+57 300 123 4567", "3001234567", "(+57) 321-555-0199", "601 234 5678", "+58 412 1234567"}

// phoneDescription says in Spanish what a publication's contactWhatsapp is and accepts; a contactWhatsapp
// with a description of its own (a response's, which is never public) keeps it, before phoneRules.
const phoneDescription = "Número de WhatsApp de contacto; se publica. " + phoneRules

// phoneRules say in Spanish what a contactWhatsapp accepts.
const phoneRules = "Celular colombiano (300 123 4567, con o sin +57), " +
	"fijo colombiano (601 234 5678) o número de otro país con + y su indicativo (+58 412 1234567). " +
	"Solo dígitos, espacios, guiones, puntos, paréntesis y un + inicial; el número debe existir en el plan de numeración de su país."

// PhoneMask is what MaskPhones writes for each digit of a phone number typed in a text: the text keeps
// its length (every limit holds) and reads as a hidden number («llamar al ••• ••• ••••»).
const PhoneMask = '•'

// maxPhoneGap is the longest run of separators between two groups of a number's digits («300 - 123»,
// «300 ... 123», «300 🇨🇴 123»), counted as gapWidth counts them; a longer one ends the number.
const maxPhoneGap = 5

// gapWidth is what r adds to a run of separators: nothing for what only changes the character before it
// (combining marks, a variation selector, a skin tone, a zero-width joiner: «☎️», «👍🏽», «👨‍👩‍👧» are
// one emoji each, or as many as they draw), one for the rest.
func gapWidth(r rune) int {
	if unicode.In(r, unicode.Mn, unicode.Me, unicode.Cf, unicode.Sk) {
		return 0
	}
	return 1
}

// MaskPhones writes PhoneMask for every digit of each phone number written in text s, and reports
// whether it found one. A phone number is a run of digits (of any script: «３００», «٣٠٠») in groups
// with the separators people type or paste between them (spaces of any width, dashes, dots, slashes,
// commas, parentheses, emoji, invisible characters), up to maxPhoneGap of them, that contactWhatsapp
// would take as a number that can exist: a Colombian mobile or landline, or an international number
// with its +. Two numbers side by side are two numbers. An amount («$3.200.000.000», groups of three
// after the first), a list of small numbers («tallas 30 32 34 36 38»), a date, a cédula or an address
// («Cra 14 # 20-31») is none. A publication's contact is its contactWhatsapp, shown only with the
// person's consent and hidden when someone reports it as theirs; a number in the text would escape both.
func MaskPhones(s string) (string, bool) {
	if countDigits(s) < 7 { // no number has fewer: the common text costs one pass, no allocation
		return s, false
	}
	rs := []rune(s)
	val := digitValues(rs)
	mask := make([]bool, len(rs))
	masked := false
	for _, g := range digitRuns(rs, val) {
		for k := 0; k < len(g); {
			end := -1
			for m := len(g) - 1; m >= k; m-- {
				if isPhone(rs, val, g[k:m+1]) {
					end = m
					break
				}
			}
			if end < 0 {
				k++
				continue
			}
			for _, grp := range g[k : end+1] {
				for i := grp[0]; i < grp[1]; i++ {
					mask[i] = true
				}
			}
			masked, k = true, end+1
		}
	}
	if !masked {
		return s, false
	}
	for i, m := range mask {
		if m {
			rs[i] = PhoneMask
		}
	}
	return string(rs), true
}

// lookalike is the digit that r stands for when people type a letter for it to slip a number past a
// filter («3OO 12З 4567»): O, o and Ø for 0, l and I for 1, Cyrillic З and з for 3, in Latin, Cyrillic
// and Greek.
func lookalike(r rune) (int8, bool) {
	switch r {
	case 'O', 'o', 'О', 'о', 'Ο', 'ο', 'Ø', 'ø':
		return 0, true
	case 'l', 'I', 'І', 'і', 'Ι':
		return 1, true
	case 'З', 'з':
		return 3, true
	}
	return 0, false
}

// digitValues is the value of each digit of rs, -1 for what is none: a digit (digitOf), or a look-alike
// letter (lookalike) in a word that is otherwise digits and has one at least («3OO» is 300; «Oso», «lo»
// and «I» are words), or in a word of two look-alike letters or more between two words of digits
// («3 OO 123 4567»).
func digitValues(rs []rune) []int8 {
	val := make([]int8, len(rs))
	type word struct{ i, j int } // [i, j) of a word of look-alike letters only, two or more
	var likes []word
	for i := 0; i < len(rs); {
		if _, d := digitOf(rs[i]); !d && !unicode.IsLetter(rs[i]) {
			val[i], i = -1, i+1
			continue
		}
		j, real, other := i, false, false
		for ; j < len(rs); j++ {
			_, d := digitOf(rs[j])
			if !d && !unicode.IsLetter(rs[j]) {
				break
			}
			_, like := lookalike(rs[j])
			real = real || d
			other = other || (!d && !like)
		}
		for k := i; k < j; k++ {
			switch v, like := lookalike(rs[k]); {
			case real && !other && like:
				val[k] = v
			default:
				val[k] = -1
				if d, ok := digitOf(rs[k]); ok {
					val[k] = d
				}
			}
		}
		if !real && !other && j-i >= 2 {
			likes = append(likes, word{i, j})
		}
		i = j
	}
	// A word of look-alike letters between words of digits: its neighbours, across separators, end and
	// start with a digit.
	for _, w := range likes {
		before, after := w.i-1, w.j
		for before >= 0 && val[before] < 0 && !unicode.IsLetter(rs[before]) {
			before--
		}
		for after < len(rs) && val[after] < 0 && !unicode.IsLetter(rs[after]) {
			after++
		}
		if before >= 0 && after < len(rs) && val[before] >= 0 && val[after] >= 0 {
			for k := w.i; k < w.j; k++ {
				val[k], _ = lookalike(rs[k])
			}
		}
	}
	return val
}

// countDigits is at least how many digits digitValues finds in s (look-alike letters in a word of
// digits, and any word of two look-alike letters or more, counted), in one pass without its
// allocations: fewer than 7, s holds no phone number.
func countDigits(s string) int {
	n, digits, likes, other := 0, 0, 0, false
	end := func() {
		n += digits
		if !other && (digits > 0 || likes >= 2) {
			n += likes
		}
		digits, likes, other = 0, 0, false
	}
	for _, r := range s {
		if r >= '0' && r <= '9' {
			digits++
			continue
		}
		switch _, like := lookalike(r); {
		case like:
			likes++
		case r < utf8.RuneSelf && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z'):
			other = true
		case r < utf8.RuneSelf:
			end()
		default:
			if _, d := digitOf(r); d {
				digits++
			} else if unicode.IsLetter(r) {
				other = true
			} else {
				end()
			}
		}
	}
	end()
	return n
}

// digitOf is the value of r when it writes a digit: a decimal digit of any script («３», «٣»), or one
// of the other forms people paste to slip a number past a filter: superscripts and subscripts («³⁰⁰»),
// circled, parenthesized and dotted digits («③⓪⓪», «❸», «➊», «⑶», «⒊»).
func digitOf(r rune) (int8, bool) {
	switch {
	case r >= '0' && r <= '9':
		return int8(r - '0'), true
	case r < utf8.RuneSelf:
		return 0, false
	case unicode.IsDigit(r):
		return int8(digitValue(r)), true
	case r == 0xB2 || r == 0xB3:
		return int8(r - 0xB0), true
	case r == 0xB9:
		return 1, true
	case r == 0x2070 || r == 0x2080 || r == 0x24EA || r == 0x24FF:
		return 0, true
	case r >= 0x2074 && r <= 0x2079:
		return int8(r - 0x2070), true
	case r >= 0x2081 && r <= 0x2089:
		return int8(r - 0x2080), true
	}
	for _, base := range []rune{0x2460, 0x2474, 0x2488, 0x24F5, 0x2776, 0x2780, 0x278A} { // ① ⑴ ⒈ ⓵ ❶ ➀ ➊
		if r >= base && r <= base+8 {
			return int8(r-base) + 1, true
		}
	}
	return 0, false
}

// digitRuns are the runs of digit groups of rs (val, its digitValues): each group a [start, end) of
// digits, the groups of a run apart by at most maxPhoneGap separators.
func digitRuns(rs []rune, val []int8) [][][2]int {
	var runs [][][2]int
	var cur [][2]int
	gap := 0
	for i := 0; i < len(rs); {
		switch {
		case val[i] >= 0:
			j := i
			for j < len(rs) && val[j] >= 0 {
				j++
			}
			if gap > maxPhoneGap && len(cur) > 0 {
				runs, cur = append(runs, cur), nil
			}
			cur, gap, i = append(cur, [2]int{i, j}), 0, j
		case phoneSeparator(rs[i]):
			gap += gapWidth(rs[i])
			i++
		default:
			if len(cur) > 0 {
				runs, cur = append(runs, cur), nil
			}
			gap = 0
			i++
		}
	}
	if len(cur) > 0 {
		runs = append(runs, cur)
	}
	return runs
}

// phoneSeparator reports whether r may stand between the digits of a phone number as people write or
// paste it: anything but a letter or a digit (a letter ends the number: «300 y 310» are two runs).
func phoneSeparator(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }

// isPhone reports whether the groups gs of rs (consecutive groups of one run; val, its digitValues)
// write a phone number.
func isPhone(rs []rune, val []int8, gs [][2]int) bool {
	var b strings.Builder
	n, small, allSmall := 0, false, true
	for _, g := range gs {
		n += g[1] - g[0]
		if g[1]-g[0] > 2 {
			allSmall = false
		}
		if g[1]-g[0] == 2 {
			small = true
		}
	}
	if n < 7 || n > 15 || (allSmall && small) || amount(rs, val, gs) {
		return false
	}
	// A + just before the first digit (with separators between) is the number's.
	for i := gs[0][0] - 1; i >= 0 && i >= gs[0][0]-3 && phoneSeparator(rs[i]); i-- {
		if rs[i] == '+' {
			b.WriteByte('+')
			break
		}
	}
	for _, g := range gs {
		for _, v := range val[g[0]:g[1]] {
			b.WriteByte(byte('0' + v))
		}
	}
	_, bad := parsePhone(b.String(), true)
	return bad == nil
}

// amount reports whether the groups gs are an amount written with a thousands separator: one to three
// digits, then groups of three, each after the same single «.» or «,» («3.200.000.000»), that reads as
// money: after a currency sign or before a currency's name («$3.200.000.000», «3,500,000,000 pesos»), or
// a round figure (its last group 000). Else it may be a number written as one («3.209.876.543»), which
// contactWhatsapp takes too.
func amount(rs []rune, val []int8, gs [][2]int) bool {
	if !thousands(rs, gs) {
		return false
	}
	last := gs[len(gs)-1]
	if val[last[0]] == 0 && val[last[0]+1] == 0 && val[last[0]+2] == 0 {
		return true
	}
	before := strings.ToLower(strings.TrimRightFunc(string(rs[max(gs[0][0]-5, 0):gs[0][0]]), unicode.IsSpace))
	after := strings.ToLower(strings.TrimLeftFunc(string(rs[last[1]:min(last[1]+9, len(rs))]), unicode.IsSpace))
	return strings.HasSuffix(before, "$") || strings.HasSuffix(before, "cop") || strings.HasSuffix(before, "usd") ||
		slices.ContainsFunc([]string{"pesos", "cop", "millones", "mil ", "usd", "dólares", "dolares"}, func(w string) bool { return strings.HasPrefix(after, w) })
}

// thousands reports whether the groups gs are written as a figure with a thousands separator: one to
// three digits, then groups of three, each after the same single «.» or «,».
func thousands(rs []rune, gs [][2]int) bool {
	if len(gs) < 3 || gs[0][1]-gs[0][0] > 3 {
		return false
	}
	sep := rune(0)
	for i, g := range gs[1:] {
		if g[1]-g[0] != 3 || g[0]-gs[i][1] != 1 {
			return false
		}
		if c := rs[g[0]-1]; (c != '.' && c != ',') || (sep != 0 && c != sep) {
			return false
		} else {
			sep = c
		}
	}
	return true
}

// digitValue is the value of the decimal digit r, of any script (Unicode's decimal digits come in
// consecutive runs of ten, from zero).
func digitValue(r rune) int {
	if r >= '0' && r <= '9' {
		return int(r - '0')
	}
	for _, rg := range unicode.Nd.R16 {
		if rune(rg.Lo) <= r && r <= rune(rg.Hi) {
			return int(r-rune(rg.Lo)) % 10
		}
	}
	for _, rg := range unicode.Nd.R32 {
		if rune(rg.Lo) <= r && r <= rune(rg.Hi) {
			return int(r-rune(rg.Lo)) % 10
		}
	}
	return 0
}
