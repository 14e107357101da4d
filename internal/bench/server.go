package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"golang.org/x/sys/unix"

	"github.com/directaid/directaid/internal/testserver"
)

// ceilingRoute is the Caddy-only route every ratio is taken against: same binary, same Caddyfile, same
// middleware in front (rate_limit), but no directaid code behind it.
const ceilingRoute = `	handle /ceiling {
		respond "ok" 200
	}`

// server is one directaid process over a fresh Badger in its own temp dir, or over a PostgreSQL database.
type server struct {
	Addr      string // 127.0.0.1:PORT
	AdminAddr string
	Dir       string
	DataDir   string

	cmd  *exec.Cmd // the command of the next launch, then of the running process
	proc *testserver.Process
	out  *lockedBuffer
	dsn  string // the PostgreSQL database, when the server runs on one
}

// startServer renders the test Caddyfile with the ceiling route and the publish limit effectively off,
// then starts bin on loopback, on the PostgreSQL database dsn or else a fresh Badger, inside cg when
// given, and waits until discovery answers.
func startServer(o Options, parent string, cg *memCgroup, dsn string) (*server, error) {
	bin, echo, env := o.Bin, o.ServerOutput, o.ServerEnv
	if dsn != "" {
		env = append(slices.Clone(env), "DIRECTAID_DATABASE_URL="+dsn)
	}
	dir, err := os.MkdirTemp(parent, "server-")
	if err != nil {
		return nil, err
	}
	port, err := testserver.LoopbackPort()
	if err != nil {
		return nil, err
	}
	adminPort, err := testserver.LoopbackPort()
	if err != nil {
		return nil, err
	}
	s := &server{
		Addr: fmt.Sprintf("127.0.0.1:%d", port), AdminAddr: fmt.Sprintf("127.0.0.1:%d", adminPort),
		Dir: dir, DataDir: filepath.Join(dir, "data"), out: &lockedBuffer{}, dsn: dsn,
	}
	// caddy-ratelimit keeps a ring of `events` timestamps per client, so "off" is a high rate over a short
	// window (100k per second, far above what two cores serve), not a huge count that would cost memory.
	var ems string
	if o.Directaid != "" {
		ems = testserver.TwoEmergencies + "\n" + o.Directaid
	}
	cf := testserver.Caddyfile(testserver.Options{PublishEvents: 100000, PublishWindow: "1s", DetailEvents: 400000, Site: ceilingRoute, Postgres: dsn, Emergencies: ems},
		dir, s.DataDir, port, adminPort)
	// Benchmark the production log level: per-request DEBUG lines would measure the logger.
	cf = strings.Replace(cf, "level DEBUG", "level INFO", 1)
	path := filepath.Join(dir, "Caddyfile")
	if err := os.WriteFile(path, []byte(cf), 0o644); err != nil {
		return nil, err
	}
	argv := []string{bin, "run", "--config", path}
	if cg != nil {
		argv = cg.wrap(argv)
	}
	s.cmd = exec.Command(argv[0], argv[1:]...)
	s.cmd.Env = append(os.Environ(), "HOME="+dir, "XDG_DATA_HOME="+filepath.Join(dir, "xdg-data"), "XDG_CONFIG_HOME="+filepath.Join(dir, "xdg-config"))
	s.cmd.Env = append(s.cmd.Env, env...)
	var out io.Writer = s.out
	if echo != nil {
		out = io.MultiWriter(s.out, echo)
	}
	s.cmd.Stdout, s.cmd.Stderr = out, out
	if err := s.launch(); err != nil {
		return nil, err
	}
	return s, nil
}

// restart starts a stopped server again: same Caddyfile, ports and database.
func (s *server) restart() error {
	old := s.cmd
	s.cmd = exec.Command(old.Path, old.Args[1:]...)
	s.cmd.Env, s.cmd.Stdout, s.cmd.Stderr = old.Env, old.Stdout, old.Stderr
	return s.launch()
}

// launch starts s.cmd and waits until discovery answers.
func (s *server) launch() error {
	proc, err := testserver.StartProcess(s.cmd)
	if err != nil {
		return err
	}
	s.proc = proc
	if err := proc.WaitAnswers("http://"+s.Addr+helpPath, 30*time.Second); err != nil {
		s.stop()
		return fmt.Errorf("directaid: %v:\n%s", err, s.out.String())
	}
	return nil
}

// stop shuts the server down gracefully (Badger flushes and closes), killing it after two minutes.
func (s *server) stop() {
	if s.proc != nil {
		s.proc.Stop(syscall.SIGINT, 2*time.Minute)
	}
}

// stat is the server's /proc/<pid>/stat fields after the parenthesized command name (field 3 is [0]).
func (s *server) stat() []string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", s.cmd.Process.Pid))
	if err != nil {
		return nil
	}
	return strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
}

// cpu is the CPU time (user + system) the server has used: utime and stime, fields 14 and 15.
func (s *server) cpu() time.Duration {
	f := s.stat()
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	const clkTck = 100 // USER_HZ on Linux
	return time.Duration(ut+st) * time.Second / clkTck
}

// majorFaults is how many page faults of the server read from disk (majflt, field 12).
func (s *server) majorFaults() int64 {
	f := s.stat()
	if len(f) < 10 {
		return 0
	}
	n, _ := strconv.ParseInt(f[9], 10, 64)
	return n
}

// dropPageCache evicts dir's files from the page cache (posix_fadvise DONTNEED), so that the next reader
// finds them cold and, in a memory cgroup, is charged for what it reads back.
func dropPageCache(dir string) error {
	return filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		// Dirty pages are not dropped: written back first (a copied directory's are all dirty).
		if err := f.Sync(); err != nil {
			return err
		}
		return unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED)
	})
}

// status reads fields of /proc/<pid>/status given in kB (VmHWM, RssAnon, ...), in bytes.
func (s *server) status(fields ...string) map[string]int64 {
	out := map[string]int64{}
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", s.cmd.Process.Pid))
	if err != nil {
		return out
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		name, v, ok := strings.Cut(sc.Text(), ":")
		if ok && slices.Contains(fields, name) {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			out[name] = kb << 10
		}
	}
	return out
}

// peakRSS is the server's resident-set high-water mark (VmHWM) in bytes.
func (s *server) peakRSS() int64 { return s.status("VmHWM")["VmHWM"] }

// watchMemory samples the anonymous and file-backed parts of the resident set every 200 ms until stop is
// closed, and reports their peaks: VmHWM alone cannot tell the Go heap from Badger's memory-mapped
// tables, which are page cache that the kernel reclaims under pressure.
func (s *server) watchMemory(stop <-chan struct{}) (peakAnon, peakFile func() int64) {
	var mu sync.Mutex
	var anon, file int64
	go func() {
		t := time.NewTicker(200 * time.Millisecond)
		defer t.Stop()
		for {
			st := s.status("RssAnon", "RssFile")
			mu.Lock()
			anon, file = max(anon, st["RssAnon"]), max(file, st["RssFile"])
			mu.Unlock()
			select {
			case <-stop:
				return
			case <-t.C:
			}
		}
	}()
	get := func(p *int64) func() int64 {
		return func() int64 { mu.Lock(); defer mu.Unlock(); return *p }
	}
	return get(&anon), get(&file)
}

// profile fetches a CPU profile of the running server from Caddy's admin endpoint into path (a runtime
// trace when path ends in .trace).
func (s *server) profile(path string, d time.Duration) error {
	secs, kind := max(int(d/time.Second), 1), "profile"
	if strings.HasSuffix(path, ".trace") {
		kind = "trace"
	}
	resp, err := http.Get(fmt.Sprintf("http://%s/debug/pprof/%s?seconds=%d", s.AdminAddr, kind, secs))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return fmt.Errorf("pprof: %s", resp.Status)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// storeWrites reads, from Caddy's admin /debug/vars, Badger's counts of what it was handed to write since
// the server started: entries (keys set or deleted) and their bytes as Badger estimates them (key, value
// and entry header). Zeros for a PostgreSQL server, which has no Badger.
func (s *server) storeWrites() (keys, bytes int64, err error) {
	resp, err := http.Get(fmt.Sprintf("http://%s/debug/vars", s.AdminAddr))
	if err != nil {
		return 0, 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return 0, 0, fmt.Errorf("debug/vars: %s", resp.Status)
	}
	var vars struct {
		Puts  int64 `json:"badger_put_num_user"`
		Bytes int64 `json:"badger_write_bytes_user"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&vars); err != nil {
		return 0, 0, fmt.Errorf("debug/vars: %w", err)
	}
	return vars.Puts, vars.Bytes, nil
}

// diskUsage sums the blocks allocated to the files under dir (what `du` reports, not apparent sizes:
// Badger preallocates and truncates files).
func diskUsage(dir string) (int64, error) {
	var total int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if st, ok := info.Sys().(*syscall.Stat_t); ok {
			total += st.Blocks * 512
		} else {
			total += info.Size()
		}
		return nil
	})
	return total, err
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// databaseSize is what PostgreSQL takes for the database at dsn (tables, indexes, TOAST), in bytes.
func databaseSize(dsn string) (int64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return 0, err
	}
	defer conn.Close(ctx)
	var n int64
	err = conn.QueryRow(ctx, `SELECT pg_database_size(current_database())`).Scan(&n)
	return n, err
}
