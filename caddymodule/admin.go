package caddymodule

import (
	"errors"
	"fmt"
	"net/http"
	"os"

	"github.com/caddyserver/caddy/v2"
	caddycmd "github.com/caddyserver/caddy/v2/cmd"
	"github.com/spf13/cobra"
)

func init() {
	caddy.RegisterModule(adminAPI{})
	caddycmd.RegisterCommand(caddycmd.Command{
		Name:  "restore",
		Usage: "--database <dir> --input <backup file> | --verify <backup file>",
		Short: "Restores a directaid backup into an empty database directory, or proves that it restores",
		Long: `Loads a backup taken with 'directaid backup' (or 'curl --unix-socket /run/directaid/admin.sock
http://localhost/directaid/backup > directaid.bak') into
--database, which must be empty (or absent) and not in use. Then point the Caddyfile's
'database badger' at it and start the server.

A backup carries checksums of its content: restoring checks them, and a changed byte, a cut or an
addition fails with where it is (frame, bytes, keys), leaving --database as it was. A backup written
before backups had checksums (Badger's own format) still restores; it says that it has none.

With --verify (and no --database) it restores into a temporary directory, opens it, counts the
records by status and checks every index entry and aggregate against the records, prints a summary,
deletes the directory, and exits non-zero on any mismatch. With --verify and --database it does the
same checks on the restored directory and keeps it.`,
		CobraFunc: func(cmd *cobra.Command) {
			cmd.Flags().String("database", "", "Empty directory to restore into")
			cmd.Flags().String("input", "", "Backup file (or the first argument)")
			cmd.Flags().Bool("verify", false, "Check that the backup restores to a consistent database")
			cmd.RunE = caddycmd.WrapCommandFuncForCobra(restoreCmd)
		},
	})
}

// adminAPI adds the operator's routes to Caddy's admin endpoint (the shipped Caddyfiles put it on a unix
// socket only the service's user and root can open; DefaultAdminSocket):
// GET /directaid/backup streams a full, consistent backup of the database (one snapshot, checksummed)
// while it serves.
// GET /directaid/status is a read-only HTML page of the key figures (status.go).
// GET /directaid/webhooks is the webhooks' delivery log (webhooks.go).
type adminAPI struct{}

func (adminAPI) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{ID: "admin.api.directaid", New: func() caddy.Module { return new(adminAPI) }}
}

func (adminAPI) Routes() []caddy.AdminRoute {
	return []caddy.AdminRoute{
		{Pattern: "/directaid/backup", Handler: caddy.AdminHandlerFunc(backupHandler)},
		{Pattern: "/directaid/status", Handler: caddy.AdminHandlerFunc(statusHandler)},
		{Pattern: moderationPrefix, Handler: caddy.AdminHandlerFunc(moderationHandler)},    // moderation.go
		{Pattern: "/directaid/webhooks", Handler: caddy.AdminHandlerFunc(webhooksHandler)}, // webhooks.go
	}
}

// errLoading is currentApp's answer while the server loads its first configuration: the admin socket
// answers before there is a config, and Caddy's empty context has no app to give (its App would panic).
var errLoading = errors.New("the server is still loading its configuration")

// currentApp is the running configuration's directaid app, with its store open.
func currentApp() (*App, error) { return appOf(caddy.ActiveContext()) }

// appOf is the directaid app of the configuration ctx runs.
func appOf(ctx caddy.Context) (*App, error) {
	if ctx.Context == nil {
		return nil, errLoading
	}
	a, err := ctx.AppIfConfigured("directaid")
	if err != nil {
		// The app is also instantiated implicitly by the handler when there is no global block.
		a, err = ctx.App("directaid")
	}
	if err != nil {
		return nil, err
	}
	app := a.(*App)
	if err := app.open(); err != nil {
		return nil, err
	}
	return app, nil
}

func backupHandler(w http.ResponseWriter, r *http.Request) error {
	if r.Method != http.MethodGet {
		return caddy.APIError{HTTPStatus: http.StatusMethodNotAllowed, Err: errors.New("use GET")}
	}
	app, err := currentApp()
	if err != nil {
		return caddy.APIError{HTTPStatus: http.StatusServiceUnavailable, Err: err}
	}
	if app.backup == nil {
		return caddy.APIError{HTTPStatus: http.StatusNotImplemented, Err: errors.New("this database has no backup here: use its own tools")}
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Disposition", `attachment; filename="directaid.bak"`)
	return app.backup.Backup(w)
}

func restoreCmd(fl caddycmd.Flags) (int, error) {
	dir, in, verify := fl.String("database"), fl.String("input"), fl.Bool("verify")
	if in == "" {
		in = fl.Arg(0)
	}
	if verify && dir == "" && in != "" {
		if err := verifyBackup(in, os.Stdout); err != nil {
			return caddy.ExitCodeFailedStartup, err
		}
		return caddy.ExitCodeSuccess, nil
	}
	if dir == "" || in == "" {
		return caddy.ExitCodeFailedStartup, errors.New("usage: directaid restore --database <dir> --input <backup file>, or directaid restore --verify <backup file>")
	}
	f, err := os.Open(in)
	if err != nil {
		return caddy.ExitCodeFailedStartup, err
	}
	defer f.Close()
	checked, err := restoreDatabase(dir, f)
	if err != nil {
		return caddy.ExitCodeFailedStartup, fmt.Errorf("restore %s: %w", in, err)
	}
	fmt.Printf("restored %s into %s\n%s: %s\n", in, dir, in, checked)
	// A restore brings back what was erased after the backup: say so, with when the backup is from.
	when := "an unknown time"
	if st, err := f.Stat(); err == nil {
		when = st.ModTime().UTC().Format("2006-01-02 15:04 UTC")
	}
	fmt.Fprintf(os.Stderr, "note: the restored database holds what the backup held (the file was written %s). Publications withdrawn and personal data erased after that are back in it: do those withdrawals and erasures again (the audit trail of the database this one replaces lists them: directaid moderate audit).\n", when)
	if verify {
		if err := printVerification(os.Stdout, dir, dir); err != nil {
			return caddy.ExitCodeFailedStartup, err
		}
	}
	return caddy.ExitCodeSuccess, nil
}
