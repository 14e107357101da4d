package pgstore_test

import (
	"strings"
	"testing"

	"github.com/directaid/directaid/backend/pgstore"
	"github.com/directaid/directaid/backend/store/storetest"
	"github.com/directaid/directaid/internal/pgtest"
)

// TestStore runs the behaviour table every store runs (the Badger store too), each behaviour on a fresh
// database of one shared cluster.
func TestStore(t *testing.T) {
	storetest.Run(t, openPG)
}

// TestJITOff: the pool's connections run without JIT (pool.go: a list page spent 80 ms compiling its
// plan over the personal table's 64 partitions for 3 ms of work), unless the dsn asks for it.
func TestJITOff(t *testing.T) {
	dsn := pgtest.Shared(t).NewDatabase(t)
	for _, c := range []struct{ dsn, want string }{{dsn, "off"}, {dsn + sep(dsn) + "jit=on", "on"}} {
		db, err := pgstore.Open(c.dsn)
		if err != nil {
			t.Fatal(err)
		}
		var jit string
		if err := db.Pool.QueryRow(t.Context(), `SHOW jit`).Scan(&jit); err != nil {
			t.Fatal(err)
		}
		db.Close()
		if jit != c.want {
			t.Errorf("%s: jit %q, want %q", c.dsn, jit, c.want)
		}
	}
}

func sep(dsn string) string {
	if strings.Contains(dsn, "?") {
		return "&"
	}
	return "?"
}
