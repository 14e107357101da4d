package caddymodule

import (
	"net"
	"os"
	"path/filepath"
	"testing"
)

// RefuseSecondServer refuses `run` and `start` of a Caddyfile whose admin unix socket answers, and lets
// them through when its file is left by a server that was killed (nothing answers), and for any other
// command.
func TestRefuseSecondServerUnixSocket(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, "admin.sock")
	cf := filepath.Join(dir, "Caddyfile")
	if err := os.WriteFile(cf, []byte("{\n\tadmin unix/"+sock+"|0600\n}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	args := func(cmd string) []string { return []string{cmd, "--config", cf, "--adapter", "caddyfile"} }
	if err := RefuseSecondServer(args("run")); err != nil {
		t.Fatalf("no server: %v", err)
	}
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	for _, cmd := range []string{"run", "start"} {
		if err := RefuseSecondServer(args(cmd)); err == nil {
			t.Errorf("%s with a server on the socket: no error", cmd)
		}
	}
	for _, cmd := range []string{"reload", "backup", "adapt"} {
		if err := RefuseSecondServer(args(cmd)); err != nil {
			t.Errorf("%s: %v", cmd, err)
		}
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false) // a killed server leaves its socket's file
	_ = ln.Close()
	if _, err := os.Stat(sock); err != nil {
		t.Fatal(err)
	}
	if err := RefuseSecondServer(args("run")); err != nil {
		t.Fatalf("a socket file nobody answers on: %v", err)
	}
}
