package caddymodule

import (
	"bytes"
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
		Usage: "--from badger <dir> --to postgres [<dsn>] [--merge] [--keep-target-secrets] [--batch n]",
		Short: "Copies a Badger database into PostgreSQL: records, server secrets, reports, audit trail",
		Long: `Copies the Badger database in <dir> into the PostgreSQL database <dsn> (default:
$DIRECTAID_DATABASE_URL, which keeps a password off the command line): every record with its id,
createdAt, status and all its fields, so that links to records keep working; the server secrets, so that
the publishers' manage links keep working and a reporter is still told apart from others (and counted
once); every community report (reviewed or not: what hid a record stays hidden, what counts towards
hiding it still counts); and the audit trail, in order. The schema is created if needed.

A target that already holds records and other secrets is refused: either secret breaks someone's
manage links. --keep-target-secrets keeps PostgreSQL's (the links the Badger server gave out then get
403). A target without records takes the source's secrets.

It can be run again, after an interruption or to copy what was published since: a record already in
PostgreSQL, identical, is counted and left alone; one whose id or (source, externalId) is there with
other content is a conflict, left alone and reported (the exit status is then non-zero); so is a report
that differs from the one stored for its record and reporter. Audit entries already there are not added
again; missing ones are appended after the trail's last.

A target that holds records the source does not have is refused (it looks like another installation's
database) unless --merge is given.

The Badger directory must not be in use: stop the server first, or restore a backup into another
directory ('directaid restore') and migrate from that while the old server still serves, then stop it
and run migrate again to copy the rest.`,
		CobraFunc: func(cmd *cobra.Command) {
			cmd.Flags().String("from", "", "The source store: badger (then its directory)")
			cmd.Flags().String("to", "", "The target store: postgres (then its DSN, or none to read $DIRECTAID_DATABASE_URL)")
			cmd.Flags().Bool("merge", false, "Copy into a PostgreSQL database that already holds other records")
			cmd.Flags().Bool("keep-target-secrets", false, "Keep PostgreSQL's server secrets when they differ from the source's (manage links given out by the Badger server stop working)")
			cmd.Flags().Int("batch", 500, "Records per transaction")
			cmd.RunE = caddycmd.WrapCommandFuncForCobra(migrateCmd)
		},
	})
}

const migrateUsage = "usage: directaid migrate --from badger <dir> --to postgres [<dsn>] [--merge] [--keep-target-secrets] [--batch n]"

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
	m := migration{dir: args[0], dsn: dsn, merge: fl.Bool("merge"), keepSecrets: fl.Bool("keep-target-secrets"), batch: fl.Int("batch"), out: os.Stdout, progressEvery: 2 * time.Second}
	if err := m.run(context.Background()); err != nil {
		return caddy.ExitCodeFailedStartup, err
	}
	return caddy.ExitCodeSuccess, nil
}

// migration copies a Badger database into PostgreSQL (see the command's help).
type migration struct {
	dir, dsn      string
	merge         bool
	keepSecrets   bool
	batch         int
	out           io.Writer
	progressEvery time.Duration

	read, created, present int
	conflicts              []string
	reportConflicts        []string
	bySlug, byStatus       map[string]int
}

// connectWait bounds reaching PostgreSQL before migrating (a variable for the tests).
var connectWait = 30 * time.Second

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
	// Reaching PostgreSQL is bounded; the schema's migrations are not: an index built over millions of
	// records outlasts any fixed wait, and one cut short would be built again, and cut, on every run.
	pctx, cancel := context.WithTimeout(ctx, connectWait)
	err = db.Pool.Ping(pctx)
	cancel()
	if err != nil {
		return fmt.Errorf("%s: %w", target, err)
	}
	fmt.Fprintf(m.out, "migrate: badger %s → %s\n", m.dir, target)
	db.Progress = func(ev pgstore.MigrationEvent) {
		// The steps that may take long (a concurrent build, begun) or did; not every quick one of a fresh database.
		if ev.Kind == pgstore.MigrationApplying && ev.Concurrent || ev.Took >= time.Second ||
			ev.Kind == pgstore.MigrationWaiting || ev.Kind == pgstore.MigrationFailed {
			fmt.Fprintln(m.out, "schema: "+ev.String())
		}
	}
	if err := db.Ready(ctx); err != nil { // brings the schema up to date
		return fmt.Errorf("%s: %w", target, err)
	}
	dst := pgstore.NewStore(db)
	src, err := badgerstore.Open(badgerstore.Options{Dir: m.dir, MinFreeBytes: -1})
	if err != nil {
		return fmt.Errorf("open badger %s (is a server running on it? stop it, or migrate from a restored backup): %w", m.dir, err)
	}
	defer src.Close()

	if err := m.checkTarget(ctx, src, dst); err != nil {
		return err
	}
	// Secrets first: a node started on the target meanwhile must already use the source's.
	if err := m.copySecrets(ctx, src, dst); err != nil {
		return err
	}
	m.bySlug, m.byStatus = map[string]int{}, map[string]int{}
	began, last := time.Now(), time.Now()
	scan := func(yield func(*store.Record) error) error {
		return src.Scan(ctx, func(rec *store.Record) error {
			m.read++
			m.bySlug[rec.EmergencySlug]++
			m.byStatus[rec.Status]++
			return yield(rec)
		})
	}
	err = inBatches(m.batch, scan, func(batch []*store.Record) error {
		res, err := dst.Import(ctx, batch)
		if err != nil {
			return fmt.Errorf("after %d records: %w", m.read-len(batch), err)
		}
		m.created += res.Created
		m.present += res.Present
		m.conflicts = append(m.conflicts, res.Conflicts...)
		if time.Since(last) >= m.progressEvery {
			last = time.Now()
			fmt.Fprintf(m.out, "… %d records read: %d created, %d already there (%.0f records/s)\n",
				m.read, m.created, m.present, float64(m.read)/time.Since(began).Seconds())
		}
		return nil
	})
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
	if err := m.copyReports(ctx, src, dst); err != nil {
		return err
	}
	if err := m.copyAudit(ctx, src, dst); err != nil {
		return err
	}
	// Nodes started on the target plan with these statistics and read index-only at once, not after
	// autovacuum's analyze and vacuum.
	fmt.Fprintf(m.out, "VACUUM (ANALYZE): marking the copied pages all-visible for index-only scans and refreshing the planner's statistics (about a second per 100,000 records)…\n")
	t0 := time.Now()
	if err := dst.VacuumAnalyze(ctx); err != nil {
		return err
	}
	fmt.Fprintf(m.out, "tables vacuumed and planner statistics refreshed (VACUUM (ANALYZE)) in %s\n", time.Since(t0).Round(time.Millisecond))
	var errs []error
	if len(m.conflicts) > 0 {
		show := m.conflicts[:min(len(m.conflicts), 10)]
		errs = append(errs, fmt.Errorf("%d records were not copied: PostgreSQL holds their id or (source, externalId) with other content (%s); they were left as they are there",
			len(m.conflicts), strings.Join(show, ", ")))
	}
	if len(m.reportConflicts) > 0 {
		ids := slices.Compact(slices.Clone(m.reportConflicts))
		show := ids[:min(len(ids), 10)]
		errs = append(errs, fmt.Errorf("%d reports were not copied: PostgreSQL holds another report of the same reporter, or not their record (records %s); they were left as they are there",
			len(m.reportConflicts), strings.Join(show, ", ")))
	}
	return errors.Join(errs...)
}

// copySecrets gives the target the source's server secrets (see the command's help for when it refuses).
func (m *migration) copySecrets(ctx context.Context, src *badgerstore.Store, dst *pgstore.Store) error {
	have, err := src.Secrets(ctx)
	if err != nil {
		return err
	}
	there, err := dst.Secrets(ctx)
	if err != nil {
		return err
	}
	var differ []string
	for name, v := range have {
		if t, ok := there[name]; ok && !bytes.Equal(t, v) {
			differ = append(differ, name)
		}
	}
	slices.Sort(differ)
	replace := false
	if len(differ) > 0 {
		n, err := dst.Count(ctx)
		if err != nil {
			return err
		}
		switch {
		case n == 0:
			replace = true
			fmt.Fprintf(m.out, "PostgreSQL holds no records: its secrets %s are replaced by the source's\n", strings.Join(differ, ", "))
		case m.keepSecrets:
			fmt.Fprintf(m.out, "keeping PostgreSQL's secrets %s (--keep-target-secrets): the manage links the Badger server gave out will get 403, and reporters are counted apart from their earlier reports\n",
				strings.Join(differ, ", "))
		default:
			return fmt.Errorf("PostgreSQL already holds %d records and other server secrets (%s) than %s: the source's would break the manage links PostgreSQL's nodes gave out, and PostgreSQL's those of the Badger server; nothing was copied. Pass --keep-target-secrets to keep PostgreSQL's",
				n, strings.Join(differ, ", "), m.dir)
		}
	}
	copied, same := 0, 0
	for _, name := range slices.Sorted(maps.Keys(have)) {
		if bytes.Equal(there[name], have[name]) {
			same++
			continue
		}
		if slices.Contains(differ, name) && !replace {
			continue
		}
		got, err := dst.PutSecret(ctx, name, have[name], replace)
		if err != nil {
			return err
		}
		if !bytes.Equal(got, have[name]) {
			return fmt.Errorf("PostgreSQL's secret %s was made meanwhile by a running node: stop the nodes on it and run migrate again", name)
		}
		copied++
	}
	kept := len(differ)
	if replace {
		kept = 0
	}
	fmt.Fprintf(m.out, "server secrets: %d copied, %d already the same, %d kept as PostgreSQL has them\n", copied, same, kept)
	return nil
}

// copyReports copies every community report, reviewed or not, in batches.
func (m *migration) copyReports(ctx context.Context, src *badgerstore.Store, dst *pgstore.Store) error {
	var res store.ImportResult
	read := 0
	scan := func(yield func(store.Report) error) error {
		return src.ScanReports(ctx, func(r store.Report) error {
			read++
			return yield(r)
		})
	}
	err := inBatches(m.batch, scan, func(batch []store.Report) error {
		r, err := dst.ImportReports(ctx, batch)
		if err != nil {
			return fmt.Errorf("reports, after %d: %w", read-len(batch), err)
		}
		res.Created += r.Created
		res.Present += r.Present
		m.reportConflicts = append(m.reportConflicts, r.Conflicts...)
		return nil
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(m.out, "community reports: %d read, %d created, %d already there, %d conflicts\n", read, res.Created, res.Present, len(m.reportConflicts))
	return nil
}

// copyAudit appends the source's audit trail to the target's, leaving out what is there (one transaction:
// a trail holds one entry per moderation or publisher action, far fewer than records).
func (m *migration) copyAudit(ctx context.Context, src *badgerstore.Store, dst *pgstore.Store) error {
	var trail []store.AuditEntry
	for after := int64(0); ; {
		page, err := src.Audit(ctx, after, 1000)
		if err != nil {
			return err
		}
		if len(page) == 0 {
			break
		}
		trail = append(trail, page...)
		after = page[len(page)-1].Seq
	}
	added, err := dst.ImportAudit(ctx, trail)
	if err != nil {
		return fmt.Errorf("audit trail: %w", err)
	}
	fmt.Fprintf(m.out, "audit trail: %d entries read, %d appended, %d already there\n", len(trail), added, len(trail)-added)
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

// inBatches passes what scan yields to flush n at a time, then the remainder; the slice is reused between
// calls, so flush must not keep it.
func inBatches[T any](n int, scan func(yield func(T) error) error, flush func(batch []T) error) error {
	var pending []T
	err := scan(func(v T) error {
		if pending = append(pending, v); len(pending) < n {
			return nil
		}
		err := flush(pending)
		pending = pending[:0]
		return err
	})
	if err == nil && len(pending) > 0 {
		err = flush(pending)
	}
	return err
}
