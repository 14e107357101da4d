package store

import (
	"crypto/rand"
	"encoding/binary"
	"hash/fnv"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"
)

const crockford = "0123456789abcdefghjkmnpqrstvwxyz"

// NewID returns a 16-character id that sorts by creation time: 48 bits of Unix milliseconds and 32 bits
// that tell ids of one millisecond apart, in Crockford's base32 (no i, l, o, u: easy to read aloud or type
// from a screen). The 32 bits are this process's id sequence (idSeq), so two ids made by one process differ
// whatever their time; ids made by two nodes in one millisecond differ unless their sequences meet. A
// store still never overwrites a record with another's id (Store.Create): uniqueness holds by construction.
func NewID(t time.Time) string { return NewIDNear(t, nil, nil) }

// IDGroups is the number of place groups an id tells by its last 6 bits (IDGroup).
const IDGroups = 64

// IDSource makes the id of a record created at t, near (lat, lon) when both are set: NewIDNear, unless a
// test injects another (a store calls it for a Create whose id another record holds).
type IDSource func(t time.Time, lat, lon *float64) string

// idSeq is this process's id sequence: it starts at random, so that two nodes (or a restart within a
// millisecond) seldom meet, and steps by one per id.
var idSeq = func() *atomic.Uint32 {
	var b [4]byte
	_, _ = rand.Read(b[:])
	var s atomic.Uint32
	s.Store(binary.BigEndian.Uint32(b[:]))
	return &s
}()

// NewIDNear is NewID whose last 6 bits are instead the group of the 5 km cell holding (lat, lon)
// (PlaceGroup), when there is a point: records published near each other share it, so a store can keep
// their data together — pgstore keeps the personal rows in a partition per group, and a radius page's 20
// records, read from ~17 of 64 partitions with random ids, come from one or two. The 26 bits before the
// group are the sequence's low bits, with a point or without (the group is then the sequence's own low
// bits), so a process makes 2^26 ids before two of one millisecond could meet, whatever their points.
func NewIDNear(t time.Time, lat, lon *float64) string {
	b := idBytes(t.UnixMilli())
	n := idSeq.Add(1)
	group := n % IDGroups
	if lat != nil && lon != nil {
		group = uint32(PlaceGroup(*lat, *lon))
	}
	binary.BigEndian.PutUint32(b[6:], n<<6|group)
	return encodeID(b)
}

// PlaceGroup is the group (0 … IDGroups-1) of the 5 km cell (geohash of 5 characters) holding (lat, lon):
// a hash of the cell, so that a city's cells spread over the groups.
func PlaceGroup(lat, lon float64) int {
	h := fnv.New32a()
	_, _ = h.Write([]byte(Geohash(lat, lon, 5)))
	return int(h.Sum32() % IDGroups)
}

// IDGroup is the group id tells: the value of its last character and the low bit of the one before it
// (its last 6 bits, for an id of NewID's shape), a character outside Crockford's alphabet counting 0.
// It is defined for any string, by characters, as the SQL function directaid_personal_part (pgstore's
// migration 0020) computes it.
func IDGroup(id string) int {
	last, n := utf8.DecodeLastRuneInString(id)
	prev, _ := utf8.DecodeLastRuneInString(id[:len(id)-n])
	value := func(r rune) int {
		if r >= utf8.RuneSelf {
			return 0 // outside the alphabet
		}
		return int(crockfordValue[r])
	}
	return value(last) | (value(prev)&1)<<5
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
