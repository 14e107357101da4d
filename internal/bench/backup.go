package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/directaid/directaid/internal/loadgen"
)

// backupReadRate is how fast the slow backup client of issue 28 reads, in bytes per second.
const backupReadRate = 1000000

// Names of the backup scenario's rows.
const (
	backupWithout = "POST new, no backup"
	backupDuring  = "POST new, during a backup read at 1 MB/s"
)

// BackupResult is issue 28's scenario on Badger: publishing at 16 connections without a backup, then the
// same while a client takes a backup reading it at 1 MB/s; then one backup read as fast as possible, and
// `directaid restore --verify` of it.
type BackupResult struct {
	Set             string
	Without, During *loadgen.Result
	// What the slow client read, and whether the backup was still streaming when the publishing ended
	// (else the publishing outlasted it, and its last part ran without a backup); SlowCapped: the client
	// gave up at backupCap while the publishing had not ended (writers waited for the backup).
	SlowBytes                 int64
	SlowStreaming, SlowCapped bool
	// The server's anonymous resident set (heap) before the slow backup, and its sampled peaks while
	// publishing without a backup and during the slow one.
	AnonBefore, AnonPeakWithout, AnonPeak int64
	// The backup read as fast as possible: its size and time, the server's anonymous RSS peak meanwhile.
	FullBytes    int64
	FullDuration time.Duration
	FullAnonPeak int64
	// `directaid restore --verify` of that backup (with -backup; the million run leaves it out): its time,
	// and its output or error.
	VerifyDuration time.Duration
	Verify         string
	VerifyErr      string
}

// backupRun publishes o.Backup records into a fresh Badger server, then runs the backup scenario over
// them (BENCH_FLAGS='-backup 200000': issue 28's figures without the whole million run).
func (r *runner) backupRun() error {
	o := r.o
	srv, err := startServer(o, r.tmp, nil, "")
	if err != nil {
		return err
	}
	defer srv.stop()
	r.progress("[Badger] publishing %d records for the backup scenario (64 connections)", o.Backup)
	res, err := loadgen.Run(loadgen.Config{Addr: srv.Addr, Method: "POST", Path: helpPath, Header: jsonHeader, Conns: 64,
		Requests: o.Backup, Duration: o.MillionTime, Body: publishBody("backup"), Expect: []int{201}})
	if err != nil {
		return err
	}
	if res.Errors > 0 {
		return fmt.Errorf("publishing: %d errors, first: %s", res.Errors, res.FirstError)
	}
	r.progress("  %d records in %s (%.0f req/s)", res.Status[201], res.Elapsed.Round(time.Second), res.Throughput())
	return r.backupLoad(srv, count(res.Status[201])+" records", true)
}

// backupCap is how long past the publishing's measured time the slow backup client gives up, so that a
// backup that stops the writers cannot hang the run (they wait for it, and it for the client).
const backupCap = 30 * time.Second

// backupLoad is the backup scenario on the Badger server srv over set; verify adds `directaid restore
// --verify` of the whole backup (minutes for a million records).
func (r *runner) backupLoad(srv *server, set string, verify bool) error {
	o := r.o
	b := &BackupResult{Set: set}
	r.rep.Backup = b
	d := o.Duration
	cfg := func(tag string, d time.Duration) loadgen.Config {
		return loadgen.Config{Addr: srv.Addr, Method: "POST", Path: helpPath, Header: jsonHeader, Conns: 16,
			Duration: d, Requests: o.MaxRequests, Body: publishBody(tag), Expect: []int{201}}
	}
	// publish waits until the server is idle (the compactions of what was published before done, so that
	// the two runs start alike), warms up with bodies of its own, runs before (nil: nothing), then
	// measures for d.
	publish := func(name, tag string, before func() error) (*loadgen.Result, error) {
		if waited, idle := srv.waitIdle(time.Minute); idle {
			r.progress("  the server idle after %s", waited.Round(time.Second))
		} else {
			r.progress("  the server still busy after %s: measuring anyway", waited.Round(time.Second))
		}
		if _, err := loadgen.Run(cfg(tag+"-warm", max(d/10, 100*time.Millisecond))); err != nil {
			return nil, err
		}
		if before != nil {
			if err := before(); err != nil {
				return nil, err
			}
		}
		cpu0 := srv.cpu()
		res, err := loadgen.Run(cfg(tag, d))
		if err != nil {
			return nil, err
		}
		r.add(Measure{Store: Badger, Name: name, Set: set, Conns: 16, Res: res, ServerCPU: srv.cpu() - cpu0})
		r.progress("  max %s ms", ms(res.Percentile(1)))
		return res, nil
	}
	r.progress("[Badger] backup scenario over the %s: publishing at 16 connections without a backup", set)
	stopWatch := make(chan struct{})
	peakAnon, _ := srv.watchMemory(stopWatch)
	var err error
	b.Without, err = publish(backupWithout, "nobackup", nil)
	close(stopWatch)
	b.AnonPeakWithout = peakAnon()
	if err != nil {
		return err
	}

	r.progress("[Badger] publishing at 16 connections while a client takes a backup reading it at 1 MB/s")
	var slow *backupClient
	var capped atomic.Bool
	var giveUp *time.Timer
	stopWatch = make(chan struct{})
	// The backup begins after the warm-up; the measured publishing once its first bytes arrived (its
	// snapshot is taken).
	b.During, err = publish(backupDuring, "duringbackup", func() error {
		b.AnonBefore = srv.status("RssAnon")["RssAnon"]
		peakAnon, _ = srv.watchMemory(stopWatch)
		slow = startBackupClient(srv.AdminAddr, backupReadRate)
		giveUp = time.AfterFunc(d+backupCap, func() { capped.Store(true); slow.cancel() })
		select {
		case <-slow.began:
			return nil
		case <-slow.done:
			return fmt.Errorf("slow backup client: %v", slow.err)
		case <-time.After(time.Minute):
			return errors.New("slow backup client: no byte of the backup within a minute")
		}
	})
	close(stopWatch)
	if slow == nil {
		return err
	}
	giveUp.Stop()
	select {
	case <-slow.done:
	default:
		b.SlowStreaming = true
	}
	b.SlowCapped = capped.Load()
	slow.cancel()
	<-slow.done
	b.AnonPeak, b.SlowBytes = peakAnon(), slow.read.Load()
	if err != nil {
		return err
	}
	if slow.err != nil {
		return fmt.Errorf("slow backup client: %w", slow.err)
	}
	r.progress("  the slow client read %.1f MB; the backup still streaming when the publishing ended: %v (client gave up at the cap: %v); server anonymous RSS %.1f → peak %.1f MB (%.1f without a backup)",
		mb(b.SlowBytes), b.SlowStreaming, b.SlowCapped, mb(b.AnonBefore), mb(b.AnonPeak), mb(b.AnonPeakWithout))

	r.progress("[Badger] one backup read as fast as possible")
	file := filepath.Join(srv.Dir, "full.bak")
	defer os.Remove(file)
	stopWatch = make(chan struct{})
	peakAnon, _ = srv.watchMemory(stopWatch)
	t0 := time.Now()
	b.FullBytes, err = fetchBackup(srv.AdminAddr, file)
	b.FullDuration = time.Since(t0)
	close(stopWatch)
	b.FullAnonPeak = peakAnon()
	if err != nil {
		return err
	}
	r.progress("  %.1f MB in %s, server anonymous RSS peak %.1f MB", mb(b.FullBytes), b.FullDuration.Round(10*time.Millisecond), mb(b.FullAnonPeak))
	if !verify {
		return nil
	}
	r.progress("[Badger] `directaid restore --verify` of that backup")
	t0 = time.Now()
	out, err := exec.Command(o.Bin, "restore", "--verify", file).CombinedOutput()
	b.VerifyDuration = time.Since(t0)
	b.Verify = strings.TrimSpace(string(out))
	if err != nil {
		b.VerifyErr = err.Error()
	}
	r.progress("  restore --verify in %s: %s", b.VerifyDuration.Round(100*time.Millisecond), b.Verify)
	return nil
}

// waitIdle waits, at most limit, until the server uses under a tenth of a core over a second; it says how
// long it waited and whether the server went idle.
func (s *server) waitIdle(limit time.Duration) (time.Duration, bool) {
	t0 := time.Now()
	for time.Since(t0) < limit {
		c0 := s.cpu()
		time.Sleep(time.Second)
		if s.cpu()-c0 < 100*time.Millisecond {
			return time.Since(t0), true
		}
	}
	return time.Since(t0), false
}

// backupClient takes a backup from the admin endpoint, reading it at a fixed rate, until cancelled.
type backupClient struct {
	read   atomic.Int64
	began  chan struct{} // closed at the first bytes: the backup's snapshot is taken
	done   chan struct{}
	err    error // other than its cancellation (set before done closes)
	cancel context.CancelFunc
}

func startBackupClient(admin string, rate int64) *backupClient {
	ctx, cancel := context.WithCancel(context.Background())
	c := &backupClient{began: make(chan struct{}), done: make(chan struct{}), cancel: cancel}
	go func() {
		defer close(c.done)
		req, err := http.NewRequestWithContext(ctx, "GET", "http://"+admin+"/directaid/backup", nil)
		if err != nil {
			c.err = err
			return
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			c.err = err
			return
		}
		defer resp.Body.Close()
		if resp.StatusCode != 200 {
			c.err = fmt.Errorf("backup: %s", resp.Status)
			return
		}
		buf := make([]byte, 16<<10)
		t0 := time.Now()
		for began := false; ; {
			n, err := resp.Body.Read(buf)
			c.read.Add(int64(n))
			if n > 0 && !began {
				began = true
				close(c.began)
			}
			if err == io.EOF {
				return
			}
			if err != nil {
				if ctx.Err() == nil {
					c.err = err
				}
				return
			}
			// Read no faster than rate: wait until the bytes read so far are due.
			due := time.Duration(float64(c.read.Load()) / float64(rate) * float64(time.Second))
			select {
			case <-ctx.Done():
				return
			case <-time.After(due - time.Since(t0)):
			}
		}
	}()
	return c
}

// fetchBackup writes a whole backup from the admin endpoint into path and returns its size.
func fetchBackup(admin, path string) (int64, error) {
	resp, err := http.Get("http://" + admin + "/directaid/backup")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return 0, fmt.Errorf("backup: %s", resp.Status)
	}
	f, err := os.Create(path)
	if err != nil {
		return 0, err
	}
	n, err := io.Copy(f, resp.Body)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return n, err
}

// printBackup is the note under the table on the backup scenario.
func (r *Report) printBackup(w io.Writer) {
	b := r.Backup
	if b == nil || b.Without == nil || b.During == nil {
		return
	}
	fmt.Fprintf(w, "\nbackup while publishing (Badger, %s; issue 28): publishing at 16 connections\n", b.Set)
	for _, x := range []struct {
		name string
		res  *loadgen.Result
	}{{"without a backup", b.Without}, {"during a backup read at 1 MB/s", b.During}} {
		fmt.Fprintf(w, "  %-31s %6.0f req/s, p50 %s ms, p99 %s ms, max %s ms, errors %d\n", x.name, x.res.Throughput(),
			ms(x.res.Percentile(0.5)), ms(x.res.Percentile(0.99)), ms(x.res.Percentile(1)), x.res.Errors)
	}
	streaming := "still streaming when the publishing ended"
	switch {
	case b.SlowCapped:
		streaming = fmt.Sprintf("given up by the client %s after the publishing's time: the publishing waited for it", backupCap)
	case !b.SlowStreaming:
		streaming = "ENDED before the publishing did: the last part ran without a backup"
	}
	fmt.Fprintf(w, "  the slow client read %.1f MB, the backup %s; server anonymous RSS %.1f MB before, peak %.1f MB during (%.1f MB publishing without a backup)\n",
		mb(b.SlowBytes), streaming, mb(b.AnonBefore), mb(b.AnonPeak), mb(b.AnonPeakWithout))
	if b.FullBytes > 0 {
		fmt.Fprintf(w, "  a backup read as fast as possible: %.1f MB in %s (%.0f MB/s), server anonymous RSS peak %.1f MB\n", mb(b.FullBytes),
			b.FullDuration.Round(10*time.Millisecond), mb(b.FullBytes)/max(b.FullDuration.Seconds(), 1e-9), mb(b.FullAnonPeak))
	}
	if b.Verify != "" || b.VerifyErr != "" {
		status := "passed"
		if b.VerifyErr != "" {
			status = "FAILED (" + b.VerifyErr + ")"
		}
		fmt.Fprintf(w, "  `directaid restore --verify` of it %s in %s:\n", status, b.VerifyDuration.Round(100*time.Millisecond))
		for _, line := range strings.Split(b.Verify, "\n") {
			fmt.Fprintln(w, "    "+line)
		}
	}
}

// backupTargets are issue 28's targets: during the backup, p99 at most twice and the maximum at most one
// second more than without it, with no error.
func (r *Report) backupTargets(add func(issue int, what, result string, ok, measured bool)) {
	b := r.Backup
	if b == nil || b.Without == nil || b.During == nil {
		add(28, "publishing p99 during a backup read at 1 MB/s ≤ 2× without, 0 errors", "needs -backup or -million", false, false)
		add(28, "publishing max during a backup read at 1 MB/s ≤ without + 1 s", "needs -backup or -million", false, false)
		return
	}
	scale := ""
	if !strings.HasPrefix(b.Set, "1M ") {
		scale = " [at " + b.Set + ", not 1M]"
	}
	if b.SlowCapped {
		scale += " — the publishing waited for the backup until its client gave up"
	}
	p0, p1 := b.Without.Percentile(0.99), b.During.Percentile(0.99)
	add(28, "publishing p99 during a backup read at 1 MB/s ≤ 2× without, 0 errors",
		fmt.Sprintf("%s vs %s ms, %d errors%s", ms(p1), ms(p0), b.During.Errors, scale), p1 <= 2*p0 && b.During.Errors == 0 && !b.SlowCapped, true)
	m0, m1 := b.Without.Percentile(1), b.During.Percentile(1)
	add(28, "publishing max during a backup read at 1 MB/s ≤ without + 1 s",
		fmt.Sprintf("%s vs %s ms%s", ms(m1), ms(m0), scale), m1 <= m0+time.Second && !b.SlowCapped, true)
}
