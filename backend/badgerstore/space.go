package badgerstore

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"github.com/dgraph-io/badger/v4"

	"github.com/directaid/directaid/backend/store"
)

// ErrNoSpaceToOpen is returned by Open when the disk of the database has less free space than opening
// it takes (openSpace). Badger sizes a new memtable file at open and writes it through a memory mapping,
// and flushes the memtables a crash left into table files written the same way: on a full disk the first
// write into such a page kills the process (SIGBUS, in badger.(*DB).openMemTable), and under systemd's
// Restart=on-failure that is a crash loop. Open refuses with the reason instead.
var ErrNoSpaceToOpen = store.ErrNoSpaceToOpen

// openMargin is what openSpace adds for the rest of an open: the discard-stats file (1 MiB), the headers
// of new log files, the manifest, and the first writes a reader's page faults do not count.
const openMargin = 16 << 20

// openSpace is the free space Open requires: every memtable's file at its full size (Badger makes each
// twice the memtable size) and the table each flushes into. With the store's options, 64 MiB.
func openSpace(opts badger.Options) int64 {
	n := int64(opts.NumMemtables)
	return n*2*opts.MemTableSize + n*opts.MemTableSize + openMargin
}

// checkOpenSpace returns ErrNoSpaceToOpen, with the figures, when the disk that holds (or will hold) dir
// has less than need bytes free; free reads a disk's free bytes (nil: freeBytes). A disk that cannot be
// read is not a reason to refuse.
func checkOpenSpace(dir string, need int64, free func(string) (int64, error)) error {
	if free == nil {
		free = freeBytes
	}
	at := dir
	for { // a new database's directory may not exist yet: its nearest existing parent is on the same disk
		if _, err := os.Stat(at); err == nil || filepath.Dir(at) == at {
			break
		}
		at = filepath.Dir(at)
	}
	// A path on a filesystem that holds no data (/proc, /sys: no blocks at all) reads as a full disk; it
	// is no place for a database, and saying «free space on that disk» would send the operator astray.
	var st syscall.Statfs_t
	if syscall.Statfs(at, &st) == nil && st.Blocks == 0 {
		return fmt.Errorf("the database's directory %s is on a filesystem that holds no files (%s is not on a disk): give database badger a directory on a disk", dir, at)
	}
	n, err := free(at)
	if err != nil || n >= need {
		return nil
	}
	return fmt.Errorf("%w: the disk of %s has %d MiB free, and opening the database needs %d MiB (Badger writes its new memtable through a memory mapping, which on a full disk kills the process): free space on that disk, then start directaid again",
		ErrNoSpaceToOpen, dir, n>>20, need>>20)
}
