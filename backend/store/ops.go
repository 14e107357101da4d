package store

import (
	"context"
	"errors"
	"time"
)

// What an operator needs of a store besides records: figures, proof that the database is consistent.
// Probe, Maintain and DiskUsage are part of Store; Verifier is optional (see there).

// ErrUnavailable wraps the reason a store refuses writes for now (the disk is nearly full, say). It is not
// a failure of the request: the client retries later (503 with Retry-After), and the store accepts
// writes again by itself once the cause is gone.
var ErrUnavailable = errors.New("the store cannot write now")

// Observer receives a store's operational figures (directaid's metrics implement it).
type Observer interface {
	// ObserveCommit is one group commit: how many writes it held and how long the synced write took.
	ObserveCommit(batch int, d time.Duration)
	// ObserveGC is one garbage collection; result is "rewrote", "nothing" or "error".
	ObserveGC(result string, d time.Duration)
	// ObserveWriteRefused is one write (a publication, an update, a report…) refused because the store's
	// disk is short of space (ErrUnavailable): counted here, since the store logs only when refusals start and stop.
	ObserveWriteRefused()
}

// DiskUser is a store that can tell how many bytes it takes, and the free space of its disk when it sees it.
type DiskUser interface {
	// DiskUsage reports the store's bytes on disk by part, and the free bytes of the disk that holds it.
	DiskUsage() (parts map[string]int64, free int64, err error)
}

// Verifier is a store that can check itself while it serves: its records against their index entries
// and counters, and that no two publications share an id. It is optional because it checks what a store
// keeps by hand (Badger's index entries and counters are written beside each record by the store itself);
// a database whose constraints and triggers keep them (PostgreSQL) has nothing of the kind to check, and
// GET /directaid/verify answers 501 there. The offline check of a database nothing has open is the
// store's Driver.Verify.
type Verifier interface {
	Verify(ctx context.Context) (*Verification, error)
}

// Verification is what a store's verification found in a database.
type Verification struct {
	// Records counts the records by status.
	Records map[string]int
	// Checked is how many index entries and aggregates were compared with the records.
	Checked int
	// Problems lists each mismatch (at most a few hundred); empty means the database is consistent.
	Problems []string
	// SharedIDs counts the ids that more than one publication was stored under (the record of all but
	// one was overwritten): a repair gives each its own again where an earlier version is left.
	SharedIDs int
}
