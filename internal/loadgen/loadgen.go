// Package loadgen is a closed-loop HTTP/1.1 load generator for loopback benchmarks. Each of N workers owns
// one keep-alive connection and sends its next request as soon as the previous answer is read. It speaks
// raw HTTP/1.1 over net.Conn instead of using net/http's client: on a 2-core machine the generator shares
// the CPU with the server, so every cycle it spends is a cycle the server does not get.
package loadgen

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Config describes one run. A run stops when Requests have been sent or Duration has passed, whichever
// comes first; at least one of them must be set.
type Config struct {
	Addr   string // host:port; must resolve to a loopback address
	Method string // default GET
	Path   string
	// Query, when set, appends request n's query string (without '?') to Path, e.g. a different point
	// for every radius search so that no cache answers them.
	Query func(n int64, b []byte) []byte
	// Target, when set, appends request n's whole request target (path and query) instead of Path and
	// Query: a path that names a different record each time, say.
	Target   func(n int64, b []byte) []byte
	Header   map[string]string // extra request headers
	Conns    int               // concurrent connections (workers); default 1
	Requests int64             // total requests; 0 means bounded by Duration only
	Duration time.Duration     // wall-clock bound; 0 means bounded by Requests only
	// Body appends the body of request n (0-based, unique across the run) to b; nil sends no body.
	Body func(n int64, b []byte) []byte
	// Expect lists the statuses that count as success; empty means any 2xx.
	Expect []int
	// MarkEvery, when > 0, records the elapsed time at every MarkEvery-th completed request, to see how
	// throughput evolves during a long run.
	MarkEvery int64
}

// Result is what a run measured.
type Result struct {
	Requests   int64         // answered requests (any status)
	Errors     int64         // transport errors plus answers with an unexpected status
	Status     map[int]int64 // answers by status
	Elapsed    time.Duration
	Latencies  []time.Duration // one per answered request, sorted
	Marks      []time.Duration // elapsed time at each MarkEvery completions
	FirstError string          // the first failure, for diagnosis
	CPU        time.Duration   // CPU time this process spent during the run (user + system)
}

// Throughput is answered requests per second.
func (r *Result) Throughput() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Requests) / r.Elapsed.Seconds()
}

// Percentile returns the latency at quantile q (0 < q ≤ 1) by the nearest-rank method.
func (r *Result) Percentile(q float64) time.Duration {
	n := len(r.Latencies)
	if n == 0 {
		return 0
	}
	i := int(q*float64(n)+0.999999) - 1
	return r.Latencies[min(max(i, 0), n-1)]
}

// MarkRate is the throughput between marks i-1 and i (mark -1 being the start).
func (r *Result) MarkRate(i int, every int64) float64 {
	if i < 0 || i >= len(r.Marks) {
		return 0
	}
	start := time.Duration(0)
	if i > 0 {
		start = r.Marks[i-1]
	}
	d := r.Marks[i] - start
	if d <= 0 {
		return 0
	}
	return float64(every) / d.Seconds()
}

type worker struct {
	cfg     *Config
	run     *runState
	conn    net.Conn
	br      *bufio.Reader
	buf     []byte
	body    []byte
	lat     []time.Duration
	status  map[int]int64
	errors  int64
	firstEr string
}

type runState struct {
	issued   atomic.Int64
	done     atomic.Int64
	start    time.Time
	deadline time.Time
	marks    []atomic.Int64
	expect   [600]bool
}

// Run executes cfg and returns what it measured.
func Run(cfg Config) (*Result, error) {
	if cfg.Requests <= 0 && cfg.Duration <= 0 {
		return nil, errors.New("loadgen: set Requests or Duration")
	}
	if err := checkLoopback(cfg.Addr); err != nil {
		return nil, err
	}
	if cfg.Method == "" {
		cfg.Method = "GET"
	}
	cfg.Conns = max(cfg.Conns, 1)
	rs := &runState{}
	if len(cfg.Expect) == 0 {
		for s := 200; s < 300; s++ {
			rs.expect[s] = true
		}
	}
	for _, s := range cfg.Expect {
		if s > 0 && s < len(rs.expect) {
			rs.expect[s] = true
		}
	}
	if cfg.MarkEvery > 0 && cfg.Requests > 0 {
		rs.marks = make([]atomic.Int64, cfg.Requests/cfg.MarkEvery)
	}
	workers := make([]*worker, cfg.Conns)
	for i := range workers {
		w := &worker{cfg: &cfg, run: rs, status: map[int]int64{}}
		// Connect before the clock starts: the benchmark measures requests, not TCP handshakes.
		if err := w.dial(); err != nil {
			for _, o := range workers[:i] {
				o.conn.Close()
			}
			return nil, err
		}
		if cfg.Requests > 0 {
			w.lat = make([]time.Duration, 0, min(cfg.Requests/int64(cfg.Conns)+16, 1<<20))
		} else {
			w.lat = make([]time.Duration, 0, 1<<14)
		}
		workers[i] = w
	}
	cpu0 := processCPU()
	rs.start = time.Now()
	if cfg.Duration > 0 {
		rs.deadline = rs.start.Add(cfg.Duration)
	}
	var wg sync.WaitGroup
	for _, w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.loop()
		}()
	}
	wg.Wait()
	res := &Result{Elapsed: time.Since(rs.start), Status: map[int]int64{}, CPU: processCPU() - cpu0}
	n := 0
	for _, w := range workers {
		n += len(w.lat)
	}
	res.Latencies = make([]time.Duration, 0, n)
	for _, w := range workers {
		if w.conn != nil {
			w.conn.Close()
		}
		res.Latencies = append(res.Latencies, w.lat...)
		res.Errors += w.errors
		for s, c := range w.status {
			res.Status[s] += c
		}
		if res.FirstError == "" {
			res.FirstError = w.firstEr
		}
	}
	res.Requests = int64(len(res.Latencies))
	slices.Sort(res.Latencies)
	for i := range rs.marks {
		if m := rs.marks[i].Load(); m > 0 {
			res.Marks = append(res.Marks, time.Duration(m))
		}
	}
	return res, nil
}

func checkLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("loadgen: address %q: %w", addr, err)
	}
	ips, err := net.LookupIP(host)
	if err != nil {
		return fmt.Errorf("loadgen: address %q: %w", addr, err)
	}
	for _, ip := range ips {
		if !ip.IsLoopback() {
			return fmt.Errorf("loadgen: %s is not a loopback address: this generator only drives local servers", host)
		}
	}
	return nil
}

func (w *worker) dial() error {
	c, err := net.Dial("tcp", w.cfg.Addr)
	if err != nil {
		return fmt.Errorf("loadgen: connect %s: %w", w.cfg.Addr, err)
	}
	w.conn = c
	if w.br == nil {
		w.br = bufio.NewReaderSize(c, 16<<10)
	} else {
		w.br.Reset(c)
	}
	return nil
}

func (w *worker) fail(err error) {
	w.errors++
	if w.firstEr == "" {
		w.firstEr = err.Error()
	}
	if w.conn != nil {
		w.conn.Close()
		w.conn = nil
	}
}

func (w *worker) loop() {
	cfg, rs := w.cfg, w.run
	for {
		n := rs.issued.Add(1) - 1
		if cfg.Requests > 0 && n >= cfg.Requests {
			return
		}
		if !rs.deadline.IsZero() && time.Now().After(rs.deadline) {
			return
		}
		w.build(n)
		if w.conn == nil {
			if err := w.dial(); err != nil {
				w.fail(err)
				time.Sleep(10 * time.Millisecond)
				continue
			}
		}
		t0 := time.Now()
		status, keep, err := w.roundTrip()
		lat := time.Since(t0)
		if err != nil {
			w.fail(err)
			continue
		}
		w.lat = append(w.lat, lat)
		w.status[status]++
		if status >= len(rs.expect) || !rs.expect[status] {
			w.errors++
			if w.firstEr == "" {
				w.firstEr = fmt.Sprintf("%s %s → unexpected status %d", cfg.Method, cfg.Path, status)
			}
		}
		if !keep {
			w.conn.Close()
			w.conn = nil
		}
		if d := rs.done.Add(1); cfg.MarkEvery > 0 && d%cfg.MarkEvery == 0 {
			if i := d/cfg.MarkEvery - 1; i < int64(len(rs.marks)) {
				rs.marks[i].Store(int64(time.Since(rs.start)))
			}
		}
	}
}

// build renders request n into w.buf.
func (w *worker) build(n int64) {
	cfg := w.cfg
	b := w.buf[:0]
	b = append(b, cfg.Method...)
	b = append(b, ' ')
	switch {
	case cfg.Target != nil:
		b = cfg.Target(n, b)
	default:
		b = append(b, cfg.Path...)
		if cfg.Query != nil {
			b = append(b, '?')
			b = cfg.Query(n, b)
		}
	}
	b = append(b, " HTTP/1.1\r\nHost: "...)
	b = append(b, cfg.Addr...)
	b = append(b, "\r\nUser-Agent: directaid-loadgen\r\n"...)
	for k, v := range cfg.Header {
		b = append(b, k...)
		b = append(b, ": "...)
		b = append(b, v...)
		b = append(b, "\r\n"...)
	}
	if cfg.Body != nil {
		w.body = cfg.Body(n, w.body[:0])
		b = append(b, "Content-Length: "...)
		b = strconv.AppendInt(b, int64(len(w.body)), 10)
		b = append(b, "\r\n\r\n"...)
		b = append(b, w.body...)
	} else {
		b = append(b, "\r\n"...)
	}
	w.buf = b
}

// roundTrip writes w.buf and reads one response, discarding its body. keep reports whether the
// connection may be reused.
func (w *worker) roundTrip() (status int, keep bool, err error) {
	if _, err := w.conn.Write(w.buf); err != nil {
		return 0, false, err
	}
	line, err := w.br.ReadSlice('\n')
	if err != nil {
		return 0, false, err
	}
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.")) {
		return 0, false, fmt.Errorf("malformed status line %q", line)
	}
	status, err = strconv.Atoi(string(line[9:12]))
	if err != nil {
		return 0, false, fmt.Errorf("malformed status line %q", line)
	}
	keep = line[7] == '1'
	length, chunked := int64(-1), false
	for {
		h, err := w.br.ReadSlice('\n')
		if err != nil {
			return 0, false, err
		}
		h = bytes.TrimRight(h, "\r\n")
		if len(h) == 0 {
			break
		}
		name, val, ok := bytes.Cut(h, []byte(":"))
		if !ok {
			continue
		}
		val = bytes.TrimSpace(val)
		switch {
		case bytes.EqualFold(name, []byte("Content-Length")):
			if length, err = strconv.ParseInt(string(val), 10, 64); err != nil {
				return 0, false, fmt.Errorf("bad Content-Length %q", val)
			}
		case bytes.EqualFold(name, []byte("Transfer-Encoding")):
			chunked = bytes.EqualFold(val, []byte("chunked"))
		case bytes.EqualFold(name, []byte("Connection")):
			if bytes.EqualFold(val, []byte("close")) {
				keep = false
			}
		}
	}
	switch {
	case status == 204 || status == 304 || (status >= 100 && status < 200) || w.cfg.Method == "HEAD":
	case chunked:
		if err := w.discardChunked(); err != nil {
			return 0, false, err
		}
	case length >= 0:
		if _, err := w.br.Discard(int(length)); err != nil {
			return 0, false, err
		}
	default:
		// No length: the body runs to the end of the connection.
		if _, err := io.Copy(io.Discard, w.br); err != nil {
			return 0, false, err
		}
		keep = false
	}
	return status, keep, nil
}

func (w *worker) discardChunked() error {
	for {
		line, err := w.br.ReadSlice('\n')
		if err != nil {
			return err
		}
		line = bytes.TrimRight(line, "\r\n")
		if i := bytes.IndexByte(line, ';'); i >= 0 {
			line = line[:i]
		}
		size, err := strconv.ParseInt(string(bytes.TrimSpace(line)), 16, 64)
		if err != nil {
			return fmt.Errorf("bad chunk size %q", line)
		}
		if size == 0 {
			for { // trailers, up to the blank line
				t, err := w.br.ReadSlice('\n')
				if err != nil {
					return err
				}
				if len(bytes.TrimRight(t, "\r\n")) == 0 {
					return nil
				}
			}
		}
		if _, err := w.br.Discard(int(size) + 2); err != nil {
			return err
		}
	}
}

// processCPU is the CPU time (user + system) this process has used so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
