package e2e

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/directaid/directaid/internal/testserver"
)

// The units of dist/systemd, as the README installs them.
var systemdUnits = []string{"directaid.service", "directaid-backup.service", "directaid-backup.timer"}

// TestSystemdUnits checks the shipped units with systemd's own checker. The units name the binary at
// /usr/local/bin/directaid, where the README installs it; verify insists that it exists, so the test
// points them at the built binary instead and changes nothing else. Any warning fails the test:
// systemd-analyze exits 0 on an unknown key or a bad value, which it only prints.
func TestSystemdUnits(t *testing.T) {
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		if os.Getenv("DIRECTAID_REQUIRE_SYSTEMD") != "" {
			t.Fatal("systemd-analyze not found, and DIRECTAID_REQUIRE_SYSTEMD is set: install Debian's systemd (see .ci/run)")
		}
		t.Skip("systemd-analyze not found (Debian's systemd package provides it)")
	}
	bin := testserver.Binary(t)
	_, file, _, _ := runtime.Caller(0)
	src := filepath.Join(filepath.Dir(file), "..", "dist", "systemd")
	dir := t.TempDir()
	var paths []string
	units := map[string]string{}
	for _, name := range systemdUnits {
		b, err := os.ReadFile(filepath.Join(src, name))
		if err != nil {
			t.Fatal(err)
		}
		units[name] = string(b)
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, bytes.ReplaceAll(b, []byte("/usr/local/bin/directaid"), []byte(bin)), 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	cmd := exec.Command(analyze, append([]string{"verify"}, paths...)...)
	out, err := cmd.CombinedOutput()
	if err != nil || len(bytes.TrimSpace(out)) > 0 {
		t.Fatalf("systemd-analyze verify: %v\n%s", err, out)
	}

	// What the issue asks of the service, line by line (verify checks they parse, not that they are there).
	for _, line := range []string{"DynamicUser=yes", "ProtectSystem=strict", "StateDirectory=directaid ", "NoNewPrivileges=yes",
		"AmbientCapabilities=CAP_NET_BIND_SERVICE", "MemoryMax=", "Type=notify",
		"ExecReload=/usr/local/bin/directaid reload --config /etc/directaid/Caddyfile"} {
		if !strings.Contains(units["directaid.service"], "\n"+line) {
			t.Errorf("directaid.service lacks %q", line)
		}
	}
	if !strings.Contains(units["directaid-backup.service"], "\nExecStart=/usr/local/bin/directaid backup ") {
		t.Error("directaid-backup.service does not run `directaid backup`")
	}
	if !strings.Contains(units["directaid-backup.timer"], "\nOnCalendar=daily") {
		t.Error("directaid-backup.timer is not daily")
	}

	// The commands the units run exist with the flags they pass (a typo would only show at 3 a.m.).
	for _, name := range []string{"directaid.service", "directaid-backup.service"} {
		for _, line := range strings.Split(units[name], "\n") {
			cmdline, ok := strings.CutPrefix(line, "ExecStart=")
			if !ok {
				cmdline, ok = strings.CutPrefix(line, "ExecReload=")
			}
			if !ok {
				continue
			}
			args := strings.Fields(cmdline)[1:]
			// `help <command>` fails on an unknown command; parsing the flags with --help fails on an unknown flag.
			out, err := exec.Command(bin, append(args, "--help")...).CombinedOutput()
			if err != nil {
				t.Errorf("%s: %q: %v\n%s", name, cmdline, err, out)
			}
		}
	}
}
