package e2e

import (
	"bytes"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dgraph-io/badger/v4"

	"github.com/directaid/directaid/internal/testserver"
)

func TestBackupAndRestore(t *testing.T) {
	t.Parallel()
	s := testserver.Start(t, testserver.Options{})
	body := validRequest()
	_, first := publish(t, s, body)

	resp, err := http.Get(s.AdminURL + "/directaid/backup")
	if err != nil {
		t.Fatal(err)
	}
	backup, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || len(backup) == 0 {
		t.Fatalf("backup: %d, %d bytes", resp.StatusCode, len(backup))
	}
	file := filepath.Join(t.TempDir(), "directaid.bak")
	if err := os.WriteFile(file, backup, 0o600); err != nil {
		t.Fatal(err)
	}
	restored := filepath.Join(t.TempDir(), "restored")
	if out, err := runBinary(t, "restore", "--database", restored, "--input", file); err != nil || !strings.Contains(out, "checksums verified") ||
		!strings.Contains(out, "personal data erased after that are back in it") {
		t.Fatalf("restore (it says what it brings back): %v\n%s", err, out)
	}
	if out, err := runBinary(t, "restore", "--database", restored, "--input", file); err == nil {
		t.Fatalf("restoring over a non-empty directory must fail:\n%s", out)
	}
	r := testserver.Start(t, testserver.Options{DataDir: restored})
	if resp, again := publish(t, r, body); resp.StatusCode != 200 || again["id"] != first["id"] {
		t.Fatalf("restored database does not hold the record: %d %v", resp.StatusCode, again)
	}

	// The backup carries checksums of its content: one digit of the phone number changed, or the file
	// cut short, fails `restore --verify` with where; intact, it passes.
	damaged := func(name string, b []byte, want ...string) {
		t.Helper()
		path := filepath.Join(t.TempDir(), name+".bak")
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		out, err := runBinary(t, "restore", "--verify", path)
		if err == nil {
			t.Fatalf("%s: restore --verify passed:\n%s", name, out)
		}
		t.Logf("%s: %s", name, out)
		for _, w := range want {
			if !strings.Contains(out, w) {
				t.Errorf("%s: restore --verify does not say %q:\n%s", name, w, out)
			}
		}
	}
	if out, err := runBinary(t, "restore", "--verify", file); err != nil || !strings.Contains(out, "checksums verified") || !strings.Contains(out, "consistent") {
		t.Fatalf("restore --verify: %v\n%s", err, out)
	}
	phone := []byte(`"contactE164":"+573001234567"`)
	at := bytes.Index(backup, phone)
	if at < 0 {
		t.Fatal("no phone number in the backup")
	}
	changed := bytes.Clone(backup)
	changed[at+len(phone)-3] = '9'
	damaged("phone", changed, "frame 1 (bytes ", "checksum mismatch", "record "+first["id"].(string))
	damaged("truncated", backup[:len(backup)-10], "truncated")

	// A backup in the format before checksums (Badger's own, DB.Backup) still restores, and says that
	// it has none.
	s.Stop()
	db, err := badger.Open(badger.DefaultOptions(s.DataDir).WithLogger(nil))
	if err != nil {
		t.Fatal(err)
	}
	var old bytes.Buffer
	_, err = db.Backup(&old, 0)
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	oldFile := filepath.Join(t.TempDir(), "old.bak")
	if err := os.WriteFile(oldFile, old.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := runBinary(t, "restore", "--verify", oldFile); err != nil || !strings.Contains(out, "no checksum") || !strings.Contains(out, "1 records") {
		t.Fatalf("restore --verify of a backup without checksums: %v\n%s", err, out)
	}
}
