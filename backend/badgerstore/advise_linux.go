package badgerstore

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// adviser marks Badger's memory-mapped tables MADV_RANDOM. A page fault on a mapping without advice
// reads around the faulting page the whole read-ahead window of the device (8 MB on this machine's
// virtio disk, so a whole 1 MB table): a radius page reads 20 records from 20 tables far apart, and
// in a small memory cgroup each of those reads evicted what the next request needed. With MADV_RANDOM a
// fault reads the page it needs. Badger maps a table when it opens or writes it and has no hook for
// it, so the process's mappings are read again on every call and only the new ones advised.
//
// A whole export reads the tables in key order, where read-around is what it needs (4 KB faults halved
// a cold export's rate): while pages of one are read (bulk), every table is MADV_NORMAL again, and
// MADV_RANDOM comes back as soon as the export stops asking (restoreAfter).
type adviser struct {
	mu     sync.Mutex
	dir    []byte           // the database directory, as /proc/self/maps names it, with a trailing slash
	done   map[mapping]bool // mappings advised already
	advice int              // in force: MADV_RANDOM, or MADV_NORMAL during bulk reads
	// normalUntil (Unix ns) keeps MADV_NORMAL until bulkHold after the last bulk read.
	normalUntil atomic.Int64
	armed       atomic.Bool // a restoreAfter timer is pending
}

// bulkHold is how long after a bulk read the tables stay MADV_NORMAL: the next page of an export comes
// within milliseconds. Reads after it must not read whole tables around each fault: in the 256 MiB
// cgroup the radius rows right after a 1M export read 1–3 MB a request while it lasted.
const bulkHold = time.Second

type mapping struct{ start, inode uint64 }

func newAdviser(dir string) *adviser {
	abs, err := filepath.Abs(dir)
	if err == nil {
		if real, err := filepath.EvalSymlinks(abs); err == nil {
			abs = real
		}
	}
	return &adviser{dir: []byte(abs + "/"), done: map[mapping]bool{}, advice: unix.MADV_RANDOM}
}

// bulk says a bulk read is under way: the tables go MADV_NORMAL (at once, unless they already are) and
// stay so until bulkHold after the last call.
func (a *adviser) bulk() {
	now := time.Now()
	if a.normalUntil.Swap(now.Add(bulkHold).UnixNano()) > now.UnixNano() {
		return // already MADV_NORMAL, or about to be
	}
	_, _ = a.advise()
	a.restoreAfter(bulkHold)
}

// restoreAfter gives every table MADV_RANDOM back once the hold is over, looked at after d and again
// until then, rather than at the periodic advise call up to adviseEvery later. advise reads normalUntil
// itself, so a bulk read racing the timer leaves the advice it needs.
func (a *adviser) restoreAfter(d time.Duration) {
	if !a.armed.CompareAndSwap(false, true) {
		return // the pending timer looks at normalUntil when it fires
	}
	time.AfterFunc(d, func() {
		a.armed.Store(false)
		if left := time.Until(time.Unix(0, a.normalUntil.Load())); left > 0 {
			a.restoreAfter(left)
			return
		}
		_, _ = a.advise()
	})
}

// advise gives the advice in force to the tables mapped since the last call, or to every table when
// the advice changed (a bulk read began or its hold ended), and reports how many it advised.
func (a *adviser) advise() (int, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	want := unix.MADV_RANDOM
	if a.normalUntil.Load() > time.Now().UnixNano() {
		want = unix.MADV_NORMAL
	}
	all := want != a.advice
	a.advice = want
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
		if a.done[m] && !all {
			continue
		}
		// Addresses from the kernel, not Go pointers: the raw call needs no unsafe slice over them. A
		// mapping unmapped meanwhile (a table compacted away) answers ENOMEM, which is fine.
		if _, _, errno := unix.Syscall(unix.SYS_MADVISE, uintptr(lo), uintptr(hi-lo), uintptr(want)); errno == 0 {
			n++
		}
	}
	a.done = seen
	return n, sc.Err()
}

// tableTail is how much of each table's end preloadTableTails reads: the index (block offsets and bloom
// filter, ~15–20 KB for a 1 MB table) and the last blocks, which Badger's Open reads (biggest key).
const tableTail = 64 << 10

// preloadTableTails reads the tail of every table in dir into the page cache before Badger's Open maps
// and reads them: its faults then find their pages cached, where each would read around the whole table
// (the mappings are advised only after Open). FADV_RANDOM keeps these reads to what is asked.
func preloadTableTails(dir string) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return // a new directory: nothing to read
	}
	buf := make([]byte, tableTail)
	for _, e := range entries {
		if !e.Type().IsRegular() || filepath.Ext(e.Name()) != ".sst" {
			continue
		}
		f, err := os.Open(filepath.Join(dir, e.Name()))
		if err != nil {
			continue
		}
		if info, err := f.Stat(); err == nil {
			off := max(info.Size()-tableTail, 0)
			_ = unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_RANDOM)
			_, _ = f.ReadAt(buf[:info.Size()-off], off)
		}
		f.Close()
	}
}
