package caddymodule

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/caddyserver/caddy/v2"
	caddycmd "github.com/caddyserver/caddy/v2/cmd"
	"github.com/spf13/cobra"

	"github.com/directaid/directaid/backend/store"
)

func init() {
	caddycmd.RegisterCommand(caddycmd.Command{
		Name:  "migrate",
		Usage: "--from badger <dir> --to postgres [<dsn>] [--merge] [--keep-target-secrets] [--batch n]",
		Short: "Copies one database into another (Badger into PostgreSQL): records, server secrets, reports, responses, audit trail",
		Long: `Copies the Badger database in <dir> into the PostgreSQL database <dsn> (default:
$DIRECTAID_DATABASE_URL, which keeps a password off the command line): every record with its id,
createdAt, status and all its fields, so that links to records keep working; the server secrets, so that
the publishers' manage links keep working and a reporter is still told apart from others (and counted
once); every community report (reviewed or not: what hid a record stays hidden, what counts towards
hiding it still counts); every response ("yo puedo ayudar"), whatever its status; and the audit trail,
in order. The schema is created if needed. Any other pair of stores works the same way
(--from postgres <dsn> --to badger <dir> copies back); the target named by a directory may be new.

A target that already holds records and other secrets is refused: either secret breaks someone's
manage links. --keep-target-secrets keeps PostgreSQL's (the links the Badger server gave out then get
403). A target without records takes the source's secrets.

It can be run again, after an interruption or to copy what was published and changed since: a record
already in PostgreSQL, identical, is counted and left alone; one the source changed since (the same id,
pair and creation, a later updatedAt: resolved, withdrawn, hidden or erased meanwhile) is brought up to
date, with the responses an erasure deleted; so is a response with a later updatedAt, and a report an
operator reviewed — unless the target changed it since the earlier run (each run leaves the time it
copied up to, the secret copy-watermark), or erased its personal data. Anything else there with other
content is a conflict, left alone and reported (the exit status is then non-zero). Audit entries already there are not added again; missing ones are
appended after the trail's last.

A target that holds records the source does not have is refused (it looks like another installation's
database) unless --merge is given.

The Badger directory must not be in use: stop the server first, or restore a backup into another
directory ('directaid restore') and migrate from that while the old server still serves, then stop it
and run migrate again to copy the rest and what changed.`,
		CobraFunc: func(cmd *cobra.Command) {
			cmd.Flags().String("from", "", "The source store: badger (then its directory) or postgres (then its DSN)")
			cmd.Flags().String("to", "", "The target store: postgres (then its DSN, or none to read $DIRECTAID_DATABASE_URL) or badger (then its directory)")
			cmd.Flags().Bool("merge", false, "Copy into a database that already holds other records")
			cmd.Flags().Bool("keep-target-secrets", false, "Keep the target's server secrets when they differ from the source's (manage links given out by the source's server stop working)")
			cmd.Flags().Int("batch", 500, "Records per transaction")
			cmd.RunE = caddycmd.WrapCommandFuncForCobra(migrateCmd)
		},
	})
}

const migrateUsage = "usage: directaid migrate --from badger <dir> --to postgres [<dsn>] (or --from postgres <dsn> --to badger <dir>) [--merge] [--keep-target-secrets] [--batch n]"

func migrateCmd(fl caddycmd.Flags) (int, error) {
	m, err := parseMigration(fl.String("from"), fl.String("to"), fl.Args(), fl.Int("batch"))
	if err != nil {
		return caddy.ExitCodeFailedStartup, err
	}
	m.opts.Merge, m.opts.KeepTargetSecrets = fl.Bool("merge"), fl.Bool("keep-target-secrets")
	m.opts.Out, m.opts.ProgressEvery = os.Stdout, 2*time.Second
	if err := m.run(context.Background()); err != nil {
		return caddy.ExitCodeFailedStartup, err
	}
	return caddy.ExitCodeSuccess, nil
}

// migration is one `directaid migrate`: the two stores, where they are, and how to copy (store.Copy).
type migration struct {
	from, to         store.Driver
	fromWhere, where string
	opts             store.CopyOptions
}

// parseMigration reads --from, --to and the locations: the source's first, then the target's, which may
// be left out when the target's driver has a default (DIRECTAID_DATABASE_URL for postgres).
func parseMigration(from, to string, args []string, batch int) (*migration, error) {
	if from == "" || to == "" || len(args) < 1 || len(args) > 2 || batch < 1 {
		return nil, errors.New(migrateUsage)
	}
	src, err := store.Lookup(from)
	if err != nil {
		return nil, fmt.Errorf("--from: %w", err)
	}
	dst, err := store.Lookup(to)
	if err != nil {
		return nil, fmt.Errorf("--to: %w", err)
	}
	m := &migration{from: src, to: dst, opts: store.CopyOptions{Batch: batch}}
	m.fromWhere, m.where = args[0], dst.DefaultWhere
	if len(args) == 2 {
		m.where = args[1]
	}
	if m.where == "" {
		return nil, fmt.Errorf("%s (--to %s needs where its database is)", migrateUsage, to)
	}
	if m.fromWhere, err = expandWhere(m.fromWhere, "--from "+from); err != nil {
		return nil, err
	}
	if m.where, err = expandWhere(m.where, "--to "+to); err != nil {
		return nil, err
	}
	return m, nil
}

// expandWhere resolves placeholders such as {env.DIRECTAID_DATABASE_URL} in the location given after flag.
func expandWhere(where, flag string) (string, error) {
	out := caddy.NewReplacer().ReplaceKnown(where, "")
	if out == "" {
		return "", fmt.Errorf("directaid: the database %q is empty once its placeholders are replaced (give it after %s, or set the variable it names)", where, flag)
	}
	return out, nil
}

// run opens both stores and copies the source into the target (store.Copy).
func (m *migration) run(ctx context.Context) error {
	say := func(line string) { fmt.Fprintln(m.opts.Out, line) }
	srcName, err := m.from.Describe(m.fromWhere)
	if err != nil {
		return err
	}
	dstName, err := m.to.Describe(m.where)
	if err != nil {
		return err
	}
	src, err := m.from.OpenTool(ctx, m.fromWhere, false, say)
	if err != nil {
		return err
	}
	defer src.Close()
	say(fmt.Sprintf("migrate: %s %s → %s %s", m.from.Name, srcName, m.to.Name, dstName))
	dst, err := m.to.OpenTool(ctx, m.where, true, say)
	if err != nil {
		return err
	}
	defer dst.Close()
	m.opts.From = store.Named{Name: m.from.Name, Title: m.from.Title, Where: srcName}
	m.opts.To = store.Named{Name: m.to.Name, Title: m.to.Title, Where: dstName}
	return store.Copy(ctx, src, dst, m.opts)
}
