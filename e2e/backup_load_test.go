package e2e

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/directaid/directaid/internal/testserver"
)

// TestBackupUnderLoad takes backups with `directaid backup` (what the systemd timer runs) while 32
// clients publish, and checks that each one is proven by `directaid restore --verify` (indexes and
// aggregates against the records) and holds every record acknowledged before the backup began. It also
// checks that the command keeps only the newest --keep backups.
func TestBackupUnderLoad(t *testing.T) {
	s := testserver.Start(t, testserver.Options{})
	admin := strings.TrimPrefix(s.AdminURL, "http://")
	dir := t.TempDir()

	type ack struct {
		id string
		at time.Time // when the acknowledgement arrived
	}
	var (
		mu    sync.Mutex
		acks  []ack
		stop  atomic.Bool
		wg    sync.WaitGroup
		fails atomic.Int64
	)
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				b, _ := json.Marshal(validRequest())
				resp, err := http.Post(s.URL+"/api/public/v1/help", "application/json", bytes.NewReader(b))
				if err != nil {
					fails.Add(1)
					continue
				}
				var out struct{ ID string }
				err = json.NewDecoder(resp.Body).Decode(&out)
				resp.Body.Close()
				if err != nil || resp.StatusCode != http.StatusCreated {
					fails.Add(1)
					continue
				}
				id := out.ID
				mu.Lock()
				acks = append(acks, ack{id, time.Now()})
				mu.Unlock()
			}
		}()
	}
	acked := func() int { mu.Lock(); defer mu.Unlock(); return len(acks) }
	for deadline := time.Now().Add(30 * time.Second); acked() < 300 && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
	}

	var began []time.Time
	for range 3 {
		began = append(began, time.Now())
		out, err := runBinary(t, "backup", "--admin", admin, "--dir", dir, "--keep", "2")
		if err != nil || !strings.Contains(out, "consistent: every index and aggregate agrees with the records") {
			t.Fatalf("backup under load: %v\n%s", err, out)
		}
	}
	stop.Store(true)
	wg.Wait()
	if n := fails.Load(); n > 0 {
		t.Errorf("%d publications failed during the backups", n)
	}

	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, e := range entries {
		files = append(files, e.Name())
	}
	if len(files) != 2 {
		t.Fatalf("--keep 2 left %v", files)
	}
	newest := filepath.Join(dir, files[1]) // names sort by time: the third backup
	if out, err := runBinary(t, "restore", "--verify", newest); err != nil || !strings.Contains(out, "consistent") {
		t.Fatalf("restore --verify: %v\n%s", err, out)
	}
	restored := filepath.Join(t.TempDir(), "restored")
	if out, err := runBinary(t, "restore", "--verify", "--database", restored, "--input", newest); err != nil {
		t.Fatalf("restore: %v\n%s", err, out)
	}
	s.Stop()
	r := testserver.Start(t, testserver.Options{DataDir: restored})
	var want []string
	for _, a := range acks {
		if a.at.Before(began[2]) {
			want = append(want, a.id)
		}
	}
	before := len(want)
	var missing atomic.Int64
	var rg sync.WaitGroup
	for w := range 8 {
		rg.Add(1)
		go func() {
			defer rg.Done()
			for i := w; i < len(want); i += 8 {
				resp, err := http.Get(r.URL + "/api/public/v1/help?view=detail&id=" + url.QueryEscape(want[i]))
				if err != nil {
					missing.Add(1)
					continue
				}
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					missing.Add(1)
				}
			}
		}()
	}
	rg.Wait()
	if n := missing.Load(); n > 0 {
		t.Errorf("%d of the %d records acknowledged before the backup began are not in it", n, before)
	}
	t.Logf("%d records acknowledged in all, %d before the last backup began", len(acks), before)
	if before < 300 {
		t.Fatalf("only %d records before the backup: the test proves little", before)
	}
}
