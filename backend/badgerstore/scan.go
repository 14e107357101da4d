package badgerstore

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/dgraph-io/badger/v4"

	"github.com/directaid/directaid/backend/store"
)

var _ store.Scanner = (*Store)(nil)

// Scan implements store.Scanner: the record keys in one read transaction, so that the scan is a snapshot
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
			rec := new(store.Record)
			if err := item.Value(func(v []byte) error { return json.Unmarshal(v, rec) }); err != nil {
				return fmt.Errorf("record %s: %w", item.Key()[len(prefixRecord):], err)
			}
			rec.Normalize()
			if err := fn(rec); err != nil {
				return err
			}
		}
		return nil
	})
}
