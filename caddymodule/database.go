package caddymodule

import (
	"errors"
	"io"
	"os"
	"runtime/debug"

	"github.com/caddyserver/caddy/v2"
	"go.uber.org/zap"

	"github.com/directaid/directaid/backend/badgerstore"
	"github.com/directaid/directaid/backend/pgstore"
	"github.com/directaid/directaid/backend/store"
)

// The one place that knows which databases exist: everything else holds a store.Store.

// openDatabase opens the store that a.Database selects.
func (a *App) openDatabase() (store.Store, error) {
	if a.dsn != "" {
		h, err := loadPostgres(a.dsn)
		if err != nil {
			return nil, err
		}
		st := pgstore.NewStore(h.db)
		st.Observer = series
		if p, ok := setGCPercent(true); ok {
			a.logger.Info("garbage collector target for a node over PostgreSQL (GOGC unset)", zap.Int("gogc", p))
		}
		// The erasure rewrite, on Badger's period (every node runs it; one rewrite serves all).
		log := a.logger.Named("store")
		st.MaintainEvery(badgerstore.DefaultMaintenanceInterval, func(err error) {
			log.Error("maintenance cycle failed (retried next cycle)", zap.Error(err))
		})
		return &pgStore{Store: st, dsn: a.dsn}, nil
	}
	setGCPercent(false)
	log := a.logger.Named("store")
	return badgerstore.Open(badgerstore.Options{Dir: a.dir, Logger: badgerLogger{a.logger.Named("badger").Sugar()},
		MinFreeBytes: a.Database.MinFreeSpace, Observer: series,
		// One line when publishing stops for want of disk, one when it resumes: not one per request.
		WriteState: func(refusing error) {
			if refusing != nil {
				log.Error("publications refused until disk space returns (reads go on; answers 503 with Retry-After)", zap.Error(refusing))
			} else {
				log.Info("disk space is back: publications accepted again")
			}
		}})
}

// ExitNoSpace is the exit status of `directaid run` when the disk of its Badger database has too little
// free space to open it (badgerstore.ErrNoSpaceToOpen). The systemd unit names it in
// RestartPreventExitStatus: restarting every few seconds would only refuse again (before this check,
// each start died of SIGBUS in Badger's open: a crash loop). An operator frees space, then starts it.
const ExitNoSpace = 73 // EX_CANTCREAT of sysexits.h: the database's files cannot be created

// refuseStart ends the process with ExitNoSpace, after one log line with the reason, when err says that
// the database cannot open for want of disk space and this is the process's first config. A reload that
// cannot open a new database only fails: the running config serves on.
func (a *App) refuseStart(err error) {
	if !errors.Is(err, badgerstore.ErrNoSpaceToOpen) || caddy.ActiveContext().Context != nil {
		return
	}
	a.logger.Error("not starting: the database's disk is full", zap.Error(err), zap.Int("exit_status", ExitNoSpace))
	_ = a.logger.Sync()
	os.Exit(ExitNoSpace)
}

// postgresGCPercent is the garbage collector's target (GOGC) on a node over PostgreSQL, unless the
// environment sets GOGC. Such a node keeps no records: its live heap is ~10 MB, and at Go's default of
// 100 it collected 27 times a second serving 1,800 radius lists a second at 1M records, its collector
// taking cores PostgreSQL shares; at 200, 2,084-2,120 lists a second instead of 1,747-1,787 (README).
// The heap may then grow to three times the live one (the node's RSS in the 1M CSV export: 131 MB, 104
// at 100); a GOMEMLIMIT (Caddy sets one from a cgroup's limit) still bounds it. A node over Badger keeps Go's default: its caches are its heap.
const postgresGCPercent = 200

// setGCPercent sets the collector's target for the database in use (a reload may change it) and reports
// it, unless GOGC is set.
func setGCPercent(postgres bool) (int, bool) {
	if _, set := os.LookupEnv("GOGC"); set {
		return 0, false
	}
	p := 100
	if postgres {
		p = postgresGCPercent
	}
	debug.SetGCPercent(p)
	return p, true
}

// restoreDatabase loads a backup taken from GET /directaid/backup into the empty database directory dir,
// checking its checksums, and returns the line that says what they proved.
func restoreDatabase(dir string, backup io.Reader) (string, error) {
	info, err := badgerstore.Restore(dir, backup)
	return info.Summary(), err
}

// badgerLogger sends Badger's messages to Caddy's log. Badger never logs record contents.
type badgerLogger struct{ s *zap.SugaredLogger }

func (l badgerLogger) Errorf(f string, v ...any)   { l.s.Errorf(f, v...) }
func (l badgerLogger) Warningf(f string, v ...any) { l.s.Warnf(f, v...) }
func (l badgerLogger) Infof(f string, v ...any)    { l.s.Debugf(f, v...) }
func (l badgerLogger) Debugf(f string, v ...any)   { l.s.Debugf(f, v...) }

// pgStore releases the shared pool (pgDBs) when the store closes.
type pgStore struct {
	*pgstore.Store
	dsn string
}

func (s *pgStore) Close() error {
	if err := s.Store.Close(); err != nil {
		return err
	}
	_, err := pgDBs.Delete(s.dsn)
	return err
}
