package badgerstore

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/dgraph-io/badger/v4"

	"github.com/directaid/directaid/backend/store"
	"github.com/directaid/directaid/backend/store/recordjson"
)

// A database written before Create refused taken ids may hold two publications under one id: the second
// record overwrote the first, whose pair key still points to the id, and whose index entries and counters
// still count it. Verify names such ids (sharedIDs); Repair gives each publication its own again.

// sharedID is an id that pairs of other publications point to: pairs counts them.
type sharedID struct {
	id    string
	pairs int
	keys  [][]byte // their pair keys
}

// sharedIDs finds the pair keys whose id holds the record of another pair, or no record, grouped by id.
func sharedIDs(txn *badger.Txn) ([]*sharedID, error) {
	var out []*sharedID
	byID := map[string]*sharedID{}
	it := txn.NewIterator(badger.IteratorOptions{Prefix: prefixPair, PrefetchValues: true, PrefetchSize: 100})
	defer it.Close()
	for it.Rewind(); it.Valid(); it.Next() {
		pk := it.Item().KeyCopy(nil)
		id, err := it.Item().ValueCopy(nil)
		if err != nil {
			return nil, err
		}
		holder, err := pairOf(txn, string(id))
		if err != nil {
			return nil, err
		}
		if bytes.Equal(holder, pk) {
			continue
		}
		sh := byID[string(id)]
		if sh == nil {
			sh = &sharedID{id: string(id)}
			byID[sh.id] = sh
			out = append(out, sh)
		}
		sh.pairs++
		sh.keys = append(sh.keys, pk)
	}
	return out, nil
}

// pairOf is the pair key of the record stored under id, nil when there is none.
func pairOf(txn *badger.Txn, id string) ([]byte, error) {
	rec, err := getTxn(txn, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return pairKey(rec.Source, rec.ExternalID), nil
}

// Repair mends the database in dir, which nothing else may have open, and reports what it did to report:
// each publication that shared an id with another gets an id of its own from ids (nil: store.NewIDNear)
// with the content of its own earlier version of the record, where Badger still keeps that version (a
// new updatedAt, so that mirrors fetch it); where it does not, its pair is freed, so that its publisher's
// retry publishes it again. Then every index entry and counter is rebuilt from the records, as Open
// rebuilds an older database's. A consistent database is left as it is but for the rebuild.
func Repair(dir string, ids store.IDSource, report io.Writer) error {
	if ids == nil {
		ids = store.NewIDNear
	}
	db, err := badger.Open(badgerOptions(Options{Dir: dir}))
	if err != nil {
		return fmt.Errorf("open %s: %w", dir, err)
	}
	var shared []*sharedID
	if err := db.View(func(txn *badger.Txn) (err error) { shared, err = sharedIDs(txn); return err }); err != nil {
		_ = db.Close()
		return err
	}
	last, err := lastChange(db)
	if err != nil {
		_ = db.Close()
		return err
	}
	stamp := max(time.Now().UnixMilli(), last+1)
	for _, sh := range shared {
		for _, pk := range sh.keys {
			err := db.Update(func(txn *badger.Txn) error {
				rec, err := earlierVersion(txn, sh.id, pk)
				if err != nil {
					return err
				}
				if rec == nil {
					fmt.Fprintf(report, "id %s: the record of another publication that shared it is not kept any more; its pair is freed, so that its publisher's retry publishes it again\n", sh.id)
					return txn.Delete(pk)
				}
				for try := 0; ; try++ {
					if _, err := txn.Get(recordKey(rec.ID)); errors.Is(err, badger.ErrKeyNotFound) {
						break
					} else if err != nil {
						return err
					}
					if try == maxIDTries {
						return fmt.Errorf("%d ids in a row were taken", maxIDTries)
					}
					rec.ID = ids(rec.CreatedAt, rec.Latitude, rec.Longitude)
				}
				rec.UpdatedAt = time.UnixMilli(stamp).UTC()
				stamp++
				val, err := recordjson.Encode(rec)
				if err != nil {
					return err
				}
				fmt.Fprintf(report, "id %s: a publication that shared it is back, under the id %s\n", sh.id, rec.ID)
				return errors.Join(txn.Set(recordKey(rec.ID), val), txn.Set(pk, []byte(rec.ID)))
			})
			if err != nil {
				_ = db.Close()
				return fmt.Errorf("repair id %s: %w", sh.id, err)
			}
		}
	}
	// Every derived key and counter is rebuilt when Open finds no index version (ensureIndexes).
	if err := db.Update(func(txn *badger.Txn) error { return txn.Delete(keyIndexVersion) }); err != nil {
		_ = db.Close()
		return err
	}
	if err := db.Close(); err != nil {
		return err
	}
	s, err := Open(Options{Dir: dir, MinFreeBytes: -1})
	if err != nil {
		return fmt.Errorf("rebuild the indexes: %w", err)
	}
	fmt.Fprintf(report, "every index entry and counter rebuilt from the records\n")
	return s.Close()
}

// earlierVersion is the newest version of record id that Badger still keeps whose pair key is pk, with
// id unchanged; nil when there is none.
func earlierVersion(txn *badger.Txn, id string, pk []byte) (*store.Record, error) {
	key := recordKey(id)
	it := txn.NewIterator(badger.IteratorOptions{Prefix: key, AllVersions: true})
	defer it.Close()
	for it.Rewind(); it.Valid(); it.Next() {
		item := it.Item()
		if !bytes.Equal(item.Key(), key) || item.IsDeletedOrExpired() {
			continue
		}
		rec := &store.Record{}
		if err := item.Value(func(v []byte) error { return json.Unmarshal(v, rec) }); err != nil {
			continue // a version that does not decode is no way back
		}
		if bytes.Equal(pairKey(rec.Source, rec.ExternalID), pk) {
			rec.Normalize()
			return rec, nil
		}
	}
	return nil, nil
}
