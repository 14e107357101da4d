package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/directaid/directaid/internal/testserver"
)

// The admin endpoint and the logs of the shipped Caddyfiles, run as shipped (rewritten only where they must
// be to run here): another local user cannot open the admin socket, and no client address reaches a log line
// above DEBUG. The admin socket's test needs root: to run commands as the user nobody, and to give the
// server its own /run.

// needRoot skips t unless the test runs as root (DIRECTAID_REQUIRE_ROOT=1, set by CI, makes it fail instead).
func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() == 0 {
		return
	}
	if os.Getenv("DIRECTAID_REQUIRE_ROOT") != "" {
		t.Fatal("this test runs commands as the user nobody and needs root, and DIRECTAID_REQUIRE_ROOT is set")
	}
	t.Skip("runs commands as the user nobody: needs root")
}

// lockedBuffer collects a process's output.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// shippedServer is a shipped Caddyfile running in its own process, in its own working directory.
type shippedServer struct {
	t    *testing.T
	bin  string
	dir  string // the working directory: the Caddyfile, and what it names relative to it (./data)
	url  string // the site
	proc *testserver.Process
	out  *lockedBuffer // stdout and stderr: Caddy's default log
	// ns prefixes a command to run it in the server's mount namespace (nsenter), when it has one.
	ns []string
}

// rewriteShipped reads a shipped file and replaces each old string of pairs with its new one; each must be
// there, so that a change to the file that the rewrite no longer fits fails here rather than proving nothing.
func rewriteShipped(t *testing.T, name string, pairs ...string) string {
	t.Helper()
	s, err := readFile(filepath.Join("..", name))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(pairs); i += 2 {
		if strings.Count(s, pairs[i]) != 1 {
			t.Fatalf("%s: %q is not there once; update the test's rewrite", name, pairs[i])
		}
		s = strings.Replace(s, pairs[i], pairs[i+1], 1)
	}
	return s
}

// startShippedFile writes caddyfile into dir and runs it there. With privateRun the server gets a mount
// namespace of its own with an empty tmpfs on /run and /run/directaid made as systemd's RuntimeDirectory=
// directaid, RuntimeDirectoryMode=0700 makes it, so that the shipped /run/directaid/admin.sock is used as is.
func startShippedFile(t *testing.T, dir, caddyfile string, port int, privateRun bool) *shippedServer {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, "Caddyfile"), []byte(caddyfile), 0o644); err != nil {
		t.Fatal(err)
	}
	s := &shippedServer{t: t, bin: testserver.Binary(t), dir: dir, url: fmt.Sprintf("http://127.0.0.1:%d", port),
		out: &lockedBuffer{}}
	args := []string{s.bin, "run", "--config", "Caddyfile"}
	if privateRun {
		if out, err := exec.Command("unshare", "--mount", "true").CombinedOutput(); err != nil {
			if os.Getenv("DIRECTAID_REQUIRE_ROOT") != "" {
				t.Fatalf("unshare --mount: %v %s", err, out)
			}
			t.Skipf("cannot make a mount namespace here (unshare --mount needs CAP_SYS_ADMIN): %v %s", err, out)
		}
		// unshare and sh exec the next program: the process started is the server.
		args = append([]string{"unshare", "--mount", "--propagation", "private", "sh", "-c",
			`mount -t tmpfs -o mode=0755 tmpfs /run && mkdir -m 0700 /run/directaid && exec "$0" "$@"`}, args...)
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Dir = dir
	xdg := filepath.Join(dir, "xdg")
	cmd.Env = append(os.Environ(), "HOME="+dir, "XDG_DATA_HOME="+xdg, "XDG_CONFIG_HOME="+xdg)
	cmd.Stdout, cmd.Stderr = s.out, s.out
	proc, err := testserver.StartProcess(cmd)
	if err != nil {
		t.Fatal(err)
	}
	s.proc = proc
	t.Cleanup(s.stop)
	if privateRun {
		s.ns = []string{"nsenter", "--target", strconv.Itoa(s.pid()), "--mount", "--wd=" + dir, "--"}
	}
	if err := proc.WaitAnswers(s.url+"/api/public/v1/help", 30*time.Second); err != nil {
		t.Fatalf("the shipped server: %v:\n%s", err, s.out)
	}
	return s
}

// pid is the server's process id.
func (s *shippedServer) pid() int { return s.proc.Cmd.Process.Pid }

// stop ends the server gracefully (SIGINT), killing it after 15 s.
func (s *shippedServer) stop() { s.proc.Stop(syscall.SIGINT, 15*time.Second) }

// run runs the binary with args in the server's working directory (and mount namespace), as root or, with
// asNobody, as the user nobody; it returns the combined output and the error.
func (s *shippedServer) run(bin string, asNobody bool, args ...string) (string, error) {
	return s.runCmd(asNobody, append([]string{bin}, args...)...)
}

func (s *shippedServer) runCmd(asNobody bool, argv ...string) (string, error) {
	if asNobody {
		argv = append([]string{"setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "--"}, argv...)
	}
	argv = append(append([]string{}, s.ns...), argv...)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = s.dir
	cmd.Env = append(os.Environ(), "HOME="+s.dir)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// nobodyBinary is a copy of the binary that the user nobody can run (the built one may sit in a directory
// only root can enter).
func nobodyBinary(t *testing.T) string {
	t.Helper()
	bin := testserver.Binary(t)
	if exec.Command("setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "--", bin, "version").Run() == nil {
		return bin
	}
	dir := worldDir(t)
	b, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "directaid")
	if err := os.WriteFile(p, b, 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// worldDir is a new directory that every user can enter and write to, removed at the end of the test.
func worldDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "directaid-admin-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o1777); err != nil {
		t.Fatal(err)
	}
	return dir
}

// unixClient talks HTTP over the unix socket at path.
func unixClient(path string) *http.Client {
	return &http.Client{Timeout: 60 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", path)
		},
	}}
}

// TestAdminSocketClosedToOtherUsers runs the shipped Caddyfile (its /run/directaid/admin.sock in a mount
// namespace of its own, in a /run/directaid of mode 0700 as the systemd unit makes it) and Caddyfile.local
// (./data/admin.sock in a directory that every user can enter, so that the socket's own mode is what
// refuses), and checks that the user nobody cannot reach the backup, the moderation or Caddy's config API
// through them — permission denied, including with the commands' default address — while root takes a
// backup with no --admin flag, reloads and stops the server through the socket.
func TestAdminSocketClosedToOtherUsers(t *testing.T) {
	needRoot(t)
	for _, c := range []struct {
		file       string
		privateRun bool
	}{{"Caddyfile", true}, {"Caddyfile.local", false}} {
		t.Run(c.file, func(t *testing.T) {
			dir := worldDir(t)
			if err := os.Chmod(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			port := testserver.FreePort(t)
			var cf, sock string
			var defaultArgs []string // how root's commands name the server: nothing beyond the defaults
			if c.file == "Caddyfile" {
				metricsPort := testserver.FreePort(t)
				cf = rewriteShipped(t, c.file,
					"\nayuda.example.org {\n", fmt.Sprintf("\nhttp://127.0.0.1:%d {\n\tbind 127.0.0.1\n", port),
					"database badger /var/lib/directaid\n", "database badger "+filepath.Join(dir, "data")+"\n",
					"http://127.0.0.1:9180 {", fmt.Sprintf("http://127.0.0.1:%d {", metricsPort))
				if !strings.Contains(cf, "\tadmin unix//run/directaid/admin.sock|0600\n") {
					t.Fatalf("the shipped Caddyfile's admin is not the socket this test expects:\n%s", cf)
				}
				s := startShippedFile(t, dir, cf, port, true)
				// The test process is not in the server's mount namespace; /proc/PID/root is its view of the files.
				sock = fmt.Sprintf("/proc/%d/root/run/directaid/admin.sock", s.pid())
				// Prometheus scrapes the loopback metrics site, not the socket.
				if resp, err := http.Post(s.url+"/api/public/v1/help", "application/json", bytes.NewReader(mustJSON(t, validRequest()))); err == nil {
					resp.Body.Close()
				}
				resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", metricsPort))
				if err != nil {
					t.Fatal(err)
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 || !bytes.Contains(body, []byte("directaid_publications_total{")) || !bytes.Contains(body, []byte("caddy_http_requests_total")) {
					t.Errorf("the metrics site: %d\n%.800s", resp.StatusCode, body)
				}
				checkAdminSocket(t, s, sock, defaultArgs)
				return
			}
			cf = rewriteShipped(t, c.file, "http://:8080 {", fmt.Sprintf("http://:%d {", port))
			if !strings.Contains(cf, "\tadmin unix/./data/admin.sock|0600\n") {
				t.Fatalf("Caddyfile.local's admin is not the socket this test expects:\n%s", cf)
			}
			// make run makes ./data 0700; 0755 here, so that only the socket's own mode keeps nobody out.
			if err := os.Mkdir(filepath.Join(dir, "data"), 0o755); err != nil {
				t.Fatal(err)
			}
			s := startShippedFile(t, dir, cf, port, false)
			checkAdminSocket(t, s, filepath.Join(dir, "data", "admin.sock"), []string{"--config", "Caddyfile"})
			// make run leaves no copy of the configuration in the user's home (persist_config off), even
			// after the reload checkAdminSocket made.
			if _, err := os.Stat(filepath.Join(dir, "xdg", "caddy", "autosave.json")); !os.IsNotExist(err) {
				t.Errorf("Caddyfile.local left Caddy's autosave.json in the home directory (%v)", err)
			}
		})
	}
}

// checkAdminSocket: sock is the server's admin socket as this process reaches it; defaultArgs is what
// root's commands add to find it (nothing, for the default address).
func checkAdminSocket(t *testing.T, s *shippedServer, sock string, defaultArgs []string) {
	t.Helper()
	fi, err := os.Stat(sock)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Type() != fs.ModeSocket || fi.Mode().Perm() != 0o600 {
		t.Errorf("%s: mode %v, want a socket of mode 0600", sock, fi.Mode())
	}
	if s.ns != nil {
		if d, err := os.Stat(filepath.Dir(sock)); err != nil || d.Mode().Perm() != 0o700 {
			t.Errorf("%s: %v %v, want mode 0700", filepath.Dir(sock), d.Mode(), err)
		}
	}
	// A record, to try to erase.
	resp, err := http.Post(s.url+"/api/public/v1/help", "application/json", bytes.NewReader(mustJSON(t, validRequest())))
	if err != nil {
		t.Fatal(err)
	}
	var created map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&created)
	resp.Body.Close()
	id, _ := created["id"].(string)
	if resp.StatusCode != 201 || id == "" {
		t.Fatalf("publish: %d %v", resp.StatusCode, created)
	}

	// The user nobody: every door of the admin endpoint refuses at the socket.
	nobodyBin := nobodyBinary(t)
	backups := worldDir(t)
	admin := "unix/" + strings.TrimPrefix(sock, "/proc/"+strconv.Itoa(s.pid())+"/root")
	tries := []struct {
		what string
		args []string
	}{
		{"backup", []string{"backup", "--dir", backups, "--admin", admin}},
		{"backup through the Caddyfile", []string{"backup", "--dir", backups, "--config", "Caddyfile"}},
		{"moderate erase", []string{"moderate", "erase", id, "--admin", admin}},
		{"moderate queue through the Caddyfile", []string{"moderate", "queue", "--config", "Caddyfile"}},
		{"reload (POST /load)", []string{"reload", "--config", "Caddyfile", "--force"}},
	}
	if s.ns != nil { // the default address is the socket of this server only in its namespace
		tries = append(tries, struct {
			what string
			args []string
		}{"backup, default address", []string{"backup", "--dir", backups}})
	}
	for _, try := range tries {
		out, err := s.run(nobodyBin, true, try.args...)
		if err == nil || !strings.Contains(out, "permission denied") {
			t.Errorf("nobody: %s: %v, want permission denied:\n%s", try.what, err, out)
		}
	}
	if curl, err := exec.LookPath("curl"); err == nil {
		curlPath := strings.TrimPrefix(admin, "unix/")
		for _, path := range []string{"/config/", "/directaid/backup"} {
			out, err := s.runCmd(true, curl, "-sS", "-o", "/dev/null", "-w", "%{http_code}", "--unix-socket", curlPath, "http://localhost"+path)
			if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 7 { // 7: could not connect
				t.Errorf("nobody: curl %s: %v, want exit 7 (could not connect):\n%s", path, err, out)
			}
		}
		// The same curl as root answers, so the refusal above is the socket's.
		if out, err := s.runCmd(false, curl, "-sS", "-o", "/dev/null", "-w", "%{http_code}", "--unix-socket", curlPath, "http://localhost/config/"); err != nil || out != "200" {
			t.Errorf("root: curl /config/: %v %s", err, out)
		}
	}
	if list, _ := os.ReadDir(backups); len(list) > 0 {
		t.Errorf("nobody's backups wrote %d files", len(list))
	}

	// Root: the backup over the socket, and with the commands' default address.
	resp, err = unixClient(sock).Get("http://localhost/directaid/backup")
	if err != nil {
		t.Fatal(err)
	}
	n, _ := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || n == 0 {
		t.Errorf("root: GET /directaid/backup: %d, %d bytes", resp.StatusCode, n)
	}
	rootBackups := t.TempDir()
	out, err := s.run(s.bin, false, append([]string{"backup", "--dir", rootBackups}, defaultArgs...)...)
	if err != nil || !strings.Contains(out, "backup "+rootBackups) {
		t.Errorf("root: directaid backup %v: %v\n%s", defaultArgs, err, out)
	}
	// nobody's erase did not happen: the record is open, its phone shown.
	out, err = s.run(s.bin, false, append([]string{"moderate", "queue"}, defaultArgs...)...)
	if err != nil || strings.Contains(out, id) {
		t.Errorf("root: moderate queue: %v\n%s", err, out)
	}
	out, err = s.run(s.bin, false, append([]string{"moderate", "audit"}, defaultArgs...)...)
	if err != nil || strings.Contains(out, id) {
		t.Errorf("root: the audit trail names the record nobody tried to erase (%v):\n%s", err, out)
	}
	resp, err = http.Get(s.url + "/api/public/v1/help?view=detail&id=" + id)
	if err == nil {
		var rec map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&rec)
		resp.Body.Close()
		if b, _ := json.Marshal(rec); !bytes.Contains(b, []byte("wa.me")) {
			t.Errorf("the record lost its phone: %s", b)
		}
	}
	// reload and stop find the socket through the Caddyfile, as the systemd unit's ExecReload does.
	if out, err := s.run(s.bin, false, "reload", "--config", "Caddyfile", "--force"); err != nil {
		t.Errorf("root: reload: %v\n%s", err, out)
	}
	if out, err := s.run(s.bin, false, "stop", "--config", "Caddyfile"); err != nil {
		t.Errorf("root: stop: %v\n%s", err, out)
	}
	select {
	case <-s.proc.Done():
	case <-time.After(15 * time.Second):
		t.Errorf("the server did not stop on `directaid stop --config Caddyfile`")
	}
}

// TestRateLimitLogsNoClientIP runs Caddyfile.local (whose `log` option is the same as the other shipped
// Caddyfiles') into 429s of the publish and detail limits from a distinctive loopback address, and looks for
// that address in every line of the log above DEBUG. Then, as a check of the test, the same without the
// `exclude` of caddy-ratelimit's logger: there the address shows.
func TestRateLimitLogsNoClientIP(t *testing.T) {
	const ip = "127.66.77.88"
	var logBlock string
	for _, f := range []string{"Caddyfile", "Caddyfile.local", "dist/Caddyfile.postgres"} {
		s, err := readFile(filepath.Join("..", f))
		if err != nil {
			t.Fatal(err)
		}
		i := strings.Index(s, "\n\tlog {\n")
		j := strings.Index(s[max(i, 0):], "\n\t}\n")
		if i < 0 || j < 0 || !strings.Contains(s[i:i+j], "exclude http.handlers.rate_limit") {
			t.Fatalf("%s has no global log option that excludes http.handlers.rate_limit", f)
		}
		if block := s[i : i+j]; logBlock == "" {
			logBlock = block
		} else if block != logBlock {
			t.Errorf("%s's log option differs from Caddyfile's:\n%s", f, block)
		}
	}
	for _, shipped := range []bool{true, false} {
		port := testserver.FreePort(t)
		dir := t.TempDir()
		pairs := []string{"http://:8080 {", fmt.Sprintf("http://:%d {", port)}
		if !shipped {
			pairs = append(pairs, "\t\texclude http.handlers.rate_limit\n", "")
		}
		cf := rewriteShipped(t, "Caddyfile.local", pairs...)
		if err := os.Mkdir(filepath.Join(dir, "data"), 0o700); err != nil {
			t.Fatal(err)
		}
		s := startShippedFile(t, dir, cf, port, false)
		c := fromAddr(ip)
		limited := map[string]int{}
		// The detail limit (30 a minute), then, when the log is the shipped one, the publish limit (60).
		for range 35 {
			if resp, err := c.Get(s.url + "/api/public/v1/help?view=detail&id=0000000000000000"); err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode == http.StatusTooManyRequests {
					limited["detail"]++
				}
			}
		}
		for range 65 * btoi(shipped) {
			resp, err := c.Post(s.url+"/api/public/v1/help", "application/json", bytes.NewReader(mustJSON(t, validRequest())))
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusTooManyRequests {
				limited["publish"]++
			}
		}
		s.stop() // flush
		if limited["detail"] < 5 || (shipped && limited["publish"] < 5) {
			t.Fatalf("too few 429s to prove anything: %v", limited)
		}
		var above []string
		for line := range strings.SplitSeq(s.out.String(), "\n") {
			if !strings.Contains(line, ip) {
				continue
			}
			var entry struct{ Level string }
			if json.Unmarshal([]byte(line), &entry) != nil || entry.Level != "debug" {
				above = append(above, line)
			}
		}
		t.Logf("exclude %v: 429s %v; lines above DEBUG with %s: %d", shipped, limited, ip, len(above))
		switch {
		case shipped && len(above) > 0:
			t.Errorf("the shipped log has %d lines above DEBUG with the client's address %s (%v 429s), e.g.:\n%s", len(above), ip, limited, above[0])
		case !shipped && len(above) == 0:
			t.Errorf("without the exclude, no log line has the client's address: the test proves nothing\n%.3000s", s.out)
		}
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
