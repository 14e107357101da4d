package badgerstore

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/directaid/directaid/backend/store"
)

// fakeDisk is a disk whose free space a test sets.
type fakeDisk struct{ free atomic.Int64 }

func (d *fakeDisk) read(string) (int64, error) { return d.free.Load(), nil }

// transitions records what a guard tells WriteState.
type transitions struct {
	mu  sync.Mutex
	got []error
}

func (tr *transitions) note(err error) {
	tr.mu.Lock()
	tr.got = append(tr.got, err)
	tr.mu.Unlock()
}

func (tr *transitions) list() []error {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return append([]error(nil), tr.got...)
}

// TestDiskGuardHysteresis: the guard refuses under min_free_space and accepts again only at min + 10%,
// so a disk hovering at the limit does not switch it on and off; WriteState hears of each change once,
// however many checks see the same state; a disk that cannot be read leaves the state as it was.
func TestDiskGuardHysteresis(t *testing.T) {
	const mib = 1 << 20
	disk := &fakeDisk{}
	var readErr atomic.Bool
	tr := &transitions{}
	g := newDiskGuard("/data", 100*mib, func(dir string) (int64, error) {
		if readErr.Load() {
			return 0, errors.New("statfs failed")
		}
		return disk.read(dir)
	}, tr.note)
	for _, step := range []struct {
		free     int64
		refusing bool
	}{
		{200 * mib, false},
		{100 * mib, false}, // at the limit: still room
		{100*mib - 1, true},
		{101 * mib, true}, // back over the limit, not over the margin
		{95 * mib, true},
		{110*mib - 1, true},
		{110 * mib, false}, // min + 10%
		{105 * mib, false}, // under the margin, over the limit: still accepting
		{99 * mib, true},
		{150 * mib, false},
	} {
		disk.free.Store(step.free)
		for range 50 { // many requests see one state: one transition
			err := g.check(true)
			if (err != nil) != step.refusing {
				t.Fatalf("%d bytes free: %v, want refusing %v", step.free, err, step.refusing)
			}
			if err != nil && (!errors.Is(err, store.ErrUnavailable) || !strings.Contains(err.Error(), "min_free_space") ||
				!strings.Contains(err.Error(), "resume at 110 MiB free")) {
				t.Fatalf("the reason: %v", err)
			}
		}
	}
	got := tr.list()
	if len(got) != 4 || got[0] == nil || got[1] != nil || got[2] == nil || got[3] != nil {
		t.Fatalf("WriteState heard %v; want refusing, accepting, refusing, accepting", got)
	}

	disk.free.Store(10 * mib)
	if g.check(true) == nil {
		t.Fatal("a full disk accepted")
	}
	readErr.Store(true)
	if err := g.check(true); err == nil {
		t.Fatal("a disk that cannot be read ended the refusal")
	}
	readErr.Store(false)
	disk.free.Store(200 * mib)
	if err := g.check(true); err != nil {
		t.Fatal(err)
	}
	if n := len(tr.list()); n != 6 {
		t.Fatalf("%d transitions in all, want 6", n)
	}

	// Between looks at the disk (once a second) the state stands, whatever the disk does.
	disk.free.Store(0)
	if err := g.check(false); err != nil {
		t.Fatalf("a check within the interval looked at the disk: %v", err)
	}
}

// refusalCounter is a store.Observer that counts refused writes.
type refusalCounter struct{ refused atomic.Int64 }

func (*refusalCounter) ObserveCommit(int, time.Duration) {}
func (*refusalCounter) ObserveGC(string, time.Duration)  {}
func (c *refusalCounter) ObserveWriteRefused()           { c.refused.Add(1) }

// TestStartShortOfSpace: a store opened on a disk under min_free_space but with room to open starts,
// serves reads, says once (at Open, not at the first write) that it refuses writes, refuses them with
// the reason and counts each; a retry of a stored record is answered; the probe says why; it takes
// writes again by itself once the disk is back over the margin, saying so once.
func TestStartShortOfSpace(t *testing.T) {
	const min = 512 << 20
	dir := t.TempDir()
	s := open(t, Options{Dir: dir})
	recs := records("short", 3)
	createOK(t, s, recs)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	disk := &fakeDisk{}
	disk.free.Store(openSpace(badgerOptions(Options{})) + 1) // room to open, not to write
	tr := &transitions{}
	obs := &refusalCounter{}
	s = open(t, Options{Dir: dir, MinFreeBytes: min, WriteState: tr.note, Observer: obs, freeSpace: disk.read})
	defer s.Close()
	if got := tr.list(); len(got) != 1 || !errors.Is(got[0], store.ErrUnavailable) {
		t.Fatalf("WriteState at Open: %v; want one refusal", got)
	}
	ctx := context.Background()
	for i := range 5 {
		if _, _, err := s.Create(ctx, records("refused", 1)[0]); !errors.Is(err, store.ErrUnavailable) {
			t.Fatalf("Create %d on a short disk: %v", i, err)
		}
	}
	if _, err := s.Update(ctx, recs[0].ID, func(r *store.Record) error { r.Status = store.StatusResolved; return nil }); !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("Update on a short disk: %v", err)
	}
	if got, created, err := s.Create(ctx, recs[1]); err != nil || created || got.ID != recs[1].ID {
		t.Fatalf("a retry of a stored record on a short disk: %v %v %v", got, created, err)
	}
	for _, r := range recs {
		if _, err := s.Get(ctx, r.ID); err != nil {
			t.Fatalf("a read on a short disk: %v", err)
		}
	}
	if err := s.Probe(ctx); !errors.Is(err, store.ErrUnavailable) || !strings.Contains(err.Error(), "min_free_space") {
		t.Fatalf("the probe on a short disk: %v", err)
	}
	if n := obs.refused.Load(); n != 6 {
		t.Fatalf("%d refused writes counted, want 6 (5 creates, 1 update; not the retry, not the probe)", n)
	}

	disk.free.Store(min + min/20) // over the limit, under the margin
	if err := s.Probe(ctx); err == nil {
		t.Fatal("writes resumed before the margin")
	}
	disk.free.Store(min + min/10)
	if err := s.Probe(ctx); err != nil {
		t.Fatal(err)
	}
	if _, created, err := s.Create(ctx, records("back", 1)[0]); err != nil || !created {
		t.Fatalf("Create once space is back: %v %v", created, err)
	}
	if got := tr.list(); len(got) != 2 || got[1] != nil {
		t.Fatalf("WriteState: %v; want one refusal, then one resumption", got)
	}
}

// TestOpenRefusesAFullDisk: on a disk with less free space than opening takes, Open refuses with the
// figures before Badger touches the directory (where a write into a new memtable would kill the process);
// with min_free_space off it does not look.
func TestOpenRefusesAFullDisk(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "new")
	disk := &fakeDisk{}
	disk.free.Store(20 << 20)
	_, err := Open(Options{Dir: dir, freeSpace: disk.read})
	if !errors.Is(err, ErrNoSpaceToOpen) || !strings.Contains(err.Error(), "has 20 MiB free") || !strings.Contains(err.Error(), "needs 64 MiB") {
		t.Fatalf("Open on a full disk: %v", err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("Open on a full disk touched %s: %v", dir, err)
	}
	s, err := Open(Options{Dir: dir, MinFreeBytes: -1, freeSpace: disk.read})
	if err != nil {
		t.Fatalf("Open with min_free_space off: %v", err)
	}
	_ = s.Close()
}

// TestOpenRefusesAPseudoFilesystem: a directory under /proc (a typo, a wrong variable) reads as a disk
// with 0 bytes free; Open says that it is no disk, not that the disk is full.
func TestOpenRefusesAPseudoFilesystem(t *testing.T) {
	if _, err := os.Stat("/proc/self"); err != nil {
		t.Skip("no /proc here")
	}
	_, err := Open(Options{Dir: "/proc/nope/data"})
	if err == nil || errors.Is(err, ErrNoSpaceToOpen) || !strings.Contains(err.Error(), "not on a disk") {
		t.Fatalf("Open under /proc: %v", err)
	}
}
