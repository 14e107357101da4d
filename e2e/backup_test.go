package e2e

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/directaid/directaid/internal/testserver"
)

func TestBackupAndRestore(t *testing.T) {
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
	if out, err := runBinary(t, "restore", "--database", restored, "--input", file); err != nil {
		t.Fatalf("restore: %v\n%s", err, out)
	}
	if out, err := runBinary(t, "restore", "--database", restored, "--input", file); err == nil {
		t.Fatalf("restoring over a non-empty directory must fail:\n%s", out)
	}
	r := testserver.Start(t, testserver.Options{DataDir: restored})
	if resp, again := publish(t, r, body); resp.StatusCode != 200 || again["id"] != first["id"] {
		t.Fatalf("restored database does not hold the record: %d %v", resp.StatusCode, again)
	}
}
