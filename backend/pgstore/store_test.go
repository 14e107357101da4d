package pgstore_test

import (
	"testing"

	"github.com/directaid/directaid/backend/pgstore"
	"github.com/directaid/directaid/backend/store"
	"github.com/directaid/directaid/backend/store/storetest"
	"github.com/directaid/directaid/internal/pgtest"
)

// TestStore runs the behaviour table every store runs (the Badger store too), each behaviour on a fresh
// database of one shared cluster.
func TestStore(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		db, err := pgstore.Open(pgtest.Shared(t).NewDatabase(t))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(db.Close)
		return pgstore.NewStore(db)
	})
}
