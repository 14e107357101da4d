// Package backend is directaid without Caddy: the store, the publish service and the HTTP API, all
// usable with plain net/http.
package backend

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"strings"
	"time"

	"github.com/directaid/directaid/schema"
)

// Record is a stored publication.
type Record struct {
	ID        string    `json:"id"`
	CreatedAt time.Time `json:"createdAt"`
	schema.Publication
}

// ErrNotFound is returned for an unknown record.
var ErrNotFound = errors.New("record not found")

// ErrClosed is returned once the store is closed.
var ErrClosed = errors.New("store closed")

// Store keeps records keyed by (source, externalId). A second backend (PostgreSQL) implements the same.
type Store interface {
	// Create stores rec unless a record with its (source, externalId) exists, atomically under concurrency.
	// It returns the stored record (the earlier one when created is false) and returns only once that
	// record is on stable storage.
	Create(ctx context.Context, rec *Record) (stored *Record, created bool, err error)
	// Get returns the record with the given id, or ErrNotFound.
	Get(ctx context.Context, id string) (*Record, error)
	Close() error
}

const crockford = "0123456789abcdefghjkmnpqrstvwxyz"

// NewID returns a 16-character id that sorts by creation time: 48 bits of Unix milliseconds and 32 random
// bits, in Crockford's base32 (no i, l, o, u: easy to read aloud or type from a screen).
func NewID(t time.Time) string {
	var b [10]byte
	binary.BigEndian.PutUint64(b[:8], uint64(t.UnixMilli())<<16)
	_, _ = rand.Read(b[6:])
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
