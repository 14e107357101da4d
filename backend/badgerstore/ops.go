package badgerstore

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/dgraph-io/badger/v4"

	"github.com/directaid/directaid/backend/store"
)

// What the operator's side needs of the Badger store: the write probe, a guard against a full disk, disk
// figures and the verification of a restored backup (store/ops.go says what each is for).

var _ store.DiskUser = (*Store)(nil)

// keyProbe is what Probe commits: a meta key, never a record, overwritten by every probe.
var keyProbe = []byte("m\x00probe")

// DefaultMinFreeBytes is the free space below which the store refuses writes (Options.MinFreeBytes).
const DefaultMinFreeBytes = 256 << 20

// Probe implements store.Store: it commits the time to keyProbe with a synced write, like a publication.
func (s *Store) Probe(ctx context.Context) error {
	select {
	case <-s.quit:
		return store.ErrClosed
	default:
	}
	if err := s.guard.check(true); err != nil {
		return err
	}
	if err := s.failure(); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	err := s.db.Update(func(txn *badger.Txn) error {
		return txn.Set(keyProbe, []byte(time.Now().UTC().Format(time.RFC3339Nano)))
	})
	if errors.Is(err, badger.ErrDBClosed) { // Close ran between the check above and the commit
		return store.ErrClosed
	}
	return err
}

// DiskUsage implements store.DiskUser: the bytes the files of the database take on disk (blocks really
// allocated: Badger's memory-mapped files are sparse), by kind, and the disk's free bytes.
func (s *Store) DiskUsage() (map[string]int64, int64, error) {
	parts := map[string]int64{"lsm": 0, "vlog": 0, "wal": 0, "other": 0}
	err := filepath.WalkDir(s.dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil // a file that went away during the walk (compaction) is not an error
		}
		var st syscall.Stat_t
		if syscall.Stat(path, &st) != nil {
			return nil
		}
		part := "other"
		switch filepath.Ext(path) {
		case ".sst":
			part = "lsm"
		case ".vlog":
			part = "vlog"
		case ".mem":
			part = "wal"
		}
		parts[part] += st.Blocks * 512
		return nil
	})
	if err != nil {
		return nil, 0, err
	}
	free, err := freeBytes(s.dir)
	return parts, free, err
}

func freeBytes(dir string) (int64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, err
	}
	return int64(st.Bavail) * st.Bsize, nil
}

// diskGuard refuses writes while the disk holding the database is short of free space. Badger writes
// through memory-mapped files: on a full disk a write into a mapped page kills the process (SIGBUS)
// instead of returning an error, so the store must stop before the disk is full, with room left for the
// memtable, its flush and compactions in flight. It refuses once the free space falls under min, and
// accepts writes again only once it is back to resume (min + 10%): without that margin, a disk hovering
// at the limit (compactions freeing and taking space) turned refusals on and off every few seconds. It
// looks at the disk at most once a second (a second of publishing at full speed writes a few MB), and
// says when it starts and stops refusing (changed), never per refused write.
type diskGuard struct {
	dir     string
	min     atomic.Int64 // ≤ 0: never refuse; setMin changes it (a reload's min_free_space)
	free    func(dir string) (int64, error)
	mu      sync.Mutex
	state   atomic.Pointer[guardState]
	changed func(refusing error) // called on each change, from one goroutine at a time
}

type guardState struct {
	err error
	at  time.Time
}

const guardInterval = time.Second

// newDiskGuard returns the guard of dir; free reads the disk's free bytes (nil: freeBytes).
func newDiskGuard(dir string, min int64, free func(string) (int64, error), changed func(error)) *diskGuard {
	if free == nil {
		free = freeBytes
	}
	g := &diskGuard{dir: dir, free: free, changed: changed}
	g.min.Store(min)
	g.state.Store(&guardState{})
	return g
}

// resume is the free space at which a refusing guard with min accepts writes again.
func resume(min int64) int64 { return min + min/10 }

// setMin makes min the reserve from now on, and looks at the disk at once: a reload that lowers it on a
// full disk takes publications again, one that turns it off (≤ 0) too, saying so once.
func (g *diskGuard) setMin(min int64) {
	g.mu.Lock()
	g.min.Store(min)
	if st := g.state.Load(); min <= 0 && st.err != nil {
		g.state.Store(&guardState{at: time.Now()})
		if g.changed != nil {
			g.changed(nil)
		}
	}
	g.mu.Unlock()
	_ = g.check(true)
}

// check returns a store.ErrUnavailable while the disk is short of space; force looks at the disk now.
func (g *diskGuard) check(force bool) error {
	if g == nil || g.min.Load() <= 0 {
		return nil
	}
	st := g.state.Load()
	if !force && time.Since(st.at) < guardInterval {
		return st.err
	}
	if !force && !g.mu.TryLock() {
		return st.err // another caller is looking
	}
	if force {
		g.mu.Lock()
	}
	defer g.mu.Unlock()
	st = g.state.Load()
	min := g.min.Load()
	if min <= 0 {
		return nil // turned off meanwhile (setMin)
	}
	free, ferr := g.free(g.dir)
	var err error
	switch {
	case ferr != nil:
		err = st.err // the disk cannot be read now: what it last said stands
	case free < min || (st.err != nil && free < resume(min)):
		err = fmt.Errorf("%w: the disk of %s has %d MiB free; writes stop under the %d MiB the database keeps in reserve (min_free_space) and resume at %d MiB free",
			store.ErrUnavailable, g.dir, free>>20, min>>20, resume(min)>>20)
	}
	g.state.Store(&guardState{err: err, at: time.Now()})
	if (err == nil) != (st.err == nil) && g.changed != nil {
		g.changed(err)
	}
	return err
}

// SetMinFreeBytes sets the free space under which the store refuses writes, as Options.MinFreeBytes does
// at Open (0: DefaultMinFreeBytes; negative: never refuse): a reload's min_free_space reaches the store
// the running server shares across reloads.
func (s *Store) SetMinFreeBytes(n int64) { s.guard.setMin(cmp.Or(n, DefaultMinFreeBytes)) }

// Verify checks the database in dir, which nothing else may have open (Store.Verify checks an open one).
// It never repairs anything (Repair does).
func Verify(dir string) (*store.Verification, error) {
	db, err := badger.Open(badger.DefaultOptions(dir).WithLogger(nil).WithReadOnly(true))
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", dir, err)
	}
	defer db.Close()
	return verifyDB(db)
}

// Verify checks the open store as Verify checks a closed database, in one read transaction: what it
// reads is one moment of the database, while publishing goes on.
func (s *Store) Verify(context.Context) (*store.Verification, error) {
	if s.db.IsClosed() {
		return nil, store.ErrClosed
	}
	return verifyDB(s.db)
}

// verifyDB counts the records of db by status and checks every index entry and aggregate against the
// records, in both directions (each record has exactly the entries it should, and there is no entry
// without its record), and that no two publications share an id (sharedIDs).
func verifyDB(db *badger.DB) (*store.Verification, error) {
	v := &store.Verification{Records: map[string]int{}}
	problem := func(format string, a ...any) {
		if len(v.Problems) < 200 {
			v.Problems = append(v.Problems, fmt.Sprintf(format, a...))
		}
	}
	err := db.View(func(txn *badger.Txn) error {
		var expected, missing int // index and pair entries the records call for, and those not found
		var aggs aggDelta
		cells := newCellTable() // the cell counters the records call for
		postings := &postingReader{txn: txn}
		it := txn.NewIterator(badger.IteratorOptions{Prefix: prefixRecord, PrefetchValues: true, PrefetchSize: 64})
		for it.Rewind(); it.Valid(); it.Next() {
			id := string(it.Item().Key()[len(prefixRecord):])
			rec := &store.Record{}
			if err := it.Item().Value(func(b []byte) error { return json.Unmarshal(b, rec) }); err != nil {
				problem("record %s does not decode: %v", id, err)
				continue
			}
			if rec.ID != id {
				problem("record key %s holds record %s", id, rec.ID)
			}
			rec.Normalize()
			v.Records[recordStatus(rec)]++
			aggs.add(rec, 1)
			cells.take(&aggs)
			entries := slices.Concat([]kv{{pairKey(rec.Source, rec.ExternalID), []byte(rec.ID)}}, indexEntries(rec), changeEntries(rec))
			expected += len(entries)
			var seq uint64 // of the record's word blocks, in its text entry
			if item, err := txn.Get(append(slices.Clone(prefixText), rec.ID...)); err == nil {
				if err := item.Value(func(v []byte) error { seq = textSeq(v); return nil }); err != nil {
					return err
				}
			}
			for _, e := range entries {
				v.Checked++
				if bytes.HasPrefix(e.k, prefixWord) {
					sum, ok, err := postings.get(e.k, seq)
					switch {
					case err != nil:
						return err
					case !ok:
						missing++
						problem("record %s lacks its %s entry", id, keyKind(e.k))
					case !bytes.Equal(sum, e.v):
						problem("record %s: its %s entry differs from the record", id, keyKind(e.k))
					}
					continue
				}
				item, err := txn.Get(e.k)
				if errors.Is(err, badger.ErrKeyNotFound) {
					missing++
					problem("record %s lacks its %s entry", id, keyKind(e.k))
					continue
				}
				if err != nil {
					return err
				}
				if err := item.Value(func(b []byte) error {
					if bytes.HasPrefix(e.k, prefixText) { // the seq is the writer's (indexEntries)
						b, e.v = textOf(b), textOf(e.v)
					}
					if !bytes.Equal(b, e.v) {
						problem("record %s: its %s entry differs from the record", id, keyKind(e.k))
					}
					return nil
				}); err != nil {
					return err
				}
			}
		}
		it.Close()
		shared, err := sharedIDs(txn)
		if err != nil {
			return err
		}
		for _, sh := range shared {
			v.SharedIDs++
			problem("id %s: %d publication(s) of another pair point to it, but its record is one publication: they shared the id and one overwrote the other (directaid verify --repair)", sh.id, sh.pairs)
		}
		// Entries without a record: every entry found above is one of these keys, so any surplus is an orphan.
		found := 0
		for _, p := range [][]byte{prefixPair, prefixTime, prefixKind, prefixGeo, prefixText, prefixChange, prefixExpiry} {
			found += countKeys(txn, p)
		}
		n, err := countPostings(txn) // the word index: its postings, not its blocks
		if err != nil {
			return err
		}
		found += n
		if orphans := found - (expected - missing); orphans != 0 {
			problem("%d index entries for the %d the records have: %d belong to no record", found, expected-missing, orphans)
		}
		// Aggregates, recomputed from the records, must equal the stored ones, and there must be no other.
		aggKeys := 0
		for slug, a := range aggs.all {
			aggKeys++
			checkAgg(txn, v, problem, aggKey(slug), a, "aggregate of "+slug)
		}
		if n := countKeys(txn, prefixAgg) + countKeys(txn, prefixHour); n != aggKeys {
			problem("%d aggregates stored for %d computed from the records", n, aggKeys)
		}
		// Municipio aggregates, likewise; a municipio whose records are all gone may keep an empty one,
		// but not one that still counts records.
		const muniWhat, cellWhat = "aggregate of a municipio", "counter of a geographic cell"
		for k, a := range aggs.munis {
			checkAgg(txn, v, problem, []byte(k), a, muniWhat)
		}
		stray, err := strayCounters(txn, prefixMuni, func(k []byte) bool { return aggs.munis[string(k)] != nil }, func(b []byte) bool {
			a, err := decodeAggregate(b)
			return err != nil || a.nonZero()
		})
		if err != nil {
			return err
		}
		if stray > 0 {
			problem("%d stored with records counted, and no record behind them: %s", stray, muniWhat)
		}
		// The cell counters as Open loads them (the checkpoint and the journal) must be those the records
		// call for.
		stored, err := loadCells(txn)
		if err != nil {
			problem("the cell counters do not load: %v", err)
		} else {
			want, got := cells.all(), stored.all()
			for k, c := range want {
				v.Checked++
				if !slices.Equal(got[k], c) {
					problem("%s differs from the records", cellWhat)
				}
			}
			stray := 0
			for k := range got {
				if want[k] == nil {
					stray++
				}
			}
			if stray > 0 {
				problem("%d stored with records counted, and no record behind them: %s", stray, cellWhat)
			}
		}
		// Word counters, likewise (a token whose records are all gone may keep a counter of 0).
		if stored != nil {
			want, got := cells.wordCounts(), stored.wordCounts()
			for tok, n := range want {
				v.Checked++
				if got[tok] != n {
					problem("the counter of a word says %d records, %d have it", got[tok], n)
				}
			}
			stray := 0
			for tok := range got {
				if _, ok := want[tok]; !ok {
					stray++
				}
			}
			if stray > 0 {
				problem("%d word counters stored with records counted, and no record has the word", stray)
			}
		}
		return nil
	})
	return v, err
}

func checkAgg(txn *badger.Txn, v *store.Verification, problem func(string, ...any), key []byte, want *aggregate, what string) {
	v.Checked++
	got, err := getAggregate(txn, key)
	if err != nil {
		problem("%s: %v", what, err)
		return
	}
	if !bytes.Equal(got.encode(), want.encode()) {
		problem("%s differs from the records", what)
	}
}

// strayCounters counts the counters under prefix that no record calls for (known false) and that still
// count records (counting true: not zero, or unreadable).
func strayCounters(txn *badger.Txn, prefix []byte, known, counting func([]byte) bool) (int, error) {
	it := txn.NewIterator(badger.IteratorOptions{Prefix: prefix})
	defer it.Close()
	n := 0
	for it.Rewind(); it.Valid(); it.Next() {
		if known(it.Item().Key()) {
			continue
		}
		if err := it.Item().Value(func(b []byte) error {
			if counting(b) {
				n++
			}
			return nil
		}); err != nil {
			return 0, err
		}
	}
	return n, nil
}

// nonZero reports whether a counts any record (an aggregate whose records are all gone keeps zeros).
func (a *aggregate) nonZero() bool {
	if a.people != 0 {
		return true
	}
	for _, n := range a.cells {
		if n != 0 {
			return true
		}
	}
	return false
}

func countKeys(txn *badger.Txn, prefix []byte) int {
	it := txn.NewIterator(badger.IteratorOptions{Prefix: prefix})
	defer it.Close()
	n := 0
	for it.Rewind(); it.Valid(); it.Next() {
		n++
	}
	return n
}

// keyKind names the kind of an index key in a report (never its content, which may hold a phone's pair).
func keyKind(k []byte) string {
	for _, p := range []struct {
		prefix []byte
		name   string
	}{{prefixPair, "idempotency pair"}, {prefixTime, "time index"}, {prefixKind, "type/category index"},
		{prefixGeo, "geographic index"}, {prefixText, "text index"}, {prefixChange, "change index"}, {prefixWord, "word index"}} {
		if bytes.HasPrefix(k, p.prefix) {
			return p.name
		}
	}
	return strings.TrimRight(string(k[:min(2, len(k))]), "\x00")
}

// recordStatus is a record's lifecycle status (Normalized: older records read as open).
func recordStatus(rec *store.Record) string { return rec.Status }
