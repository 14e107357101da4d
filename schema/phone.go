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
