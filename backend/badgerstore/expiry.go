package badgerstore

import (
	"context"
	"encoding/binary"
	"slices"
	"time"

	"github.com/dgraph-io/badger/v4"

	"github.com/directaid/directaid/backend/store"
)

// expiryKey is the key of rec in the expiry index (prefixExpiry), nil when it is not open or never
// expires. Written and removed with the record's other index entries (indexEntries).
func expiryKey(rec *store.Record) []byte {
	if rec.Status != store.StatusOpen || rec.ExpiresAt.IsZero() {
		return nil
	}
	k := binary.BigEndian.AppendUint64(slices.Clone(prefixExpiry), uint64(max(rec.ExpiresAt.UnixMilli(), 0)))
	return append(k, rec.ID...)
}

// Expiring implements store.Store: a key-only scan of the expiry index up to at.
func (s *Store) Expiring(ctx context.Context, at time.Time, limit int) ([]string, error) {
	if err := s.failure(); err != nil {
		return nil, err
	}
	end := uint64(max(at.UnixMilli(), 0))
	var ids []string
	err := s.db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: prefixExpiry})
		defer it.Close()
		for it.Rewind(); it.Valid() && len(ids) < limit; it.Next() {
			k := it.Item().Key()[len(prefixExpiry):]
			if len(k) < 8 || binary.BigEndian.Uint64(k) > end {
				break
			}
			ids = append(ids, string(k[8:]))
		}
		return ctx.Err()
	})
	return ids, err
}
