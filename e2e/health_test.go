package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/directaid/directaid/internal/testserver"
)

// health reads a health route of the admin endpoint.
func health(t *testing.T, s *testserver.Server, path string) (int, map[string]any) {
	t.Helper()
	// A connection of its own: a kept-alive one to an earlier test's server on the same port would
	// answer EOF.
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 30 * time.Second}
	resp, err := client.Get(s.AdminURL + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var body map[string]any
	if err := json.Unmarshal(raw, &body); err != nil {
		t.Fatalf("GET %s: not JSON: %s", path, raw)
	}
	return resp.StatusCode, body
}

// publishOnceSpaceIsBack removes filler and publishes until the store takes writes again (10 s at most):
// the publication must be created.
func publishOnceSpaceIsBack(t *testing.T, s *testserver.Server, filler string) {
	t.Helper()
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	var resp *http.Response
	var out map[string]any
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if resp, out = publish(t, s, validRequest()); resp.StatusCode != http.StatusServiceUnavailable {
			break
		}
	}
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("publishing once space is back: %d %v", resp.StatusCode, out)
	}
}

// mountTmpfs mounts a small tmpfs for the test, or skips the test where mounting is not allowed (a
// container without CAP_SYS_ADMIN).
func mountTmpfs(t *testing.T, size string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "mnt")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs here (needs root with CAP_SYS_ADMIN): %v %s", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v %s", dir, err, out)
		}
	})
	return dir
}

func freeSpace(t *testing.T, dir string) int64 {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	return int64(st.Bavail) * st.Bsize
}

// TestDiskFull runs the server on a small tmpfs, fills the disk past the store's reserve, and checks what
// an operator and a client see: publications answer 503 with Retry-After and the JSON error, retries of
// stored records and reads keep working, readiness says why, the log has one line for it and not one per
// request; then, once space returns, that everything recovers by itself.
func TestDiskFull(t *testing.T) {
	mnt := mountTmpfs(t, "96m")
	s := testserver.Start(t, testserver.Options{DataDir: filepath.Join(mnt, "data"), Database: "\t\t\tmin_free_space 24MiB"})

	if code, body := health(t, s, "/directaid/health/live"); code != 200 || body["status"] != "alive" {
		t.Fatalf("live: %d %v", code, body)
	}
	if code, body := health(t, s, "/directaid/health/ready"); code != 200 || body["status"] != "ready" {
		t.Fatalf("ready on an empty disk: %d %v", code, body)
	}
	first := validRequest()
	if resp, out := publish(t, s, first); resp.StatusCode != http.StatusCreated {
		t.Fatalf("publish: %d %v", resp.StatusCode, out)
	}

	// Leave 8 MiB free, under the 24 MiB reserve.
	filler := filepath.Join(mnt, "filler")
	f, err := os.Create(filler)
	if err != nil {
		t.Fatal(err)
	}
	chunk := make([]byte, 1<<20)
	for freeSpace(t, mnt) > 8<<20 {
		if _, err := f.Write(chunk); err != nil {
			break // the disk is full; fine too
		}
	}
	f.Close()

	// The store looks at the disk at most once a second: poll, do not assume.
	var resp *http.Response
	var out map[string]any
	stored := 1.0 // until the store looks at the disk again, publications still succeed (there is room)
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if resp, out = publish(t, s, validRequest()); resp.StatusCode != http.StatusCreated {
			break
		}
		stored++
	}
	if resp.StatusCode != http.StatusServiceUnavailable || out["code"] != "unavailable" || resp.Header.Get("Retry-After") == "" ||
		!strings.Contains(out["error"].(string), "consultas siguen funcionando") {
		t.Fatalf("publishing on a full disk: %d Retry-After %q %v", resp.StatusCode, resp.Header.Get("Retry-After"), out)
	}
	for range 20 { // more refusals: still one log line
		if r, _ := publish(t, s, validRequest()); r.StatusCode != http.StatusServiceUnavailable {
			t.Fatalf("publishing on a full disk: %d", r.StatusCode)
		}
	}
	if r, o := publish(t, s, first); r.StatusCode != http.StatusOK || o["duplicate"] != true {
		t.Errorf("a retry of a stored record on a full disk: %d %v", r.StatusCode, o)
	}
	if r, o := call(t, s, "GET", "/api/public/v1/help?view=list&emergencySlug=eje-cafetero", nil); r.StatusCode != http.StatusOK || o["total"] != stored {
		t.Errorf("reading on a full disk (%v stored): %d %v", stored, r.StatusCode, o["total"])
	}
	if code, body := health(t, s, "/directaid/health/ready"); code != http.StatusServiceUnavailable || body["status"] != "not_ready" ||
		!strings.Contains(body["reason"].(string), "min_free_space") {
		t.Errorf("ready on a full disk: %d %v", code, body)
	}
	if code, _ := health(t, s, "/directaid/health/live"); code != 200 {
		t.Errorf("live on a full disk: %d", code)
	}
	// Refusals are counted, not logged one by one.
	_, fams := scrape(t, s)
	if v, _ := value(fams, "directaid_store_writes_refused_total", nil); v < 21 {
		t.Errorf("directaid_store_writes_refused_total = %v after at least 21 refused publications", v)
	}

	publishOnceSpaceIsBack(t, s, filler)
	if code, body := health(t, s, "/directaid/health/ready"); code != 200 {
		t.Errorf("ready once space is back: %d %v", code, body)
	}
	s.Stop()
	log := s.Log()
	if n := strings.Count(log, "publications refused until disk space returns"); n != 1 {
		t.Errorf("%d log lines say publishing stopped, want 1", n)
	}
	if n := strings.Count(log, "publications accepted again"); n != 1 {
		t.Errorf("%d log lines say publishing resumed, want 1", n)
	}
	if n := countLines(log, `"level":"warn"`, `"code":"unavailable"`); n != 0 {
		t.Errorf("%d WARN lines for refused publications; want none (they are counted, and logged at DEBUG)", n)
	}
}

// TestReloadAppliesMinFreeSpace: on a disk under min_free_space, the first thing an operator tries is a
// lower reserve: `directaid reload` with it takes publications again, at once, although the reload shares
// the store the first configuration opened; turned off, the same.
func TestReloadAppliesMinFreeSpace(t *testing.T) {
	mnt := mountTmpfs(t, "96m")
	s := testserver.Start(t, testserver.Options{DataDir: filepath.Join(mnt, "data"), Database: "\t\t\tmin_free_space 24MiB"})
	fill(t, mnt, 8<<20)
	var resp *http.Response
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if resp, _ = publish(t, s, validRequest()); resp.StatusCode == http.StatusServiceUnavailable {
			break
		}
	}
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("publishing with 8 MiB free under a 24 MiB reserve: %d", resp.StatusCode)
	}
	for _, reserve := range []string{"4MiB", "off"} {
		if reserve == "off" { // back under the reserve first
			rewriteReserve(t, s, "4MiB", "24MiB")
			s.Reload()
			if r, _ := publish(t, s, validRequest()); r.StatusCode != http.StatusServiceUnavailable {
				t.Fatalf("after a reload back to 24MiB: %d", r.StatusCode)
			}
			rewriteReserve(t, s, "24MiB", reserve)
		} else {
			rewriteReserve(t, s, "24MiB", reserve)
		}
		s.Reload()
		if r, out := publish(t, s, validRequest()); r.StatusCode != http.StatusCreated {
			t.Fatalf("after a reload to min_free_space %s: %d %v", reserve, r.StatusCode, out)
		}
		if code, body := health(t, s, "/directaid/health/ready"); code != http.StatusOK {
			t.Fatalf("ready after a reload to min_free_space %s: %d %v", reserve, code, body)
		}
	}
}

// rewriteReserve replaces min_free_space from with to in s's Caddyfile.
func rewriteReserve(t *testing.T, s *testserver.Server, from, to string) {
	t.Helper()
	b, err := os.ReadFile(s.CaddyfilePath())
	if err != nil {
		t.Fatal(err)
	}
	next := strings.Replace(string(b), "min_free_space "+from, "min_free_space "+to, 1)
	if next == string(b) {
		t.Fatalf("no min_free_space %s in the Caddyfile:\n%s", from, b)
	}
	if err := os.WriteFile(s.CaddyfilePath(), []byte(next), 0o644); err != nil {
		t.Fatal(err)
	}
}

// countLines counts the lines of log that hold every one of parts.
func countLines(log string, parts ...string) int {
	n := 0
	for line := range strings.Lines(log) {
		all := true
		for _, p := range parts {
			all = all && strings.Contains(line, p)
		}
		if all {
			n++
		}
	}
	return n
}

// fill writes a file into dir until the disk has at most leave bytes free (0: until it is full), and
// returns its path.
func fill(t *testing.T, dir string, leave int64) string {
	t.Helper()
	path := filepath.Join(dir, "filler")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	chunk := make([]byte, 1<<20)
	for freeSpace(t, dir) > leave {
		n := min(int64(len(chunk)), max(freeSpace(t, dir)-leave, 4096))
		if _, err := f.Write(chunk[:n]); err != nil {
			break // the disk is full
		}
	}
	return path
}

// runToExit runs the server's binary on its Caddyfile, as systemd would start it, and returns its exit
// status and output once it exits, failing the test if it still runs after 30 s.
func runToExit(t *testing.T, s *testserver.Server) (int, string) {
	t.Helper()
	cmd := exec.Command(testserver.Binary(t), "run", "--config", s.CaddyfilePath())
	cmd.Env = append(os.Environ(), "XDG_DATA_HOME="+filepath.Join(s.Dir, "xdg-data"), "XDG_CONFIG_HOME="+filepath.Join(s.Dir, "xdg-config"), "HOME="+s.Dir)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("directaid still runs after 30 s on a full disk:\n%s", out.String())
	}
	ws := cmd.ProcessState.Sys().(syscall.WaitStatus)
	if ws.Signaled() {
		t.Fatalf("directaid died of %v on a full disk:\n%s", ws.Signal(), out.String())
	}
	return cmd.ProcessState.ExitCode(), out.String()
}

// TestStartOnAFullDisk restarts a node whose disk filled while it was down (a tmpfs at 100% crashed it
// with SIGBUS in Badger's open, in a loop under Restart=on-failure). On a full disk it refuses to start,
// with one log line that says why and an exit status the systemd unit does not restart on. With room to
// open but less than min_free_space, it starts: reads answer, publications get 503, readiness says why,
// one log line; once space is back it publishes again by itself.
func TestStartOnAFullDisk(t *testing.T) {
	mnt := mountTmpfs(t, "160m")
	s := testserver.Start(t, testserver.Options{DataDir: filepath.Join(mnt, "data"), Database: "\t\t\tmin_free_space 80MiB"})
	first := validRequest()
	resp, out := publish(t, s, first)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("publish: %d %v", resp.StatusCode, out)
	}
	id := out["id"].(string)
	s.Stop()

	// One page left: Badger's lock file takes it, and its new memtable's first page finds none (SIGBUS in
	// badger.(*DB).openMemTable, as on the node of the issue).
	filler := fill(t, mnt, 4096)
	code, output := runToExit(t, s)
	log := s.Log()
	unit, err := os.ReadFile(filepath.Join("..", "dist", "systemd", "directaid.service"))
	if err != nil {
		t.Fatal(err)
	}
	if code != 73 || !strings.Contains(string(unit), "\nRestartPreventExitStatus=73\n") {
		t.Errorf("exit status %d on a full disk; want 73, the unit's RestartPreventExitStatus:\n%s", code, output)
	}
	if n := countLines(log, "not starting: the database's disk is full", "opening the database needs 64 MiB"); n != 1 {
		t.Errorf("%d log lines say why it does not start, want 1; the end of the log:\n%s", n, log[max(0, len(log)-3000):])
	}
	for _, bad := range []string{"SIGBUS", "panic", "fatal error"} {
		if strings.Contains(output+log, bad) {
			t.Errorf("%q on a full disk:\n%s", bad, output)
		}
	}

	// Room to open Badger (64 MiB), not to take writes (80 MiB): it starts and says why it refuses writes.
	st, err := os.Stat(filler)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(filler, st.Size()-(72<<20-freeSpace(t, mnt))); err != nil {
		t.Fatal(err)
	}
	s.Launch()
	if code, body := health(t, s, "/directaid/health/ready"); code != http.StatusServiceUnavailable || body["status"] != "not_ready" ||
		!strings.Contains(body["reason"].(string), "min_free_space") {
		t.Errorf("ready, started short of space: %d %v", code, body)
	}
	if r, o := call(t, s, "GET", "/api/public/v1/help?view=detail&id="+id, nil); r.StatusCode != http.StatusOK || o["id"] != id {
		t.Errorf("a read, started short of space: %d %v", r.StatusCode, o)
	}
	if r, o := publish(t, s, validRequest()); r.StatusCode != http.StatusServiceUnavailable || r.Header.Get("Retry-After") == "" {
		t.Errorf("a publication, started short of space: %d %v", r.StatusCode, o)
	}
	if r, o := publish(t, s, first); r.StatusCode != http.StatusOK || o["id"] != id {
		t.Errorf("a retry of a stored record, started short of space: %d %v", r.StatusCode, o)
	}

	publishOnceSpaceIsBack(t, s, filler)
	if code, body := health(t, s, "/directaid/health/ready"); code != http.StatusOK {
		t.Errorf("ready once space is back: %d %v", code, body)
	}
	s.Stop()
	log = s.Log()
	for _, msg := range []string{"publications refused until disk space returns", "publications accepted again"} {
		if n := strings.Count(log, msg); n != 1 {
			t.Errorf("%d log lines say %q, want 1", n, msg)
		}
	}
}

// TestReloadToAnotherDatabaseIsSaid: a reload whose Caddyfile names another database directory that holds
// no records, while the one in use holds some (a mistyped path), is refused: the network keeps serving
// its records and `reload` says why. One whose directory holds records (moved, restored) is served, and
// said at WARN with both directories and what the new one holds.
func TestReloadToAnotherDatabaseIsSaid(t *testing.T) {
	t.Parallel()
	// A database of one record, made by a server of its own, then stopped.
	moved := testserver.Start(t, testserver.Options{})
	if r, out := publish(t, moved, validRequest()); r.StatusCode != http.StatusCreated {
		t.Fatalf("publish: %d %v", r.StatusCode, out)
	}
	moved.Stop()

	s := testserver.Start(t, testserver.Options{})
	for i := range 2 {
		body := validRequest()
		body["externalId"] = fmt.Sprintf("reload-db-%d", i)
		if r, out := publish(t, s, body); r.StatusCode != http.StatusCreated {
			t.Fatalf("publish: %d %v", r.StatusCode, out)
		}
	}
	b, err := os.ReadFile(s.CaddyfilePath())
	if err != nil {
		t.Fatal(err)
	}
	i := strings.Index(string(b), "database badger ")
	if i < 0 {
		t.Fatalf("no database badger in the Caddyfile:\n%s", b)
	}
	end := i + strings.IndexAny(string(b[i:]), "\n{")
	reloadTo := func(dir string) (string, error) {
		next := string(b[:i]) + "database badger " + dir + " " + string(b[end:])
		if err := os.WriteFile(s.CaddyfilePath(), []byte(next), 0o644); err != nil {
			t.Fatal(err)
		}
		return s.TryReload()
	}
	total := func() any {
		_, list := call(t, s, "GET", "/api/public/v1/help?view=list", nil)
		return list["total"]
	}

	typo := filepath.Join(t.TempDir(), "dta")
	out, err := reloadTo(typo)
	if err == nil || !strings.Contains(out, "holds no records while the one in use holds some") {
		t.Fatalf("a reload to an empty database was not refused: %v\n%s", err, out)
	}
	if got := total(); got != 2.0 {
		t.Errorf("after the refused reload the list holds %v records, want the 2 in use", got)
	}
	if out, err := reloadTo(moved.DataDir); err != nil {
		t.Fatalf("a reload to a database holding records: %v\n%s", err, out)
	}
	if n := countLines(s.Log(), `"level":"warn"`, "another database", `"now":"`+moved.DataDir+`"`, `"records":1`); n != 1 {
		t.Errorf("%d warnings of the changed database, want 1:\n%s", n, s.Log())
	}
	if got := total(); got != 1.0 {
		t.Errorf("the moved database's list: %v records, want 1", got)
	}
}
