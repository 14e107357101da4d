package badgerstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/dgraph-io/badger/v4"

	"github.com/directaid/directaid/backend/store"
)

// Real erasure. An erased field leaves Badger's files only when every older version of the record is
// rewritten away, and Badger keeps them in three places:
//   - the memtable's write-ahead log (the .mem file), until the memtable is flushed (8 MB of writes);
//   - SST tables, until a compaction merges the old version with the new one in a single pass and the
//     new one is at or below the discard timestamp (the oldest read transaction still open);
//   - the value log, for values above ValueThreshold (never a record here: they stay in the LSM tree).
//
// So the maintenance cycle, when something was erased since the last one, blocks commits, writes two
// bound keys (the first and last possible keys, as deletions) so that the next level-0 table spans the
// whole key space, renews the store's snapshot (its read timestamp would hold the discard timestamp
// below the erasure), then calls DropPrefix on a marker key: that flushes every memtable (deleting their
// WAL files) and compacts all of level 0 into the base level together with every base table (the bounds
// overlap them all). Flatten then pushes the base level into the levels below, merging each key's
// versions. The deleted SST and WAL files are unlinked; nothing of the erased version stays in a file.
var (
	keyEraseLow  = []byte{0x00, 0x00, 'e', 'r', 'a', 's', 'e'}       // sorts before every other key
	keyEraseHigh = []byte{0xff, 0xff, 0xff, 'e', 'r', 'a', 's', 'e'} // sorts after every other key
	keyEraseDrop = []byte{0x00, 0x01, 'e', 'r', 'a', 's', 'e'}       // the DropPrefix marker
)

// DefaultMaintenanceInterval is the period of the maintenance cycle when Options.GCInterval is 0.
const DefaultMaintenanceInterval = 10 * time.Minute

// noteErasure makes the next maintenance cycle rewrite the database (see above).
func (s *Store) noteErasure() { s.erased.Store(true) }

// Maintain runs one maintenance cycle now: the erasure rewrite when something was erased since the
// last cycle, then value-log garbage collection. The periodic loop calls it; tests call it directly.
func (s *Store) Maintain(ctx context.Context) error {
	s.maintMu.Lock()
	defer s.maintMu.Unlock()
	var err error
	if s.erased.Swap(false) {
		if err = s.rewrite(); err != nil {
			s.erased.Store(true) // try again next cycle
		}
	}
	s.valueLogGC(ctx)
	return err
}

// rewrite drops every old version of every key from the files (see the comment at the top).
func (s *Store) rewrite() error {
	began := time.Now()
	s.commitMu.Lock()
	defer s.commitMu.Unlock()
	// DropPrefix below blocks Badger's writes: a checkpoint written meanwhile would fail, and the store
	// with it. Wait for the one in progress; the writer starts none while commitMu is held.
	s.ckptMu.Lock()
	defer s.ckptMu.Unlock()
	err := s.db.Update(func(txn *badger.Txn) error {
		if err := txn.Delete(keyEraseLow); err != nil {
			return err
		}
		if err := txn.Delete(keyEraseHigh); err != nil {
			return err
		}
		return txn.Set(keyEraseDrop, nil)
	})
	if err != nil {
		return fmt.Errorf("erasure: %w", err)
	}
	// The old snapshot's read timestamp is that of the erasure itself: while it is open, compaction
	// must keep the version before it. The new one reads at the bounds' commit.
	s.renewSnapshot()
	// A backup that reads below the bounds' commit holds the erased versions the same way: the rewrite
	// waits for the next cycle (a backup begun from here on reads above it).
	if sn := s.acquireSnapshot(); sn != nil {
		waits := s.backupBefore(sn.txn.ReadTs())
		sn.release()
		if waits {
			return errErasureWaits
		}
	}
	if err := s.db.DropPrefix(keyEraseDrop); err != nil {
		return fmt.Errorf("erasure: flush: %w", err)
	}
	if err := s.db.Flatten(2); err != nil {
		return fmt.Errorf("erasure: flatten: %w", err)
	}
	if l := s.db.Levels(); len(l) > 0 && l[0].NumTables > 0 {
		return errors.New("erasure: level 0 was not compacted")
	}
	if s.obs != nil {
		s.obs.ObserveGC("erasure", time.Since(began))
	}
	return nil
}

// valueLogGC rewrites value-log files while at least half of one is garbage.
func (s *Store) valueLogGC(ctx context.Context) {
	for ctx.Err() == nil {
		began := time.Now()
		err := s.db.RunValueLogGC(0.5)
		if s.obs != nil {
			result := "rewrote"
			switch {
			case errors.Is(err, badger.ErrNoRewrite):
				result = "nothing"
			case err != nil:
				result = "error"
			}
			s.obs.ObserveGC(result, time.Since(began))
		}
		if err != nil {
			return
		}
	}
}

// erasesPersonal reports whether going from old to rec removed a contact or a place.
func erasesPersonal(old, rec *store.Record) bool {
	return (old.ContactE164 != "" && rec.ContactE164 == "") || (old.ContactWhatsapp != "" && rec.ContactWhatsapp == "") ||
		(old.ContactName != "" && rec.ContactName == "") || (old.Address != "" && rec.Address == "") ||
		(old.Latitude != nil && rec.Latitude == nil)
}
