package caddymodule

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/caddyserver/caddy/v2"
	caddycmd "github.com/caddyserver/caddy/v2/cmd"
	"github.com/jackc/pgx/v5"
	"github.com/spf13/cobra"

	"github.com/directaid/directaid/backend/badgerstore"
	"github.com/directaid/directaid/backend/pgstore"
	"github.com/directaid/directaid/backend/store"
)

func init() {
	caddycmd.RegisterCommand(caddycmd.Command{
		Name:  "migrate",
		Usage: "--from badger <dir> --to postgres [<dsn>] [--merge]",
		Short: "Copies every record of a Badger database into PostgreSQL",
		Long: `Copies every record of the Badger database in <dir> into the PostgreSQL database <dsn> (default:
$DIRECTAID_DATABASE_URL, which keeps a password off the command line), each with its id, createdAt and
all its fields, so that links to records keep working. The schema is created if needed.

It can be run again, after an interruption or to copy what was published since: a record already in
PostgreSQL, identical, is counted and left alone; one whose id or (source, externalId) is there with
other content is a conflict, left alone and reported (the exit status is then non-zero).

A target that holds records the source does not have is refused (it looks like another installation's
database) unless --merge is given.

The Badger directory must not be in use: stop the server first, or restore a backup into another
directory ('directaid restore') and migrate from that while the old server still serves, then stop it
and run migrate again to copy the rest.`,
		CobraFunc: func(cmd *cobra.Command) {
			cmd.Flags().String("from", "", "The source store: badger (then its directory)")
			cmd.Flags().String("to", "", "The target store: postgres (then its DSN, or none to read $DIRECTAID_DATABASE_URL)")
			cmd.Flags().Bool("merge", false, "Copy into a PostgreSQL database that already holds other records")
			cmd.Flags().Int("batch", 500, "Records per transaction")
			cmd.RunE = caddycmd.WrapCommandFuncForCobra(migrateCmd)
		},
	})
}

const migrateUsage = "usage: directaid migrate --from badger <dir> --to postgres [<dsn>] [--merge]"

func migrateCmd(fl caddycmd.Flags) (int, error) {
	args := fl.Args()
	if fl.String("from") != "badger" || fl.String("to") != "postgres" || len(args) < 1 || len(args) > 2 || fl.Int("batch") < 1 {
		return caddy.ExitCodeFailedStartup, errors.New(migrateUsage)
	}
	dsn := "{env.DIRECTAID_DATABASE_URL}"
	if len(args) == 2 {
		dsn = args[1]
	}
	dsn, err := expandDSN(dsn)
	if err != nil {
		return caddy.ExitCodeFailedStartup, fmt.Errorf("%w (give the DSN after --to postgres, or set DIRECTAID_DATABASE_URL)", err)
	}
	m := migration{dir: args[0], dsn: dsn, merge: fl.Bool("merge"), batch: fl.Int("batch"), out: os.Stdout, progressEvery: 2 * time.Second}
	if err := m.run(context.Background()); err != nil {
		return caddy.ExitCodeFailedStartup, err
	}
	return caddy.ExitCodeSuccess, nil
}

// migration copies a Badger database into PostgreSQL (see the command's help).
type migration struct {
	dir, dsn      string
	merge         bool
	batch         int
	out           io.Writer
	progressEvery time.Duration

	read, created, present int
	conflicts              []string
	bySlug, byStatus       map[string]int
}

func (m *migration) run(ctx context.Context) error {
	if _, err := os.Stat(filepath.Join(m.dir, "MANIFEST")); err != nil {
		return fmt.Errorf("no Badger database in %s: %w", m.dir, err)
	}
	cfg, err := pgx.ParseConfig(m.dsn)
	if err != nil {
		return fmt.Errorf("postgres: %w", err)
	}
	target := fmt.Sprintf("postgres %s:%d/%s", cfg.Host, cfg.Port, cfg.Database) // never the password
	db, err := pgstore.Open(m.dsn)
	if err != nil {
		return err
	}
	defer db.Close()
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	err = db.Ready(rctx) // connects and brings the schema up to date
	cancel()
	if err != nil {
		return fmt.Errorf("%s: %w", target, err)
	}
	dst := pgstore.NewStore(db)
	src, err := badgerstore.Open(badgerstore.Options{Dir: m.dir, MinFreeBytes: -1})
	if err != nil {
		return fmt.Errorf("open badger %s (is a server running on it? stop it, or migrate from a restored backup): %w", m.dir, err)
	}
	defer src.Close()
	fmt.Fprintf(m.out, "migrate: badger %s → %s\n", m.dir, target)

	if err := m.checkTarget(ctx, src, dst); err != nil {
		return err
	}
	m.bySlug, m.byStatus = map[string]int{}, map[string]int{}
	began, last := time.Now(), time.Now()
	var pending []*store.Record
	flush := func() error {
		res, err := dst.Import(ctx, pending)
		if err != nil {
			return fmt.Errorf("after %d records: %w", m.read-len(pending), err)
		}
		m.created += res.Created
		m.present += res.Present
		m.conflicts = append(m.conflicts, res.Conflicts...)
		pending = pending[:0]
		if time.Since(last) >= m.progressEvery {
			last = time.Now()
			fmt.Fprintf(m.out, "… %d records read: %d created, %d already there (%.0f records/s)\n",
				m.read, m.created, m.present, float64(m.read)/time.Since(began).Seconds())
		}
		return nil
	}
	err = src.Scan(ctx, func(rec *store.Record) error {
		m.read++
		m.bySlug[rec.EmergencySlug]++
		m.byStatus[rec.Status]++
		pending = append(pending, rec)
		if len(pending) == m.batch {
			return flush()
		}
		return nil
	})
	if err == nil && len(pending) > 0 {
		err = flush()
	}
	if err != nil {
		return err
	}
	total, err := dst.Count(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(m.out, "read %d records from badger in %s: %d created, %d already there, %d conflicts\n",
		m.read, time.Since(began).Round(time.Millisecond), m.created, m.present, len(m.conflicts))
	for _, slug := range slices.Sorted(maps.Keys(m.bySlug)) {
		fmt.Fprintf(m.out, "  emergency %s: %d records\n", slug, m.bySlug[slug])
	}
	for _, status := range slices.Sorted(maps.Keys(m.byStatus)) {
		fmt.Fprintf(m.out, "  status %s: %d records\n", status, m.byStatus[status])
	}
	fmt.Fprintf(m.out, "PostgreSQL now holds %d records\n", total)
	// Community reports, the audit trail and the server secrets are not copied yet: say so when there are any.
	if reported, err := src.Reported(ctx); err == nil && len(reported) > 0 {
		fmt.Fprintf(m.out, "NOT COPIED: the unreviewed community reports of %d records (reports are not migrated yet)\n", len(reported))
	}
	if trail, err := src.Audit(ctx, 0, 1); err == nil && len(trail) > 0 {
		fmt.Fprintln(m.out, "NOT COPIED: the moderation audit trail (it stays in the Badger directory: keep it)")
	}
	if len(m.conflicts) > 0 {
		show := m.conflicts[:min(len(m.conflicts), 10)]
		return fmt.Errorf("%d records were not copied: PostgreSQL holds their id or (source, externalId) with other content (%s); they were left as they are there",
			len(m.conflicts), strings.Join(show, ", "))
	}
	return nil
}

// checkTarget refuses a target that holds records the source has not (unless merge): copying one
// installation into another's database by mistake would mix two networks.
func (m *migration) checkTarget(ctx context.Context, src *badgerstore.Store, dst *pgstore.Store) error {
	n, err := dst.Count(ctx)
	if err != nil || n == 0 {
		return err
	}
	foreign, first := 0, ""
	err = dst.Scan(ctx, func(rec *store.Record) error {
		_, err := src.Get(ctx, rec.ID)
		if errors.Is(err, store.ErrNotFound) {
			if foreign == 0 {
				first = rec.ID
			}
			foreign++
			return nil
		}
		return err
	})
	if err != nil {
		return err
	}
	switch {
	case foreign == 0:
		fmt.Fprintf(m.out, "PostgreSQL already holds %d records, all of them from this source (an earlier run): copying the rest\n", n)
	case m.merge:
		fmt.Fprintf(m.out, "PostgreSQL already holds %d records, %d of them not from this source: merging (--merge)\n", n, foreign)
	default:
		return fmt.Errorf("PostgreSQL already holds %d records, %d of them not in %s (the first: %s): it looks like another installation's database; pass --merge to copy into it anyway",
			n, foreign, m.dir, first)
	}
	return nil
}
