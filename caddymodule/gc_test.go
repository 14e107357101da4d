package caddymodule

import (
	"os"
	"runtime/debug"
	"testing"

	"go.uber.org/zap"
)

// TestGCPercent: a node over PostgreSQL collects at GOGC 200, one over Badger at Go's default, and GOGC
// set in the environment is left alone.
func TestGCPercent(t *testing.T) {
	gogc := func() int { p := debug.SetGCPercent(100); debug.SetGCPercent(p); return p }
	t.Cleanup(func() { debug.SetGCPercent(gogc()) })
	open := func(a *App) { t.Helper(); openAndClose(t, a) }
	unsetEnv(t, "GOGC")
	debug.SetGCPercent(100)
	open(&App{dsn: "postgres://directaid@127.0.0.1:1/none"}) // opening does not connect
	if p := gogc(); p != 200 {
		t.Errorf("over PostgreSQL: GOGC %d, want 200", p)
	}
	open(&App{dir: t.TempDir()})
	if p := gogc(); p != 100 {
		t.Errorf("over Badger after PostgreSQL (a reload): GOGC %d, want 100", p)
	}
	t.Setenv("GOGC", "150")
	debug.SetGCPercent(150)
	open(&App{dsn: "postgres://directaid@127.0.0.1:1/none"})
	if p := gogc(); p != 150 {
		t.Errorf("GOGC=150 in the environment: %d", p)
	}
}

// openAndClose opens the database a selects, as a server does (openDatabase), and closes it.
func openAndClose(t *testing.T, a *App) {
	t.Helper()
	a.logger = zap.NewNop()
	s, err := a.openDatabase()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

// unsetEnv unsets the environment variable name for the test, and sets it back afterwards.
func unsetEnv(t *testing.T, name string) {
	if v, set := os.LookupEnv(name); set {
		t.Cleanup(func() { os.Setenv(name, v) })
	}
	os.Unsetenv(name)
}
