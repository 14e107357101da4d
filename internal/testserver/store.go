package testserver

import (
	"testing"

	"github.com/directaid/directaid/backend/badgerstore"
)

// Badger is a Badger store in a temporary directory of t, closed when the test ends.
func Badger(t testing.TB) *badgerstore.Store {
	t.Helper()
	st, err := badgerstore.Open(badgerstore.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st
}
