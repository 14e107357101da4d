package badgerstore

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/dgraph-io/badger/v4"

	"github.com/directaid/directaid/backend/store"
)

var _ store.WebhookOutbox = (*Store)(nil)

// The webhooks' outbox: every event by id; the pending ones by DueAt until they are due, then by Seq (the
// queue, read in order by claims, which holds only due events however many wait for a later day); the
// last Seq given; and the webhooks' small state by key.
var (
	prefixWebhookEvent = []byte("mwe\x00") // + event id → event JSON
	prefixWebhookDue   = []byte("mwd\x00") // + uint64 BE DueAt ms + uint64 BE seq → event id; pending events not yet moved to the queue
	prefixWebhookQueue = []byte("mwq\x00") // + uint64 BE seq → event id; pending events found due
	prefixWebhookState = []byte("mws\x00") // + key → value
	keyWebhookSeq      = []byte("mwn\x00") // → uint64 BE, the last Seq given
)

func webhookEventKey(id string) []byte { return append(slices.Clone(prefixWebhookEvent), id...) }

func webhookQueueKey(seq int64) []byte {
	return binary.BigEndian.AppendUint64(slices.Clone(prefixWebhookQueue), uint64(seq))
}

func webhookDueKey(due time.Time, seq int64) []byte {
	return binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint64(slices.Clone(prefixWebhookDue), uint64(max(due.UnixMilli(), 0))), uint64(seq))
}

// dueKeysTxn returns the keys of the due index up to now, and their values (event ids).
func dueKeysTxn(txn *badger.Txn, now time.Time) (keys, ids [][]byte, err error) {
	end := webhookDueKey(now, math.MaxInt64)
	it := txn.NewIterator(badger.IteratorOptions{Prefix: prefixWebhookDue})
	defer it.Close()
	for it.Rewind(); it.Valid() && bytes.Compare(it.Item().Key(), end) <= 0; it.Next() {
		id, err := it.Item().ValueCopy(nil)
		if err != nil {
			return nil, nil, err
		}
		keys, ids = append(keys, it.Item().KeyCopy(nil)), append(ids, id)
	}
	return keys, ids, nil
}

// moveDueTxn moves the events due at now from the due index to the queue, under their Seq.
func moveDueTxn(txn *badger.Txn, now time.Time) error {
	keys, ids, err := dueKeysTxn(txn, now)
	if err != nil {
		return err
	}
	for i, k := range keys {
		if err := txn.Delete(k); err != nil {
			return err
		}
		seq := k[len(prefixWebhookDue)+8:]
		if err := txn.Set(append(slices.Clone(prefixWebhookQueue), seq...), ids[i]); err != nil {
			return err
		}
	}
	return nil
}

// getJSONTxn decodes the JSON value of key into a new T: store.ErrNotFound when there is none.
func getJSONTxn[T any](txn *badger.Txn, key []byte) (*T, error) {
	item, err := txn.Get(key)
	if errors.Is(err, badger.ErrKeyNotFound) {
		return nil, store.ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	v := new(T)
	return v, item.Value(func(b []byte) error { return json.Unmarshal(b, v) })
}

func getWebhookEventTxn(txn *badger.Txn, id string) (*store.WebhookEvent, error) {
	return getJSONTxn[store.WebhookEvent](txn, webhookEventKey(id))
}

func putWebhookEventTxn(txn *badger.Txn, ev *store.WebhookEvent) error {
	v, err := json.Marshal(ev)
	if err != nil {
		return err
	}
	return txn.Set(webhookEventKey(ev.ID), v)
}

// EnqueueWebhookEvents implements store.WebhookOutbox.
func (s *Store) EnqueueWebhookEvents(_ context.Context, evs []*store.WebhookEvent) (int, error) {
	n := 0
	err := s.modWrite(func(txn *badger.Txn) error {
		n = 0
		var seq int64
		item, err := txn.Get(keyWebhookSeq)
		switch {
		case err == nil:
			if err := item.Value(func(v []byte) error { seq = int64(binary.BigEndian.Uint64(v)); return nil }); err != nil {
				return err
			}
		case !errors.Is(err, badger.ErrKeyNotFound):
			return err
		}
		for _, e := range evs {
			if _, err := getWebhookEventTxn(txn, e.ID); err == nil {
				continue
			} else if !errors.Is(err, store.ErrNotFound) {
				return err
			}
			seq++
			ev := &store.WebhookEvent{ID: e.ID, Hook: e.Hook, RecordID: e.RecordID, Seq: seq, Type: e.Type, CreatedAt: e.CreatedAt.UTC(),
				DueAt: e.DueAt.UTC(), NextAt: e.NextAt.UTC(), Body: e.Body, State: store.WebhookPending, UpdatedAt: e.CreatedAt.UTC()}
			if err := putWebhookEventTxn(txn, ev); err != nil {
				return err
			}
			if err := txn.Set(webhookDueKey(ev.DueAt, seq), []byte(ev.ID)); err != nil {
				return err
			}
			n++
		}
		return txn.Set(keyWebhookSeq, binary.BigEndian.AppendUint64(nil, uint64(seq)))
	})
	return n, err
}

// queuedWebhookEvents reads the queue (pending events found due) in Seq order.
func queuedWebhookEvents(txn *badger.Txn) ([]*store.WebhookEvent, error) {
	it := txn.NewIterator(badger.IteratorOptions{Prefix: prefixWebhookQueue, PrefetchValues: true})
	defer it.Close()
	var out []*store.WebhookEvent
	for it.Rewind(); it.Valid(); it.Next() {
		id, err := it.Item().ValueCopy(nil)
		if err != nil {
			return nil, err
		}
		ev, err := getWebhookEventTxn(txn, string(id))
		if err != nil {
			return nil, err
		}
		out = append(out, ev)
	}
	return out, nil
}

// ClaimWebhookEvents implements store.WebhookOutbox: one write transaction moves the events due now to
// the queue, reads it in order and leases the head of each (hook, record) that may go now.
func (s *Store) ClaimWebhookEvents(_ context.Context, hooks []string, owner string, now time.Time, lease time.Duration, limit int) ([]*store.WebhookEvent, error) {
	var out []*store.WebhookEvent
	err := s.modWrite(func(txn *badger.Txn) error {
		out = nil
		if err := moveDueTxn(txn, now); err != nil {
			return err
		}
		pending, err := queuedWebhookEvents(txn)
		if err != nil {
			return err
		}
		heads := map[[2]string]bool{}
		for _, ev := range pending {
			if len(out) == limit {
				break
			}
			pair := [2]string{ev.Hook, ev.RecordID}
			if ev.DueAt.After(now) || heads[pair] {
				continue
			}
			heads[pair] = true
			if !slices.Contains(hooks, ev.Hook) || ev.NextAt.After(now) || (ev.LeaseOwner != "" && ev.LeaseUntil.After(now)) {
				continue
			}
			ev.LeaseOwner, ev.LeaseUntil = owner, now.Add(lease).UTC()
			if err := putWebhookEventTxn(txn, ev); err != nil {
				return err
			}
			out = append(out, ev)
		}
		return nil
	})
	return out, err
}

// FinishWebhookAttempt implements store.WebhookOutbox.
func (s *Store) FinishWebhookAttempt(_ context.Context, e *store.WebhookEvent, owner string) error {
	return s.modWrite(func(txn *badger.Txn) error {
		ev, err := getWebhookEventTxn(txn, e.ID)
		if err != nil {
			return err
		}
		if ev.State != store.WebhookPending || ev.LeaseOwner != owner {
			return store.ErrNotFound
		}
		ev.State, ev.Attempts, ev.LastStatus, ev.LastError = e.State, e.Attempts, e.LastStatus, e.LastError
		ev.NextAt, ev.UpdatedAt, ev.LeaseOwner, ev.LeaseUntil = e.NextAt.UTC(), e.UpdatedAt.UTC(), "", time.Time{}
		if ev.State != store.WebhookPending {
			if err := txn.Delete(webhookQueueKey(ev.Seq)); err != nil {
				return err
			}
		}
		return putWebhookEventTxn(txn, ev)
	})
}

// allWebhookEvents reads every event of the outbox.
func (s *Store) allWebhookEvents() ([]*store.WebhookEvent, error) {
	var out []*store.WebhookEvent
	err := s.view(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: prefixWebhookEvent, PrefetchValues: true})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			ev := new(store.WebhookEvent)
			if err := it.Item().Value(func(v []byte) error { return json.Unmarshal(v, ev) }); err != nil {
				return err
			}
			out = append(out, ev)
		}
		return nil
	})
	return out, err
}

// RecentWebhookEvents implements store.WebhookOutbox. It reads the whole outbox, which
// PruneWebhookEvents keeps to the last days' events.
func (s *Store) RecentWebhookEvents(_ context.Context, limit int) ([]*store.WebhookEvent, error) {
	all, err := s.allWebhookEvents()
	if err != nil {
		return nil, err
	}
	slices.SortFunc(all, func(a, b *store.WebhookEvent) int {
		if c := b.UpdatedAt.Compare(a.UpdatedAt); c != 0 {
			return c
		}
		return strings.Compare(b.ID, a.ID)
	})
	return all[:min(limit, len(all))], nil
}

// PendingWebhookEvents implements store.WebhookOutbox.
func (s *Store) PendingWebhookEvents(_ context.Context, now time.Time) (int, error) {
	n := 0
	err := s.view(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: prefixWebhookQueue})
		for it.Rewind(); it.Valid(); it.Next() {
			n++
		}
		it.Close()
		keys, _, err := dueKeysTxn(txn, now)
		n += len(keys)
		return err
	})
	return n, err
}

// PruneWebhookEvents implements store.WebhookOutbox, a thousand events a transaction.
func (s *Store) PruneWebhookEvents(_ context.Context, before time.Time) (int, error) {
	all, err := s.allWebhookEvents()
	if err != nil {
		return 0, err
	}
	var old []*store.WebhookEvent
	for _, ev := range all {
		if (ev.State == store.WebhookPending && ev.DueAt.Before(before)) || (ev.State != store.WebhookPending && ev.UpdatedAt.Before(before)) {
			old = append(old, ev)
		}
	}
	for chunk := range slices.Chunk(old, 1000) {
		err := s.modWrite(func(txn *badger.Txn) error {
			for _, ev := range chunk {
				if err := txn.Delete(webhookEventKey(ev.ID)); err != nil {
					return err
				}
				if err := txn.Delete(webhookQueueKey(ev.Seq)); err != nil {
					return err
				}
				if err := txn.Delete(webhookDueKey(ev.DueAt, ev.Seq)); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return 0, err
		}
	}
	return len(old), nil
}

// WebhookState implements store.WebhookOutbox.
func (s *Store) WebhookState(_ context.Context, key string) (string, error) {
	var v []byte
	err := s.view(func(txn *badger.Txn) error {
		item, err := txn.Get(append(slices.Clone(prefixWebhookState), key...))
		if errors.Is(err, badger.ErrKeyNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		v, err = item.ValueCopy(nil)
		return err
	})
	return string(v), err
}

// SetWebhookState implements store.WebhookOutbox.
func (s *Store) SetWebhookState(_ context.Context, key, value string) error {
	return s.modWrite(func(txn *badger.Txn) error {
		k := append(slices.Clone(prefixWebhookState), key...)
		if value == "" {
			return txn.Delete(k)
		}
		return txn.Set(k, []byte(value))
	})
}
