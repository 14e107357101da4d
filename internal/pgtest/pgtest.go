// Package pgtest starts a throwaway PostgreSQL cluster for tests and benchmarks: initdb in a temporary
// directory, a server on a free loopback port (no Unix socket), one fresh database per caller. PostgreSQL
// refuses to run as root, so as root the server runs as the `postgres` user (runuser).
//
// Without PostgreSQL, Start skips the test; with DIRECTAID_REQUIRE_POSTGRES=1 (set by .ci/run) it fails.
// The binaries are looked up in DIRECTAID_PG_BIN, then the newest /usr/lib/postgresql/*/bin, then PATH.
package pgtest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/directaid/directaid/internal/testserver"
)

// Required reports whether a missing PostgreSQL must fail the tests instead of skipping them.
func Required() bool { return os.Getenv("DIRECTAID_REQUIRE_POSTGRES") == "1" }

// Options shape the cluster.
type Options struct {
	// Durable keeps fsync on (the default turns it off: tests restart the server cleanly or kill clients,
	// never the machine). Benchmarks set it to measure what production pays.
	Durable bool
	// SharedBuffers, when set (e.g. "6GB"), is the server's shared_buffers, as an operator sizes it
	// (README "Más de una máquina"); empty keeps PostgreSQL's default of 128 MB, enough for tests.
	SharedBuffers string
}

// Cluster is one running PostgreSQL server.
type Cluster struct {
	Bin  string // directory of initdb, pg_ctl, postgres
	Dir  string // the temporary directory (data in Dir/data, log in Dir/server.log)
	Port int

	asPostgres bool // run the server's commands as the postgres user
	uid, gid   int
	dbs        atomic.Int64
}

// Start starts a cluster for t and stops it when t ends. It skips t without PostgreSQL, unless Required.
func Start(t testing.TB) *Cluster {
	t.Helper()
	return StartWith(t, Options{})
}

// StartWith is Start with options.
func StartWith(t testing.TB, opts Options) *Cluster {
	t.Helper()
	bin, err := FindBin()
	if err != nil {
		if Required() {
			t.Fatalf("DIRECTAID_REQUIRE_POSTGRES=1 but %v (see .ci/run)", err)
		}
		t.Skipf("PostgreSQL not available: %v", err)
	}
	c, err := New(bin, opts)
	if err != nil {
		t.Fatalf("start PostgreSQL: %v", err)
	}
	t.Cleanup(c.Close)
	return c
}

// FindBin returns the directory holding initdb and pg_ctl.
func FindBin() (string, error) {
	if d := os.Getenv("DIRECTAID_PG_BIN"); d != "" {
		return d, checkBin(d)
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	slices.SortFunc(dirs, func(a, b string) int { return versionOf(b) - versionOf(a) })
	for _, d := range dirs {
		if checkBin(d) == nil {
			return d, nil
		}
	}
	if p, err := exec.LookPath("pg_ctl"); err == nil {
		d := filepath.Dir(p)
		return d, checkBin(d)
	}
	return "", errors.New("no initdb/pg_ctl found (install postgresql and postgresql-contrib, or set DIRECTAID_PG_BIN)")
}

func versionOf(binDir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return n
}

func checkBin(d string) error {
	for _, name := range []string{"initdb", "pg_ctl", "postgres"} {
		if _, err := os.Stat(filepath.Join(d, name)); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	return nil
}

// New initialises and starts a cluster with the binaries in bin. Close stops it and removes its files.
func New(bin string, opts Options) (*Cluster, error) {
	c := &Cluster{Bin: bin}
	parent := os.TempDir()
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			return nil, errors.New("PostgreSQL refuses to run as root and there is no postgres user")
		}
		c.asPostgres = true
		c.uid, _ = strconv.Atoi(u.Uid)
		c.gid, _ = strconv.Atoi(u.Gid)
		// The postgres user must reach the directory: a private TMPDIR (under /root, say) will not do.
		if exec.Command("runuser", "-u", "postgres", "--", "test", "-x", parent).Run() != nil {
			parent = "/tmp"
		}
	}
	dir, err := os.MkdirTemp(parent, "directaid-pg-")
	if err != nil {
		return nil, err
	}
	c.Dir = dir
	if c.asPostgres {
		if err := os.Chown(dir, c.uid, c.gid); err != nil {
			c.removeDir()
			return nil, err
		}
	}
	tmpl, err := c.template(parent)
	if err != nil {
		c.removeDir()
		return nil, err
	}
	if out, err := exec.Command("cp", "-a", tmpl, c.dataDir()).CombinedOutput(); err != nil {
		c.removeDir()
		return nil, fmt.Errorf("copy the initdb template: %v\n%s", err, out)
	}
	fsync := "off"
	if opts.Durable {
		fsync = "on"
	}
	conf := fmt.Sprintf("listen_addresses = '127.0.0.1'\nunix_socket_directories = ''\nfsync = %s\n"+
		"max_connections = 300\nlog_min_messages = warning\n", fsync)
	if opts.SharedBuffers != "" {
		conf += "shared_buffers = '" + opts.SharedBuffers + "'\n"
	}
	if err := c.appendConf(conf); err != nil {
		c.removeDir()
		return nil, err
	}
	// A free port can be taken between the probe and the server's bind: try a few.
	for attempt := 0; ; attempt++ {
		c.Port, err = testserver.LoopbackPort()
		if err == nil {
			err = c.startServer()
		}
		if err == nil {
			break
		}
		if attempt == 3 {
			c.removeDir()
			return nil, err
		}
	}
	return c, nil
}

// template returns a data directory fresh from initdb, made once per machine and binary directory and
// copied for each cluster: initdb takes seconds, a copy a fraction of one.
func (c *Cluster) template(parent string) (string, error) {
	sum := sha256.Sum256([]byte(c.Bin))
	tmpl := filepath.Join(parent, fmt.Sprintf("directaid-pgtemplate-%d-%x", os.Geteuid(), sum[:6]))
	if _, err := os.Stat(filepath.Join(tmpl, "PG_VERSION")); err == nil {
		return tmpl, nil
	}
	work, err := os.MkdirTemp(parent, "directaid-pg-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(work)
	if c.asPostgres {
		if err := os.Chown(work, c.uid, c.gid); err != nil {
			return "", err
		}
	}
	data := filepath.Join(work, "data")
	if out, err := c.run("initdb", "-D", data, "-U", "postgres", "-A", "trust", "-E", "UTF8",
		"--locale=C.UTF-8", "--no-sync", "--no-instructions"); err != nil {
		return "", fmt.Errorf("initdb: %v\n%s", err, out)
	}
	// Concurrent test binaries may race to make it: the first rename wins, the others use it.
	if err := os.Rename(data, tmpl); err != nil {
		if _, statErr := os.Stat(filepath.Join(tmpl, "PG_VERSION")); statErr != nil {
			return "", err
		}
	}
	return tmpl, nil
}

func (c *Cluster) dataDir() string { return filepath.Join(c.Dir, "data") }

func (c *Cluster) appendConf(s string) error {
	f, err := os.OpenFile(filepath.Join(c.dataDir(), "postgresql.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteString(s)
	return errors.Join(err, f.Close())
}

func (c *Cluster) startServer() error {
	out, err := c.run("pg_ctl", "-D", c.dataDir(), "-l", filepath.Join(c.Dir, "server.log"), "-w", "-t", "60",
		"-o", "-p "+strconv.Itoa(c.Port), "start")
	if err != nil {
		return fmt.Errorf("pg_ctl start: %v\n%s\n%s", err, out, c.Log())
	}
	return nil
}

// run runs one of the cluster's binaries, as the postgres user when we are root.
func (c *Cluster) run(name string, args ...string) ([]byte, error) {
	path := filepath.Join(c.Bin, name)
	var cmd *exec.Cmd
	if c.asPostgres {
		cmd = exec.Command("runuser", append([]string{"-u", "postgres", "--", path}, args...)...)
	} else {
		cmd = exec.Command(path, args...)
	}
	// pg_ctl's server must not die with the test's process group on Ctrl-C before Close runs.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	err := cmd.Run()
	return buf.Bytes(), err
}

// Log returns the end of the server's log, for failure messages.
func (c *Cluster) Log() string {
	b, _ := os.ReadFile(filepath.Join(c.Dir, "server.log"))
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

// DSN is the URL of database db as the superuser.
func (c *Cluster) DSN(db string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", c.Port, db)
}

// NewDatabase creates a fresh, empty database and returns its DSN.
func (c *Cluster) NewDatabase(t testing.TB) string {
	t.Helper()
	dsn, err := c.CreateDatabase()
	if err != nil {
		t.Fatal(err)
	}
	return dsn
}

// CreateDatabase creates a fresh, empty database and returns its DSN.
func (c *Cluster) CreateDatabase() (string, error) {
	name := fmt.Sprintf("directaid_%d", c.dbs.Add(1))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, c.DSN("postgres"))
	if err != nil {
		return "", fmt.Errorf("connect: %w", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		return "", fmt.Errorf("create database: %w", err)
	}
	return c.DSN(name), nil
}

// Restart is `pg_ctl restart -m <mode>` (smart, fast or immediate): the server goes away and comes back on
// the same port with the same data.
func (c *Cluster) Restart(mode string) error {
	out, err := c.run("pg_ctl", "-D", c.dataDir(), "-l", filepath.Join(c.Dir, "server.log"), "-w", "-t", "60",
		"-m", mode, "-o", "-p "+strconv.Itoa(c.Port), "restart")
	if err != nil {
		return fmt.Errorf("pg_ctl restart: %v\n%s\n%s", err, out, c.Log())
	}
	return nil
}

// Stop stops the server (mode: smart, fast or immediate), keeping its files; StartAgain brings it back.
func (c *Cluster) Stop(mode string) error {
	out, err := c.run("pg_ctl", "-D", c.dataDir(), "-w", "-m", mode, "stop")
	if err != nil {
		return fmt.Errorf("pg_ctl stop: %v\n%s", err, out)
	}
	return nil
}

// StartAgain starts a stopped server on the same port.
func (c *Cluster) StartAgain() error { return c.startServer() }

// Close stops the server and removes its files.
func (c *Cluster) Close() {
	if _, err := os.Stat(filepath.Join(c.dataDir(), "postmaster.pid")); err == nil {
		_ = c.Stop("immediate")
	}
	c.removeDir()
}

func (c *Cluster) removeDir() {
	if c.Dir != "" && strings.Contains(filepath.Base(c.Dir), "directaid-pg-") {
		_ = os.RemoveAll(c.Dir)
	}
}

var shared struct {
	mu      sync.Mutex
	tried   bool
	cluster *Cluster
	missing error // no PostgreSQL here: skip, unless Required
	err     error // PostgreSQL is here but did not start: fail
}

// Shared is one cluster for every test of the package (each test makes its own database with
// NewDatabase): starting a server takes seconds. The package's TestMain must call Main, which stops it.
func Shared(t testing.TB) *Cluster {
	t.Helper()
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if !shared.tried {
		shared.tried = true
		if bin, err := FindBin(); err != nil {
			shared.missing = err
		} else if c, err := New(bin, Options{}); err != nil {
			shared.err = fmt.Errorf("start PostgreSQL: %w", err)
		} else {
			shared.cluster = c
		}
	}
	switch {
	case shared.err != nil:
		t.Fatal(shared.err)
	case shared.missing != nil && Required():
		t.Fatalf("DIRECTAID_REQUIRE_POSTGRES=1 but %v (see .ci/run)", shared.missing)
	case shared.missing != nil:
		t.Skipf("PostgreSQL not available: %v", shared.missing)
	}
	return shared.cluster
}

// Main runs the package's tests, then stops the cluster that Shared started, if any.
func Main(m *testing.M) int {
	code := m.Run()
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if shared.cluster != nil {
		shared.cluster.Close()
	}
	return code
}

// ClusterCPU is the CPU time (user + system) of the PostgreSQL cluster whose data directory is dir: the
// postmaster, its live children (backends, writers) and the children it has reaped. 0 when unknown.
func ClusterCPU(dir string) time.Duration {
	b, err := os.ReadFile(filepath.Join(dir, "postmaster.pid"))
	if err != nil {
		return 0
	}
	pid, err := strconv.Atoi(strings.TrimSpace(strings.SplitN(string(b), "\n", 2)[0]))
	if err != nil {
		return 0
	}
	const clkTck = 100 // USER_HZ on Linux
	var ticks int64
	procs, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		// Fields after the parenthesized command name: state, ppid, …, utime (11), stime, cutime, cstime.
		f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
		if len(f) < 15 {
			continue
		}
		self := p == fmt.Sprintf("/proc/%d/stat", pid)
		if !self && f[1] != strconv.Itoa(pid) {
			continue
		}
		last := 12
		if self {
			last = 14 // the reaped children's time too
		}
		for _, v := range f[11 : last+1] {
			n, _ := strconv.ParseInt(v, 10, 64)
			ticks += n
		}
	}
	return time.Duration(ticks) * time.Second / clkTck
}

// ProcessCPU is the CPU time (user + system) of this process so far, to set beside ClusterCPU.
func ProcessCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
