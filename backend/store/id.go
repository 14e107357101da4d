package store

import (
	"crypto/rand"
	"encoding/binary"
	"strings"
	"time"
)

const crockford = "0123456789abcdefghjkmnpqrstvwxyz"

// NewID returns a 16-character id that sorts by creation time: 48 bits of Unix milliseconds and 32 random
// bits, in Crockford's base32 (no i, l, o, u: easy to read aloud or type from a screen).
func NewID(t time.Time) string {
	b := idBytes(t.UnixMilli())
	_, _ = rand.Read(b[6:])
	return encodeID(b)
}

// FirstIDAt is the smallest id NewID can make at Unix ms: every id of an earlier ms sorts below it.
func FirstIDAt(ms int64) string { return encodeID(idBytes(ms)) }

func idBytes(ms int64) [10]byte {
	var b [10]byte
	binary.BigEndian.PutUint64(b[:8], uint64(ms)<<16)
	return b
}

func encodeID(b [10]byte) string {
	var sb strings.Builder
	var acc uint64
	bits := 0
	for _, c := range b {
		acc = acc<<8 | uint64(c)
		bits += 8
		for bits >= 5 {
			bits -= 5
			sb.WriteByte(crockford[(acc>>bits)&31])
		}
	}
	return sb.String()
}

// crockfordValue maps a character of an id to its 5 bits (radius queries decode an id per entry read).
var crockfordValue = func() (v [256]uint8) {
	for i := range len(crockford) {
		v[crockford[i]] = uint8(i)
	}
	return v
}()

// IDMillis is the creation time (Unix ms) encoded in the first 48 bits of a valid id (a string or bytes).
func IDMillis[T ~string | ~[]byte](id T) int64 {
	var acc uint64
	for i := 0; i < 10 && i < len(id); i++ {
		acc = acc<<5 | uint64(crockfordValue[id[i]])
	}
	return int64(acc >> 2)
}

// ValidID reports whether s has the shape NewID produces.
func ValidID(s string) bool {
	if len(s) != 16 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if strings.IndexByte(crockford, s[i]) < 0 {
			return false
		}
	}
	return true
}

// NormalizeID reads an id as Crockford's base32 reads it, case-insensitively and forgiving the letters
// a person may say or type for a digit (O for 0, I and L for 1): the id in the form NewID writes it.
// Ids are meant to be read aloud and typed from a screen.
func NormalizeID(s string) string {
	return idReader.Replace(strings.ToLower(strings.TrimSpace(s)))
}

var idReader = strings.NewReplacer("o", "0", "i", "1", "l", "1")
