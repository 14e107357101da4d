// Package bench is the harness behind `make bench`: it starts the real directaid binary on loopback over a
// fresh Badger, drives it with internal/loadgen through a fixed list of scenarios, and reports one table
// whose ratios are taken against a Caddy-only `respond` route measured in the same run.
package bench

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/directaid/directaid/internal/loadgen"
	"github.com/directaid/directaid/schema"
)

// Options configure a run.
type Options struct {
	Bin      string        // the directaid binary
	Duration time.Duration // measured time per scenario (default 10s); warm-up is extra
	Seeds    int64         // records published before the retry scenario (default 10,000)
	// MaxRequests bounds each scenario's count as Duration bounds its time (default 2,000,000).
	MaxRequests int64
	// Million, when > 0, also publishes that many new records into a fresh server (1,000,000 for the
	// real figure) and reports first/last slice throughput, disk per record and peak RSS.
	Million int64
	// Profile names a scenario (e.g. "POST new/64") whose server CPU profile is saved to ProfilePath.
	Profile, ProfilePath string
	// Only, when set, runs just the scenarios whose "name/conns" contains it (the ceiling always runs).
	Only     string
	Progress io.Writer // progress lines; nil is silent
	TempDir  string    // parent of the servers' directories; default os.TempDir()
	// ServerOutput receives what the servers print (stdout and stderr); nil keeps it quiet.
	ServerOutput io.Writer
	// ServerEnv adds KEY=VALUE pairs to the servers' environment (e.g. GOMEMLIMIT=150MiB).
	ServerEnv []string
	// MemoryLimit, when > 0, runs the Million server (publishing, reads, export) in a cgroup v1 memory
	// cgroup of that many bytes, made for it (the kernel OOM-kills it past the limit).
	MemoryLimit int64
	// Postgres, when set, runs every server on PostgreSQL instead of Badger: it returns the DSN of a new,
	// empty database for each fresh server (cmd/bench -postgres makes them in a throwaway cluster).
	Postgres func() (dsn string, err error)
}

// Row is one scenario's measurement.
type Row struct {
	Name      string
	Conns     int
	Res       *loadgen.Result
	ServerCPU time.Duration
}

// MillionResult is the long publishing run.
type MillionResult struct {
	Records     int64
	Slice       int64 // records per mark (100k for 1M)
	Res         *loadgen.Result
	DiskBytes   int64 // data directory after a graceful close
	PeakRSS     int64 // VmHWM of the server that took the whole run
	PeakAnon    int64 // peak RssAnon (Go heap, Badger's memtables and table builders), sampled
	PeakFile    int64 // peak RssFile (mostly Badger's memory-mapped tables), sampled
	ServerCPU   time.Duration
	CloseAfter  time.Duration // how long the graceful shutdown took (flush + L0 compaction)
	Reads       []Row         // read scenarios over the published records, on the restarted server
	ReadPeakRSS int64         // VmHWM of the restarted server after the reads
	Export      *ExportResult // one whole CSV export of the records, after the reads
	// The memory cgroup (Options.MemoryLimit): its limit, the GOMEMLIMIT Caddy set from it (-1: none
	// logged), its peak usage, how often the limit was reached, OOM kills; or why there was none.
	MemoryLimit, GoMemLimit, CgroupMaxUsage, CgroupFailcnt, OOMKills int64
	CgroupError                                                      string
}

// Report is a whole run.
type Report struct {
	Rows    []Row
	Ceiling float64 // req/s of the ceiling row
	Million *MillionResult
	Load    string // /proc/loadavg when the run started
	Store   string // badger or postgres
}

const helpPath = schema.HelpPath

var jsonHeader = map[string]string{"Content-Type": "application/json"}

// Run executes every scenario.
func Run(o Options) (*Report, error) {
	if o.Duration <= 0 {
		o.Duration = 10 * time.Second
	}
	if o.Seeds <= 0 {
		o.Seeds = 10000
	}
	if o.MaxRequests <= 0 {
		o.MaxRequests = 2000000
	}
	tmp, err := os.MkdirTemp(o.TempDir, "directaid-bench-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	rep := &Report{}
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		rep.Load = strings.Join(strings.Fields(string(b))[:3], " ")
	}
	progress := func(format string, a ...any) {
		if o.Progress != nil {
			fmt.Fprintf(o.Progress, format+"\n", a...)
		}
	}

	rep.Store = "badger"
	if o.Postgres != nil {
		rep.Store = "postgres"
	}
	srv, err := startServer(o, tmp, nil)
	if err != nil {
		return nil, err
	}
	defer srv.stop()

	type scenario struct {
		name  string
		conns int
		cfg   loadgen.Config
	}
	post := func(tag string, conns int) scenario {
		return scenario{"POST new", conns, loadgen.Config{Method: "POST", Path: helpPath, Header: jsonHeader,
			Body: publishBody(tag), Expect: []int{201}}}
	}
	seedBody := publishBody("seed")
	scenarios := []scenario{
		{"ceiling (Caddy respond)", 64, loadgen.Config{Path: "/ceiling", Expect: []int{200}}},
		{"GET discovery", 64, loadgen.Config{Path: helpPath, Expect: []int{200}}},
		post("new1", 1), post("new16", 16), post("new64", 64), post("new256", 256),
		{"POST retry (existing)", 64, loadgen.Config{Method: "POST", Path: helpPath, Header: jsonHeader,
			Body: func(n int64, b []byte) []byte { return seedBody(n%o.Seeds, b) }, Expect: []int{200}}},
	}
	for i, sc := range scenarios {
		key := fmt.Sprintf("%s/%d", sc.name, sc.conns)
		if i > 0 && o.Only != "" && !strings.Contains(key, o.Only) {
			continue
		}
		if strings.HasPrefix(sc.name, "POST retry") {
			progress("seeding %d records for the retry scenario", o.Seeds)
			res, err := loadgen.Run(loadgen.Config{Addr: srv.Addr, Method: "POST", Path: helpPath, Header: jsonHeader,
				Conns: 64, Requests: o.Seeds, Body: seedBody, Expect: []int{201}})
			if err != nil {
				return nil, err
			}
			if res.Errors > 0 {
				return nil, fmt.Errorf("seeding: %d errors, first: %s", res.Errors, res.FirstError)
			}
		}
		cfg := sc.cfg
		cfg.Addr, cfg.Conns = srv.Addr, sc.conns
		// Warm-up on requests the measurement never repeats (its own externalIds), so that connections,
		// buffers and caches are in their steady state when the clock starts.
		warm := cfg
		warm.Duration, warm.Requests = max(o.Duration/10, 200*time.Millisecond), o.MaxRequests
		if warm.Body != nil && !strings.HasPrefix(sc.name, "POST retry") {
			warm.Body = publishBody(fmt.Sprintf("warm%d", sc.conns))
		}
		if _, err := loadgen.Run(warm); err != nil {
			return nil, err
		}
		cfg.Duration, cfg.Requests = o.Duration, o.MaxRequests
		progress("running %s", key)
		row, err := o.measure(srv, sc.name, cfg)
		if err != nil {
			return nil, err
		}
		res := row.Res
		rep.Rows = append(rep.Rows, row)
		if len(rep.Rows) == 1 {
			rep.Ceiling = res.Throughput()
		}
		progress("  %.0f req/s, p99 %s, errors %d", res.Throughput(), res.Percentile(0.99), res.Errors)
	}
	srv.stop()

	if o.Million > 0 {
		m, err := runMillion(o, tmp, progress)
		if err != nil {
			return nil, err
		}
		rep.Million = m
	}
	return rep, nil
}

// runMillion publishes o.Million new records at 64 connections into a fresh server.
func runMillion(o Options, tmp string, progress func(string, ...any)) (*MillionResult, error) {
	m := &MillionResult{Records: o.Million, Slice: max(o.Million/10, 1)}
	var cg *memCgroup
	if o.MemoryLimit > 0 {
		var err error
		if cg, err = newMemCgroup(o.MemoryLimit); err != nil {
			m.CgroupError = err.Error()
			progress("no memory cgroup: %v", err)
		} else {
			defer cg.remove()
			m.MemoryLimit = o.MemoryLimit
		}
	}
	srv, err := startServer(o, tmp, cg)
	if err != nil {
		return nil, err
	}
	defer srv.stop()
	if cg != nil {
		log, _ := os.ReadFile(filepath.Join(srv.Dir, "caddy.log")) // Caddy's start-up lines land in its configured log
		m.GoMemLimit = goMemLimit(srv.out.String() + string(log))
	}
	progress("publishing %d records (64 connections)", o.Million)
	cpu0 := srv.cpu()
	profDone := o.profileIf(srv, "million", 60*time.Second)
	stopWatch := make(chan struct{})
	peakAnon, peakFile := srv.watchMemory(stopWatch)
	m.Res, err = loadgen.Run(loadgen.Config{Addr: srv.Addr, Method: "POST", Path: helpPath, Header: jsonHeader,
		Conns: 64, Requests: o.Million, Duration: time.Hour, Body: publishBody("million"), Expect: []int{201}, MarkEvery: m.Slice})
	close(stopWatch)
	if err != nil {
		return nil, err
	}
	m.PeakAnon, m.PeakFile = peakAnon(), peakFile()
	if err := <-profDone; err != nil {
		return nil, fmt.Errorf("profile: %w", err)
	}
	m.ServerCPU = srv.cpu() - cpu0
	m.PeakRSS = srv.peakRSS()
	t0 := time.Now()
	srv.stop()
	m.CloseAfter = time.Since(t0)
	if srv.dsn != "" {
		m.DiskBytes, err = databaseSize(srv.dsn)
	} else {
		m.DiskBytes, err = diskUsage(srv.DataDir)
	}
	if err != nil {
		return nil, err
	}
	// The reads run on the server restarted over those records, as after a deploy: measured right
	// after the bulk load they would time the compactions it left behind.
	progress("restarting over the %s records", count(o.Million))
	if err := srv.restart(); err != nil {
		return nil, err
	}
	if m.Reads, err = readScenarios(o, srv, progress); err != nil {
		return nil, err
	}
	m.ReadPeakRSS = srv.peakRSS()
	progress("exporting the %s records as one CSV", count(o.Million))
	if m.Export, err = exportAll(srv); err != nil {
		return nil, err
	}
	if cg != nil {
		srv.stop()
		m.CgroupMaxUsage, m.CgroupFailcnt, m.OOMKills = cg.stats()
	}
	return m, nil
}

// measure runs one scenario (cfg's Conns and Duration set) and the server's CPU profile during it when
// o asks for "name/conns".
func (o Options) measure(srv *server, name string, cfg loadgen.Config) (Row, error) {
	profDone := o.profileIf(srv, fmt.Sprintf("%s/%d", name, cfg.Conns), cfg.Duration-cfg.Duration/10)
	cpu0 := srv.cpu()
	res, err := loadgen.Run(cfg)
	if err != nil {
		return Row{}, err
	}
	row := Row{Name: name, Conns: cfg.Conns, Res: res, ServerCPU: srv.cpu() - cpu0}
	if err := <-profDone; err != nil {
		return Row{}, fmt.Errorf("profile: %w", err)
	}
	return row, nil
}

// profileIf saves the server's CPU profile for d when o.Profile names scenario; the channel says when it
// is written (at once when there is nothing to do).
func (o Options) profileIf(srv *server, scenario string, d time.Duration) <-chan error {
	done := make(chan error, 1)
	if o.Profile == "" || !strings.EqualFold(o.Profile, scenario) {
		done <- nil
		return done
	}
	go func() { done <- srv.profile(o.ProfilePath, d) }()
	return done
}

// readScenarios query the records that runMillion published: one reader (the answer time a person gets)
// and 16 (what the server sustains). Every radius search is around another point of the area the bodies
// cover, so that no cache answers it.
func readScenarios(o Options, srv *server, progress func(string, ...any)) ([]Row, error) {
	point := func(n int64, b []byte) []byte {
		r := rng(uint64(n) * 0x9e3779b97f4a7c15)
		b = append(b, "view=list&radiusKm=5&latitude="...)
		b = strconv.AppendFloat(b, 4.45+float64(r.intn(70000))/1e5, 'f', 5, 64)
		b = append(b, "&longitude="...)
		return strconv.AppendFloat(b, -75.95+float64(r.intn(50000))/1e5, 'f', 5, 64)
	}
	filtered := func(extra string) func(int64, []byte) []byte {
		return func(n int64, b []byte) []byte {
			b = append(b, "view=list&emergencySlug=eje-cafetero&type=request&category="...)
			return append(append(b, categories[n%int64(len(categories))]...), extra...)
		}
	}
	fixed := func(q string) func(int64, []byte) []byte {
		return func(_ int64, b []byte) []byte { return append(b, q...) }
	}
	ids, err := someIDs(srv, 1000)
	if err != nil {
		return nil, err
	}
	detail := func(n int64, b []byte) []byte {
		r := rng(uint64(n) * 0x9e3779b97f4a7c15)
		return append(append(b, "view=detail&id="...), ids[r.intn(len(ids))]...)
	}
	scenarios := []struct {
		name  string
		query func(int64, []byte) []byte
	}{
		{"GET detail", detail},
		{"GET list within 5 km", point},
		{"GET list within 5 km, total=none", func(n int64, b []byte) []byte { return append(point(n, b), "&total=none"...) }},
		{"GET list emergency+type+category", filtered("")},
		{"GET list … +urgency", filtered("&urgency=urgent")},
		{"GET list q=insulina", fixed("view=list&q=insulina")},
		{"GET list q=insul&type=request", fixed("view=list&q=insul&type=request")},
		{"GET panorama", fixed("view=panorama")},
	}
	var rows []Row
	for _, sc := range scenarios {
		for _, conns := range []int{1, 16} {
			cfg := loadgen.Config{Addr: srv.Addr, Path: helpPath, Query: sc.query, Conns: conns, Expect: []int{200},
				Duration: max(o.Duration/2, time.Second), Requests: o.MaxRequests}
			key := fmt.Sprintf("%s/%d", sc.name, conns)
			progress("running %s over %s records", key, count(o.Million))
			row, err := o.measure(srv, sc.name, cfg)
			if err != nil {
				return nil, err
			}
			if row.Res.Errors > 0 {
				return nil, fmt.Errorf("%s: %d errors, first: %s", key, row.Res.Errors, row.Res.FirstError)
			}
			rows = append(rows, row)
		}
	}
	return rows, nil
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2f", float64(d)/float64(time.Millisecond)) }

// Print writes the table.
func (r *Report) Print(w io.Writer) {
	if r.Store == "postgres" {
		fmt.Fprintln(w, "store: PostgreSQL (a throwaway cluster on this machine, fsync on; its CPU is not in the server column)")
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "scenario\tconns\trequests\treq/s\tp50 ms\tp99 ms\tp99.9 ms\terrors\tvs ceiling\tCPU server\tCPU loadgen\t")
	row := func(name string, conns int, n int64, rate float64, res *loadgen.Result, srvCPU time.Duration, elapsed time.Duration) {
		ratio := "—"
		if r.Ceiling > 0 {
			ratio = fmt.Sprintf("%.0f%%", 100*rate/r.Ceiling)
		}
		cores := func(d time.Duration) string {
			if elapsed <= 0 {
				return "—"
			}
			return fmt.Sprintf("%.2f", d.Seconds()/elapsed.Seconds())
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%.0f\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t\n", name, conns, n, rate,
			ms(res.Percentile(0.50)), ms(res.Percentile(0.99)), ms(res.Percentile(0.999)), res.Errors, ratio,
			cores(srvCPU), cores(res.CPU))
	}
	for _, x := range r.Rows {
		row(x.Name, x.Conns, x.Res.Requests, x.Res.Throughput(), x.Res, x.ServerCPU, x.Res.Elapsed)
	}
	if m := r.Million; m != nil {
		row(fmt.Sprintf("POST %s records, all", count(m.Records)), 64, m.Res.Requests, m.Res.Throughput(), m.Res, m.ServerCPU, m.Res.Elapsed)
		for _, x := range m.Reads {
			row(fmt.Sprintf("%s (%s records)", x.Name, count(m.Records)), x.Conns, x.Res.Requests, x.Res.Throughput(), x.Res, x.ServerCPU, x.Res.Elapsed)
		}
	}
	tw.Flush()
	fmt.Fprintln(w, "CPU columns: cores used on average (2 = both cores of a 2-core machine); server and load generator share them.")
	if m := r.Million; m != nil {
		first, last := m.Res.MarkRate(0, m.Slice), m.Res.MarkRate(len(m.Res.Marks)-1, m.Slice)
		loss := 0.0
		if first > 0 {
			loss = 100 * (first - last) / first
		}
		fmt.Fprintf(w, "\n%s records at 64 connections (fresh server):\n", count(m.Records))
		fmt.Fprintf(w, "  first %s: %.0f req/s   last %s: %.0f req/s   loss %.1f%%\n", count(m.Slice), first, count(m.Slice), last, loss)
		var slices []string
		for i := range m.Res.Marks {
			slices = append(slices, fmt.Sprintf("%.0f", m.Res.MarkRate(i, m.Slice)))
		}
		fmt.Fprintf(w, "  req/s per %s: %s\n", count(m.Slice), strings.Join(slices, " "))
		created := m.Res.Status[201]
		per := 0.0
		if created > 0 {
			per = float64(m.DiskBytes) / float64(created)
		}
		where := "on disk after graceful close"
		if r.Store == "postgres" {
			where = "in PostgreSQL (pg_database_size, an empty database's ~7 MB included)"
		}
		fmt.Fprintf(w, "  %s: %.1f MB = %.0f bytes/record (%d records created; close took %s)\n",
			where, float64(m.DiskBytes)/(1<<20), per, created, m.CloseAfter.Round(100*time.Millisecond))
		fmt.Fprintf(w, "  server peak RSS (VmHWM): %.1f MB; sampled peaks: anonymous %.1f MB, file-backed %.1f MB\n",
			float64(m.PeakRSS)/(1<<20), float64(m.PeakAnon)/(1<<20), float64(m.PeakFile)/(1<<20))
		if m.ReadPeakRSS > 0 {
			fmt.Fprintf(w, "  reads: on the server restarted over these records; its peak RSS (VmHWM): %.1f MB\n", float64(m.ReadPeakRSS)/(1<<20))
		}
		if e := m.Export; e != nil {
			fmt.Fprintf(w, "  export: %d records as one CSV (all=true, chunked %v) in %s = %.0f records/s, %.1f MB; server RSS %.1f → peak %.1f MB (anonymous %.1f → %.1f MB)\n",
				e.Records, e.Chunked, e.Duration.Round(10*time.Millisecond), float64(e.Records)/e.Duration.Seconds(), float64(e.Bytes)/(1<<20),
				float64(e.RSSBefore)/(1<<20), float64(e.RSSPeak)/(1<<20), float64(e.AnonBefore)/(1<<20), float64(e.AnonPeak)/(1<<20))
		}
		switch {
		case m.CgroupError != "":
			fmt.Fprintf(w, "  memory cgroup: none (%s)\n", m.CgroupError)
		case m.MemoryLimit > 0:
			gml := "none logged"
			if m.GoMemLimit > 0 {
				gml = fmt.Sprintf("%.1f MiB", float64(m.GoMemLimit)/(1<<20))
			}
			fmt.Fprintf(w, "  memory cgroup (v1) of %.0f MiB for publishing, reads and export: GOMEMLIMIT %s, peak usage %.1f MiB, limit reached %d times, OOM kills %d\n",
				float64(m.MemoryLimit)/(1<<20), gml, float64(m.CgroupMaxUsage)/(1<<20), m.CgroupFailcnt, m.OOMKills)
		}
	}
}

func count(n int64) string {
	switch {
	case n >= 1000000 && n%1000000 == 0:
		return fmt.Sprintf("%dM", n/1000000)
	case n >= 1000 && n%1000 == 0:
		return fmt.Sprintf("%dk", n/1000)
	}
	return fmt.Sprint(n)
}

// ProfilePath is a default location for a profile file in dir.
func ProfilePath(dir, scenario string) string {
	r := strings.NewReplacer("/", "-", " ", "-", "(", "", ")", "")
	return filepath.Join(dir, "cpu-"+strings.ToLower(r.Replace(scenario))+".pprof")
}
