package badgerstore

import (
	"bytes"
	"encoding/binary"
	"errors"
	"slices"

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
		if !spec.NoTotal {
			if err := feedTotal(txn, it, part, spec, f, match, res); err != nil {
				return err
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

// feedTotal sets the total of a change feed: its matching changes after since, counted up to
// store.MaxFeedCount; past that, decided by store.FeedTotal from the aggregates and the changes before
// since (counted up to the same bound).
func feedTotal(txn *badger.Txn, it *badger.Iterator, part string, spec *store.ListSpec, f *filter, match func() (string, bool, error), res *store.ListResult) error {
	since := spec.SinceMillis()
	p, from := partitionPrefix(prefixChange, part), changeKey(part, since+1, "")
	var lastAfter int64
	for it.Seek(from); it.Valid(); it.Next() {
		_, ok, err := match()
		if err != nil {
			return err
		}
		if ok {
			if res.Total++; res.Total > store.MaxFeedCount {
				lastAfter = int64(binary.BigEndian.Uint64(it.Item().Key()[len(p):]))
				break
			}
		}
	}
	if res.Total <= store.MaxFeedCount {
		return nil
	}
	before := 0
	for it.Seek(p); it.Valid() && bytes.Compare(it.Item().Key(), from) < 0 && before <= store.MaxFeedCount; it.Next() {
		_, ok, err := match()
		if err != nil {
			return err
		}
		if ok {
			before++
		}
	}
	n, err := countByAggregates(txn, spec, f)
	if err != nil {
		return err
	}
	var newest int64
	if before > store.MaxFeedCount {
		rev := txn.NewIterator(badger.IteratorOptions{Prefix: p, Reverse: true})
		defer rev.Close()
		for rev.Seek(append(slices.Clone(p), 0xff)); rev.Valid(); rev.Next() {
			if v, err := rev.Item().ValueCopy(nil); err != nil {
				return err
			} else if len(v) == 4 && f.matchStatus(v[0]) && f.matchCodes(v[1], v[2], v[3]) {
				newest = int64(binary.BigEndian.Uint64(rev.Item().Key()[len(p):]))
				break
			}
		}
	}
	res.Total, res.TotalExact = store.FeedTotal(n, before, since, lastAfter, newest)
	return nil
}

var errBadChange = errors.New("change index: bad entry")
