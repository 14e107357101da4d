package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"

	"go.uber.org/zap"
)

// A Driver is one kind of database. Each store package registers its own (Register, from an init
// function), so that the Caddy glue and the commands find it by name and import no store: the binary
// holds the stores its main package imports.
type Driver struct {
	// Name is the word that selects it: `database <name> <where>` in the Caddyfile, --from and --to of
	// `directaid migrate`.
	Name string
	// Title names it in messages ("PostgreSQL").
	Title string
	// Embedded is set for the store kept in a directory on the node itself: the database a configuration
	// without one uses, and the one that `directaid restore` and `directaid verify --database` act on.
	Embedded bool
	// Open opens the store a server runs on. Stores opened twice with the same Where share nothing but
	// what the driver shares itself; the caller shares one store across a configuration's reloads.
	Open func(cfg Config) (Store, error)
	// OpenTool opens the store at where for a command that runs without a server on it (migrate): say
	// receives a line for each step that may take long. It fails clearly when where holds no database of
	// this kind and the command must not create one (an empty directory named by mistake).
	OpenTool func(ctx context.Context, where string, create bool, say func(line string)) (Store, error)
	// Describe names the database at where for a report (a directory; host:port/database), without a
	// secret such as a password.
	Describe func(where string) (string, error)
	// DefaultWhere is where a command finds the database when none is given ("" when it must be given);
	// it may hold placeholders such as {env.DIRECTAID_DATABASE_URL}.
	DefaultWhere string
	// GCPercent is Go's garbage collector target (GOGC) for a node over this store unless GOGC is set;
	// 0 keeps Go's default. A node whose store keeps no data in its heap can afford a higher one.
	GCPercent int
	// HeapTarget is a soft limit in bytes for Go's heap on a node over this store unless GOMEMLIMIT is
	// set; 0: none. It holds while the heap that lasts is under half of it, and rises with it beyond
	// (the server's heapGuard); a lower limit already in effect (Caddy's, from a memory cgroup) stays.
	HeapTarget int64
	// Verify checks the database at where, which nothing has open; nil when the database keeps itself
	// consistent (Verifier says why a store may not need it).
	Verify func(where string) (*Verification, error)
	// Repair mends what Verify finds in the database at where, which nothing has open, saying what it did.
	Repair func(where string, report io.Writer) error
	// Restore loads a backup that the store's Backup wrote into where, which must be empty, checking what
	// the backup carries, and returns a line that says what the check proved; nil when the database is
	// backed up and restored with its own tools.
	Restore func(where string, backup io.Reader) (checked string, err error)
}

// Config is what a server's configuration gives a Driver's Open.
type Config struct {
	// Where is the database: a directory, a DSN (placeholders already replaced).
	Where string
	// MinFreeBytes is the free disk space below which an embedded store refuses writes (0: its default,
	// -1: never).
	MinFreeBytes int64
	// Logger receives the store's own log lines.
	Logger *zap.Logger
	// Observer receives the store's figures (nil: none).
	Observer Observer
}

// ErrNoSpaceToOpen is returned by a Driver's Open when the disk of an embedded database has too little
// free space to open it: starting again would only fail again until someone frees space.
var ErrNoSpaceToOpen = errors.New("too little free disk space to open the database")

var (
	driversMu sync.Mutex
	drivers   []Driver
)

// Register makes a driver known; a second driver of one name is a programming error.
func Register(d Driver) {
	driversMu.Lock()
	defer driversMu.Unlock()
	if d.Name == "" || d.Open == nil || d.OpenTool == nil || d.Describe == nil {
		panic("store: a driver needs a name, Open, OpenTool and Describe")
	}
	if slices.ContainsFunc(drivers, func(o Driver) bool { return o.Name == d.Name }) {
		panic("store: driver " + d.Name + " registered twice")
	}
	drivers = append(drivers, d)
}

// Drivers lists the registered drivers by name.
func Drivers() []Driver {
	driversMu.Lock()
	defer driversMu.Unlock()
	out := slices.Clone(drivers)
	slices.SortFunc(out, func(a, b Driver) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// Lookup returns the driver called name, or an error that lists the known ones.
func Lookup(name string) (Driver, error) {
	for _, d := range Drivers() {
		if d.Name == name {
			return d, nil
		}
	}
	return Driver{}, fmt.Errorf("unknown database %q (supported: %s)", name, strings.Join(Names(), ", "))
}

// Names lists the names of the registered drivers, sorted.
func Names() []string {
	var out []string
	for _, d := range Drivers() {
		out = append(out, d.Name)
	}
	return out
}

// Embedded returns the driver of the embedded store (Driver.Embedded).
func Embedded() (Driver, error) {
	for _, d := range Drivers() {
		if d.Embedded {
			return d, nil
		}
	}
	return Driver{}, errors.New("this build holds no embedded store")
}
