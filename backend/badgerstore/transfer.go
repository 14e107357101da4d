package badgerstore

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"slices"

	"github.com/dgraph-io/badger/v4"

	"github.com/directaid/directaid/backend/store"
)

var _ store.Transferer = (*Store)(nil)

// Secrets implements store.Transferer.
func (s *Store) Secrets(context.Context) (map[string][]byte, error) {
	out := map[string][]byte{}
	err := s.db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: prefixSecret, PrefetchValues: true})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			v, err := it.Item().ValueCopy(nil)
			if err != nil {
				return err
			}
			out[string(it.Item().Key()[len(prefixSecret):])] = v
		}
		return nil
	})
	return out, err
}

// PutSecret implements store.Transferer.
func (s *Store) PutSecret(_ context.Context, name string, value []byte, replace bool) ([]byte, error) {
	k := append(slices.Clone(prefixSecret), name...)
	var out []byte
	err := s.modWrite(func(txn *badger.Txn) error {
		item, err := txn.Get(k)
		switch {
		case err == nil && !replace:
			out, err = item.ValueCopy(nil)
			return err
		case err != nil && !errors.Is(err, badger.ErrKeyNotFound):
			return err
		}
		out = slices.Clone(value)
		return txn.Set(k, out)
	})
	return out, err
}

// ScanReports implements store.Transferer: keys are record id then reporter, so that is the order.
func (s *Store) ScanReports(_ context.Context, fn func(store.Report) error) error {
	return s.db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: prefixReport, PrefetchValues: true})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			var r store.Report
			if err := it.Item().Value(func(v []byte) error { return json.Unmarshal(v, &r) }); err != nil {
				return err
			}
			if err := fn(r); err != nil {
				return err
			}
		}
		return nil
	})
}

// ImportReports implements store.Transferer, in one transaction.
func (s *Store) ImportReports(_ context.Context, reps []store.Report) (store.ImportResult, error) {
	var res store.ImportResult
	err := s.modWrite(func(txn *badger.Txn) error {
		res = store.ImportResult{}
		for _, r := range reps {
			r.At = r.At.UTC()
			v, err := json.Marshal(r)
			if err != nil {
				return err
			}
			if _, err := getTxn(txn, r.RecordID); errors.Is(err, store.ErrNotFound) {
				res.Conflicts = append(res.Conflicts, r.RecordID)
				continue
			} else if err != nil {
				return err
			}
			k := reportKey(r.RecordID, r.Reporter)
			item, err := txn.Get(k)
			if err == nil {
				var old store.Report
				if err := item.Value(func(b []byte) error { return json.Unmarshal(b, &old) }); err != nil {
					return err
				}
				if sameReport(old, r) {
					res.Present++
				} else {
					res.Conflicts = append(res.Conflicts, r.RecordID)
				}
				continue
			}
			if !errors.Is(err, badger.ErrKeyNotFound) {
				return err
			}
			if err := txn.Set(k, v); err != nil {
				return err
			}
			res.Created++
		}
		return nil
	})
	return res, err
}

func sameReport(a, b store.Report) bool {
	return a.RecordID == b.RecordID && a.Reporter == b.Reporter && a.Reason == b.Reason && a.Note == b.Note &&
		a.At.Equal(b.At) && a.Reviewed == b.Reviewed
}

// ImportAudit implements store.Transferer, in one transaction.
func (s *Store) ImportAudit(_ context.Context, entries []store.AuditEntry) (int, error) {
	added := 0
	err := s.modWrite(func(txn *badger.Txn) error {
		added = 0
		have := map[string]int{}
		var last int64
		it := txn.NewIterator(badger.IteratorOptions{Prefix: prefixAudit, PrefetchValues: true})
		for it.Rewind(); it.Valid(); it.Next() {
			var e store.AuditEntry
			if err := it.Item().Value(func(v []byte) error { return json.Unmarshal(v, &e) }); err != nil {
				it.Close()
				return err
			}
			have[store.AuditKey(e)]++
			last = int64(binary.BigEndian.Uint64(it.Item().Key()[len(prefixAudit):]))
		}
		it.Close()
		for _, e := range entries {
			if k := store.AuditKey(e); have[k] > 0 {
				have[k]--
				continue
			}
			e.Seq = max(e.Seq, last+1)
			last = e.Seq
			e.At = e.At.UTC()
			v, err := json.Marshal(e)
			if err != nil {
				return err
			}
			if err := txn.Set(binary.BigEndian.AppendUint64(slices.Clone(prefixAudit), uint64(e.Seq)), v); err != nil {
				return err
			}
			added++
		}
		return nil
	})
	return added, err
}
