package badgerstore

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/dgraph-io/badger/v4"

	"github.com/directaid/directaid/backend/store"
)

// TestOpenOverAnEmptyMemtable plants what a kill between Badger's creating a memtable file and sizing it
// leaves (dgraph-io/badger#2207): an empty NNNNN.mem with the next fid. Badger alone does not open the
// database over it; Open removes it, says so in one log line, and every record is there — in a database
// closed cleanly (records in tables) and in the image of one killed (records only in the memtable's log).
func TestOpenOverAnEmptyMemtable(t *testing.T) {
	for _, c := range []struct {
		name string
		make func(t *testing.T, dir string, recs []*store.Record) // writes recs into dir, left as a stopped process leaves it
	}{
		{"closed", func(t *testing.T, dir string, recs []*store.Record) {
			s := open(t, Options{Dir: dir})
			createOK(t, s, recs)
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
		}},
		{"killed", func(t *testing.T, dir string, recs []*store.Record) {
			// The files of a live store are what a kill -9 leaves: its writes are synced and it does not
			// close. Copied while it idles (sparse: the value log and memtables are mostly holes).
			live := t.TempDir()
			s := open(t, Options{Dir: live})
			defer s.Close()
			createOK(t, s, recs)
			if out, err := exec.Command("cp", "-a", "--sparse=always", live+"/.", dir).CombinedOutput(); err != nil {
				t.Fatalf("copy: %v %s", err, out)
			}
			if err := os.Remove(filepath.Join(dir, "LOCK")); err != nil {
				t.Fatal(err)
			}
			if memFids(t, dir) == nil {
				t.Fatal("the image has no memtable: the records are not only in its log")
			}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir, recs := t.TempDir(), records(c.name, 50)
			c.make(t, dir, recs)
			fids := memFids(t, dir)
			next := 1 // Badger's next memtable fid: one after the greatest, 1 when there is none
			if len(fids) > 0 {
				next = fids[len(fids)-1] + 1
			}
			planted := filepath.Join(dir, fmt.Sprintf("%05d%s", next, memFileExt))
			plant := func() {
				if err := os.WriteFile(planted, nil, 0o644); err != nil {
					t.Fatal(err)
				}
			}

			// The premise: Badger alone fails over the planted file, as after the kill.
			plant()
			if db, err := badger.Open(badgerOptions(Options{Dir: dir})); err == nil {
				_ = db.Close()
				t.Fatal("badger opened the database over an empty memtable file: the plant does not reproduce badger#2207")
			} else if !strings.Contains(err.Error(), "Create a new file") {
				t.Fatalf("badger over an empty memtable file: %v", err)
			}
			plant() // that failed open sized the file: empty it again

			log := &memLog{}
			s := open(t, Options{Dir: dir, Logger: log})
			defer s.Close()
			for _, r := range recs {
				got, err := s.Get(context.Background(), r.ID)
				if err != nil || got.ExternalID != r.ExternalID || got.Title != r.Title {
					t.Fatalf("record %s after the open: %+v %v", r.ExternalID, got, err)
				}
			}
			if err := s.Probe(context.Background()); err != nil {
				t.Fatalf("a write after the open: %v", err)
			}
			if lines := log.matching(planted); len(lines) != 1 || !strings.Contains(lines[0], "empty memtable file") {
				t.Fatalf("the log about %s: %q", planted, lines)
			}
		})
	}
}

func createOK(t *testing.T, s *Store, recs []*store.Record) {
	t.Helper()
	for _, r := range recs {
		if _, created, err := s.Create(context.Background(), r); err != nil || !created {
			t.Fatalf("create %s: %v %v", r.ExternalID, created, err)
		}
	}
}

// memFids are the fids of the memtable files in dir, ascending.
func memFids(t *testing.T, dir string) []int {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, "*"+memFileExt))
	if err != nil {
		t.Fatal(err)
	}
	var fids []int // Glob sorts, and Badger's names have a fixed width
	for _, n := range names {
		fid, err := strconv.Atoi(strings.TrimSuffix(filepath.Base(n), memFileExt))
		if err != nil {
			t.Fatal(err)
		}
		fids = append(fids, fid)
	}
	return fids
}

// memLog is a badger.Logger that keeps every line.
type memLog struct {
	mu    sync.Mutex
	lines []string
}

func (l *memLog) add(f string, v ...any) {
	l.mu.Lock()
	l.lines = append(l.lines, fmt.Sprintf(f, v...))
	l.mu.Unlock()
}

func (l *memLog) Errorf(f string, v ...any)   { l.add(f, v...) }
func (l *memLog) Warningf(f string, v ...any) { l.add(f, v...) }
func (l *memLog) Infof(f string, v ...any)    { l.add(f, v...) }
func (l *memLog) Debugf(f string, v ...any)   { l.add(f, v...) }

func (l *memLog) matching(s string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, line := range l.lines {
		if strings.Contains(line, s) {
			out = append(out, line)
		}
	}
	return out
}
