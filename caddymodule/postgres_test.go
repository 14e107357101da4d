package caddymodule

import (
	"strings"
	"testing"
)

// TestPostgresRefusesBadgerOptions: min_free_space guards a local Badger disk; on PostgreSQL it would be
// accepted and do nothing, so a JSON config with it (or with a Badger directory) is refused too.
func TestPostgresRefusesBadgerOptions(t *testing.T) {
	for _, db := range []Database{{Postgres: "x", MinFreeSpace: 1 << 30}, {Postgres: "x", MinFreeSpace: -1}, {Postgres: "x", Badger: "/d"}} {
		if err := (&App{Database: db}).Validate(); err == nil || !strings.Contains(err.Error(), "database postgres takes neither") {
			t.Errorf("%+v: %v", db, err)
		}
	}
	if err := (&App{Database: Database{Postgres: "x"}}).Validate(); err != nil {
		t.Error(err)
	}
}
