package badgerstore

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/dgraph-io/badger/v4"

	"github.com/directaid/directaid/backend/store"
	"github.com/directaid/directaid/backend/store/recordjson"
)

var _ store.Transfer = (*Store)(nil)

// Scan implements store.Transfer: the record keys in one read transaction, so that the scan is a snapshot
// even while the store takes writes.
func (s *Store) Scan(ctx context.Context, fn func(*store.Record) error) error {
	return s.db.View(func(txn *badger.Txn) error {
		opts := badger.DefaultIteratorOptions
		opts.Prefix = prefixRecord
		it := txn.NewIterator(opts)
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			if err := ctx.Err(); err != nil {
				return err
			}
			item := it.Item()
			var rec *store.Record
			if err := item.Value(func(v []byte) (err error) { rec, err = recordjson.Decode(v); return err }); err != nil {
				return fmt.Errorf("record %s: %w", item.Key()[len(prefixRecord):], err)
			}
			if err := fn(rec); err != nil {
				return err
			}
		}
		return nil
	})
}

// orderedReadMin is the page size from which readRecords walks an iterator instead of getting each
// record: below it, a few point reads cost less than opening an iterator.
const orderedReadMin = 32

// orderedReadSteps is how far readRecords steps an iterator towards the next id before it seeks.
const orderedReadSteps = 8

// readRecords reads the records of ids. When they are many and newest first (descending, as in every
// list but a radius list), one reverse iterator reads them in key order (record keys are ordered by id):
// each table block is decompressed once for the records it holds, where a Get per record finds its
// block again and, the block cache being smaller than the records, decompresses it again — most of the
// cost of a whole export. A missing record is store.ErrNotFound, as for getTxn.
func readRecords(txn *badger.Txn, ids []string, out []*store.Record) ([]*store.Record, error) {
	if len(ids) < orderedReadMin || !slices.IsSortedFunc(ids, func(a, b string) int { return strings.Compare(b, a) }) {
		for _, id := range ids {
			rec, err := getTxn(txn, id)
			if err != nil {
				return out, err
			}
			out = append(out, rec)
		}
		return out, nil
	}
	it := txn.NewIterator(badger.IteratorOptions{Prefix: prefixRecord, Reverse: true})
	defer it.Close()
	key := slicesGrow(prefixRecord, 32)
	for i, id := range ids {
		key = append(key[:len(prefixRecord)], id...)
		if i > 0 {
			for steps := 0; steps < orderedReadSteps && it.Valid() && bytes.Compare(it.Item().Key(), key) > 0; steps++ {
				it.Next()
			}
		}
		if i == 0 || !it.Valid() || !bytes.Equal(it.Item().Key(), key) {
			it.Seek(key) // the largest key ≤ key: the record if it exists
		}
		if !it.Valid() || !bytes.Equal(it.Item().Key(), key) {
			return out, store.ErrNotFound
		}
		var rec *store.Record
		if err := it.Item().Value(func(v []byte) (err error) { rec, err = recordjson.Decode(v); return err }); err != nil {
			return out, fmt.Errorf("record %s: %w", id, err)
		}
		out = append(out, rec)
	}
	return out, nil
}

func slicesGrow(p []byte, n int) []byte { return append(make([]byte, 0, len(p)+n), p...) }
