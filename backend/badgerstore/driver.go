package badgerstore

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"go.uber.org/zap"

	"github.com/directaid/directaid/backend/store"
)

// The embedded store, registered as "badger": `database badger <dir>`, the default database.
func init() {
	store.Register(store.Driver{
		Name:       "badger",
		Title:      "Badger",
		Embedded:   true,
		HeapTarget: HeapTarget,
		Open:       openConfig,
		OpenTool:   openTool,
		Describe:   func(dir string) (string, error) { return dir, nil },
		Verify:     Verify,
		Repair:     func(dir string, report io.Writer) error { return Repair(dir, nil, report) },
		Restore: func(dir string, backup io.Reader) (string, error) {
			info, err := Restore(dir, backup)
			return info.Summary(), err
		},
	})
}

// HeapTarget is the heap a server over Badger is kept near (store.Driver.HeapTarget). Under publishing,
// half or more of its live heap is the table builders of running compactions, and at GOGC 100 the
// collector lets the heap reach twice its live size: a peak of 483–500 MB of anonymous memory while 1M
// records are published at full speed, against 268 MB with this target, for a few percent of the
// publishing rate at most (docs/performance.md).
const HeapTarget = 270 << 20

// openConfig opens the store a server runs on.
func openConfig(cfg store.Config) (store.Store, error) {
	log := cfg.Logger
	if log == nil {
		log = zap.NewNop()
	}
	storeLog := log.Named("store")
	return Open(Options{Dir: cfg.Where, Logger: zapLogger{log.Named("badger").Sugar()}, MinFreeBytes: cfg.MinFreeBytes,
		Observer: cfg.Observer,
		// One line when publishing stops for want of disk, one when it resumes: not one per request.
		WriteState: func(refusing error) {
			if refusing != nil {
				storeLog.Error("publications refused until disk space returns (reads go on; answers 503 with Retry-After)", zap.Error(refusing))
			} else {
				storeLog.Info("disk space is back: publications accepted again")
			}
		}})
}

// openTool opens dir for a command with no server on it; without create, dir must hold a database.
func openTool(_ context.Context, dir string, create bool, _ func(string)) (store.Store, error) {
	if !create {
		if _, err := os.Stat(filepath.Join(dir, "MANIFEST")); err != nil {
			return nil, fmt.Errorf("no Badger database in %s: %w", dir, err)
		}
	}
	s, err := Open(Options{Dir: dir, MinFreeBytes: -1})
	if err != nil {
		return nil, fmt.Errorf("open badger %s (is a server running on it? stop it, or migrate from a restored backup): %w", dir, err)
	}
	return s, nil
}

// zapLogger sends Badger's messages to a zap log. Badger never logs record contents.
type zapLogger struct{ s *zap.SugaredLogger }

func (l zapLogger) Errorf(f string, v ...any)   { l.s.Errorf(f, v...) }
func (l zapLogger) Warningf(f string, v ...any) { l.s.Warnf(f, v...) }
func (l zapLogger) Infof(f string, v ...any)    { l.s.Debugf(f, v...) }
func (l zapLogger) Debugf(f string, v ...any)   { l.s.Debugf(f, v...) }
