package e2e

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/directaid/directaid/internal/testserver"
)

// A second `directaid run` of a running server's Caddyfile exits at once, saying why, before Caddy takes
// the admin endpoint from the first: the first keeps its admin endpoint (its backups, moderation and
// reloads) and its publications.
func TestSecondServerRefused(t *testing.T) {
	t.Parallel()
	s := testserver.Start(t, testserver.Options{})
	_, first := publish(t, s, validRequest())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, testserver.Binary(t), "run", "--config", s.CaddyfilePath(), "--adapter", "caddyfile").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "another server is already running with the admin endpoint") {
		t.Fatalf("a second run: %v\n%s", err, out)
	}
	if q := moderate(t, s, "queue"); !strings.HasPrefix(strings.TrimSpace(q), "[") {
		t.Fatalf("the first server's admin endpoint after the refused second run: %s", q)
	}
	if code, body := detailStatus(t, s, first["id"].(string)); code != 200 {
		t.Fatalf("the first server's record: %d %v", code, body)
	}
}
