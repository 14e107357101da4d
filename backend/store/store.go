// Package store is the seam between the service and the databases: the records, the one Store interface
// every database implements (badgerstore today), and the store-neutral parts of queries (specs, cursors,
// aggregates, ids, text folding). It imports no database; storetest holds the behaviour every Store must show.
package store

import (
	"context"
	"errors"
	"io"
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

// ErrUnreachable wraps an error of a store that cannot reach its database for now (a PostgreSQL server
// restarting, say): the client is told to retry in seconds (503 with Retry-After), and a later call may succeed.
var ErrUnreachable = errors.New("database unreachable")

// Store keeps records keyed by (source, externalId). Every method is safe for concurrent use; the
// behaviour behind each line below is what storetest.Run checks.
type Store interface {
	// Create stores rec unless a record with its (source, externalId) exists, atomically under concurrency;
	// it returns the stored record (the earlier one when created is false) only once that is on stable storage.
	Create(ctx context.Context, rec *Record) (stored *Record, created bool, err error)
	// Get returns the record with the given id, or ErrNotFound.
	Get(ctx context.Context, id string) (*Record, error)
	// List answers one page of spec (see ListSpec and ListResult for order, paging and totals), from one snapshot.
	List(ctx context.Context, spec *ListSpec) (*ListResult, error)
	// Aggregates sums up the records of each slug (an empty Aggregate for a slug without records).
	Aggregates(ctx context.Context, slugs []string) (map[string]*Aggregate, error)
	// Close stops the store: a Create in flight or after it fails with ErrClosed, never hangs; a second Close is a no-op.
	Close() error
}

// Backupper is a Store that can stream a full, consistent backup of itself while it serves.
type Backupper interface {
	// Backup writes the backup to w; the format is the store's own (its restore command reads it).
	Backup(w io.Writer) error
}
