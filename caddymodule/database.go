package caddymodule

import (
	"io"

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
		// The erasure rewrite, on Badger's period (every node runs it; one rewrite serves all).
		log := a.logger.Named("store")
		st.MaintainEvery(badgerstore.DefaultMaintenanceInterval, func(err error) {
			log.Error("maintenance cycle failed (retried next cycle)", zap.Error(err))
		})
		return &pgStore{Store: st, dsn: a.dsn}, nil
	}
	log := a.logger.Named("store")
	return badgerstore.Open(badgerstore.Options{Dir: a.dir, Logger: badgerLogger{a.logger.Named("badger").Sugar()},
		MinFreeBytes: a.Database.MinFreeSpace, Observer: metrics,
		// One line when publishing stops for want of disk, one when it resumes: not one per request.
		WriteState: func(refusing error) {
			if refusing != nil {
				log.Error("publications refused until disk space returns (reads go on; answers 503 with Retry-After)", zap.Error(refusing))
			} else {
				log.Info("disk space is back: publications accepted again")
			}
		}})
}

// restoreDatabase loads a backup taken from GET /directaid/backup into the empty database directory dir.
func restoreDatabase(dir string, backup io.Reader) error { return badgerstore.Restore(dir, backup) }

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
