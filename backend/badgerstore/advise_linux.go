package badgerstore

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"
)

// adviser marks Badger's memory-mapped tables MADV_RANDOM. A page fault on a mapping without advice
// reads around the faulting page the whole read-ahead window of the device (8 MB on this machine's
// virtio disk, so a whole 1 MB table): a radius page reads 20 records from 20 tables far apart, and
// in a small memory cgroup each of those reads evicted what the next request needed. With MADV_RANDOM a
// fault reads the page it needs. Badger maps a table when it opens or writes it and has no hook for
// it, so the process's mappings are read again on every call and only the new ones advised.
type adviser struct {
	dir  []byte           // the database directory, as /proc/self/maps names it, with a trailing slash
	done map[mapping]bool // mappings advised already
}

type mapping struct{ start, inode uint64 }

func newAdviser(dir string) *adviser {
	abs, err := filepath.Abs(dir)
	if err == nil {
		if real, err := filepath.EvalSymlinks(abs); err == nil {
			abs = real
		}
	}
	return &adviser{dir: []byte(abs + "/"), done: map[mapping]bool{}}
}

// advise marks the tables mapped since the last call, and reports how many it marked.
func (a *adviser) advise() (int, error) {
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	seen := make(map[mapping]bool, len(a.done))
	n := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// start-end perms offset dev inode path
		fields := bytes.Fields(sc.Bytes())
		if len(fields) != 6 || !bytes.HasPrefix(fields[5], a.dir) || !bytes.HasSuffix(fields[5], []byte(".sst")) {
			continue
		}
		start, end, ok := bytes.Cut(fields[0], []byte("-"))
		if !ok {
			continue
		}
		lo, err1 := strconv.ParseUint(string(start), 16, 64)
		hi, err2 := strconv.ParseUint(string(end), 16, 64)
		inode, err3 := strconv.ParseUint(string(fields[4]), 10, 64)
		if err1 != nil || err2 != nil || err3 != nil || hi <= lo {
			continue
		}
		m := mapping{lo, inode}
		seen[m] = true
		if a.done[m] {
			continue
		}
		// Addresses from the kernel, not Go pointers: the raw call needs no unsafe slice over them. A
		// mapping unmapped meanwhile (a table compacted away) answers ENOMEM, which is fine.
		if _, _, errno := unix.Syscall(unix.SYS_MADVISE, uintptr(lo), uintptr(hi-lo), unix.MADV_RANDOM); errno == 0 {
			n++
		}
	}
	a.done = seen
	return n, sc.Err()
}
