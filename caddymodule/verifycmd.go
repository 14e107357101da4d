package caddymodule

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"

	"github.com/caddyserver/caddy/v2"
	caddycmd "github.com/caddyserver/caddy/v2/cmd"
	"github.com/spf13/cobra"

	"github.com/directaid/directaid/backend/store"
)

func init() {
	caddy.RegisterModule(verifyAPI{})
	caddycmd.RegisterCommand(caddycmd.Command{
		Name:  "verify",
		Usage: "[--admin <address> | --config <Caddyfile>] | --database <dir> [--repair]",
		Short: "Checks a database: its records against their index entries and counters, and that no two share an id",
		Long: `Without --database, asks the running server (its admin endpoint, GET /directaid/verify) to check its
database in one read snapshot while it serves. With --database, checks a Badger database directory that
nothing has open (stop the server first). Either names what is inconsistent — index entries without
their record, counters that differ from the records, ids that two publications shared — and exits
non-zero when anything is.

--repair (with --database, the server stopped) mends it: a publication that shared an id with another
gets an id of its own with its own content where the database still keeps that version (otherwise its
pair is freed, so that its publisher's retry publishes it again); then every index entry and counter is
rebuilt from the records, and the database is checked again.`,
		CobraFunc: func(cmd *cobra.Command) {
			cmd.Flags().String("database", "", "Badger database directory that nothing has open")
			cmd.Flags().Bool("repair", false, "Mend what is inconsistent (with --database)")
			addAdminFlags(cmd)
			cmd.RunE = caddycmd.WrapCommandFuncForCobra(verifyCmd)
		},
	})
}

func verifyCmd(fl caddycmd.Flags) (int, error) {
	dir, repair := fl.String("database"), fl.Bool("repair")
	if repair && dir == "" {
		return caddy.ExitCodeFailedStartup, errors.New("--repair needs --database <dir>, with the server stopped")
	}
	var err error
	switch {
	case repair:
		if err = repairDatabase(dir, os.Stdout); err == nil {
			err = printVerification(os.Stdout, dir, dir)
		}
	case dir != "":
		err = printVerification(os.Stdout, dir, dir)
	default:
		var admin string
		if admin, err = adminAddress(fl); err == nil {
			err = verifyLive(admin, os.Stdout)
		}
	}
	if err != nil {
		return caddy.ExitCodeFailedStartup, err
	}
	return caddy.ExitCodeSuccess, nil
}

// repairDatabase mends a directory of the embedded store that nothing has open (store.Driver.Repair).
func repairDatabase(dir string, report io.Writer) error {
	d, err := store.Embedded()
	if err != nil {
		return err
	}
	if d.Repair == nil {
		return errors.New(d.Title + " keeps itself consistent: there is nothing to repair")
	}
	return d.Repair(dir, report)
}

// verifyLive asks the running server at admin to verify its database and prints what it found.
func verifyLive(admin string, report io.Writer) error {
	resp, err := caddycmd.AdminAPIRequest(admin, http.MethodGet, "/directaid/verify", nil, nil)
	if err != nil {
		return fmt.Errorf("verify through %s: %w", admin, err)
	}
	defer resp.Body.Close()
	var v store.Verification
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
		return fmt.Errorf("verify through %s: %w", admin, err)
	}
	return printFound(report, "the running database", &v)
}

// verifyAPI adds GET /directaid/verify to the admin endpoint: the store's verification (store.Verifier)
// of its database, in one read snapshot, as JSON.
type verifyAPI struct{}

func (verifyAPI) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{ID: "admin.api.directaid_verify", New: func() caddy.Module { return new(verifyAPI) }}
}

func (verifyAPI) Routes() []caddy.AdminRoute {
	return []caddy.AdminRoute{{Pattern: "/directaid/verify", Handler: caddy.AdminHandlerFunc(verifyHandler)}}
}

func verifyHandler(w http.ResponseWriter, r *http.Request) error {
	if r.Method != http.MethodGet {
		return caddy.APIError{HTTPStatus: http.StatusMethodNotAllowed, Err: errors.New("use GET")}
	}
	app, err := currentApp()
	if err != nil {
		return caddy.APIError{HTTPStatus: http.StatusServiceUnavailable, Err: err}
	}
	// Optional: a database whose constraints keep it consistent has nothing to check (store.Verifier).
	vf, ok := app.store.(store.Verifier)
	if !ok {
		return caddy.APIError{HTTPStatus: http.StatusNotImplemented, Err: errors.New("this database checks itself with its own tools (PostgreSQL's constraints keep ids unique)")}
	}
	v, err := vf.Verify(r.Context())
	if err != nil {
		return caddy.APIError{HTTPStatus: http.StatusInternalServerError, Err: err}
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	return json.NewEncoder(w).Encode(v)
}
