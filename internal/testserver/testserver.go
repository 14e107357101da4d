// Package testserver runs the real directaid binary on a loopback port over a real Badger in a temporary
// directory, for end-to-end tests and benchmarks. Every response a test receives through Do can be checked
// against the OpenAPI document the server itself serves, with an independent validator.
package testserver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"text/template"
	"time"
)

// Options shape the Caddyfile a server runs with.
type Options struct {
	// Emergencies is the body of the global directaid block after `database` (emergency blocks, public_url).
	// Empty means the two default emergencies below.
	Emergencies string
	// PublishEvents is the per-IP publish limit per PublishWindow; 0 means 100000 (effectively off).
	PublishEvents int
	PublishWindow string // Caddy duration; default 1m
	// DetailEvents is the per-IP limit of view=detail reads per minute; 0 means 100000 (effectively off).
	DetailEvents int
	// Global adds lines to the global options block; Site adds lines to the site block.
	Global, Site string
	// DataDir reuses a data directory (to restart over the same database); empty makes a fresh one.
	DataDir string
	// Database is the body of a block after `database badger <dir>` (min_free_space).
	Database string
	// Postgres, a DSN, runs the node on PostgreSQL instead of Badger (`database postgres
	// {env.DIRECTAID_DATABASE_URL}`); with SharedStorage, Caddy's storage is there too (directaid_postgres).
	Postgres      string
	SharedStorage bool
	// RateLimit adds lines to the directaid_rate_limits block (e.g. `distributed { read_interval 250ms }`).
	RateLimit string
	// Timeouts replaces the body of the servers' timeouts block (the shipped Caddyfile's by default);
	// Servers adds lines to the servers block (e.g. `protocols h1 h2c`).
	Timeouts, Servers string
}

// ShippedTimeouts is the timeouts block of the shipped Caddyfiles.
const ShippedTimeouts = `
			read_header 10s
			read_body 30s
			write 30s
			idle 2m`

// TwoEmergencies is the default: two active emergencies, so emergencySlug is required.
const TwoEmergencies = `
		emergency eje-cafetero {
			title "Terremoto en el Eje Cafetero"
			summary "Sismo con daños en Armenia y Pereira."
			location "Eje Cafetero"
			occurred 2026-08-11
			area 63 66 17
			line "Línea de emergencias" 123
			line "Cruz Roja" 132
		}
		emergency inundaciones-la-mojana {
			title "Inundaciones en La Mojana"
			location "La Mojana"
			occurred 2026-10-02
		}`

// OneEmergency has a single active emergency (and an inactive one), so emergencySlug may be omitted.
const OneEmergency = `
		emergency eje-cafetero {
			title "Terremoto en el Eje Cafetero"
			occurred 2026-08-11
		}
		emergency sequia-guajira {
			title "Sequía en La Guajira"
			inactive
		}`

var caddyfileTmpl = template.Must(template.New("c").Parse(`{
	admin 127.0.0.1:{{.AdminPort}}
	persist_config off
	default_bind 127.0.0.1
	{{if .SharedStorage}}storage directaid_postgres {env.DIRECTAID_DATABASE_URL}{{else}}storage file_system {{.Dir}}/caddy{{end}}
	log {
		output file {{.Dir}}/caddy.log
		format json
		level DEBUG
	}
	directaid {
		{{if .Postgres}}database postgres {env.DIRECTAID_DATABASE_URL}{{else}}database badger {{.DataDir}}{{if .Database}} {
{{.Database}}
		}{{end}}{{end}}
{{.Emergencies}}
	}
	servers {
		timeouts {
{{.Timeouts}}
		}
{{.Servers}}
	}
{{.Global}}
}

http://:{{.Port}} {
	directaid_rate_limits {
{{.RateLimit}}
		publish {{.Events}} {{.Window}}
		detail {{.DetailEvents}} 1m
		report {{.Events}} {{.Window}}
		manage {{.Events}} {{.Window}}
		respond {{.Events}} {{.Window}}
	}
{{.Site}}
	directaid
	handle_errors 429 {
		directaid
	}
}
`))

// Server is one running binary.
type Server struct {
	URL      string // http://127.0.0.1:PORT
	AdminURL string
	Dir      string // temp dir: Caddyfile, data, log
	DataDir  string
	Port     int

	t         testing.TB
	bin       string
	caddyfile string
	postgres  string // DSN given to the process as DIRECTAID_DATABASE_URL
	mu        sync.Mutex
	proc      *Process // nil when stopped
	out       *syncBuffer
	validator *Validator
}

var (
	buildOnce sync.Once
	builtBin  string
	buildErr  error
)

// Binary returns the path of the directaid binary: $DIRECTAID_BIN (set by the Makefile, which builds it
// first), or one built once for this test process.
func Binary(t testing.TB) string {
	if b := os.Getenv("DIRECTAID_BIN"); b != "" {
		if _, err := os.Stat(b); err == nil {
			return b
		}
	}
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "directaid-bin-")
		if err != nil {
			buildErr = err
			return
		}
		builtBin = filepath.Join(dir, "directaid")
		_, file, _, _ := runtime.Caller(0)
		root := filepath.Join(filepath.Dir(file), "..", "..")
		cmd := exec.Command("go", "build", "-o", builtBin, "./cmd/directaid")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return builtBin
}

// FreePort is LoopbackPort for a test, which it fails when there is none.
func FreePort(t testing.TB) int {
	port, err := LoopbackPort()
	if err != nil {
		t.Fatal(err)
	}
	return port
}

// LoopbackPort returns a loopback port that was free a moment ago, below the kernel's ephemeral range, and
// that no other caller — in this process or another test process — has been given. Below the ephemeral
// range: a port from it (what listening on :0 gives) can be taken by a client's outgoing connection while
// the server on it is down — a client connecting to it may even connect to itself — and the restarted
// server then fails with "address already in use" (TestCrashSafety did, about once in 40 runs). The test
// servers, the bench's servers and pgtest's clusters all restart on their port. Given to no one else: Caddy
// listens with SO_REUSEPORT, so two test servers drawing the same port both start and the kernel spreads
// connections between them — a request then reaches the other test's server (TestHostileMCP's /mcp got
// another server's 404 once in CI). Each port handed out is held by an flock on a file named after it
// until this process exits; another process skips a port whose file it cannot lock.
func LoopbackPort() (int, error) {
	lo := 32768
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if n, err := strconv.Atoi(f[0]); err == nil && n > 12000 {
				lo = n
			}
		}
	}
	return loopbackPort(10000, lo)
}

// portLocks holds the reserved ports' lock files open for the life of the process: closing one would
// release its flock.
var portLocks struct {
	sync.Mutex
	files []*os.File
}

// PortLockDir is where the reservations' lock files live, shared by every test process of this machine.
var PortLockDir = filepath.Join(os.TempDir(), "directaid-test-ports")

// loopbackPort draws a port in [lo, hi) that is free and reserved for this process.
func loopbackPort(lo, hi int) (int, error) {
	if err := os.MkdirAll(PortLockDir, 0o777); err != nil {
		return 0, err
	}
	for range 200 {
		port := lo + rand.IntN(hi-lo)
		f, ok := reservePort(port)
		if !ok {
			continue
		}
		if l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port))); err == nil {
			l.Close()
			portLocks.Lock()
			portLocks.files = append(portLocks.files, f)
			portLocks.Unlock()
			return port, nil
		}
		f.Close() // in use by something else: released for whoever may need it later
	}
	return 0, fmt.Errorf("no free loopback port in [%d, %d)", lo, hi)
}

// reservePort takes port's lock file, or reports that another holder (this process included: flock
// belongs to the open file, not the process) has it.
func reservePort(port int) (*os.File, bool) {
	f, err := os.OpenFile(filepath.Join(PortLockDir, strconv.Itoa(port)), os.O_CREATE|os.O_RDWR, 0o666)
	if err != nil {
		return nil, false
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, false
	}
	return f, true
}

// Caddyfile renders the configuration for o on the given ports and directories.
func Caddyfile(o Options, dir, dataDir string, port, adminPort int) string {
	if o.Emergencies == "" {
		o.Emergencies = TwoEmergencies
	}
	if o.PublishEvents == 0 {
		o.PublishEvents = 100000
	}
	if o.DetailEvents == 0 {
		o.DetailEvents = 100000
	}
	if o.PublishWindow == "" {
		o.PublishWindow = "1m"
	}
	if o.Timeouts == "" {
		o.Timeouts = ShippedTimeouts
	}
	var b strings.Builder
	err := caddyfileTmpl.Execute(&b, map[string]any{
		"AdminPort": adminPort, "Port": port, "Dir": dir, "DataDir": dataDir, "Emergencies": o.Emergencies,
		"Events": o.PublishEvents, "DetailEvents": o.DetailEvents, "Window": o.PublishWindow, "Global": o.Global, "Site": o.Site, "Database": o.Database,
		"Postgres": o.Postgres != "", "SharedStorage": o.SharedStorage, "RateLimit": o.RateLimit,
		"Timeouts": o.Timeouts, "Servers": o.Servers,
	})
	if err != nil {
		panic(err)
	}
	return b.String()
}

// Start writes a Caddyfile for o into a temp dir and runs the binary until the test ends.
func Start(t testing.TB, o Options) *Server {
	t.Helper()
	dir := t.TempDir()
	s := &Server{t: t, bin: Binary(t), Dir: dir, DataDir: o.DataDir, postgres: o.Postgres}
	if s.DataDir == "" {
		s.DataDir = filepath.Join(dir, "data")
	}
	s.Port = FreePort(t)
	adminPort := FreePort(t)
	s.URL = fmt.Sprintf("http://127.0.0.1:%d", s.Port)
	s.AdminURL = fmt.Sprintf("http://127.0.0.1:%d", adminPort)
	s.caddyfile = filepath.Join(dir, "Caddyfile")
	s.WriteCaddyfile(Caddyfile(o, dir, s.DataDir, s.Port, adminPort))
	s.Launch()
	t.Cleanup(s.Stop)
	return s
}

// WriteCaddyfile replaces the configuration file (see Reload).
func (s *Server) WriteCaddyfile(content string) {
	if err := os.WriteFile(s.caddyfile, []byte(content), 0o644); err != nil {
		s.t.Fatal(err)
	}
}

// CaddyfilePath is where the configuration lives.
func (s *Server) CaddyfilePath() string { return s.caddyfile }

// Launch starts the process and waits until it answers.
func (s *Server) Launch() {
	s.t.Helper()
	s.mu.Lock()
	s.out = &syncBuffer{}
	cmd := exec.Command(s.bin, "run", "--config", s.caddyfile)
	cmd.Env = append(os.Environ(), "XDG_DATA_HOME="+filepath.Join(s.Dir, "xdg-data"), "XDG_CONFIG_HOME="+filepath.Join(s.Dir, "xdg-config"), "HOME="+s.Dir)
	if s.postgres != "" {
		cmd.Env = append(cmd.Env, "DIRECTAID_DATABASE_URL="+s.postgres)
	}
	cmd.Stdout, cmd.Stderr = s.out, s.out
	proc, err := StartProcess(cmd)
	if err != nil {
		s.mu.Unlock()
		s.t.Fatal(err)
	}
	s.proc = proc
	s.mu.Unlock()
	s.WaitReady()
}

// WaitReady polls discovery until it answers 200, failing the test after 30 s.
func (s *Server) WaitReady() {
	s.t.Helper()
	s.mu.Lock()
	proc := s.proc
	s.mu.Unlock()
	err := proc.WaitAnswers(s.URL+"/api/public/v1/help", 30*time.Second)
	if errors.Is(err, ErrExited) {
		log := s.Log()
		log = log[max(0, len(log)-4000):]
		s.t.Fatalf("directaid: %v:\n%s\nthe end of caddy.log:\n%s", err, s.Output(), log)
	}
	if err != nil {
		s.t.Fatalf("directaid: %v:\n%s", err, s.Output())
	}
}

// Kill sends SIGKILL (a crash) and waits for the process to die.
func (s *Server) Kill() { s.signal(syscall.SIGKILL) }

// Stop shuts the process down gracefully (SIGINT), killing it after 15 s.
func (s *Server) Stop() { s.signal(syscall.SIGINT) }

func (s *Server) signal(sig syscall.Signal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc == nil {
		return
	}
	s.proc.Stop(sig, 15*time.Second)
	s.proc = nil
}

// Restart stops the process gracefully and starts it again over the same data.
func (s *Server) Restart() {
	s.Stop()
	s.Launch()
}

// Reload runs `directaid reload` against the running server with the current Caddyfile.
func (s *Server) Reload() {
	s.t.Helper()
	if out, err := s.TryReload(); err != nil {
		s.t.Fatalf("reload: %v\n%s", err, out)
	}
}

// TryReload is Reload for a reload that may be refused: what `directaid reload` printed, and its error.
func (s *Server) TryReload() (string, error) {
	cmd := exec.Command(s.bin, "reload", "--config", s.caddyfile, "--address", strings.TrimPrefix(s.AdminURL, "http://"))
	out, err := cmd.CombinedOutput()
	// The reload ended the old server's idle keep-alive connections: a POST sent on one the client still
	// holds would fail with EOF (the client retries only idempotent requests), so drop them.
	http.DefaultClient.CloseIdleConnections()
	return string(out), err
}

// PID is the process id of the running binary (0 when stopped).
func (s *Server) PID() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc == nil {
		return 0
	}
	return s.proc.Cmd.Process.Pid
}

// Output is what the process printed (stdout and stderr).
func (s *Server) Output() string { return s.out.String() }

// Log is Caddy's log file (JSON lines, DEBUG level).
func (s *Server) Log() string {
	b, _ := os.ReadFile(filepath.Join(s.Dir, "caddy.log"))
	return string(b)
}

// Do sends req (a path relative to the server, or absolute) and returns the response with its body read.
func (s *Server) Do(method, path string, body []byte, header ...string) (*http.Response, []byte) {
	s.t.Helper()
	req := s.NewRequest(method, path, body, header...)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		s.t.Fatalf("%s %s: read body: %v", method, path, err)
	}
	resp.Body = io.NopCloser(bytes.NewReader(b))
	return resp, b
}

// NewRequest builds a request; header is name, value pairs ("Host" sets the request's Host).
func (s *Server) NewRequest(method, path string, body []byte, header ...string) *http.Request {
	u := path
	if !strings.HasPrefix(u, "http") {
		u = s.URL + path
	}
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(context.Background(), method, u, r)
	if err != nil {
		s.t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		if strings.EqualFold(header[i], "Host") {
			req.Host = header[i+1] // net/http ignores a Host header field
			continue
		}
		req.Header.Set(header[i], header[i+1])
	}
	return req
}

// PostJSON posts body to the help endpoint.
func (s *Server) PostJSON(path string, body []byte) (*http.Response, []byte) {
	s.t.Helper()
	return s.Do("POST", path, body, "Content-Type", "application/json")
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
