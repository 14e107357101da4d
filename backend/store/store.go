// Package store is the seam between the service and the databases: the records, the one Store interface
// every database implements (badgerstore, pgstore), the registry through which the Caddy glue and the
// commands find them by name (Driver, Register, Lookup), the copy of one store into another (Copy), and
// the store-neutral parts of queries (specs, cursors, aggregates, ids, text folding). It imports no
// database; storetest holds the behaviour every Store must show.
package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/directaid/directaid/schema"
)

// Record is a stored publication.
type Record struct {
	ID        string    `json:"id"`
	CreatedAt time.Time `json:"createdAt"`
	schema.Publication
	// Status is one of Statuses; a record stored before statuses existed reads as open.
	Status string `json:"status,omitempty"`
	// UpdatedAt is set by the store on every write (see Store.Update); it reads as CreatedAt on records
	// stored before it existed.
	UpdatedAt time.Time `json:"updatedAt,omitzero"`
	// ExpiresAt is when an open record expires (zero: never).
	ExpiresAt time.Time `json:"expiresAt,omitzero"`
	// ContactHidden is set when someone reported the phone as theirs (not_my_number): it is kept for
	// an operator's review but shown nowhere.
	ContactHidden bool `json:"contactHidden,omitempty"`
	// Revision counts the Updates applied to the record (ApplyUpdate): 0 as published, so that a change
	// of the feed tells a publication from a later change.
	Revision int `json:"revision,omitempty"`
	// Publisher is a keyed hash of the network of the client that published the record (never the
	// address): a retry of its content gets the manage token back only from that network. Shown nowhere.
	Publisher string `json:"publisher,omitempty"`
	// HiddenFrom is the status a hidden record had before reports or an operator hid it, which an
	// operator's restore gives back (a resolved record is not reopened). Empty on other records.
	HiddenFrom string `json:"hiddenFrom,omitempty"`
	// HiddenBy is who hid a hidden record: ActorCommunity (reports) or ActorOperator. Undoing one
	// reporter's reports (restore_reporter) does not show what an operator hid.
	HiddenBy string `json:"hiddenBy,omitempty"`
}

// The statuses of a record. Only open records are in default lists; hidden ones are never public.
const (
	StatusOpen      = schema.StatusOpen
	StatusResolved  = schema.StatusResolved
	StatusWithdrawn = schema.StatusWithdrawn
	StatusExpired   = schema.StatusExpired
	StatusHidden    = schema.StatusHidden
)

// Statuses lists every status (declared in schema); a store may encode a status by its position, so the
// list only grows at the end.
var Statuses = schema.Statuses

// Normalize makes a record read from storage whole: the status and updatedAt of older records.
func (r *Record) Normalize() {
	if r.Status == "" {
		r.Status = StatusOpen
	}
	if r.UpdatedAt.IsZero() {
		r.UpdatedAt = r.CreatedAt
	}
}

// ExpiredAt reports whether r is open with an ExpiresAt that at has reached: it is expired, whether or
// not the sweep has marked it yet.
func (r *Record) ExpiredAt(at time.Time) bool {
	return r.Status == StatusOpen && !r.ExpiresAt.IsZero() && !at.Before(r.ExpiresAt)
}

// ErasePersonal removes what identifies or locates a person: contact name, phone and exact place. A
// withdrawal or an operator's erase does this before storing.
func (r *Record) ErasePersonal() {
	r.ContactName, r.ContactWhatsapp, r.ContactE164 = "", "", ""
	r.Address, r.Latitude, r.Longitude = "", nil, nil
}

// ErrImmutable is returned by Update when its function changed what identifies a record.
var ErrImmutable = errors.New("id, createdAt, source, externalId, emergencySlug and type cannot change")

// ErrNotFound is returned for an unknown record.
var ErrNotFound = errors.New("record not found")

// ErrClosed is returned once the store is closed.
var ErrClosed = errors.New("store closed")

// ErrUnreachable wraps an error of a store that cannot reach its database for now (a PostgreSQL server
// restarting, say): the client is told to retry in seconds (503 with Retry-After), and a later call may succeed.
var ErrUnreachable = errors.New("database unreachable")

// Store keeps records keyed by (source, externalId). Every method is safe for concurrent use; the
// behaviour behind each line below is what storetest.Run checks. Everything the service, the operator's
// routes and `directaid migrate` need of a database is here, so that a store that lacks any of it does not
// compile; the few optional interfaces (Completer, Backupper, Verifier) are what a database truly cannot
// offer, and each says why.
type Store interface {
	// Create stores rec unless a record with its (source, externalId) exists, atomically under concurrency;
	// it returns the stored record (the earlier one when created is false) only once that is on stable storage.
	// An empty Status is stored as open; UpdatedAt is set as by Update (never before CreatedAt).
	Create(ctx context.Context, rec *Record) (stored *Record, created bool, err error)
	// Update applies fn to a copy of record id and stores the result with no other write in between, and
	// returns it once durable: ErrNotFound for an unknown id; fn's error (nothing stored) when it fails;
	// ErrImmutable when fn changed ID, CreatedAt, Source, ExternalID, EmergencySlug or Type. The store sets
	// UpdatedAt: not before what fn set, and after that of every record already written, so that a list by
	// Since never misses a change. What the old version held leaves every index.
	Update(ctx context.Context, id string, fn func(*Record) error) (*Record, error)
	// Get returns the record with the given id (Normalized), or ErrNotFound.
	Get(ctx context.Context, id string) (*Record, error)
	// Lookup returns the record stored under (source, externalID), or ErrNotFound: the record a Create of
	// that pair would answer with, without writing (a publication's dry run).
	Lookup(ctx context.Context, source, externalID string) (*Record, error)
	// List answers one page of spec (see ListSpec and ListResult for order, paging and totals), from one snapshot.
	List(ctx context.Context, spec *ListSpec) (*ListResult, error)
	// Expiring returns the ids of up to limit open records whose ExpiresAt is not after at, soonest first,
	// from an index of open records by expiry (no scan of the others): what the expiry sweep marks expired.
	Expiring(ctx context.Context, at time.Time, limit int) ([]string, error)
	// Aggregates sums up the records of each slug by status (an empty Aggregate for a slug without records).
	Aggregates(ctx context.Context, slugs []string) (map[string]*Aggregate, error)
	// Secret returns the named 32-byte secret, created at random on first use and the same ever after for
	// every node of the store (the key of the publishers' manage tokens, say). It lives in the database.
	Secret(ctx context.Context, name string) ([]byte, error)
	// Probe commits something that is not a record to stable storage, as a publication would be (a synced
	// write, a real round trip to the database): a nil error means a publication now would be stored. It is
	// what readiness asks (GET /directaid/health/ready); after Close it fails with ErrClosed.
	Probe(ctx context.Context) error
	// Maintain runs one cycle of the store's upkeep now (the rewrite that drops the bytes of erased
	// personal data, say) and returns when it is done; a store may also run it by itself on a period. It is
	// what the operator's POST /directaid/moderation/maintain asks.
	Maintain(ctx context.Context) error
	// Responses are the "yo puedo ayudar" of records (responses.go).
	Responses
	// Moderation is the community reports and the audit trail (moderation.go).
	Moderation
	// Transfer reads the store whole and takes over another's (transfer.go): what Copy needs.
	Transfer
	// DiskUser tells how many bytes the store takes (ops.go), for the metrics and the operator.
	DiskUser
	// Close stops the store: a Create in flight or after it fails with ErrClosed, never hangs; a second Close is a no-op.
	Close() error
}

// Completer is a Store whose Create can leave part of a new record to compute until its pair is known to
// be free, so that a retry is answered without computing it (the municipio of a point, say). It is
// optional because it is an economy of a store that finds the pair free before it writes (Badger's writer
// reads the pair first); a store that learns it only by writing (PostgreSQL's one INSERT … ON CONFLICT)
// would need a second round trip for it. Without it the service computes before Create.
type Completer interface {
	// CreateCompleting is Create that calls complete on rec (when not nil) before storing it, and only
	// when rec is to be stored: never when the pair's record is found before the write.
	CreateCompleting(ctx context.Context, rec *Record, complete func(*Record)) (stored *Record, created bool, err error)
}

// Backupper is a Store that can stream a full, consistent backup of itself while it serves. It is
// optional because a database server backs itself up with its own tools (PostgreSQL: pg_dump, base
// backups and WAL archiving), better than a node could; a store without it has no GET /directaid/backup.
// What reads such a backup back is the store's Driver.Restore.
type Backupper interface {
	// Backup writes the backup to w; the format is the store's own (its restore command reads it).
	Backup(w io.Writer) error
}

// ApplyUpdate runs fn on a copy of old and checks that what identifies the record did not change.
func ApplyUpdate(old *Record, fn func(*Record) error) (*Record, error) {
	rec := *old
	if old.Latitude != nil {
		v := *old.Latitude
		rec.Latitude = &v
	}
	if old.Longitude != nil {
		v := *old.Longitude
		rec.Longitude = &v
	}
	if old.NeededPeople != nil {
		v := *old.NeededPeople
		rec.NeededPeople = &v
	}
	if err := fn(&rec); err != nil {
		return nil, err
	}
	if !sameIdentity(&rec, old) {
		return nil, ErrImmutable
	}
	if !slices.Contains(Statuses, rec.Status) {
		return nil, fmt.Errorf("unknown status %q", rec.Status)
	}
	rec.Revision = old.Revision + 1
	return &rec, nil
}

// sameIdentity reports whether a and b are the same record: what an Update may not change (its id, its
// creation, its pair, its emergency and its type) is alike.
func sameIdentity(a, b *Record) bool {
	return a.ID == b.ID && a.CreatedAt.Equal(b.CreatedAt) && a.Source == b.Source && a.ExternalID == b.ExternalID &&
		a.EmergencySlug == b.EmergencySlug && a.Type == b.Type
}
