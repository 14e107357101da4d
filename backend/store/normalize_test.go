package store

import (
	"testing"
	"time"
)

func TestNormalizeID(t *testing.T) {
	id := NewID(time.Date(2026, 8, 11, 12, 0, 0, 0, time.UTC))
	for _, in := range []string{id, " " + id + "\n", toUpper(id)} {
		if got := NormalizeID(in); got != id {
			t.Errorf("NormalizeID(%q) = %q, want %q", in, got, id)
		}
	}
	// Crockford's base32: O is 0, I and L are 1.
	if got := NormalizeID("0OIL1abcdefghjkm"); got != "00111abcdefghjkm" || !ValidID(got) {
		t.Errorf("confusable letters: %q", got)
	}
	if ValidID(NormalizeID("06h0esgyp8jksweu")) { // u is not a Crockford digit
		t.Error("u accepted")
	}
}

func toUpper(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'a' && c <= 'z' {
			b[i] = c - 'a' + 'A'
		}
	}
	return string(b)
}
