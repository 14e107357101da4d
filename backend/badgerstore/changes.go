package badgerstore

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
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
	err := s.view(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: p})
		defer it.Close()
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
			ok, err := matchChange(it.Item(), f)
			if err != nil {
				return err
			}
			if !ok {
				continue
			}
			id := string(it.Item().Key()[len(p)+8:])
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
			if _, err := feedTotal(txn, it, part, spec, f, res); err != nil {
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

// feedTotal sets the total of a change feed from its bounded walks (see store.FeedWalk and
// store.FeedTotal): the changes after since; when those are not all read, the changes at or before since;
// when neither are, the newest matching change. It returns the change entries the walks read.
func feedTotal(txn *badger.Txn, it *badger.Iterator, part string, spec *store.ListSpec, f *filter, res *store.ListResult) (read int, err error) {
	since := spec.SinceMillis()
	p, from := partitionPrefix(prefixChange, part), changeKey(part, since+1, "")
	after, n, err := walkFeed(it, p, from, nil, store.MaxFeedCount, f)
	if read += n; err != nil || after.Done {
		res.Total, res.TotalExact = store.FeedTotal(0, after, store.FeedWalk{}, since, 0)
		return read, err
	}
	before, n, err := walkFeed(it, p, p, from, store.MaxFeedCount, f)
	if read += n; err != nil {
		return read, err
	}
	all, err := countByAggregates(txn, spec, f)
	if err != nil || before.Done || after.Matches == 0 {
		res.Total, res.TotalExact = store.FeedTotal(all, after, before, since, 0)
		return read, err
	}
	rev := txn.NewIterator(badger.IteratorOptions{Prefix: p, Reverse: true})
	defer rev.Close()
	newest, n, err := walkFeed(rev, p, append(slices.Clone(p), 0xff), nil, 0, f)
	read += n
	res.Total, res.TotalExact = store.FeedTotal(all, after, before, since, newest.Last)
	return read, err
}

// walkFeed walks the change entries of partition prefix p from seek in its direction (forward, up to
// end when not nil), as store.FeedWalk says, with bound on its matches; n is the entries it read. An
// entry that is not a change index value is an error, never skipped.
func walkFeed(it *badger.Iterator, p, seek, end []byte, bound int, f *filter) (w store.FeedWalk, n int, err error) {
	for it.Seek(seek); it.Valid(); it.Next() {
		item := it.Item()
		k := item.Key()
		if end != nil && bytes.Compare(k, end) >= 0 {
			break
		}
		if n == store.MaxFeedRead {
			return w, n, nil
		}
		n++
		ok, err := matchChange(item, f)
		if err != nil {
			return w, n, err
		}
		if w.Last = int64(binary.BigEndian.Uint64(k[len(p):])); ok {
			if w.Matches++; w.Matches > bound {
				return w, n, nil
			}
		}
	}
	w.Done = true
	return w, n, nil
}

// matchChange reports whether the change index entry item passes f.
func matchChange(item *badger.Item, f *filter) (ok bool, err error) {
	err = item.Value(func(v []byte) error {
		if len(v) != 4 {
			return fmt.Errorf("%w: %q", errBadChange, item.Key())
		}
		ok = f.matchStatus(v[0]) && f.matchCodes(v[1], v[2], v[3])
		return nil
	})
	return ok, err
}

var errBadChange = errors.New("change index: bad entry")
