package badgerstore

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"

	"github.com/directaid/directaid/backend/store"
	"github.com/directaid/directaid/backend/store/storetest"
	"github.com/directaid/directaid/internal/erasescan"
)

// stallingWriter takes a backup: at its stallAt-th Write it says so on stalled and reads nothing more
// until release is closed, as a client that stops reading does.
type stallingWriter struct {
	bytes.Buffer
	writes  int
	stallAt int
	stalled chan struct{}
	release chan struct{}
}

func (w *stallingWriter) Write(p []byte) (int, error) {
	if w.writes++; w.writes == w.stallAt {
		close(w.stalled)
		<-w.release
	}
	return w.Buffer.Write(p)
}

// restoreVerify restores backup into a new directory, verifies it and opens it.
func restoreVerify(t *testing.T, backup []byte) (*Store, BackupInfo, *store.Verification) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "restored")
	info, err := Restore(dir, bytes.NewReader(backup))
	if err != nil {
		t.Fatalf("restore: %v", err)
	}
	v, err := Verify(dir)
	if err != nil {
		t.Fatal(err)
	}
	return open(t, Options{Dir: dir}), info, v
}

// TestBackupDoesNotStopWriters: while a backup is stuck on a client that reads nothing, creates and
// updates complete (the backup holds no lock a writer takes), and the backup is the snapshot of its
// start: every record then, in its state then, with all its index entries; none created after; and
// writes that go on while the rest of it streams change nothing in it.
func TestBackupDoesNotStopWriters(t *testing.T) {
	ctx := context.Background()
	s := open(t, Options{Dir: t.TempDir()})
	defer s.Close()
	before := records("before", 3000)
	for _, r := range createAll(t, s, before, nil) {
		if r.err != nil || !r.created {
			t.Fatalf("create: %+v", r)
		}
	}
	// The header, two frames, then it stalls: the snapshot is taken and the iterator has moved on.
	w := &stallingWriter{stallAt: 4, stalled: make(chan struct{}), release: make(chan struct{})}
	backupDone := make(chan error, 1)
	go func() { backupDone <- s.Backup(w) }()
	select {
	case <-w.stalled:
	case err := <-backupDone:
		t.Fatalf("the backup ended before it stalled (%d writes): %v", w.writes, err)
	}

	// Writes while the backup is stuck: new records, and records of every part of the key space
	// updated (status and category: their index entries move).
	during := records("during", 200)
	wrote := make(chan error, 1)
	go func() {
		errs := make(chan error, len(during))
		for _, r := range during {
			go func() {
				_, created, err := s.Create(ctx, r)
				if err == nil && !created {
					err = errors.New("not created")
				}
				errs <- err
			}()
		}
		for range during {
			if err := <-errs; err != nil {
				wrote <- err
				return
			}
		}
		for _, r := range before[:300] {
			if _, err := s.Update(ctx, r.ID, func(rec *store.Record) error {
				rec.Status, rec.Category = store.StatusResolved, "salud"
				return nil
			}); err != nil {
				wrote <- err
				return
			}
		}
		wrote <- nil
	}()
	select {
	case err := <-wrote:
		if err != nil {
			t.Fatal(err)
		}
	case err := <-backupDone:
		t.Fatalf("the backup ended while its client read nothing: %v", err)
	case <-time.After(time.Minute): // a fail-safe, not a threshold: the writes wait for the backup
		close(w.release)
		t.Fatal("creates and updates wait for a backup whose client reads nothing")
	}

	// More writes while the rest streams.
	var stop atomic.Bool
	var after sync.WaitGroup
	after.Add(1)
	go func() {
		defer after.Done()
		for i := 0; !stop.Load(); i++ {
			if _, _, err := s.Create(ctx, storetest.Record("app", "after-"+strconv.Itoa(i))); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	close(w.release)
	if err := <-backupDone; err != nil {
		t.Fatal(err)
	}
	stop.Store(true)
	after.Wait()

	r, info, v := restoreVerify(t, w.Bytes())
	defer r.Close()
	if !info.Checksummed || info.Frames < 10 {
		t.Errorf("backup: %+v (want several frames)", info)
	}
	if len(v.Problems) > 0 || v.Records[store.StatusOpen] != len(before) || len(v.Records) != 1 {
		t.Fatalf("the backup is not the snapshot of its start: %v, %q", v.Records, v.Problems)
	}
	for _, rec := range before[:300] {
		got, err := r.Get(ctx, rec.ID)
		if err != nil || got.Status != store.StatusOpen || got.Category != rec.Category {
			t.Fatalf("record %s in the backup: %+v, %v; want it as it was when the backup began", rec.ID, got, err)
		}
	}
	for _, rec := range during {
		if _, err := r.Get(ctx, rec.ID); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("record %s created after the backup began is in it: %v", rec.ID, err)
		}
	}
	// The restored database takes writes over the restored versions.
	if _, created, err := r.Create(ctx, during[0]); err != nil || !created {
		t.Fatalf("create in the restored database: %v", err)
	}
	if _, err := r.Update(ctx, before[0].ID, func(rec *store.Record) error { rec.Status = store.StatusResolved; return nil }); err != nil {
		t.Fatal(err)
	}
	if got, err := r.Get(ctx, before[0].ID); err != nil || got.Status != store.StatusResolved {
		t.Fatalf("an update in the restored database: %+v, %v", got, err)
	}
	if _, err := r.Get(ctx, during[0].ID); err != nil {
		t.Fatalf("a create in the restored database: %v", err)
	}
}

// TestBackupChecksums: a backup restores with its checksums verified; any changed byte (one digit of a
// phone number) fails and says where, in which frame and among which records; so do a cut anywhere, a
// frame taken out and bytes added at the end; and on failure the target directory is left empty.
func TestBackupChecksums(t *testing.T) {
	dir := t.TempDir()
	s := open(t, Options{Dir: dir})
	recs := records("sum", 400)
	for _, r := range createAll(t, s, recs, nil) {
		if r.err != nil {
			t.Fatal(r.err)
		}
	}
	var buf bytes.Buffer
	if err := s.Backup(&buf); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	backup := buf.Bytes()
	r, info, v := restoreVerify(t, backup)
	r.Close()
	if !info.Checksummed || info.Bytes != int64(len(backup)) || len(v.Problems) > 0 || v.Records[store.StatusOpen] != len(recs) {
		t.Fatalf("intact backup: %+v, %+v", info, v)
	}

	fails := func(name string, b []byte, want ...string) {
		t.Helper()
		target := filepath.Join(t.TempDir(), "restored")
		_, err := Restore(target, bytes.NewReader(b))
		if err == nil {
			t.Fatalf("%s: restored", name)
		}
		for _, w := range want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %q does not say %q", name, err, w)
			}
		}
		if _, serr := os.Stat(target); !errors.Is(serr, os.ErrNotExist) {
			t.Errorf("%s: the failed restore left %s behind (%v)", name, target, serr)
		}
	}

	// One digit of a phone number, in a record's JSON.
	phone := []byte(`"contactE164":"+573001234567"`)
	at := bytes.Index(backup, phone)
	if at < 0 {
		t.Fatal("no phone number in the backup")
	}
	changed := bytes.Clone(backup)
	changed[at+len(phone)-2] = '8'
	fails("a phone digit changed", changed, "frame ", "checksum mismatch", " to record ")

	// Frame boundaries, from the lengths.
	var starts []int
	for off := len(backupMagic) + 1; off < len(backup); off += frameHead + int(binary.BigEndian.Uint32(backup[off+1:])) + 4 {
		starts = append(starts, off)
	}
	trailer := starts[len(starts)-1]
	if backup[trailer] != frameTrailer || len(starts) < 4 {
		t.Fatalf("frames at %v", starts)
	}
	for _, n := range []int{0, 5, len(backupMagic), len(backupMagic) + 1, starts[1], starts[1] + 3, starts[2] - 1, trailer, len(backup) - 1} {
		want := "truncated"
		if n == 0 {
			want = "empty"
		}
		fails("cut at "+strconv.Itoa(n), backup[:n], want)
	}
	without := append(bytes.Clone(backup[:starts[1]]), backup[starts[2]:]...)
	fails("frame 2 taken out", without, "the trailer counts")
	fails("bytes added", append(bytes.Clone(backup), 0), "follow the trailer")
	longer := bytes.Clone(backup)
	longer[starts[1]+frameHead-1]++ // frame 2's length
	fails("frame 2's length changed", longer, "frame 2 (bytes "+strconv.Itoa(starts[1])+" to ", "checksum mismatch")
	flipped := bytes.Clone(backup)
	flipped[trailer+frameHead+30] ^= 1 // the trailer's SHA-256
	fails("trailer changed", flipped, "frame ", "the trailer", "checksum mismatch")
}

// TestRestoreOldBackup: a backup in Badger's own format, as Backup wrote it before checksums
// (DB.Backup), still restores, consistent, and says that it carries no checksum.
func TestRestoreOldBackup(t *testing.T) {
	dir := t.TempDir()
	s := open(t, Options{Dir: dir})
	recs := records("old", 200)
	for _, r := range createAll(t, s, recs, nil) {
		if r.err != nil {
			t.Fatal(r.err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	db, err := badger.Open(badger.DefaultOptions(dir).WithLogger(nil))
	if err != nil {
		t.Fatal(err)
	}
	var old bytes.Buffer
	if _, err := db.Backup(&old, 0); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	r, info, v := restoreVerify(t, old.Bytes())
	defer r.Close()
	if info.Checksummed || !strings.Contains(info.Summary(), "no checksum") {
		t.Errorf("an old backup: %+v, %q", info, info.Summary())
	}
	if len(v.Problems) > 0 || v.Records[store.StatusOpen] != len(recs) {
		t.Fatalf("an old backup restored: %+v", v)
	}
	if _, err := r.Get(context.Background(), recs[7].ID); err != nil {
		t.Fatal(err)
	}
}

// TestErasureWaitsForBackup: a backup in progress reads the versions of its snapshot, which Badger then
// keeps, so the erasure rewrite (erase.go) waits for it: the cycle during the backup says so and leaves
// the erasure pending, and the first cycle after it removes the bytes from every file.
func TestErasureWaitsForBackup(t *testing.T) {
	dir := t.TempDir()
	s := open(t, Options{Dir: dir, GCInterval: time.Hour})
	defer s.Close()
	ctx := context.Background()
	digits := fmt.Sprintf("31%08d", time.Now().UnixNano()%1e8)
	rec := records("victim", 1)[0]
	rec.ContactWhatsapp, rec.ContactE164 = digits, "+57"+digits
	if _, _, err := s.Create(ctx, rec); err != nil {
		t.Fatal(err)
	}
	w := &stallingWriter{stallAt: 2, stalled: make(chan struct{}), release: make(chan struct{})}
	backupDone := make(chan error, 1)
	go func() { backupDone <- s.Backup(w) }()
	<-w.stalled
	if _, err := s.Update(ctx, rec.ID, func(r *store.Record) error {
		r.Status = store.StatusWithdrawn
		r.ErasePersonal()
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := s.Maintain(ctx); !errors.Is(err, errErasureWaits) || !s.erased.Load() {
		t.Fatalf("a cycle during the backup: %v (erasure pending %v)", err, s.erased.Load())
	}
	close(w.release)
	if err := <-backupDone; err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(w.Bytes(), []byte(rec.ContactE164)) {
		t.Fatal("the backup, begun before the erasure, lacks the number")
	}
	if err := s.Maintain(ctx); err != nil {
		t.Fatal(err)
	}
	if found, err := erasescan.Find(dir, []byte(rec.ContactE164)); err != nil || len(found) > 0 {
		t.Fatalf("erased data still in the files after the backup and a cycle: %v %v", found, err)
	}
}

// TestRestoreWatchesTheDisk: a restore onto a disk without room for the backup refuses before opening a
// database, and one whose disk fills while it loads stops with the figures; both say so, and leave
// nothing behind (Badger would otherwise die of SIGBUS writing through its memory mappings, leaving a
// half-written database). A backup file's size counts before anything is written.
func TestRestoreWatchesTheDisk(t *testing.T) {
	s := open(t, Options{Dir: t.TempDir()})
	for _, r := range createAll(t, s, records("disk", 300), nil) {
		if r.err != nil {
			t.Fatal(r.err)
		}
	}
	file := filepath.Join(t.TempDir(), "backup")
	f, err := os.Create(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Backup(f); err != nil {
		t.Fatal(err)
	}
	_ = f.Close()
	_ = s.Close()
	st, err := os.Stat(file)
	if err != nil {
		t.Fatal(err)
	}
	keep := openSpace(badgerOptions(Options{}))
	for _, c := range []struct {
		name string
		free func(calls int) int64 // the disk's free bytes at the calls-th look
		want string
	}{
		{"a disk too small for the backup", func(int) int64 { return keep + st.Size()/2 }, "needs about"},
		{"a disk that fills while loading", func(calls int) int64 {
			if calls < 3 {
				return keep + st.Size()
			}
			return keep / 2
		}, "filled up after"},
	} {
		target := filepath.Join(t.TempDir(), "restored")
		calls := 0
		in, err := os.Open(file)
		if err != nil {
			t.Fatal(err)
		}
		_, err = restore(target, in, &restoreSpace{every: 4 << 10, free: func(string) (int64, error) { calls++; return c.free(calls), nil }})
		_ = in.Close()
		if !errors.Is(err, ErrNoSpaceToOpen) || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), target) {
			t.Errorf("%s: %v", c.name, err)
		}
		if _, serr := os.Stat(target); !errors.Is(serr, os.ErrNotExist) {
			t.Errorf("%s: the failed restore left %s behind (%v)", c.name, target, serr)
		}
	}
	// With room, it restores.
	in, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	if _, err := restore(filepath.Join(t.TempDir(), "restored"), in, &restoreSpace{every: 4 << 10, free: func(string) (int64, error) { return keep + st.Size(), nil }}); err != nil {
		t.Fatal(err)
	}
}
