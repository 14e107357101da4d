package pgstore_test

import (
	"path/filepath"
	"testing"

	"github.com/directaid/directaid/backend/badgerstore"
	"github.com/directaid/directaid/backend/pgstore"
	"github.com/directaid/directaid/backend/store"
	"github.com/directaid/directaid/backend/store/storetest"
	"github.com/directaid/directaid/internal/pgtest"
)

// TestDriver: the "postgres" registration: open over the shared pool, open again for a command.
func TestDriver(t *testing.T) {
	storetest.RunDriver(t, "postgres", func(t *testing.T) string { return pgtest.Shared(t).NewDatabase(t) })
}

func openPG(t *testing.T, ids store.IDSource) store.Store {
	db, err := pgstore.Open(pgtest.Shared(t).NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	s := pgstore.NewStore(db)
	s.IDs = ids
	return s
}

func openBadger(t *testing.T, ids store.IDSource) store.Store {
	s, err := badgerstore.Open(badgerstore.Options{Dir: filepath.Join(t.TempDir(), "db"), IDs: ids})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestCopyBetweenKinds: store.Copy from Badger into PostgreSQL and back carries everything, responses
// included (what `directaid migrate` does).
func TestCopyBetweenKinds(t *testing.T) {
	t.Run("BadgerToPostgres", func(t *testing.T) { storetest.CopyBetween(t, openBadger, openPG) })
	t.Run("PostgresToBadger", func(t *testing.T) { storetest.CopyBetween(t, openPG, openBadger) })
}
