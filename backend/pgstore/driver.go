package pgstore

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"go.uber.org/zap"

	"github.com/directaid/directaid/backend/store"
)

// The shared store of several nodes, registered as "postgres": `database postgres <dsn>`.
func init() {
	store.Register(store.Driver{
		Name:         "postgres",
		Title:        "PostgreSQL",
		Open:         openConfig,
		OpenTool:     openTool,
		Describe:     describe,
		DefaultWhere: "{env.DIRECTAID_DATABASE_URL}",
		GCPercent:    GCPercent,
		// No Verify: constraints and triggers keep the ids unique and the counters in step. No Restore:
		// pg_dump and pg_restore back the database up (docs/postgres.md).
	})
}

// GCPercent is the garbage collector's target (GOGC) on a node over PostgreSQL, unless the environment
// sets GOGC. Such a node keeps no records: its live heap is small, and at Go's default of 100 its
// collector runs often enough under load to take cores that PostgreSQL shares (docs/postgres.md). The
// heap may then grow to three times the live one; a GOMEMLIMIT (Caddy sets one from a cgroup's limit)
// still bounds it.
const GCPercent = 200

// MaintenanceInterval is the period of a server's maintenance cycle (Maintain): every node runs it, and
// one rewrite serves all.
const MaintenanceInterval = 10 * time.Minute

// Shared is the pool of one DSN, shared by a node's store, its Caddy storage (Certs) and its configs'
// reloads: Acquire it, and Release it once per Acquire.
type Shared struct {
	DB    *DB
	Certs *CertStorage
	refs  int
}

var (
	sharedMu sync.Mutex
	shared   = map[string]*Shared{}
)

// Acquire returns the shared pool of dsn, made on first use with log hearing the schema's migrations.
// Opening does not connect: the schema is migrated on first use, so that validating a config touches nothing.
func Acquire(dsn string, log *zap.Logger) (*Shared, error) {
	sharedMu.Lock()
	defer sharedMu.Unlock()
	if h := shared[dsn]; h != nil {
		h.refs++
		return h, nil
	}
	db, err := Open(dsn)
	if err != nil {
		return nil, err
	}
	if log == nil {
		log = zap.NewNop()
	}
	// A node answers 503 while it migrates: its log says why, and how long each step took.
	db.Progress = func(ev MigrationEvent) {
		if ev.Kind == MigrationFailed {
			log.Error("schema: "+ev.String()+"; tried again by the next request", zap.Int("version", ev.Version))
			return
		}
		log.Info("schema: "+ev.String(), zap.Int("version", ev.Version))
	}
	// A DSN that PostgreSQL refuses (a wrong password, no such database) makes every request 503, as an
	// outage does: the log says which it is, once a minute.
	var said atomic.Int64
	db.Refused = func(err error) {
		if now := time.Now().Unix(); now-said.Load() >= 60 {
			said.Store(now)
			log.Error("PostgreSQL refuses this node's connection for what the DSN says (user, password or database name): "+
				"the node answers 503 until the DSN or the database is fixed", zap.Error(err))
		}
	}
	h := &Shared{DB: db, Certs: NewCertStorage(db), refs: 1}
	shared[dsn] = h
	return h, nil
}

// Release gives back one Acquire of dsn; the last closes the pool.
func Release(dsn string) {
	sharedMu.Lock()
	defer sharedMu.Unlock()
	h := shared[dsn]
	if h == nil {
		return
	}
	if h.refs--; h.refs > 0 {
		return
	}
	delete(shared, dsn)
	h.Certs.Close()
	h.DB.Close()
}

// SharedPools counts the pools shared now (one per DSN in use).
func SharedPools() int {
	sharedMu.Lock()
	defer sharedMu.Unlock()
	return len(shared)
}

// openConfig opens the store a server runs on: on the shared pool of its DSN, with the maintenance cycle
// on MaintenanceInterval.
func openConfig(cfg store.Config) (store.Store, error) {
	log := cfg.Logger
	if log == nil {
		log = zap.NewNop()
	}
	h, err := Acquire(cfg.Where, log.Named("postgres"))
	if err != nil {
		return nil, err
	}
	st := NewStore(h.DB)
	st.Observer = cfg.Observer
	storeLog := log.Named("store")
	st.MaintainEvery(MaintenanceInterval, func(err error) {
		storeLog.Error("maintenance cycle failed (retried next cycle)", zap.Error(err))
	})
	return &sharedStore{Store: st, dsn: cfg.Where}, nil
}

// sharedStore releases the shared pool when the store closes.
type sharedStore struct {
	*Store
	dsn  string
	once sync.Once
}

func (s *sharedStore) Close() error {
	err := s.Store.Close()
	s.once.Do(func() { Release(s.dsn) })
	return err
}

// ConnectWait bounds reaching PostgreSQL in a command such as migrate (a variable for the tests).
var ConnectWait = 30 * time.Second

// openTool opens the database of dsn for a command, its schema brought up to date (created if need be):
// reaching the server is bounded by ConnectWait, the schema's migrations are not (an index built over
// millions of records outlasts any fixed wait, and one cut short would be built again, and cut, on every
// run); say hears the steps that may take long.
func openTool(ctx context.Context, dsn string, _ bool, say func(string)) (store.Store, error) {
	target, err := describe(dsn)
	if err != nil {
		return nil, err
	}
	target = "postgres " + target
	db, err := Open(dsn)
	if err != nil {
		return nil, err
	}
	pctx, cancel := context.WithTimeout(ctx, ConnectWait)
	err = db.Pool.Ping(pctx)
	cancel()
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("%s: %w", target, err)
	}
	db.Progress = func(ev MigrationEvent) {
		// The steps that may take long (a concurrent build, begun) or did; not every quick one of a fresh database.
		if ev.Kind == MigrationApplying && ev.Concurrent || ev.Took >= time.Second ||
			ev.Kind == MigrationWaiting || ev.Kind == MigrationFailed {
			say("schema: " + ev.String())
		}
	}
	if err := db.Ready(ctx); err != nil { // brings the schema up to date
		db.Close()
		return nil, fmt.Errorf("%s: %w", target, err)
	}
	return &ownStore{Store: NewStore(db)}, nil
}

// ownStore closes its own pool when the store closes.
type ownStore struct{ *Store }

func (s *ownStore) Close() error {
	err := s.Store.Close()
	s.db.Close()
	return err
}

// describe names the database of dsn for a report: host:port/database, never the password.
func describe(dsn string) (string, error) {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return "", fmt.Errorf("postgres: %w", err)
	}
	return fmt.Sprintf("%s:%d/%s", cfg.Host, cfg.Port, cfg.Database), nil
}

// FinishImport implements store.Transfer: VACUUM (ANALYZE), so that nodes started on the database plan
// with statistics of the imported rows and read index-only at once, not after autovacuum's analyze and vacuum.
func (s *Store) FinishImport(ctx context.Context, say func(string)) error {
	say("VACUUM (ANALYZE): marking the copied pages all-visible for index-only scans and refreshing the planner's statistics (about a second per 100,000 records)…")
	t0 := time.Now()
	if err := s.VacuumAnalyze(ctx); err != nil {
		return err
	}
	say(fmt.Sprintf("tables vacuumed and planner statistics refreshed (VACUUM (ANALYZE)) in %s", time.Since(t0).Round(time.Millisecond)))
	return nil
}
