package badgerstore

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/dgraph-io/badger/v4"

	"github.com/directaid/directaid/backend/store"
	"github.com/directaid/directaid/backend/store/recordjson"
)

var _ store.Transfer = (*Store)(nil)

// Secrets implements store.Transfer.
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

// PutSecret implements store.Transfer.
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

// ScanReports implements store.Transfer: keys are record id then reporter, so that is the order.
func (s *Store) ScanReports(ctx context.Context, fn func(store.Report) error) error {
	return scanJSON(ctx, s.db, prefixReport, fn)
}

// scanJSON calls fn with each value under prefix, decoded from JSON, in key order, from one read.
func scanJSON[T any](ctx context.Context, db *badger.DB, prefix []byte, fn func(T) error) error {
	return db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: prefix, PrefetchValues: true})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			if err := ctx.Err(); err != nil {
				return err
			}
			var v T
			if err := it.Item().Value(func(b []byte) error { return json.Unmarshal(b, &v) }); err != nil {
				return err
			}
			if err := fn(v); err != nil {
				return err
			}
		}
		return nil
	})
}

// ScanDisownings implements store.Transfer, by key then record.
func (s *Store) ScanDisownings(ctx context.Context, fn func(store.Disowning) error) error {
	return scanJSON(ctx, s.db, prefixDisowned, fn)
}

// ImportDisownings implements store.Transfer, in one transaction.
func (s *Store) ImportDisownings(_ context.Context, ds []store.Disowning) (store.ImportResult, error) {
	var res store.ImportResult
	err := s.writeDisownings(func(txn *badger.Txn) error {
		res = store.ImportResult{}
		for _, d := range ds {
			if !validDisowning(d) {
				return fmt.Errorf("disowning of record %q: not a valid key or record id", d.RecordID)
			}
			k := disownedKey(d.Key, d.RecordID)
			if _, err := txn.Get(k); err == nil {
				res.Present++
				continue
			} else if !errors.Is(err, badger.ErrKeyNotFound) {
				return err
			}
			d.At = d.At.UTC()
			v, err := json.Marshal(d)
			if err != nil {
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

// ImportReports implements store.Transfer, in one transaction.
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

// ImportAudit implements store.Transfer, in one transaction.
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

// Count implements store.Transfer: the record keys, in one read transaction.
func (s *Store) Count(ctx context.Context) (int, error) {
	n := 0
	err := s.db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: prefixRecord})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			if n%4096 == 0 {
				if err := ctx.Err(); err != nil {
					return err
				}
			}
			n++
		}
		return nil
	})
	return n, err
}

// Import implements store.Transfer. Each record goes in whole with its pair key, index entries, change
// entries and counters, between group commits (commitMu); a batch too large for one Badger transaction is
// committed in several, so an interrupted Import leaves whole records, and running it again completes it.
// The records keep their UpdatedAt: the store's next writes are stamped after the greatest.
func (s *Store) Import(ctx context.Context, recs []*store.Record) (store.ImportResult, error) {
	var res store.ImportResult
	if err := ctx.Err(); err != nil {
		return res, err
	}
	if err := s.failure(); err != nil {
		return res, err
	}
	if err := s.guard.check(false); err != nil {
		return res, s.refused(err)
	}
	select {
	case <-s.quit:
		return res, store.ErrClosed
	default:
	}
	s.commitMu.Lock()
	defer s.commitMu.Unlock()
	defer s.renewSnapshot()
	for len(recs) > 0 {
		n, err := s.importTxn(recs, &res)
		if err != nil {
			return res, err
		}
		recs = recs[n:]
	}
	return res, nil
}

// importTxn imports a prefix of recs in one transaction and reports how many it took.
func (s *Store) importTxn(recs []*store.Record, res *store.ImportResult) (int, error) {
	txn := s.db.NewTransaction(true)
	defer txn.Discard()
	w := newIndexWriter(s)
	top := s.lastStamp
	created, n := 0, 0
	for _, r := range recs {
		rec := *r
		rec.Normalize()
		if rec.EmergencySlug == "" {
			return n, fmt.Errorf("record %s: %w", rec.ID, errNoEmergency)
		}
		val, err := recordjson.Encode(&rec)
		if err != nil {
			return n, err
		}
		pk := pairKey(rec.Source, rec.ExternalID)
		if stored, err := getByPairTxn(txn, pk); err == nil {
			old, err := json.Marshal(stored)
			if err != nil {
				return n, err
			}
			if stored.ID == rec.ID && bytes.Equal(old, val) {
				res.Present++
			} else {
				res.Conflicts = append(res.Conflicts, rec.ID)
			}
			n++
			continue
		} else if !errors.Is(err, store.ErrNotFound) {
			return n, err
		}
		if _, err := getTxn(txn, rec.ID); err == nil {
			res.Conflicts = append(res.Conflicts, rec.ID) // its id holds another pair's record
			n++
			continue
		} else if !errors.Is(err, store.ErrNotFound) {
			return n, err
		}
		entries := slices.Concat([]kv{{pk, []byte(rec.ID)}, {recordKey(rec.ID), val}}, indexEntries(&rec), changeEntries(&rec))
		ok, err := w.put(txn, &rec, entries)
		if err != nil {
			return n, err
		}
		if !ok {
			break // commit what fits; the rest goes in the next transaction
		}
		top = max(top, rec.UpdatedAt.UnixMilli())
		created++
		n++
	}
	if err := s.commitRecords(txn, w, top); err != nil {
		return n, err
	}
	res.Created += created
	return n, nil
}

// FinishImport implements store.Transfer: imported records are served as written ones at once.
func (s *Store) FinishImport(context.Context, func(string)) error { return nil }

// ScanResponses implements store.Transfer: keys are record id then response id, so that is the order.
func (s *Store) ScanResponses(ctx context.Context, fn func(*store.Response) error) error {
	return scanJSON(ctx, s.db, prefixResponse, fn)
}

// ImportResponses implements store.Transfer, in one transaction.
func (s *Store) ImportResponses(_ context.Context, rs []*store.Response) (store.ImportResult, error) {
	var res store.ImportResult
	err := s.modWrite(func(txn *badger.Txn) error {
		res = store.ImportResult{}
		for _, r := range rs {
			if _, err := getTxn(txn, r.RecordID); errors.Is(err, store.ErrNotFound) {
				res.Conflicts = append(res.Conflicts, r.RecordID)
				continue
			} else if err != nil {
				return err
			}
			old, err := getResponseTxn(txn, r.RecordID, r.ID)
			if err == nil {
				if store.SameResponse(old, r) {
					res.Present++
				} else {
					res.Conflicts = append(res.Conflicts, r.RecordID)
				}
				continue
			}
			if !errors.Is(err, store.ErrNotFound) {
				return err
			}
			if err := putResponseTxn(txn, r); err != nil {
				return err
			}
			res.Created++
		}
		return nil
	})
	return res, err
}
