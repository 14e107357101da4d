package badgerstore

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/dgraph-io/badger/v4"
)

// memFileExt is how Badger names a memtable's write-ahead log: the memtable's fid, at least five digits,
// then .mem (badger v4.9.6 memtable.go, mtFilePath).
const memFileExt = ".mem"

// removeEmptyMemtables removes the memtable files of dir that are empty, before Badger opens it. Badger
// creates a new memtable's file, then sizes it (to twice the memtable size) and writes its header; a kill
// between the two leaves a 0-byte file, and the next open fails on it ("while opening memtables … while
// opening fid: N err: Create a new file", dgraph-io/badger#2207; the open after that succeeds, as the
// failed one sized the file). An empty file holds no data: Badger writes a memtable's log only once the
// file is sized and its header written, so removing it loses nothing. One log line per file removed.
func removeEmptyMemtables(dir string, log badger.Logger) error {
	entries, err := os.ReadDir(dir)
	if os.IsNotExist(err) {
		return nil // a new database
	}
	if err != nil {
		return err
	}
	for _, e := range entries {
		name := e.Name()
		fid, isMem := strings.CutSuffix(name, memFileExt)
		if !isMem || e.IsDir() {
			continue
		}
		if _, err := strconv.ParseInt(fid, 10, 64); err != nil {
			continue // not Badger's; Badger itself will refuse it
		}
		fi, err := e.Info()
		if err != nil {
			return err
		}
		if fi.Size() != 0 {
			continue
		}
		path := filepath.Join(dir, name)
		if err := os.Remove(path); err != nil {
			return fmt.Errorf("remove the empty memtable file %s (left by a kill; badger cannot open it): %w", path, err)
		}
		if log != nil {
			log.Warningf("removed %s, an empty memtable file that a kill left while Badger was creating it "+
				"(it holds no data; Badger would not open the database over it: dgraph-io/badger#2207)", path)
		}
	}
	return nil
}
