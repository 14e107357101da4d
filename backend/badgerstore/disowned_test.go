package badgerstore

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/directaid/directaid/backend/store"
)

// TestDisownedAcrossARestart: the disowned keys, which Disowned answers from memory, are those of the
// database: after a restart as before it, and a reclaim's removal too.
func TestDisownedAcrossARestart(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "db")
	s := open(t, Options{Dir: dir})
	a := records("disowned", 1)[0]
	if _, _, err := s.Create(ctx, a); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"k1", "k2"} {
		if err := s.Disown(ctx, store.Disowning{Key: k, RecordID: a.ID, Reporter: "r", Publisher: "p"}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Reclaim(ctx, "k2", "", ""); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = open(t, Options{Dir: dir})
	defer s.Close()
	for k, want := range map[string]bool{"k1": true, "k2": false, "k3": false} {
		if got, err := s.Disowned(ctx, k, "p", time.Now().Add(-time.Hour)); err != nil || got != want {
			t.Errorf("after a restart, Disowned(%s) = %v, %v; want %v", k, got, err, want)
		}
	}
}
