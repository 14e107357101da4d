package e2e

import (
	"encoding/json"
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
	resp, err := http.Get(s.AdminURL + path)
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

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if resp, out = publish(t, s, validRequest()); resp.StatusCode != http.StatusServiceUnavailable {
			break
		}
	}
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("publishing once space is back: %d %v", resp.StatusCode, out)
	}
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
