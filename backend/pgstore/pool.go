// Package pgstore keeps directaid's state in PostgreSQL, for several nodes behind one address: the
// records (Store), and Caddy's storage of certificates, locks and distributed rate limits (CertStorage).
// One pool per DSN serves both.
package pgstore

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// defaultMaxConns is the pool size unless the DSN sets pool_max_conns: enough for PostgreSQL to group
// the commits of concurrent publishes, small enough for several nodes on one server's max_connections.
const defaultMaxConns = 16

// DB is a pool on one database whose schema is brought up to date before first use.
type DB struct {
	Pool *pgxpool.Pool
	// Progress, when set before the first use, hears each step of Ready's migrations (MigrateWith).
	Progress func(MigrationEvent)
	// Refused, when set before the first use, hears each attempt of Ready's that PostgreSQL refused for
	// the DSN's own sake (ConfigError): an outage passes, a wrong password does not.
	Refused func(error)
	mu      sync.Mutex
	ready   atomic.Bool
	attempt *readyAttempt // the attempt in progress, if any (under mu)
}

// readyAttempt is one attempt of Ready's: done is closed when it ends, err set before.
type readyAttempt struct {
	done chan struct{}
	err  error
}

// migrationTimeout bounds one attempt, so that a connection hung mid-migration is given up and tried again.
const migrationTimeout = time.Hour

// Open makes a pool on dsn without connecting: a node may start while PostgreSQL is down, answer 503
// meanwhile, and carry on once it is back. See Connect for the settings.
func Open(dsn string) (*DB, error) {
	cfg, err := poolConfig(dsn)
	if err != nil {
		return nil, err
	}
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		return nil, err
	}
	return &DB{Pool: pool}, nil
}

// Ready migrates the schema once (Migrate); until that has succeeded, every call after a failed attempt
// tries again. An attempt does not end with the caller's context: an index built over a million records
// (0017: 36 s) outlives any request's deadline, and each request cancelling it would roll it back for ever.
// The callers wait for it, each until its own context ends.
func (d *DB) Ready(ctx context.Context) error {
	if d.ready.Load() {
		return nil
	}
	d.mu.Lock()
	m := d.attempt
	if m == nil && !d.ready.Load() {
		m = &readyAttempt{done: make(chan struct{})}
		d.attempt = m
		go d.migrate(context.WithoutCancel(ctx), m)
	}
	d.mu.Unlock()
	if m == nil {
		return nil // ready meanwhile
	}
	select {
	case <-m.done:
		return m.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// migrate is one attempt of Ready's.
func (d *DB) migrate(ctx context.Context, m *readyAttempt) {
	ctx, cancel := context.WithTimeout(ctx, migrationTimeout)
	defer cancel()
	_, err := MigrateWith(ctx, d.Pool, d.Progress)
	if err == nil {
		err = checkPersonalRouting(ctx, d.Pool, personalPart)
	}
	if err != nil && d.Refused != nil && ConfigError(err) {
		d.Refused(err)
	}
	d.mu.Lock()
	d.ready.Store(err == nil)
	d.attempt, m.err = nil, err
	d.mu.Unlock()
	close(m.done)
}

// ConfigError reports whether PostgreSQL refused err's connection or statement for what the DSN says:
// a wrong user or password (SQLSTATE class 28), a database that does not exist (3D000), a role without
// the rights the schema needs (42501). Unlike an outage, it lasts until the operator fixes the DSN.
func ConfigError(err error) bool {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		return false
	}
	return strings.HasPrefix(pe.Code, "28") || pe.Code == "3D000" || pe.Code == "42501"
}

// Close closes the pool.
func (d *DB) Close() { d.Pool.Close() }

// Connect makes a pool on dsn (a postgres:// URL or key=value string) and checks that the server answers.
// Commits are synchronous (acknowledged means on the primary's disk) unless the DSN asks for a stronger
// synchronous_commit. Connecting gives up after 5 seconds unless the DSN sets connect_timeout.
func Connect(ctx context.Context, dsn string) (*pgxpool.Pool, error) {
	cfg, err := poolConfig(dsn)
	if err != nil {
		return nil, err
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	cc := cfg.ConnConfig
	pctx, cancel := context.WithTimeout(ctx, cc.ConnectTimeout)
	defer cancel()
	if err := pool.Ping(pctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("postgres: cannot reach %s:%d: %w", cc.Host, cc.Port, err)
	}
	return pool, nil
}

func poolConfig(dsn string) (*pgxpool.Config, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err) // pgx hides the password
	}
	if !strings.Contains(dsn, "pool_max_conns") {
		cfg.MaxConns = defaultMaxConns
	}
	cc := cfg.ConnConfig
	if cc.ConnectTimeout == 0 {
		cc.ConnectTimeout = 5 * time.Second
	}
	if v := cc.RuntimeParams["synchronous_commit"]; v == "" || v == "off" || v == "local" {
		cc.RuntimeParams["synchronous_commit"] = "on"
	}
	if cc.RuntimeParams["application_name"] == "" {
		cc.RuntimeParams["application_name"] = "directaid"
	}
	// JIT compiles a query whose estimated cost passes jit_above_cost: a page of a list whose plan
	// looks up the personal text in 64 partitions (0010) spent 80 ms compiling for 2 ms of work. Every
	// query here is a short index walk; an operator may still turn it on in the dsn.
	if cc.RuntimeParams["jit"] == "" {
		cc.RuntimeParams["jit"] = "off"
	}
	// Each connection of the pool writes the counters on a shard of its own (migration 0008).
	shards := &shardSet{base: rand.IntN(counterShards), of: map[*pgx.Conn]int{}}
	cfg.AfterConnect = func(ctx context.Context, conn *pgx.Conn) error {
		_, err := conn.Exec(ctx, `SELECT set_config('directaid.shard', $1, false)`, strconv.Itoa(shards.take(conn)))
		return err
	}
	cfg.BeforeClose = shards.free
	// Connections broken by a server restart are found on use; drop idle ones soon so that the pool
	// refills with fresh connections.
	cfg.MaxConnIdleTime = time.Minute
	cfg.HealthCheckPeriod = 5 * time.Second
	return cfg, nil
}

// Unavailable reports whether err means that PostgreSQL could not be reached or went away mid-statement
// (the caller answers 503 and the client retries), as opposed to a bug or a constraint.
func Unavailable(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	var ne net.Error
	if errors.As(err, &ne) {
		return true
	}
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) {
		return true
	}
	if pgconn.SafeToRetry(err) || pgconn.Timeout(err) {
		return true
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		// 08: connection exception; 57P01-57P03: admin shutdown, crash shutdown, cannot connect now;
		// 53300: too many connections.
		return strings.HasPrefix(pe.Code, "08") || strings.HasPrefix(pe.Code, "57P") || pe.Code == "53300"
	}
	// A connection that died under a statement.
	return strings.Contains(err.Error(), "conn closed") || strings.Contains(err.Error(), "unexpected EOF")
}

// counterShards is the number of shards of the counter rows (directaid_shard() in migration 0008).
const counterShards = 64

// shardSet hands each open connection of a pool the first shard no other one holds, from a random start
// (so that nodes spread over the shards): a connection never waits for another of its node on a counter
// row until that one commits.
type shardSet struct {
	mu   sync.Mutex
	base int
	of   map[*pgx.Conn]int
}

func (s *shardSet) take(c *pgx.Conn) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	used := make(map[int]bool, len(s.of))
	for _, n := range s.of {
		used[n] = true
	}
	n := s.base
	for i := range counterShards {
		if n = (s.base + i) % counterShards; !used[n] {
			break
		}
	}
	s.of[c] = n
	return n
}

func (s *shardSet) free(c *pgx.Conn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.of, c)
}
