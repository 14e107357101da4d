package schema

import (
	"strconv"
	"unicode/utf8"
)

// ClipRunes is how much of a client's own input an error message quotes back: enough to recognize it,
// not a 3,000-character id echoed whole.
const ClipRunes = 40

// Clip shortens s to ClipRunes characters, marking the cut with «…».
func Clip(s string) string {
	if utf8.RuneCountInString(s) <= ClipRunes {
		return s
	}
	return string([]rune(s)[:ClipRunes]) + "…"
}

// Quote is Clip in double quotes, with Go's escapes for what cannot be shown (%q).
func Quote(s string) string { return strconv.Quote(Clip(s)) }
