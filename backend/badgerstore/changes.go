package badgerstore

import (
	"bytes"
	"encoding/binary"
	"errors"

	"github.com/dgraph-io/badger/v4"

	"github.com/directaid/directaid/backend/store"
)

// changes answers a list with Since: the change index of the emergency (or of all), oldest change first,
// from one snapshot. The total counts the matching changes after Since (not only after the cursor).
func (s *Store) changes(spec *store.ListSpec) (*store.ListResult, error) {
	res := &store.ListResult{TotalExact: true}
	f := newFilter(spec)
	part := spec.EmergencySlug
	if part == "" {
		part = allPartition
	}
	p := partitionPrefix(prefixChange, part)
	err := s.db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: p})
		defer it.Close()
		// match decodes the entry at it and reports its id when it passes the filters.
		match := func() (string, bool, error) {
			item := it.Item()
			id := string(item.Key()[len(p)+8:])
			var ok bool
			err := item.Value(func(v []byte) error {
				if len(v) != 4 {
					return errBadChange
				}
				ok = f.matchStatus(v[0]) && f.matchCodes(v[1], v[2], v[3])
				return nil
			})
			return id, ok, err
		}
		var ids []string
		var last int64
		seek := changeKey(part, spec.SinceMillis()+1, "")
		if c := spec.After; c != nil {
			seek = changeKey(part, c.Updated, c.ID)
		}
		for it.Seek(seek); it.Valid(); it.Next() {
			if spec.After != nil && bytes.Equal(it.Item().Key(), seek) {
				continue
			}
			id, ok, err := match()
			if err != nil {
				return err
			}
			if !ok {
				continue
			}
			if len(ids) == spec.Limit {
				res.Next = &store.Cursor{ID: ids[len(ids)-1], Updated: last}
				break
			}
			ids = append(ids, id)
			last = int64(binary.BigEndian.Uint64(it.Item().Key()[len(p):]))
		}
		if spec.NoTotal {
			res.Total, res.TotalExact = len(ids), spec.After == nil && res.Next == nil
		}
		for it.Seek(changeKey(part, spec.SinceMillis()+1, "")); !spec.NoTotal && it.Valid(); it.Next() {
			_, ok, err := match()
			if err != nil {
				return err
			}
			if ok {
				res.Total++
			}
		}
		for _, id := range ids {
			rec, err := getTxn(txn, id)
			if err != nil {
				return err
			}
			res.Records = append(res.Records, rec)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

var errBadChange = errors.New("change index: bad entry")
