package pgstore_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/directaid/directaid/backend/pgstore"
	"github.com/directaid/directaid/internal/pgtest"
)

// newStorage is one node's storage on dsn (its own pool), with the given lease.
func newStorage(t testing.TB, dsn string, lease time.Duration) *pgstore.CertStorage {
	t.Helper()
	db, err := pgstore.Open(dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	s := pgstore.NewCertStorage(db)
	s.Lease, s.Poll = lease, 100*time.Millisecond
	t.Cleanup(s.Close)
	return s
}

// TestCertStorage checks what certmagic expects of a Storage, after its own FileStorage tests and the
// community suite that storage modules run (oyato/certmagic-storage-tests): keys and values, file and
// directory semantics of Stat/List/Delete, fs.ErrNotExist, and a lock taken and released under a
// cancelled context.
func TestCertStorage(t *testing.T) {
	s := newStorage(t, pgtest.Shared(t).NewDatabase(t), 5*time.Second)
	ctx := context.Background()

	t.Run("single key", func(t *testing.T) {
		key := "certificates/acme/example.org/example.org.crt"
		if s.Exists(ctx, key) {
			t.Fatal("a key never stored exists")
		}
		if _, err := s.Load(ctx, key); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("Load of a missing key: %v, want fs.ErrNotExist", err)
		}
		if _, err := s.Stat(ctx, key); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("Stat of a missing key: %v, want fs.ErrNotExist", err)
		}
		if err := s.Store(ctx, "", []byte{}); err == nil {
			t.Fatal("Store with an empty key succeeded")
		}
		for _, v := range [][]byte{nil, {}, []byte("bar")} {
			if err := s.Store(ctx, key, v); err != nil {
				t.Fatalf("Store(%q): %v", v, err)
			}
		}
		if got, err := s.Load(ctx, key); err != nil || string(got) != "bar" {
			t.Fatalf("Load = %q, %v; want the last value stored", got, err)
		}
		info, err := s.Stat(ctx, key)
		if err != nil || !info.IsTerminal || info.Key != key || info.Size != 3 || info.Modified.IsZero() {
			t.Fatalf("Stat = %+v, %v", info, err)
		}
		if err := s.Delete(ctx, key); err != nil {
			t.Fatal(err)
		}
		if s.Exists(ctx, key) {
			t.Fatal("a deleted key exists")
		}
		if err := s.Delete(ctx, key); err != nil {
			t.Fatalf("deleting a missing key: %v, want nil", err)
		}
	})

	t.Run("directories", func(t *testing.T) {
		dir := "dir"
		k1, k2, k3 := dir+"/k1", dir+"/k/a/b", dir+"/k/c"
		if _, err := s.List(ctx, k1, true); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("List of a missing key: %v, want fs.ErrNotExist", err)
		}
		for _, k := range []string{k1, k2, k3, "dirx/other", "di"} { // "dirx" and "di" share bytes, not a prefix
			if err := s.Store(ctx, k, []byte(k)); err != nil {
				t.Fatal(err)
			}
		}
		if info, err := s.Stat(ctx, dir); err != nil || info.IsTerminal || info.Key != dir {
			t.Fatalf("Stat(dir) = %+v, %v; want a directory", info, err)
		}
		if !s.Exists(ctx, dir+"/k/a") {
			t.Fatal("an intermediate directory does not exist")
		}
		ls, err := s.List(ctx, dir, false)
		slices.Sort(ls)
		if want := []string{dir + "/k", k1}; err != nil || !slices.Equal(ls, want) {
			t.Fatalf("List(dir, false) = %q, %v; want %q", ls, err, want)
		}
		ls, err = s.List(ctx, dir, true)
		slices.Sort(ls)
		if want := []string{dir + "/k", dir + "/k/a", k2, k3, k1}; err != nil || !slices.Equal(ls, want) {
			t.Fatalf("List(dir, true) = %q, %v; want %q", ls, err, want)
		}
		if err := s.Delete(ctx, dir+"/k"); err != nil {
			t.Fatal(err)
		}
		if s.Exists(ctx, k2) || s.Exists(ctx, k3) || !s.Exists(ctx, k1) || !s.Exists(ctx, "dirx/other") || !s.Exists(ctx, "di") {
			t.Fatal("deleting a directory must delete exactly the keys below it")
		}
	})

	t.Run("store and load race", func(t *testing.T) {
		a, b := bytes.Repeat([]byte("a"), 4<<20), bytes.Repeat([]byte("b"), 4<<20)
		if err := s.Store(ctx, "big", a); err != nil {
			t.Fatal(err)
		}
		done := make(chan error)
		go func() { done <- s.Store(ctx, "big", b) }()
		got, err := s.Load(ctx, "big")
		if err2 := <-done; err2 != nil {
			t.Fatal(err2)
		}
		if err != nil || len(got) != len(a) || (!bytes.Equal(got, a) && !bytes.Equal(got, b)) {
			t.Fatalf("a Load racing a Store read %d bytes, %v: want one whole value", len(got), err)
		}
	})

	t.Run("lock under a cancelled context", func(t *testing.T) {
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		if err := s.Unlock(cctx, "foo"); err == nil {
			t.Fatal("unlocking a lock not held succeeded")
		}
		if err := s.Lock(cctx, "foo"); err != nil {
			t.Fatalf("a free lock must be taken even under a cancelled context: %v", err)
		}
		if err := s.Lock(cctx, "foo"); err == nil {
			t.Fatal("a held lock was taken again")
		}
		if ok, err := s.TryLock(ctx, "foo"); ok || err != nil {
			t.Fatalf("TryLock of a held lock = %v, %v", ok, err)
		}
		if err := s.Unlock(cctx, "foo"); err != nil {
			t.Fatal(err)
		}
		if err := s.Lock(cctx, "foo"); err != nil {
			t.Fatal(err)
		}
		if err := s.RenewLockLease(ctx, "foo", time.Minute); err != nil {
			t.Fatal(err)
		}
		if err := s.Unlock(cctx, "foo"); err != nil {
			t.Fatal(err)
		}
	})
}

// TestCertStorageTwoNodesRace: two nodes (two storages with their own pools) race for one lock, eight
// goroutines each, each holder doing a read-modify-write of one key. No two holders overlap, and no
// increment is lost.
func TestCertStorageTwoNodesRace(t *testing.T) {
	dsn := pgtest.Shared(t).NewDatabase(t)
	nodes := []*pgstore.CertStorage{newStorage(t, dsn, 5*time.Second), newStorage(t, dsn, 5*time.Second)}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := nodes[0].Store(ctx, "counter", []byte("0")); err != nil {
		t.Fatal(err)
	}
	const perGoroutine = 3
	var inside, overlaps atomic.Int32
	var wg sync.WaitGroup
	for _, s := range nodes {
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range perGoroutine {
					if err := s.Lock(ctx, "issue-cert-example.org"); err != nil {
						t.Error(err)
						return
					}
					if inside.Add(1) != 1 {
						overlaps.Add(1)
					}
					v, err := s.Load(ctx, "counter")
					n, _ := strconv.Atoi(string(v))
					if err == nil {
						err = s.Store(ctx, "counter", []byte(strconv.Itoa(n+1)))
					}
					inside.Add(-1)
					if err2 := s.Unlock(ctx, "issue-cert-example.org"); err != nil || err2 != nil {
						t.Error(err, err2)
						return
					}
				}
			}()
		}
	}
	wg.Wait()
	v, err := nodes[1].Load(ctx, "counter")
	if want := strconv.Itoa(2 * 8 * perGoroutine); err != nil || string(v) != want {
		t.Fatalf("counter = %s, %v; want %s (lost updates)", v, err, want)
	}
	if overlaps.Load() != 0 {
		t.Fatalf("%d times a holder entered while another held the lock", overlaps.Load())
	}
}

// holder is another process (this test binary, re-run) that takes a lock and keeps it until told.
type holder struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Reader
}

const holderEnv = "DIRECTAID_TEST_LOCK_HOLDER"

func startHolder(t *testing.T, dsn, name string, lease time.Duration) *holder {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestLockHolderProcess$", "-test.v")
	cmd.Env = append(os.Environ(), holderEnv+"="+dsn+"\n"+name+"\n"+lease.String())
	cmd.Stderr = os.Stderr
	in, _ := cmd.StdinPipe()
	outPipe, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	h := &holder{cmd: cmd, in: in, out: bufio.NewReader(outPipe)}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	if line := h.line(t); line != "locked" {
		t.Fatalf("holder: %q", line)
	}
	return h
}

// line returns the holder's next line of its own (test framework lines are skipped).
func (h *holder) line(t *testing.T) string {
	t.Helper()
	for {
		s, err := h.out.ReadString('\n')
		if err != nil {
			t.Fatalf("holder output: %v", err)
		}
		if s, ok := strings.CutPrefix(s, "holder: "); ok {
			return strings.TrimSpace(s)
		}
	}
}

// TestLockHolderProcess is the holder's body; it runs only in the re-run process.
func TestLockHolderProcess(t *testing.T) {
	conf := os.Getenv(holderEnv)
	if conf == "" {
		t.Skip("only run as the lock holder of another test")
	}
	parts := strings.Split(conf, "\n")
	lease, _ := time.ParseDuration(parts[2])
	s := newStorage(t, parts[0], lease)
	lost := make(chan struct{}, 1)
	s.OnLost = func(string) { lost <- struct{}{} }
	ctx := context.Background()
	if err := s.Lock(ctx, parts[1]); err != nil {
		fmt.Println("holder: error", err)
		return
	}
	fmt.Println("holder: locked")
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		switch in.Text() {
		case "unlock":
			fmt.Println("holder:", errText(s.Unlock(ctx, parts[1])))
		case "lost?":
			select {
			case <-lost:
				fmt.Println("holder: lost")
			case <-time.After(2 * lease):
				fmt.Println("holder: not lost")
			}
		}
	}
}

func errText(err error) string {
	if err == nil {
		return "unlocked"
	}
	return "error " + err.Error()
}

// TestCertStorageHolderDied: a holder renews its lease while alive, so the lock stays taken past the
// lease; killed with SIGKILL, it cannot release it, and another node gets the lock once the lease ends.
func TestCertStorageHolderDied(t *testing.T) {
	dsn := pgtest.Shared(t).NewDatabase(t)
	const lease = 2 * time.Second
	h := startHolder(t, dsn, "lock-of-the-dead", lease)
	s := newStorage(t, dsn, lease)
	ctx := context.Background()
	time.Sleep(2 * lease) // past the first lease: only renewals keep it
	if ok, err := s.TryLock(ctx, "lock-of-the-dead"); ok || err != nil {
		t.Fatalf("TryLock of a lock whose holder is alive and renewing = %v, %v", ok, err)
	}
	if err := h.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = h.cmd.Wait()
	lctx, cancel := context.WithTimeout(ctx, 10*lease)
	defer cancel()
	if err := s.Lock(lctx, "lock-of-the-dead"); err != nil {
		t.Fatalf("the lock of a dead holder was never freed: %v", err)
	}
	if err := s.Unlock(ctx, "lock-of-the-dead"); err != nil {
		t.Fatal(err)
	}
}

// TestCertStorageStaleHolderCannotSteal: a holder frozen (SIGSTOP) past its lease loses the lock to
// another node; woken, it finds that it lost it, and its Unlock fails and leaves the new holder's lock be.
func TestCertStorageStaleHolderCannotSteal(t *testing.T) {
	dsn := pgtest.Shared(t).NewDatabase(t)
	const lease = 2 * time.Second
	h := startHolder(t, dsn, "frozen", lease)
	s, third := newStorage(t, dsn, lease), newStorage(t, dsn, lease)
	ctx := context.Background()
	if err := h.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	lctx, cancel := context.WithTimeout(ctx, 10*lease)
	defer cancel()
	err := s.Lock(lctx, "frozen")
	_ = h.cmd.Process.Signal(syscall.SIGCONT)
	if err != nil {
		t.Fatalf("the lock of a frozen holder was never freed: %v", err)
	}
	fmt.Fprintln(h.in, "lost?")
	if got := h.line(t); got != "lost" {
		t.Fatalf("the stale holder, woken, reports %q; want that it lost the lock", got)
	}
	fmt.Fprintln(h.in, "unlock")
	if got := h.line(t); !strings.HasPrefix(got, "error ") {
		t.Fatalf("the stale holder's Unlock: %q; want an error", got)
	}
	time.Sleep(2 * lease) // the new holder keeps renewing
	if ok, err := third.TryLock(ctx, "frozen"); ok || err != nil {
		t.Fatalf("after the stale holder's unlock, a third node's TryLock = %v, %v; want the lock still held", ok, err)
	}
	if err := s.Unlock(ctx, "frozen"); err != nil {
		t.Fatal(err)
	}
	if ok, err := third.TryLock(ctx, "frozen"); !ok || err != nil {
		t.Fatalf("released, the lock is not free: %v, %v", ok, err)
	}
}
