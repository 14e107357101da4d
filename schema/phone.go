package schema

import (
	"strings"
	"unicode"
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

// PhoneInText is what MaskPhones writes in place of a phone number typed in a text.
const PhoneInText = "[teléfono oculto]"

// MaskPhones replaces every phone number written in text s by PhoneInText, and reports whether it
// replaced one. A phone number is a run of digits with the separators people type (spaces, dots,
// dashes, parentheses, a leading +) that contactWhatsapp would take as a number that can exist: a
// Colombian mobile or landline, or an international number with its +. Two numbers side by side are
// two numbers; an amount («1.500.000»), a date, a cédula or an address («Cra 14 # 20-31») is none.
// A publication's contact is its contactWhatsapp, shown only with the person's consent and hidden
// when someone reports it as theirs; a number in the text would escape both.
func MaskPhones(s string) (string, bool) {
	digits := 0
	for i := 0; i < len(s); i++ {
		if s[i] >= '0' && s[i] <= '9' {
			digits++
		}
	}
	if digits < 7 {
		return s, false
	}
	var out strings.Builder
	last, masked := 0, false
	for _, run := range phoneRuns(s) {
		// The run's groups (split at spaces), then the longest span of groups from each start that is a
		// number, so that «300 123 4567 310 987 6543» is two.
		groups := spaceGroups(s, run[0], run[1])
		for k := 0; k < len(groups); {
			end := -1
			for m := len(groups) - 1; m >= k; m-- {
				span := s[groups[k][0]:groups[m][1]]
				if n := countDigits(span); n >= 7 && n <= 15 {
					if _, bad := parsePhone(span, true); bad == nil {
						end = m
						break
					}
				}
			}
			if end < 0 {
				k++
				continue
			}
			out.WriteString(s[last:groups[k][0]])
			out.WriteString(PhoneInText)
			last, masked = groups[end][1], true
			k = end + 1
		}
	}
	if !masked {
		return s, false
	}
	out.WriteString(s[last:])
	return out.String(), true
}

// phoneRuns are the [start, end) byte spans of s made of digits and phone separators that hold a digit,
// each trimmed of the separators at its ends (but a leading + or parenthesis).
func phoneRuns(s string) [][2]int {
	var runs [][2]int
	for i := 0; i < len(s); {
		if !phoneByte(s[i]) {
			i++
			continue
		}
		j := i
		for j < len(s) && phoneByte(s[j]) {
			j++
		}
		a, b := i, j
		for a < b && strings.IndexByte(" -.)", s[a]) >= 0 {
			a++
		}
		for b > a && strings.IndexByte(" -.(+", s[b-1]) >= 0 {
			b--
		}
		if countDigits(s[a:b]) > 0 {
			runs = append(runs, [2]int{a, b})
		}
		i = j
	}
	return runs
}

// spaceGroups splits the span [a, b) of s at its spaces.
func spaceGroups(s string, a, b int) [][2]int {
	var out [][2]int
	for i := a; i < b; {
		for i < b && s[i] == ' ' {
			i++
		}
		j := i
		for j < b && s[j] != ' ' {
			j++
		}
		if j > i {
			out = append(out, [2]int{i, j})
		}
		i = j
	}
	return out
}

func phoneByte(c byte) bool { return c >= '0' && c <= '9' || strings.IndexByte(" +-.()", c) >= 0 }

func countDigits(s string) int {
	n := 0
	for i := 0; i < len(s); i++ {
		if s[i] >= '0' && s[i] <= '9' {
			n++
		}
	}
	return n
}
