package pgstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"sync"
	"time"

	"github.com/caddyserver/certmagic"
	"github.com/jackc/pgx/v5"
)

// CertStorage is certmagic.Storage on PostgreSQL: what Caddy keeps in its `storage` (certificates, OCSP
// staples, ACME accounts, and caddy-ratelimit's distributed state) shared by every node. Its locks are
// leases: renewed by the holder while it works, free once expired if the holder died, and bound to a
// random token, so that a holder whose lease lapsed cannot renew or release a lock another node took.
type CertStorage struct {
	db *DB
	// Lease is how long a lock outlives its holder's last renewal; renewals come every Lease/3.
	Lease time.Duration
	// Poll is the wait between attempts to take a lock that is held.
	Poll time.Duration
	// OnLost, if set, is told when a renewal finds that the lock was taken by another holder.
	OnLost func(name string)

	mu    sync.Mutex
	held  map[string]*heldLock
	close chan struct{}
}

type heldLock struct {
	token string
	stop  chan struct{}
	done  chan struct{}
}

// DefaultLease is the lease of a lock: certmagic's file storage calls a lock stale after 10 s without
// renewal; a database round trip on a loaded server can take longer, hence more.
const DefaultLease = 20 * time.Second

// NewCertStorage returns the storage on db.
func NewCertStorage(db *DB) *CertStorage {
	return &CertStorage{db: db, Lease: DefaultLease, Poll: time.Second, held: map[string]*heldLock{}, close: make(chan struct{})}
}

// quick bounds statements that must run even when the caller's context is already cancelled (certmagic
// takes a free lock and releases a held one under a cancelled context) without letting them hang.
func quick(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
}

// prefixRange returns the bounds of the keys below the "directory" key: '0' follows '/' in byte order.
func prefixRange(key string) (lo, hi string) { return key + "/", key + "0" }

// Store implements certmagic.Storage.
func (s *CertStorage) Store(ctx context.Context, key string, value []byte) error {
	if key == "" || strings.HasPrefix(key, "/") || strings.HasSuffix(key, "/") {
		return fmt.Errorf("storage: invalid key %q", key)
	}
	if value == nil {
		value = []byte{}
	}
	if err := s.db.Ready(ctx); err != nil {
		return err
	}
	_, err := s.db.Pool.Exec(ctx, `INSERT INTO directaid_certmagic_data (key, value, modified) VALUES ($1, $2, now())
		ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value, modified = EXCLUDED.modified`, key, value)
	return err
}

// Load implements certmagic.Storage.
func (s *CertStorage) Load(ctx context.Context, key string) ([]byte, error) {
	if err := s.db.Ready(ctx); err != nil {
		return nil, err
	}
	var v []byte
	err := s.db.Pool.QueryRow(ctx, `SELECT value FROM directaid_certmagic_data WHERE key = $1`, key).Scan(&v)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fs.ErrNotExist
	}
	return v, err
}

// Delete implements certmagic.Storage: the key and, if it is a directory, everything below it.
func (s *CertStorage) Delete(ctx context.Context, key string) error {
	if err := s.db.Ready(ctx); err != nil {
		return err
	}
	lo, hi := prefixRange(key)
	_, err := s.db.Pool.Exec(ctx, `DELETE FROM directaid_certmagic_data WHERE key = $1 OR (key >= $2 AND key < $3)`, key, lo, hi)
	return err
}

// Exists implements certmagic.Storage.
func (s *CertStorage) Exists(ctx context.Context, key string) bool {
	_, err := s.Stat(ctx, key)
	return err == nil
}

// Stat implements certmagic.Storage.
func (s *CertStorage) Stat(ctx context.Context, key string) (certmagic.KeyInfo, error) {
	if err := s.db.Ready(ctx); err != nil {
		return certmagic.KeyInfo{}, err
	}
	var size int64
	var mod time.Time
	err := s.db.Pool.QueryRow(ctx, `SELECT length(value), modified FROM directaid_certmagic_data WHERE key = $1`, key).Scan(&size, &mod)
	if err == nil {
		return certmagic.KeyInfo{Key: key, Modified: mod, Size: size, IsTerminal: true}, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return certmagic.KeyInfo{}, err
	}
	lo, hi := prefixRange(key)
	err = s.db.Pool.QueryRow(ctx, `SELECT max(modified) FROM directaid_certmagic_data WHERE key >= $1 AND key < $2 HAVING count(*) > 0`, lo, hi).Scan(&mod)
	if errors.Is(err, pgx.ErrNoRows) {
		return certmagic.KeyInfo{}, fs.ErrNotExist
	}
	if err != nil {
		return certmagic.KeyInfo{}, err
	}
	return certmagic.KeyInfo{Key: key, Modified: mod, IsTerminal: false}, nil
}

// List implements certmagic.Storage: the keys directly below dir, or (recursive) every key and directory
// below it, as a file system walk would.
func (s *CertStorage) List(ctx context.Context, dir string, recursive bool) ([]string, error) {
	if err := s.db.Ready(ctx); err != nil {
		return nil, err
	}
	var rows pgx.Rows
	var err error
	base := ""
	if dir == "" {
		rows, err = s.db.Pool.Query(ctx, `SELECT key FROM directaid_certmagic_data ORDER BY key`)
	} else {
		lo, hi := prefixRange(dir)
		base = lo
		rows, err = s.db.Pool.Query(ctx, `SELECT key FROM directaid_certmagic_data WHERE key >= $1 AND key < $2 ORDER BY key`, lo, hi)
	}
	if err != nil {
		return nil, err
	}
	keys, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, err
	}
	if len(keys) == 0 {
		return nil, fs.ErrNotExist
	}
	seen := map[string]bool{}
	var out []string
	add := func(k string) {
		if !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	for _, k := range keys {
		rest := strings.TrimPrefix(k, base)
		if !recursive {
			first, _, _ := strings.Cut(rest, "/")
			add(base + first)
			continue
		}
		for i := 0; i < len(rest); i++ {
			if rest[i] == '/' {
				add(base + rest[:i])
			}
		}
		add(k)
	}
	return out, nil
}

// Lock implements certmagic.Locker: it waits until the lock is free or expired, or ctx ends. The first
// attempt runs even under a cancelled ctx, as certmagic's own storage does.
func (s *CertStorage) Lock(ctx context.Context, name string) error {
	token := newToken()
	for attempt := 0; ; attempt++ {
		actx, cancel := ctx, context.CancelFunc(func() {})
		if attempt == 0 {
			actx, cancel = quick(ctx)
		}
		ok, err := s.tryLock(actx, name, token)
		cancel()
		if ok {
			return nil
		}
		if err != nil && ctx.Err() == nil && attempt > 0 && !Unavailable(err) {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("storage: lock %q: %w", name, ctx.Err())
		case <-time.After(s.Poll):
		}
	}
}

// TryLock implements certmagic.TryLocker.
func (s *CertStorage) TryLock(ctx context.Context, name string) (bool, error) {
	return s.tryLock(ctx, name, newToken())
}

func (s *CertStorage) tryLock(ctx context.Context, name, token string) (bool, error) {
	if err := s.db.Ready(ctx); err != nil {
		return false, err
	}
	var got string
	err := s.db.Pool.QueryRow(ctx, `INSERT INTO directaid_certmagic_locks (name, token, expires)
		VALUES ($1, $2, now() + make_interval(secs => $3))
		ON CONFLICT (name) DO UPDATE SET token = EXCLUDED.token, expires = EXCLUDED.expires
		WHERE directaid_certmagic_locks.expires < now()
		RETURNING token`, name, token, s.Lease.Seconds()).Scan(&got)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	s.hold(name, token)
	return true, nil
}

func newToken() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// hold records the lock and renews its lease until Unlock.
func (s *CertStorage) hold(name, token string) {
	h := &heldLock{token: token, stop: make(chan struct{}), done: make(chan struct{})}
	s.mu.Lock()
	old := s.held[name]
	s.held[name] = h
	s.mu.Unlock()
	if old != nil { // an earlier lease of ours lapsed and we took the lock again: the old renewer is moot
		close(old.stop)
	}
	go s.renew(name, h)
}

func (s *CertStorage) renew(name string, h *heldLock) {
	defer close(h.done)
	t := time.NewTicker(s.Lease / 3)
	defer t.Stop()
	for {
		select {
		case <-h.stop:
			return
		case <-s.close:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), s.Lease/3)
		// greatest: a longer lease that RenewLockLease granted stays.
		tag, err := s.db.Pool.Exec(ctx, `UPDATE directaid_certmagic_locks
			SET expires = greatest(expires, now() + make_interval(secs => $3))
			WHERE name = $1 AND token = $2`, name, h.token, s.Lease.Seconds())
		cancel()
		if err == nil && tag.RowsAffected() == 0 {
			// Our lease lapsed and another holder took the lock: stop; Unlock will say so.
			if s.OnLost != nil {
				s.OnLost(name)
			}
			return
		}
		// On an error (server restarting) try again at the next tick: the lease outlasts a short outage.
	}
}

// RenewLockLease implements certmagic.LockLeaseRenewer: certmagic asks for a longer lease before a long
// certificate operation. It fails if the lock is no longer ours.
func (s *CertStorage) RenewLockLease(ctx context.Context, name string, lease time.Duration) error {
	s.mu.Lock()
	h := s.held[name]
	s.mu.Unlock()
	if h == nil {
		return fmt.Errorf("storage: lock %q is not held here", name)
	}
	tag, err := s.db.Pool.Exec(ctx, `UPDATE directaid_certmagic_locks SET expires = now() + make_interval(secs => $3)
		WHERE name = $1 AND token = $2`, name, h.token, max(lease, s.Lease).Seconds())
	if err == nil && tag.RowsAffected() == 0 {
		err = fmt.Errorf("storage: lock %q expired and was taken by another holder", name)
	}
	return err
}

// Unlock implements certmagic.Locker. It fails if this storage does not hold the lock, or if its lease
// lapsed and another holder took it meanwhile (which it leaves alone).
func (s *CertStorage) Unlock(ctx context.Context, name string) error {
	s.mu.Lock()
	h := s.held[name]
	delete(s.held, name)
	s.mu.Unlock()
	if h == nil {
		return fmt.Errorf("storage: lock %q is not held here", name)
	}
	close(h.stop)
	<-h.done
	qctx, cancel := quick(ctx)
	defer cancel()
	tag, err := s.db.Pool.Exec(qctx, `DELETE FROM directaid_certmagic_locks WHERE name = $1 AND token = $2`, name, h.token)
	if err != nil {
		return fmt.Errorf("storage: unlock %q: %w", name, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("storage: lock %q expired while held and was taken by another holder", name)
	}
	return nil
}

// Close stops renewing the locks this storage holds (they expire after their lease).
func (s *CertStorage) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case <-s.close:
	default:
		close(s.close)
	}
}

// String names the storage in Caddy's logs (certmagic uses it as part of lock and issuer keys).
func (s *CertStorage) String() string {
	c := s.db.Pool.Config().ConnConfig
	return fmt.Sprintf("directaid_postgres://%s:%d/%s", c.Host, c.Port, c.Database)
}

var (
	_ certmagic.Storage          = (*CertStorage)(nil)
	_ certmagic.TryLocker        = (*CertStorage)(nil)
	_ certmagic.LockLeaseRenewer = (*CertStorage)(nil)
)
