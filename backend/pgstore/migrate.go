package pgstore

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// The schema is a numbered list of SQL files applied in order, each once, each in its own transaction,
// recorded in directaid_schema_migrations. (pressly/goose v3.29.0 would do the same, but adding it raises
// some twenty modules of the binary, x/net and grpc among them, for two small files.)
//
//go:embed migrations/*.sql
var migrationFiles embed.FS

// migrationLock is the key of the session advisory lock that serialises migrations across nodes.
const migrationLock int64 = 0x64697265637461 // "directa"

// afterMigration are steps in Go that complete a migration in its transaction (what SQL cannot do alike).
var afterMigration = map[int]func(context.Context, pgx.Tx) error{
	7:  backfillWords, // the tokens are cut as q cuts them, in Go
	10: movePersonal,  // the docs are the store's JSON
}

type migration struct {
	version int
	name    string
	sql     string
}

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
		out = append(out, migration{version: v, name: e.Name(), sql: string(b)})
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
	all, err := migrations()
	if err != nil {
		return nil, err
	}
	conn, err := pgx.ConnectConfig(ctx, pool.Config().ConnConfig.Copy())
	if err != nil {
		return nil, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1)`, migrationLock); err != nil {
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
		err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
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
