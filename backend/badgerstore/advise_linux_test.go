package badgerstore

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/directaid/directaid/backend/store"
	"github.com/directaid/directaid/schema"
)

// randomAdvice maps each mapping of a .sst file under dir (by path) to whether the kernel holds it
// MADV_RANDOM ("rr" in its VmFlags in /proc/self/smaps).
func randomAdvice(t *testing.T, dir string) map[string][]bool {
	t.Helper()
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string][]bool{}
	path := ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		switch {
		case len(fields) > 0 && strings.Contains(fields[0], "-") && !strings.HasSuffix(fields[0], ":"):
			path = ""
			if len(fields) == 6 && strings.HasPrefix(fields[5], real+"/") && strings.HasSuffix(fields[5], ".sst") {
				path = fields[5]
			}
		case path != "" && len(fields) > 0 && fields[0] == "VmFlags:":
			out[path] = append(out[path], slices.Contains(fields[1:], "rr"))
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// The tables a reopened store maps are advised MADV_RANDOM before Open returns: a read right after a
// restart (the cold cgroup of `make bench`) must not read a whole table around each fault.
func TestOpenAdvisesTablesRandom(t *testing.T) {
	dir := t.TempDir()
	s := open(t, Options{Dir: dir})
	recs := records("adv", 300)
	createAll(t, s, recs, nil)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = open(t, Options{Dir: dir})
	defer s.Close()
	maps := randomAdvice(t, dir)
	if len(maps) == 0 {
		t.Fatal("no table of the reopened store is mapped: nothing to check")
	}
	for path, advised := range maps {
		if slices.Contains(advised, false) {
			t.Errorf("%s: mapped without MADV_RANDOM", filepath.Base(path))
		}
	}
	if _, err := s.Get(context.Background(), recs[0].ID); err != nil {
		t.Fatal(err)
	}
}

// advise marks the mappings that appeared since its last call, and only those; files that are not
// tables, or not under the directory, keep their advice.
func TestAdviserMarksNewTablesOnly(t *testing.T) {
	dir, other := t.TempDir(), t.TempDir()
	mmap := func(path string) {
		t.Helper()
		if err := os.WriteFile(path, make([]byte, 3*os.Getpagesize()), 0o644); err != nil {
			t.Fatal(err)
		}
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		b, err := unix.Mmap(int(f.Fd()), 0, 3*os.Getpagesize(), unix.PROT_READ, unix.MAP_SHARED)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = unix.Munmap(b) })
	}
	mmap(filepath.Join(dir, "000001.sst"))
	mmap(filepath.Join(dir, "000001.vlog"))
	mmap(filepath.Join(other, "000001.sst"))
	a := newAdviser(dir)
	if n, err := a.advise(); err != nil || n != 1 {
		t.Fatalf("first call: %d advised (%v), want 1", n, err)
	}
	mmap(filepath.Join(dir, "000002.sst"))
	if n, err := a.advise(); err != nil || n != 1 {
		t.Fatalf("after a new table: %d advised (%v), want 1 (the new one)", n, err)
	}
	for _, d := range []string{dir, other} {
		for path, advised := range randomAdvice(t, d) {
			if want := d == dir; slices.Contains(advised, !want) {
				t.Errorf("%s: MADV_RANDOM %v, want %v", path, advised, want)
			}
		}
	}
	if got := randomAdvice(t, dir); len(got) != 2 {
		t.Errorf("tables mapped under the directory: %d, want 2", len(got))
	}
}

// A whole export's pages (Bulk) get read-around back for their key-ordered reads (MADV_NORMAL on every
// table) until bulkHold after the last such page, then MADV_RANDOM again at once.
func TestExportPagesReadAround(t *testing.T) {
	dir := t.TempDir()
	s := open(t, Options{Dir: dir})
	createAll(t, s, records("bulk", 300), nil)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = open(t, Options{Dir: dir})
	defer s.Close()
	advice := func() (random, normal int) {
		for _, advised := range randomAdvice(t, dir) {
			for _, rr := range advised {
				if rr {
					random++
				} else {
					normal++
				}
			}
		}
		return
	}
	list := func(limit int, bulk bool) {
		t.Helper()
		res, err := s.List(context.Background(), &store.ListSpec{Limit: limit, NoTotal: true, Bulk: bulk})
		if err != nil || len(res.Records) != min(limit, 300) {
			t.Fatalf("list of %d: %v, %d records", limit, err, len(res.Records))
		}
	}
	list(schema.MaxListLimit, false)
	if random, normal := advice(); random == 0 || normal != 0 {
		t.Fatalf("after a client's page: %d tables random, %d normal; want all random", random, normal)
	}
	list(schema.MaxListLimit+100, true)
	if random, normal := advice(); random != 0 || normal == 0 {
		t.Fatalf("during an export: %d tables random, %d normal; want all normal", random, normal)
	}
	// Back to MADV_RANDOM soon after the hold, with no periodic advise call meanwhile (the store's first
	// comes adviseEvery after Open): reads right after an export must not read whole tables.
	deadline := time.Now().Add(bulkHold + adviseEvery/2)
	for {
		random, normal := advice()
		if random > 0 && normal == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s after the export's last page: %d tables random, %d normal; want all random", bulkHold+adviseEvery/2, random, normal)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// preloadTableTails reads each table's last tableTail bytes into the page cache, and nothing around
// them: a dropped 1 MB table has its tail resident afterwards, its head not.
func TestPreloadTableTails(t *testing.T) {
	dir := t.TempDir()
	const size = 1 << 20
	path := filepath.Join(dir, "000001.sst")
	if err := os.WriteFile(path, make([]byte, size), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
		t.Fatal(err)
	}
	m, err := unix.Mmap(int(f.Fd()), 0, size, unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(m)
	page := os.Getpagesize()
	resident := func() (head, tail int) {
		vec := make([]byte, size/page)
		_, _, errno := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&m[0])), uintptr(len(m)), uintptr(unsafe.Pointer(&vec[0])))
		if errno != 0 {
			t.Fatal(errno)
		}
		for i, v := range vec {
			if v&1 == 0 {
				continue
			}
			if i*page >= size-tableTail {
				tail++
			} else {
				head++
			}
		}
		return
	}
	if head, tail := resident(); head+tail > 0 {
		t.Skipf("the page cache kept %d pages after DONTNEED (a file system without it?)", head+tail)
	}
	preloadTableTails(dir)
	if head, tail := resident(); tail != tableTail/page || head != 0 {
		t.Errorf("after preloading: %d of %d tail pages resident, %d head pages; want all and none", tail, tableTail/page, head)
	}
}
