package badgerstore

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/dgraph-io/badger/v4"

	"github.com/directaid/directaid/backend/store"
	"github.com/directaid/directaid/schema"
)

var _ store.Responses = (*Store)(nil)

// prefixResponse keys the responses: + record id + 0 + response id → response JSON. A record's responses
// are one range, read and deleted together.
var prefixResponse = []byte("mp\x00")

func responsesPrefix(recordID string) []byte {
	return append(append(slices.Clone(prefixResponse), recordID...), 0)
}

func responseKey(recordID, id string) []byte { return append(responsesPrefix(recordID), id...) }

func getResponseTxn(txn *badger.Txn, recordID, id string) (*store.Response, error) {
	return getJSONTxn[store.Response](txn, responseKey(recordID, id))
}

func putResponseTxn(txn *badger.Txn, r *store.Response) error {
	val, err := json.Marshal(r)
	if err != nil {
		return err
	}
	return txn.Set(responseKey(r.RecordID, r.ID), val)
}

// CreateResponse implements store.Responses.
func (s *Store) CreateResponse(_ context.Context, r *store.Response) error {
	return s.modWrite(func(txn *badger.Txn) error {
		if _, err := getTxn(txn, r.RecordID); err != nil {
			return err
		}
		if _, err := getResponseTxn(txn, r.RecordID, r.ID); err == nil {
			return store.ErrResponseExists
		} else if !errors.Is(err, store.ErrNotFound) {
			return err
		}
		// modWrite's transactions are serial: the count cannot change before this one commits.
		it := txn.NewIterator(badger.IteratorOptions{Prefix: responsesPrefix(r.RecordID)})
		n := 0
		for it.Rewind(); it.Valid() && n < store.MaxResponsesPerRecord; it.Next() {
			n++
		}
		it.Close()
		if n >= store.MaxResponsesPerRecord {
			return store.ErrTooManyResponses
		}
		return putResponseTxn(txn, r)
	})
}

// UpdateResponse implements store.Responses.
func (s *Store) UpdateResponse(_ context.Context, recordID, id string, fn func(*store.Response) error) (*store.Response, error) {
	var out *store.Response
	erased := false
	err := s.modWrite(func(txn *badger.Txn) error {
		old, err := getResponseTxn(txn, recordID, id)
		if err != nil {
			return err
		}
		r := *old
		r.Reporters = slices.Clone(old.Reporters)
		if err := fn(&r); err != nil {
			return err
		}
		r.RecordID, r.ID = old.RecordID, old.ID
		erased = r.ContactE164 != old.ContactE164 || r.ContactName != old.ContactName || r.Message != old.Message
		out = &r
		return putResponseTxn(txn, &r)
	})
	if err == nil && erased {
		s.noteErasure() // the old version leaves the files at the next maintenance cycle
	}
	return out, err
}

// eachResponse calls fn with every response under prefix, in key order.
func eachResponse(txn *badger.Txn, prefix []byte, fn func(*store.Response)) error {
	it := txn.NewIterator(badger.IteratorOptions{Prefix: prefix, PrefetchValues: true})
	defer it.Close()
	for it.Rewind(); it.Valid(); it.Next() {
		r := new(store.Response)
		if err := it.Item().Value(func(v []byte) error { return json.Unmarshal(v, r) }); err != nil {
			return err
		}
		fn(r)
	}
	return nil
}

func responsesTxn(txn *badger.Txn, recordID string) ([]*store.Response, error) {
	var out []*store.Response
	if err := eachResponse(txn, responsesPrefix(recordID), func(r *store.Response) { out = append(out, r) }); err != nil {
		return nil, err
	}
	slices.SortStableFunc(out, func(a, b *store.Response) int {
		if c := b.CreatedAt.Compare(a.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(b.ID, a.ID)
	})
	return out, nil
}

// RecordResponses implements store.Responses.
func (s *Store) RecordResponses(_ context.Context, recordID string) (out []*store.Response, err error) {
	err = s.view(func(txn *badger.Txn) error {
		out, err = responsesTxn(txn, recordID)
		return err
	})
	return out, err
}

// ResponseCounts implements store.Responses.
func (s *Store) ResponseCounts(_ context.Context, ids []string, at time.Time) (map[string]int, error) {
	counts := map[string]int{}
	err := s.view(func(txn *badger.Txn) error {
		for _, id := range ids {
			rs, err := responsesTxn(txn, id)
			if err != nil {
				return err
			}
			for _, r := range rs {
				if r.CountsAt(at) {
					counts[id]++
				}
			}
		}
		return nil
	})
	return counts, err
}

// DeleteResponses implements store.Responses.
func (s *Store) DeleteResponses(_ context.Context, recordID string) error {
	deleted := false
	err := s.modWrite(func(txn *badger.Txn) error {
		rs, err := responsesTxn(txn, recordID)
		if err != nil {
			return err
		}
		for _, r := range rs {
			if err := txn.Delete(responseKey(recordID, r.ID)); err != nil {
				return err
			}
			deleted = true
		}
		return nil
	})
	if err == nil && deleted {
		s.noteErasure()
	}
	return err
}

// HiddenResponses implements store.Responses: the responses' range read whole, in key order (record id,
// then response id). Hidden responses are few, and only an operator's queue reads them.
func (s *Store) HiddenResponses(context.Context) ([]*store.Response, error) {
	var out []*store.Response
	err := s.view(func(txn *badger.Txn) error {
		return eachResponse(txn, prefixResponse, func(r *store.Response) {
			if r.Status == schema.ResponseHidden {
				out = append(out, r)
			}
		})
	})
	return out, err
}
