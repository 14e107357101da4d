package badgerstore

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/dgraph-io/badger/v4"

	"github.com/directaid/directaid/backend/store"
)

var _ store.Moderation = (*Store)(nil)

var (
	prefixReport = []byte("mr\x00") // + record id + reporter → report JSON
	// prefixDisowned holds the disownings of phone numbers (store.Disowning).
	prefixDisowned = []byte("mo\x00") // + key + 0x00 + record id → disowning JSON
	prefixAudit    = []byte("ma\x00") // + uint64 BE seq → audit entry JSON
	prefixSecret   = []byte("ms\x00") // + name → 32 random bytes
)

// modWrite runs fn in a read-write transaction between group commits (commitMu), so that writes stay
// one at a time and the maintenance rewrite blocks it too. SyncWrites makes it durable.
func (s *Store) modWrite(fn func(txn *badger.Txn) error) error {
	if err := s.failure(); err != nil {
		return err
	}
	if err := s.guard.check(false); err != nil {
		return s.refused(err)
	}
	select {
	case <-s.quit:
		return store.ErrClosed
	default:
	}
	s.commitMu.Lock()
	defer s.commitMu.Unlock()
	if err := s.db.Update(fn); err != nil {
		return err
	}
	s.renewSnapshot() // the reads' snapshot (see snapshot)
	return nil
}

func reportKey(id, reporter string) []byte {
	return append(append(slices.Clone(prefixReport), id...), reporter...)
}

func reportsOf(txn *badger.Txn, id string) ([]store.Report, error) {
	p := append(slices.Clone(prefixReport), id...)
	it := txn.NewIterator(badger.IteratorOptions{Prefix: p, PrefetchValues: true})
	defer it.Close()
	var out []store.Report
	for it.Rewind(); it.Valid(); it.Next() {
		var r store.Report
		if err := it.Item().Value(func(v []byte) error { return json.Unmarshal(v, &r) }); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	slices.SortStableFunc(out, func(a, b store.Report) int { return a.At.Compare(b.At) })
	return out, nil
}

func distinctUnreviewed(reps []store.Report) int {
	n := 0
	for _, r := range reps {
		if !r.Reviewed {
			n++ // one key per reporter
		}
	}
	return n
}

// AddReport implements store.Moderation.
func (s *Store) AddReport(_ context.Context, r store.Report) (int, error) {
	if !store.ValidID(r.RecordID) || r.Reporter == "" {
		return 0, store.ErrNotFound
	}
	if r.At.IsZero() {
		r.At = time.Now().UTC()
	}
	var n int
	err := s.modWrite(func(txn *badger.Txn) error {
		if _, err := getTxn(txn, r.RecordID); err != nil {
			return err
		}
		// An operator's review stands against the same reporter: a new report of theirs stays reviewed.
		if item, err := txn.Get(reportKey(r.RecordID, r.Reporter)); err == nil {
			var old store.Report
			if err := item.Value(func(v []byte) error { return json.Unmarshal(v, &old) }); err != nil {
				return err
			}
			r.Reviewed = r.Reviewed || old.Reviewed
		} else if !errors.Is(err, badger.ErrKeyNotFound) {
			return err
		}
		v, err := json.Marshal(r)
		if err != nil {
			return err
		}
		if err := txn.Set(reportKey(r.RecordID, r.Reporter), v); err != nil {
			return err
		}
		reps, err := reportsOf(txn, r.RecordID)
		n = distinctUnreviewed(reps)
		return err
	})
	return n, err
}

// validDisowning says whether d can be stored: a key without NUL (the separator of its record id) and a
// record id.
func validDisowning(d store.Disowning) bool {
	return d.Key != "" && strings.IndexByte(d.Key, 0) < 0 && store.ValidID(d.RecordID)
}

func disownedKey(key, id string) []byte {
	return append(append(append(slices.Clone(prefixDisowned), key...), 0), id...)
}

// Disown implements store.Moderation.
func (s *Store) Disown(_ context.Context, d store.Disowning) error {
	if !validDisowning(d) {
		return store.ErrNotFound
	}
	if d.At.IsZero() {
		d.At = time.Now().UTC()
	}
	v, err := json.Marshal(d)
	if err != nil {
		return err
	}
	return s.writeDisownings(func(txn *badger.Txn) error { return txn.Set(disownedKey(d.Key, d.RecordID), v) })
}

// disownedKeys are the standing disownings, as of the last write of them, by key and publisher ("":
// any): every publication asks Disowned, which a map answers without a read of the database (or an
// allocation). Disownings are few (each is a phone a report hid, within the reports' bounds).
type disownedKeys = map[disownedAgainst]time.Time // when the last disowning of it was made

// disownedAgainst is a disowning of a number's key against a publisher.
type disownedAgainst struct{ key, publisher string }

// writeDisownings runs fn as modWrite does, then reloads the disowned keys, one such write at a time so
// that a later write's keys never give way to an earlier one's.
func (s *Store) writeDisownings(fn func(txn *badger.Txn) error) error {
	s.disownMu.Lock()
	defer s.disownMu.Unlock()
	err := s.modWrite(fn)
	return cmp.Or(err, s.loadDisowned())
}

// loadDisowned reads the disowned keys into s.disowned.
func (s *Store) loadDisowned() error {
	keys := disownedKeys{}
	err := s.db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: prefixDisowned, PrefetchValues: true})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			var d store.Disowning
			if err := it.Item().Value(func(v []byte) error { return json.Unmarshal(v, &d) }); err != nil {
				return err
			}
			if k := (disownedAgainst{d.Key, d.Publisher}); d.At.After(keys[k]) {
				keys[k] = d.At
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	s.disowned.Store(&keys)
	return nil
}

// Disowned implements store.Moderation, from the keys loaded at Open and after each write of them.
func (s *Store) Disowned(_ context.Context, key, publisher string, since time.Time) (bool, error) {
	keys := s.disowned.Load()
	if keys == nil {
		return false, store.ErrClosed
	}
	return (*keys)[disownedAgainst{key, publisher}].After(since) || (*keys)[disownedAgainst{key, ""}].After(since), nil
}

// Reclaim implements store.Moderation. Disownings are few (each is a phone a report hid, within the
// reports' bounds): it reads them all.
func (s *Store) Reclaim(_ context.Context, key, id, reporter string) error {
	if key == "" && id == "" {
		return errors.New("reclaim: neither a key nor a record")
	}
	return s.writeDisownings(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: prefixDisowned, PrefetchValues: true})
		var dels [][]byte
		for it.Rewind(); it.Valid(); it.Next() {
			var d store.Disowning
			if err := it.Item().Value(func(v []byte) error { return json.Unmarshal(v, &d) }); err != nil {
				it.Close()
				return err
			}
			if (key == "" || d.Key == key) && (id == "" || d.RecordID == id) && (reporter == "" || d.Reporter == reporter) {
				dels = append(dels, it.Item().KeyCopy(nil))
			}
		}
		it.Close()
		for _, k := range dels {
			if err := txn.Delete(k); err != nil {
				return err
			}
		}
		return nil
	})
}

// Reports implements store.Moderation.
func (s *Store) Reports(_ context.Context, id string) (reps []store.Report, err error) {
	err = s.db.View(func(txn *badger.Txn) error {
		reps, err = reportsOf(txn, id)
		return err
	})
	return reps, err
}

// Reported implements store.Moderation.
func (s *Store) Reported(context.Context) ([]string, error) {
	var ids []string
	err := s.db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: prefixReport, PrefetchValues: true})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			k := it.Item().Key()[len(prefixReport):]
			if len(k) < idLen {
				continue
			}
			id := string(k[:idLen])
			if len(ids) > 0 && ids[len(ids)-1] == id {
				continue
			}
			var r store.Report
			if err := it.Item().Value(func(v []byte) error { return json.Unmarshal(v, &r) }); err != nil {
				return err
			}
			if !r.Reviewed {
				ids = append(ids, id)
			}
		}
		return nil
	})
	return ids, err
}

// ReviewReports implements store.Moderation.
func (s *Store) ReviewReports(_ context.Context, id, reporter string, dropNotes bool) error {
	noted := false
	err := s.modWrite(func(txn *badger.Txn) error {
		reps, err := reportsOf(txn, id)
		if err != nil {
			return err
		}
		for _, r := range reps {
			if reporter != "" && r.Reporter != reporter {
				continue
			}
			noted = noted || (dropNotes && r.Note != "")
			r.Reviewed = true
			if dropNotes {
				r.Note = ""
			}
			v, err := json.Marshal(r)
			if err != nil {
				return err
			}
			if err := txn.Set(reportKey(r.RecordID, r.Reporter), v); err != nil {
				return err
			}
		}
		return nil
	})
	if err == nil && noted {
		s.noteErasure()
	}
	return err
}

// AppendAudit implements store.Moderation.
func (s *Store) AppendAudit(_ context.Context, e store.AuditEntry) error {
	if e.At.IsZero() {
		e.At = time.Now().UTC()
	}
	return s.modWrite(func(txn *badger.Txn) error {
		entries, err := auditEntries(txn, []store.AuditEntry{e})
		if err != nil {
			return err
		}
		return txn.Set(entries[0].k, entries[0].v)
	})
}

// auditEntries are the keys and values of es as the next entries of the trail in txn, in order: the first
// seq one after the last key, this transaction's own pending entries included (writes are serialised by
// commitMu).
func auditEntries(txn *badger.Txn, es []store.AuditEntry) ([]kv, error) {
	seq := int64(1)
	it := txn.NewIterator(badger.IteratorOptions{Prefix: prefixAudit, Reverse: true})
	it.Seek(append(slices.Clone(prefixAudit), 0xff))
	if it.ValidForPrefix(prefixAudit) {
		seq = int64(binary.BigEndian.Uint64(it.Item().Key()[len(prefixAudit):])) + 1
	}
	it.Close()
	out := make([]kv, 0, len(es))
	for i, e := range es {
		e.Seq = seq + int64(i)
		v, err := json.Marshal(e)
		if err != nil {
			return nil, err
		}
		out = append(out, kv{binary.BigEndian.AppendUint64(slices.Clone(prefixAudit), uint64(e.Seq)), v})
	}
	return out, nil
}

// Audit implements store.Moderation.
func (s *Store) Audit(_ context.Context, after int64, limit int) ([]store.AuditEntry, error) {
	var out []store.AuditEntry
	err := s.db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: prefixAudit, PrefetchValues: true})
		defer it.Close()
		for it.Seek(binary.BigEndian.AppendUint64(slices.Clone(prefixAudit), uint64(max(after, 0)+1))); it.Valid() && len(out) < limit; it.Next() {
			var e store.AuditEntry
			if err := it.Item().Value(func(v []byte) error { return json.Unmarshal(v, &e) }); err != nil {
				return err
			}
			out = append(out, e)
		}
		return nil
	})
	return out, err
}

// Secret implements store.Moderation.
func (s *Store) Secret(_ context.Context, name string) ([]byte, error) {
	k := append(slices.Clone(prefixSecret), name...)
	var out []byte
	get := func(txn *badger.Txn) error {
		item, err := txn.Get(k)
		if err != nil {
			return err
		}
		out, err = item.ValueCopy(nil)
		return err
	}
	err := s.db.View(get)
	if !errors.Is(err, badger.ErrKeyNotFound) {
		return out, err
	}
	err = s.modWrite(func(txn *badger.Txn) error {
		if err := get(txn); !errors.Is(err, badger.ErrKeyNotFound) {
			return err // made meanwhile (or an error)
		}
		out = make([]byte, 32)
		_, _ = rand.Read(out)
		return txn.Set(k, out)
	})
	return out, err
}
