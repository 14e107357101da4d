package caddymodule

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
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

// RefuseSecondServer refuses `run` of a Caddyfile (or its JSON) whose site's port something already
// accepts connections on, naming the address: Caddy's SO_REUSEPORT would let a second server bind it and
// share its connections. A port nothing listens on starts.
func TestRefuseSecondServerOnTheSitePort(t *testing.T) {
	dir := t.TempDir()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	cf := filepath.Join(dir, "Caddyfile")
	body := fmt.Sprintf("{\n\tadmin unix/%s|0600\n}\n\nhttp://127.0.0.1:%d {\n\trespond ok\n}\n", filepath.Join(dir, "admin.sock"), port)
	if err := os.WriteFile(cf, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	// With the admin endpoint off, the site's port is still looked at.
	off := filepath.Join(dir, "Caddyfile.off")
	if err := os.WriteFile(off, fmt.Appendf(nil, "{\n\tadmin off\n}\n\nhttp://127.0.0.1:%d {\n\trespond ok\n}\n", port), 0o600); err != nil {
		t.Fatal(err)
	}
	jf := filepath.Join(dir, "config.json")
	if err := os.WriteFile(jf, fmt.Appendf(nil, `{"apps":{"http":{"servers":{"a":{"listen":[":%d"]}}}}}`, port), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"run", "--config", cf}, {"start", "--config", cf, "--adapter", "caddyfile"}, {"run", "--config", jf}, {"run", "--config", off, "--adapter", "caddyfile"}} {
		if err := RefuseSecondServer(args); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("127.0.0.1:%d", port)) {
			t.Errorf("%v with something on the site's port: %v", args, err)
		}
	}
	_ = ln.Close()
	if err := RefuseSecondServer([]string{"run", "--config", cf}); err != nil {
		t.Errorf("nothing on the port: %v", err)
	}
}
