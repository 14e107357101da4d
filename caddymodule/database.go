package caddymodule

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"

	"github.com/caddyserver/caddy/v2"
	"go.uber.org/zap"

	"github.com/directaid/directaid/backend/store"
)

// The stores are found by name in store's registry (store.Driver): this package imports none of them.
// The binary holds those its main package imports (directaid.go).

// driver is the store that a.Database selects: postgres when a DSN is given, else the embedded one.
func (a *App) driver() (store.Driver, error) {
	if a.dsn != "" {
		return store.Lookup("postgres")
	}
	return store.Embedded()
}

// openDatabase opens the store that a.Database selects.
func (a *App) openDatabase() (store.Store, error) {
	d, err := a.driver()
	if err != nil {
		return nil, err
	}
	if p, ok := setGCPercent(d.GCPercent); ok && d.GCPercent != 0 {
		a.logger.Info("garbage collector target for a node over "+d.Title+" (GOGC unset)", zap.Int("gogc", p))
	}
	if limit := theHeapGuard.use(d.HeapTarget); limit >= 0 && d.HeapTarget != 0 {
		a.logger.Info("soft memory limit for a node over "+d.Title+" (GOMEMLIMIT unset)", zap.Int64("target_bytes", d.HeapTarget), zap.Int64("limit_bytes", limit))
	}
	where := a.dir
	if a.dsn != "" {
		where = a.dsn
	}
	return d.Open(store.Config{Where: where, MinFreeBytes: a.Database.MinFreeSpace, Logger: a.logger, Observer: series})
}

// ExitNoSpace is the exit status of `directaid run` when the disk of its embedded database has too little
// free space to open it (store.ErrNoSpaceToOpen). The systemd unit names it in
// RestartPreventExitStatus: restarting every few seconds would only refuse again (before this check,
// each start died of SIGBUS in Badger's open: a crash loop). An operator frees space, then starts it.
const ExitNoSpace = 73 // EX_CANTCREAT of sysexits.h: the database's files cannot be created

// refuseStart ends the process with ExitNoSpace, after one log line with the reason, when err says that
// the database cannot open for want of disk space and this is the process's first config. A reload that
// cannot open a new database only fails: the running config serves on.
func (a *App) refuseStart(err error) {
	if !errors.Is(err, store.ErrNoSpaceToOpen) || caddy.ActiveContext().Context != nil {
		return
	}
	a.logger.Error("not starting: the database's disk is full", zap.Error(err), zap.Int("exit_status", ExitNoSpace))
	_ = a.logger.Sync()
	os.Exit(ExitNoSpace)
}

// setGCPercent sets the collector's target for the database in use (a reload may change it; 0: Go's
// default) and reports it, unless GOGC is set.
func setGCPercent(percent int) (int, bool) {
	if _, set := os.LookupEnv("GOGC"); set {
		return 0, false
	}
	p := 100
	if percent != 0 {
		p = percent
	}
	debug.SetGCPercent(p)
	return p, true
}

// restoreDatabase loads a backup taken from GET /directaid/backup into the empty database directory dir,
// checking what it carries, and returns the line that says what the check proved.
func restoreDatabase(dir string, backup io.Reader) (string, error) {
	d, err := store.Embedded()
	if err != nil {
		return "", err
	}
	if d.Restore == nil {
		return "", errors.New(d.Title + " is restored with its own tools")
	}
	return d.Restore(dir, backup)
}

// expandDSN resolves placeholders such as {env.DIRECTAID_DATABASE_URL}.
func expandDSN(dsn string) (string, error) {
	out := caddy.NewReplacer().ReplaceKnown(dsn, "")
	if out == "" {
		return "", fmt.Errorf("directaid: the PostgreSQL DSN %q is empty once its placeholders are replaced", dsn)
	}
	return out, nil
}
