package pgstore

import (
	"slices"
	"strings"
	"testing"
)

// TestStatementsAlone: a noTransaction migration is cut at its semicolons, not at those of its comments or
// quoted text, and refused if a statement could not be run again after an interruption.
func TestStatementsAlone(t *testing.T) {
	got, err := statementsAlone(noTransaction + "\n-- a; comment\nCREATE EXTENSION IF NOT EXISTS btree_gist;\n" +
		"CREATE INDEX CONCURRENTLY IF NOT EXISTS x_y ON t (a) WHERE b = ';' -- trailing; comment\n;\n\nDROP INDEX CONCURRENTLY IF EXISTS x_z\n")
	want := []string{"CREATE EXTENSION IF NOT EXISTS btree_gist", "CREATE INDEX CONCURRENTLY IF NOT EXISTS x_y ON t (a) WHERE b = ';'",
		"DROP INDEX CONCURRENTLY IF EXISTS x_z"}
	if err != nil || !slices.Equal(got, want) {
		t.Fatalf("got %q, %v\nwant %q", got, err, want)
	}
	if m := repeatable.FindStringSubmatch(got[1]); m[builtIndex] != "x_y" {
		t.Fatalf("built index %q, want x_y", m[builtIndex])
	}
	for _, bad := range []string{
		"CREATE INDEX IF NOT EXISTS x ON t (a);",            // transactional build
		"CREATE INDEX CONCURRENTLY x ON t (a);",             // fails when run again
		"DROP INDEX x;",                                     // takes ACCESS EXCLUSIVE
		"LOCK TABLE t IN SHARE MODE; UPDATE t SET a = 1;",   // needs a transaction
		"CREATE FUNCTION f() RETURNS int AS $$ SELECT 1 $$", // dollar quoting
		"SELECT 'unterminated",
		"-- nothing",
	} {
		if _, err := statementsAlone(noTransaction + "\n" + bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	all, err := migrations()
	if err != nil {
		t.Fatal(err)
	}
	var alone []int
	for _, m := range all {
		if m.alone != nil {
			alone = append(alone, m.version)
		}
		if strings.Contains(m.sql, "CONCURRENTLY") != (m.alone != nil) {
			t.Errorf("%s: CONCURRENTLY needs %q on the first line", m.name, noTransaction)
		}
	}
	if !slices.Equal(alone, []int{13, 15, 16, 17, 18, 19}) {
		t.Errorf("migrations run statement by statement: %v", alone)
	}
}
