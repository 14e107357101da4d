package e2e

import (
	"strings"
	"testing"

	"github.com/directaid/directaid/internal/testserver"
)

// TestVerifyCommand: `directaid verify` checks the running server's database through the admin endpoint
// while it serves, and `--database` (and `--repair`) a stopped one; both say it is consistent.
func TestVerifyCommand(t *testing.T) {
	t.Parallel()
	s := testserver.Start(t, testserver.Options{})
	for i := range 5 {
		body := validRequest()
		body["externalId"] = "verify-" + string(rune('a'+i))
		publish(t, s, body)
	}
	out, err := runBinary(t, "verify", "--admin", strings.TrimPrefix(s.AdminURL, "http://"))
	if err != nil || !strings.Contains(out, "the running database: 5 records, open 5") || !strings.Contains(out, "consistent") {
		t.Fatalf("verify of the running server: %v\n%s", err, out)
	}
	if out, err := runBinary(t, "verify", "--repair"); err == nil || !strings.Contains(out, "--database") {
		t.Fatalf("--repair without --database: %v\n%s", err, out)
	}
	s.Stop()
	db := s.DataDir
	out, err = runBinary(t, "verify", "--database", db)
	if err != nil || !strings.Contains(out, "5 records") || !strings.Contains(out, "consistent") {
		t.Fatalf("verify --database: %v\n%s", err, out)
	}
	out, err = runBinary(t, "verify", "--database", db, "--repair")
	if err != nil || !strings.Contains(out, "rebuilt from the records") || !strings.Contains(out, "consistent") {
		t.Fatalf("verify --repair: %v\n%s", err, out)
	}
	s.Launch()
	if resp, again := publish(t, s, func() map[string]any { b := validRequest(); b["externalId"] = "verify-a"; return b }()); resp.StatusCode != 200 || again["duplicate"] != true {
		t.Fatalf("after the repair the record answers its retry: %d %v", resp.StatusCode, again)
	}
}
