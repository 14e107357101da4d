package pgstore

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// The schema is a numbered list of SQL files applied in order, each once, each in its own transaction
// (or, marked noTransaction, statement by statement), recorded in directaid_schema_migrations.
// (pressly/goose v3.29.0 would do the same, but adding it raises some twenty modules of the binary, x/net
// and grpc among them, for two small files.)
//
//go:embed migrations/*.sql
var migrationFiles embed.FS

// MigrationLock is the key of the session advisory lock that serialises migrations across nodes.
const MigrationLock int64 = 0x64697265637461 // "directa"

// afterMigration are steps in Go that complete a migration in its transaction (what SQL cannot do alike).
var afterMigration = map[int]func(context.Context, pgx.Tx) error{
	7:  backfillWords, // the tokens are cut as q cuts them, in Go
	10: movePersonal,  // the docs are the store's JSON
}

type migration struct {
	version int
	name    string
	sql     string
	alone   []string // a noTransaction migration's statements; nil: sql runs in one transaction
}

// noTransaction on a migration's first line runs its statements each alone, outside a transaction, so that
// it can build an index with CREATE INDEX CONCURRENTLY: a transactional CREATE INDEX holds a ShareLock on
// its table for the whole build (0017 at 1M records: 36 s), and every node's publications wait for it. Such a
// migration is recorded after its last statement; one interrupted is run again from its first, so each
// statement must be one that can be (repeatable).
const noTransaction = "-- directaid:no-transaction"

// repeatable are the statements a noTransaction migration may hold. A concurrent build that fails or is
// interrupted leaves an INVALID index, which IF NOT EXISTS would then skip for ever: Migrate drops it first.
var (
	repeatable = regexp.MustCompile(`(?is)^(CREATE\s+(UNIQUE\s+)?INDEX\s+CONCURRENTLY\s+IF\s+NOT\s+EXISTS\s+([a-z_][a-z0-9_]*)\s` +
		`|DROP\s+INDEX\s+CONCURRENTLY\s+IF\s+EXISTS\s|CREATE\s+EXTENSION\s+IF\s+NOT\s+EXISTS\s)`)
	builtIndex = 3 // repeatable's group of the index a statement builds
)

func migrations() ([]migration, error) {
	entries, err := fs.ReadDir(migrationFiles, "migrations")
	if err != nil {
		return nil, err
	}
	var out []migration
	for _, e := range entries {
		num, _, ok := strings.Cut(e.Name(), "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || !strings.HasSuffix(e.Name(), ".sql") {
			return nil, fmt.Errorf("migration %q: name it NNNN_what.sql", e.Name())
		}
		b, err := migrationFiles.ReadFile("migrations/" + e.Name())
		if err != nil {
			return nil, err
		}
		m := migration{version: v, name: e.Name(), sql: string(b)}
		if strings.HasPrefix(m.sql, noTransaction) {
			if m.alone, err = statementsAlone(m.sql); err != nil {
				return nil, fmt.Errorf("migration %q: %w", e.Name(), err)
			}
			if afterMigration[v] != nil {
				return nil, fmt.Errorf("migration %q: a step in Go needs a transaction", e.Name())
			}
		}
		out = append(out, m)
	}
	slices.SortFunc(out, func(a, b migration) int { return a.version - b.version })
	for i := 1; i < len(out); i++ {
		if out[i].version == out[i-1].version {
			return nil, fmt.Errorf("migrations %q and %q share a version", out[i-1].name, out[i].name)
		}
	}
	return out, nil
}

// Migrate brings the database's schema up to date. Nodes starting at once wait for each other on an
// advisory lock, held by a connection of its own: closing that connection releases the lock whatever
// happens. It returns the versions it applied.
func Migrate(ctx context.Context, pool *pgxpool.Pool) ([]int, error) {
	return MigrateWith(ctx, pool, nil)
}

// MigrationEvent is a step of a migration, for the node's log: a node answers 503 while it migrates, and
// its operator sees why and for how long.
type MigrationEvent struct {
	Kind       string // MigrationWaiting, MigrationApplying, MigrationApplied or MigrationFailed
	Version    int
	Name       string
	Concurrent bool          // its indexes are built without blocking writes (noTransaction)
	Took       time.Duration // applied or failed: since applying
	Err        error         // failed
}

// The kinds of MigrationEvent.
const (
	MigrationWaiting  = "waiting" // another node holds the migration lock
	MigrationApplying = "applying"
	MigrationApplied  = "applied"
	MigrationFailed   = "failed"
)

// String is the step in a line of a node's log or of migrate's report.
func (ev MigrationEvent) String() string {
	switch ev.Kind {
	case MigrationWaiting:
		return "waiting for another node's schema migration to end"
	case MigrationApplying:
		how := ""
		if ev.Concurrent {
			how = " (indexes built concurrently: the other nodes go on publishing)"
		}
		return "applying " + ev.Name + how + "…"
	case MigrationApplied:
		return fmt.Sprintf("%s applied in %s", ev.Name, ev.Took.Round(time.Millisecond))
	case MigrationFailed:
		return fmt.Sprintf("%s failed after %s: %v", ev.Name, ev.Took.Round(time.Millisecond), ev.Err)
	}
	return ev.Kind + " " + ev.Name
}

// MigrateWith is Migrate telling progress (when not nil) each step.
func MigrateWith(ctx context.Context, pool *pgxpool.Pool, progress func(MigrationEvent)) ([]int, error) {
	if progress == nil {
		progress = func(MigrationEvent) {}
	}
	all, err := migrations()
	if err != nil {
		return nil, err
	}
	conn, err := pgx.ConnectConfig(ctx, pool.Config().ConnConfig.Copy())
	if err != nil {
		return nil, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if err := lockMigrations(ctx, conn, func() { progress(MigrationEvent{Kind: MigrationWaiting}) }); err != nil {
		return nil, fmt.Errorf("wait for the migration lock: %w", err)
	}
	if _, err := conn.Exec(ctx, `CREATE TABLE IF NOT EXISTS directaid_schema_migrations (
		version    integer PRIMARY KEY,
		name       text NOT NULL,
		applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
		return nil, err
	}
	rows, err := conn.Query(ctx, `SELECT version FROM directaid_schema_migrations`)
	if err != nil {
		return nil, err
	}
	done, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	if err != nil {
		return nil, err
	}
	var applied []int
	for _, m := range all {
		if slices.Contains(done, int32(m.version)) {
			continue
		}
		ev := MigrationEvent{Kind: MigrationApplying, Version: m.version, Name: m.name, Concurrent: m.alone != nil}
		progress(ev)
		t0 := time.Now()
		err := apply(ctx, conn, m)
		ev.Kind, ev.Took, ev.Err = MigrationApplied, time.Since(t0), err
		if err != nil {
			ev.Kind = MigrationFailed
		}
		progress(ev)
		if err != nil {
			return applied, fmt.Errorf("migration %s: %w", m.name, err)
		}
		applied = append(applied, m.version)
	}
	if slices.Contains(applied, 10) {
		// The versions of the docs from before 0010 still hold the personal text: write the table anew
		// once (it is locked meanwhile; later erasures rewrite directaid_personal only).
		if _, err := conn.Exec(ctx, `VACUUM (FULL, ANALYZE) directaid_records`); err != nil {
			return applied, fmt.Errorf("rewrite the records after 0010: %w", err)
		}
	}
	return applied, nil
}

// apply runs one migration and records it: statement by statement (noTransaction), or in one transaction.
func apply(ctx context.Context, conn *pgx.Conn, m migration) error {
	if m.alone != nil {
		return applyAlone(ctx, conn, m)
	}
	return pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, m.sql); err != nil {
			return err
		}
		if after := afterMigration[m.version]; after != nil {
			if err := after(ctx, tx); err != nil {
				return err
			}
		}
		_, err := tx.Exec(ctx, `INSERT INTO directaid_schema_migrations (version, name) VALUES ($1, $2)`, m.version, m.name)
		return err
	})
}

// lockPoll is how often a node waiting for another's migration tries the lock again.
const lockPoll = 200 * time.Millisecond

// lockMigrations takes the migration lock, trying it again until it is free rather than waiting in
// pg_advisory_lock: a session blocked there holds its statement's snapshot, and CREATE INDEX CONCURRENTLY
// waits for every older snapshot, so the node building would wait for the nodes waiting for it
// (TestMigrateWaitersDoNotBlockTheBuild). Between tries a waiting node holds none.
func lockMigrations(ctx context.Context, conn *pgx.Conn, waiting func()) error {
	for try := 0; ; try++ {
		var got bool
		if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock($1)`, MigrationLock).Scan(&got); err != nil {
			return err
		}
		if got {
			return nil
		}
		if try == 0 {
			waiting()
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(lockPoll):
		}
	}
}

// applyAlone runs a noTransaction migration's statements one by one, then records it.
func applyAlone(ctx context.Context, conn *pgx.Conn, m migration) error {
	for _, stmt := range m.alone {
		if idx := repeatable.FindStringSubmatch(stmt)[builtIndex]; idx != "" {
			// Left INVALID by an interrupted build (still updated by every write, never read): built anew.
			var invalid bool
			err := conn.QueryRow(ctx, `SELECT NOT indisvalid FROM pg_index WHERE indexrelid = to_regclass($1)`, idx).Scan(&invalid)
			if err != nil && !errors.Is(err, pgx.ErrNoRows) {
				return err
			}
			if invalid {
				if _, err := conn.Exec(ctx, `DROP INDEX CONCURRENTLY IF EXISTS `+idx); err != nil {
					return fmt.Errorf("drop the invalid index %s: %w", idx, err)
				}
			}
		}
		if _, err := conn.Exec(ctx, stmt); err != nil {
			return err
		}
	}
	_, err := conn.Exec(ctx, `INSERT INTO directaid_schema_migrations (version, name) VALUES ($1, $2)`, m.version, m.name)
	return err
}

// statementsAlone splits a noTransaction migration into its statements, without their comments, and checks
// that each is repeatable. It knows quoted strings and names, not dollar quoting (no function bodies).
func statementsAlone(sql string) ([]string, error) {
	var out []string
	var cur strings.Builder
	for i := 0; i < len(sql); i++ {
		switch c := sql[i]; {
		case c == '-' && strings.HasPrefix(sql[i:], "--"):
			end := strings.IndexByte(sql[i:], '\n')
			if end < 0 {
				end = len(sql) - i
			}
			i += end - 1
			cur.WriteByte(' ')
		case c == '\'' || c == '"':
			end := strings.IndexByte(sql[i+1:], c)
			if end < 0 {
				return nil, fmt.Errorf("unterminated %c", c)
			}
			cur.WriteString(sql[i : i+end+2])
			i += end + 1
		case c == '$' || c == '/' && strings.HasPrefix(sql[i:], "/*"):
			return nil, errors.New("no dollar quoting or /* comments in a migration run statement by statement")
		case c == ';':
			out = append(out, strings.TrimSpace(cur.String()))
			cur.Reset()
		default:
			cur.WriteByte(c)
		}
	}
	if rest := strings.TrimSpace(cur.String()); rest != "" {
		out = append(out, rest)
	}
	out = slices.DeleteFunc(out, func(s string) bool { return s == "" })
	for _, stmt := range out {
		if !repeatable.MatchString(stmt) {
			return nil, fmt.Errorf("%q cannot be run again after an interruption (allowed: CREATE INDEX CONCURRENTLY IF NOT EXISTS, DROP INDEX CONCURRENTLY IF EXISTS, CREATE EXTENSION IF NOT EXISTS)", stmt)
		}
	}
	if len(out) == 0 {
		return nil, errors.New("no statements")
	}
	return out, nil
}
