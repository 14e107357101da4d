// Package bench is the harness behind `make bench`: it starts the real directaid binary on loopback, over a
// fresh Badger and, when PostgreSQL is available, over a fresh PostgreSQL database too, drives each with
// internal/loadgen through the same scenarios, and reports one table with the two stores side by side,
// beside a Caddy-only `respond` route measured in the same run.
package bench

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/directaid/directaid/internal/loadgen"
	"github.com/directaid/directaid/internal/pgtest"
	"github.com/directaid/directaid/schema"
)

// Options configure a run.
type Options struct {
	Bin      string        // the directaid binary
	Duration time.Duration // measured time per scenario (default 10s; read scenarios half of it); warm-up is extra
	Seeds    int64         // records published before the read and retry scenarios (default 10,000)
	// MaxRequests bounds each scenario's count as Duration bounds its time (default 2,000,000).
	MaxRequests int64
	// Million, when > 0, publishes that many new records into a fresh Badger server (1,000,000 for the real
	// figure), copies them into PostgreSQL with `directaid migrate`, runs the read scenarios and a whole
	// CSV export over them on both stores, then reads while publishing (mixed load) on Badger. The read
	// scenarios over the Seeds are then left out: these supersede them.
	Million int64
	// Backup, when > 0 and Million is 0, publishes that many records into a fresh Badger server and runs
	// the backup scenario over them (issue 28; the million run has it too): publishing at 16 connections
	// without a backup, then during one whose client reads at 1 MB/s, then one whole backup verified.
	Backup int64
	// MillionTime caps the publishing of the Million records (cmd/bench: 20 minutes): past it, the rest of
	// the long run goes on over the records published so far, and says so.
	MillionTime time.Duration
	// Profile names a scenario (e.g. "POST new/64") whose Badger server's CPU profile is saved to ProfilePath.
	Profile, ProfilePath string
	// Only, when set, runs just the scenarios before the million part whose "name/conns" contains it (the
	// ceiling always runs).
	Only     string
	Progress io.Writer // progress lines and each scenario's result as it finishes; nil is silent
	TempDir  string    // parent of the servers' directories; default os.TempDir()
	// ServerOutput receives what the servers (and migrate) print; nil keeps it quiet.
	ServerOutput io.Writer
	// ServerEnv adds KEY=VALUE pairs to the servers' environment (e.g. GOMEMLIMIT=150MiB).
	ServerEnv []string
	// MemoryLimit, when > 0, runs the Million Badger server (publishing, reads, export, mixed load) in a
	// cgroup v1 memory cgroup of that many bytes, made for it (the kernel OOM-kills it past the limit),
	// after publishing the first tenth of the records into an unconstrained server for comparison.
	MemoryLimit int64
	// Postgres, when set, runs every scenario on PostgreSQL too: it returns the DSN of a new, empty
	// database for each fresh server (cmd/bench makes them in a throwaway cluster).
	Postgres func() (dsn string, err error)
	// PostgresDataDir is that cluster's data directory: its postmaster.pid says whose CPU time to count.
	PostgresDataDir string
	// PostgresMissing says why PostgreSQL does not run (printed with the table) when Postgres is nil.
	PostgresMissing string
	// PostgresConf says how that cluster is set beyond fsync, for the table's heading (e.g.
	// "shared_buffers 6144MB").
	PostgresConf string
	// Directaid adds lines to the servers' global directaid block (the feed's bounds, for the fan-out).
	Directaid string
	// failStep makes the million run's step so named ("<store> <step>") fail at once (TestBenchSmoke's
	// error row).
	failStep string
}

// Store names, as the table shows them.
const (
	Badger   = "Badger"
	Postgres = "PostgreSQL"
)

// Measure is one scenario on one store.
type Measure struct {
	Store string // Badger or Postgres
	Name  string // the scenario
	Set   string // what it ran over, e.g. "1M records" ("" for the scenarios on a fresh server)
	Conns int
	Res   *loadgen.Result
	// CPU time of the directaid process, and of PostgreSQL's processes (PostgreSQL rows, when known),
	// during the measurement.
	ServerCPU, DBCPU time.Duration
	// KeyWrites and WriteBytes are, for a Badger publishing row, what Badger was handed to write per
	// successful request (server.storeWrites); Writes tells whether they were read.
	KeyWrites, WriteBytes float64
	Writes                bool
}

// Label is the row's name in the table: the scenario and what it ran over.
func (m Measure) Label() string {
	if m.Set == "" {
		return m.Name
	}
	return m.Name + " (" + m.Set + ")"
}

// MillionResult is the long run: the same records on both stores.
type MillionResult struct {
	Records int64 // published, and what the rest ran over
	Asked   int64 // Options.Million: more than Records when MillionTime stopped the publishing
	Slice   int64 // records per mark (100k for 1M)
	Res     *loadgen.Result
	// Unconstrained is the first Slice records published into a fresh server outside the memory cgroup,
	// the same bodies as Res's first slice (only with a cgroup): the cheap unconstrained figure.
	Unconstrained *loadgen.Result
	DiskBytes     int64 // data directory after a graceful close
	PeakRSS       int64 // VmHWM of the server that took the whole run
	PeakAnon      int64 // peak RssAnon (Go heap, Badger's memtables and table builders), sampled
	PeakFile      int64 // peak RssFile (mostly Badger's memory-mapped tables), sampled
	ServerCPU     time.Duration
	CloseAfter    time.Duration // how long the graceful shutdown took (flush + L0 compaction)
	ReadPeakRSS   int64         // VmHWM of the restarted server after the reads
	Export        *ExportResult // one whole CSV export of the records, after the reads (Badger)
	Migrate       *MigrateResult
	PGExport      *ExportResult // the same export from the PostgreSQL node
	// Mismatches lists the first pages that the two stores answered differently (ids or exact totals).
	Mismatches []string
	// StepErrors are the steps that failed on one store ("[store] step: error"); the run went on.
	StepErrors []string
	Compared   int // first pages compared
	// MixedPublish is the publishing at 64 connections that ran during the mixed-load reads, and
	// MixedUncovered how long those reads ran after it had stopped (0 when it covered them all).
	MixedPublish   *loadgen.Result
	MixedUncovered time.Duration
	// The memory cgroup (Options.MemoryLimit): its limit, the GOMEMLIMIT Caddy set from it (-1: none
	// logged), its peak usage, how often the limit was reached, OOM kills; or why there was none.
	MemoryLimit, GoMemLimit, CgroupMaxUsage, CgroupFailcnt, OOMKills int64
	CgroupError                                                      string
}

// sliceRates are the publishing rates of the long run's first and last slices.
func (m *MillionResult) sliceRates() (first, last float64) {
	return m.Res.MarkRate(0, m.Slice), m.Res.MarkRate(len(m.Res.Marks)-1, m.Slice)
}

// Report is a whole run.
type Report struct {
	Measures     []Measure // in the order they ran
	Ceiling      float64   // req/s of the ceiling row
	Million      *MillionResult
	Load         string   // /proc/loadavg when the run started
	Stores       []string // Badger, then Postgres when it ran
	PostgresNote string   // why PostgreSQL did not run
	PostgresConf string   // Options.PostgresConf
	Seeds        int64
	Duration     time.Duration // of the whole run

	Backup *BackupResult // the backup scenario (-backup, or within the million run)
}

const helpPath = schema.HelpPath

var jsonHeader = map[string]string{"Content-Type": "application/json"}

// runner holds what the parts of a run share.
type runner struct {
	o     Options
	tmp   string
	rep   *Report
	began time.Time
}

// progress prints a line with the time since the run began, so that the phases' durations show.
func (r *runner) progress(format string, a ...any) {
	if r.o.Progress != nil {
		d := time.Since(r.began).Round(time.Second)
		fmt.Fprintf(r.o.Progress, "%02d:%02d "+format+"\n", append([]any{int(d.Minutes()), int(d.Seconds()) % 60}, a...)...)
	}
}

// readDuration is how long each read scenario is measured.
func (o Options) readDuration() time.Duration { return max(o.Duration/2, 100*time.Millisecond) }

// Run executes every scenario. On an error after some scenarios ran it returns their report too, so that
// a long run's measurements are not lost.
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
	if o.MillionTime <= 0 {
		o.MillionTime = 10 * time.Minute
	}
	tmp, err := os.MkdirTemp(o.TempDir, "directaid-bench-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	began := time.Now()
	rep := &Report{Stores: []string{Badger}, Seeds: o.Seeds, PostgresNote: o.PostgresMissing, PostgresConf: o.PostgresConf}
	if o.Postgres != nil {
		rep.Stores = append(rep.Stores, Postgres)
	} else if rep.PostgresNote == "" {
		rep.PostgresNote = "no PostgreSQL given"
	}
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		rep.Load = strings.Join(strings.Fields(string(b))[:3], " ")
	}
	r := &runner{o: o, tmp: tmp, rep: rep, began: began}
	defer func() { rep.Duration = time.Since(began) }()
	for _, st := range rep.Stores {
		if err := r.fresh(st); err != nil {
			return rep, fmt.Errorf("%s: %w", st, err)
		}
	}
	if o.Million > 0 {
		if err := r.million(); err != nil {
			return rep, err
		}
	} else if o.Backup > 0 {
		if err := r.backupRun(); err != nil {
			return rep, fmt.Errorf("backup scenario: %w", err)
		}
	}
	return rep, nil
}

// start starts a server on store: a fresh Badger directory, or a new PostgreSQL database.
func (r *runner) start(store string, cg *memCgroup) (*server, error) {
	dsn := ""
	if store == Postgres {
		var err error
		if dsn, err = r.o.Postgres(); err != nil {
			return nil, err
		}
	}
	return startServer(r.o, r.tmp, cg, dsn)
}

// fresh runs the scenarios on a fresh server on store: the ceiling (Badger only: it never reaches the
// store), discovery, the reads over the seeds (unless the million part runs), publishing and retries.
func (r *runner) fresh(store string) error {
	o := r.o
	srv, err := r.start(store, nil)
	if err != nil {
		return err
	}
	defer srv.stop()
	selected := func(name string, conns int) bool {
		return o.Only == "" || strings.Contains(fmt.Sprintf("%s/%d", name, conns), o.Only)
	}
	seeded := false
	seed := func() error {
		if seeded {
			return nil
		}
		seeded = true
		r.progress("[%s] seeding %d records", store, o.Seeds)
		res, err := loadgen.Run(loadgen.Config{Addr: srv.Addr, Method: "POST", Path: helpPath, Header: jsonHeader,
			Conns: 64, Requests: o.Seeds, Body: publishBody("seed"), Expect: []int{201}})
		if err != nil {
			return err
		}
		if res.Errors > 0 {
			return fmt.Errorf("seeding: %d errors, first: %s", res.Errors, res.FirstError)
		}
		return nil
	}
	if store == Badger {
		m, err := r.measure(srv, store, "ceiling (Caddy respond)", "", o.Duration,
			loadgen.Config{Path: "/ceiling", Conns: 64, Expect: []int{200}})
		if err != nil {
			return err
		}
		r.rep.Ceiling = m.Res.Throughput()
	}
	if selected("GET discovery", 64) {
		if _, err := r.measure(srv, store, "GET discovery", "", o.Duration, loadgen.Config{Path: helpPath, Conns: 64, Expect: []int{200}}); err != nil {
			return err
		}
	}
	if o.Million <= 0 && anyRead(selected) {
		if err := seed(); err != nil {
			return err
		}
		ids, err := someIDs(srv.Addr, 1000)
		if err != nil {
			return err
		}
		if err := r.reads(srv, store, count(o.Seeds)+" records", ids, selected); err != nil {
			return err
		}
	}
	for _, conns := range []int{1, 16, 64, 256} {
		if !selected("POST new", conns) {
			continue
		}
		cfg := loadgen.Config{Method: "POST", Path: helpPath, Header: jsonHeader, Conns: conns,
			Body: publishBody(fmt.Sprintf("new%d", conns)), Expect: []int{201}}
		if _, err := r.measure(srv, store, "POST new", "", o.Duration, cfg); err != nil {
			return err
		}
	}
	if selected(postOnePoint, 64) {
		cfg := loadgen.Config{Method: "POST", Path: helpPath, Header: jsonHeader, Conns: 64,
			Body: onePointBody("one64"), Expect: []int{201}}
		if _, err := r.measure(srv, store, postOnePoint, "", o.Duration, cfg); err != nil {
			return err
		}
	}
	if selected("POST retry (existing)", 64) {
		if err := seed(); err != nil {
			return err
		}
		seedBody := publishBody("seed")
		cfg := loadgen.Config{Method: "POST", Path: helpPath, Header: jsonHeader, Conns: 64,
			Body: func(n int64, b []byte) []byte { return seedBody(n%o.Seeds, b) }, Expect: []int{200}}
		if _, err := r.measure(srv, store, "POST retry (existing)", "", o.Duration, cfg); err != nil {
			return err
		}
	}
	return nil
}

// measure warms cfg up, runs it for d on srv, records the Measure and
// prints its result. A publishing warm-up sends its own externalIds, so that connections, buffers and
// caches are in their steady state when the clock starts without the measurement repeating a record.
func (r *runner) measure(srv *server, store, name, set string, d time.Duration, cfg loadgen.Config) (Measure, error) {
	o := r.o
	cfg.Addr = srv.Addr
	w := cfg
	w.Duration, w.Requests = max(d/10, 100*time.Millisecond), o.MaxRequests
	if w.Body != nil && name != "POST retry (existing)" {
		w.Body = publishBody(fmt.Sprintf("warm%d", cfg.Conns))
		if name == postOnePoint {
			w.Body = onePointBody(fmt.Sprintf("warmone%d", cfg.Conns))
		}
	}
	if _, err := loadgen.Run(w); err != nil {
		return Measure{}, err
	}
	cfg.Duration, cfg.Requests = d, o.MaxRequests
	m := Measure{Store: store, Name: name, Set: set, Conns: cfg.Conns}
	key := fmt.Sprintf("%s/%d", m.Label(), cfg.Conns)
	profDone := o.profileIf(srv, store, fmt.Sprintf("%s/%d", name, cfg.Conns), d-d/10)
	counted := store == Badger && cfg.Method == "POST"
	var keys0, bytes0 int64
	if counted {
		var err error
		if keys0, bytes0, err = srv.storeWrites(); err != nil {
			return Measure{}, fmt.Errorf("%s: %w", key, err)
		}
	}
	cpu0, db0 := srv.cpu(), r.dbCPU(store)
	res, err := loadgen.Run(cfg)
	if err != nil {
		return Measure{}, fmt.Errorf("%s: %w", key, err)
	}
	m.Res, m.ServerCPU, m.DBCPU = res, srv.cpu()-cpu0, r.dbCPU(store)-db0
	if counted {
		keys1, bytes1, err := srv.storeWrites()
		if err != nil {
			return Measure{}, fmt.Errorf("%s: %w", key, err)
		}
		ok := float64(max(res.Requests-res.Errors, 1))
		m.KeyWrites, m.WriteBytes, m.Writes = float64(keys1-keys0)/ok, float64(bytes1-bytes0)/ok, true
	}
	if err := <-profDone; err != nil {
		return Measure{}, fmt.Errorf("profile: %w", err)
	}
	r.rep.Measures = append(r.rep.Measures, m)
	r.printResult(m)
	return m, nil
}

// printResult is the progress line of a finished scenario: the lead watches these during a long run.
func (r *runner) printResult(m Measure) {
	res := m.Res
	cores := func(d time.Duration) string { return fmt.Sprintf("%.2f", d.Seconds()/max(res.Elapsed.Seconds(), 1e-9)) }
	cpu := "server " + cores(m.ServerCPU)
	if m.Store == Postgres && r.o.PostgresDataDir != "" {
		cpu = "node " + cores(m.ServerCPU) + " + PostgreSQL " + cores(m.DBCPU)
	}
	errs := fmt.Sprint(res.Errors)
	if res.Errors > 0 {
		errs += " (first: " + res.FirstError + ")"
	}
	writes := ""
	if m.Writes {
		writes = fmt.Sprintf("; Badger writes a request: %.1f keys, %.0f bytes", m.KeyWrites, m.WriteBytes)
	}
	r.progress("  [%s] %s/%d: %.0f req/s (%d requests), p50 %s ms, p99 %s ms, p99.9 %s ms, errors %s; cores: %s, load generator %s%s",
		m.Store, m.Label(), m.Conns, res.Throughput(), res.Requests, ms(res.Percentile(0.5)), ms(res.Percentile(0.99)),
		ms(res.Percentile(0.999)), errs, cpu, cores(res.CPU), writes)
}

// dbCPU is PostgreSQL's CPU time so far, for PostgreSQL rows (0 otherwise or when unknown).
func (r *runner) dbCPU(store string) time.Duration {
	if store != Postgres || r.o.PostgresDataDir == "" {
		return 0
	}
	return pgtest.ClusterCPU(r.o.PostgresDataDir)
}

// profileIf saves the Badger server's CPU profile for d when o asks for scenario; the channel says when
// it is written (at once when there is nothing to do).
func (o Options) profileIf(srv *server, store, scenario string, d time.Duration) <-chan error {
	done := make(chan error, 1)
	// "GET list within 5 km/16" names Badger's row, "PostgreSQL GET list within 5 km/16" PostgreSQL's.
	if o.Profile == "" || !strings.EqualFold(o.Profile, scenario) && !strings.EqualFold(o.Profile, store+" "+scenario) ||
		store != Badger && !strings.EqualFold(o.Profile, store+" "+scenario) {
		done <- nil
		return done
	}
	go func() { done <- srv.profile(o.ProfilePath, d) }()
	return done
}

// readScenario is one read of the table: the query of request n.
type readScenario struct {
	name  string
	query func(n int64, b []byte) []byte
	list  bool // a view=list whose first page the two stores must answer alike
	// target, when set, is request n's whole target (another path than help?query).
	target func(n int64, b []byte) []byte
}

// config is the load of sc at conns connections.
func (sc readScenario) config(conns int) loadgen.Config {
	return loadgen.Config{Path: helpPath, Query: sc.query, Target: sc.target, Conns: conns, Expect: []int{200}}
}

// Every radius search is around another point of the area the bodies cover, so that no cache answers it.
func radiusQuery(n int64, b []byte) []byte {
	r := rng(uint64(n) * 0x9e3779b97f4a7c15)
	b = append(b, "view=list&radiusKm=5&latitude="...)
	b = strconv.AppendFloat(b, 4.45+float64(r.intn(70000))/1e5, 'f', 5, 64)
	b = append(b, "&longitude="...)
	return strconv.AppendFloat(b, -75.95+float64(r.intn(50000))/1e5, 'f', 5, 64)
}

func filteredQuery(extra string) func(int64, []byte) []byte {
	return func(n int64, b []byte) []byte {
		b = append(b, "view=list&emergencySlug=eje-cafetero&type=request&category="...)
		return append(append(b, categories[n%int64(len(categories))]...), extra...)
	}
}

func fixedQuery(q string) func(int64, []byte) []byte {
	return func(_ int64, b []byte) []byte { return append(b, q...) }
}

// Scenario names the targets of the issues refer to.
const (
	// postOnePoint publishes every record at one point with one title and text (onePointBody), beside
	// "POST new"'s varied records: what the varied data cost.
	postOnePoint = "POST new, one point"
	readRadius   = "GET list within 5 km"
	readFiltered = "GET list emergency+type+category"
	readText     = "GET list q=insulina"
	readMatches  = "GET matches of a record (25 km)"
)

// readScenarios are the reads of issue 16: one reader (the answer time a person gets) and 16 (what the
// server sustains) each; detail reads one of ids.
func readScenarios(ids []string) []readScenario {
	detail := func(n int64, b []byte) []byte {
		r := rng(uint64(n) * 0x9e3779b97f4a7c15)
		return append(append(b, "view=detail&id="...), ids[r.intn(len(ids))]...)
	}
	// The matches of one of ids (a request's offers or an offer's requests within the default 25 km):
	// a radius list filtered by emergency, type and category, after a read of the record.
	matches := func(n int64, b []byte) []byte {
		r := rng(uint64(n) * 0x9e3779b97f4a7c15)
		return append(append(append(b, helpPath+"/"...), ids[r.intn(len(ids))]...), "/matches"...)
	}
	return []readScenario{
		{"GET detail", detail, false, nil},
		{readMatches, nil, false, matches},
		{readRadius, radiusQuery, true, nil},
		{readRadius + ", total=none", func(n int64, b []byte) []byte { return append(radiusQuery(n, b), "&total=none"...) }, true, nil},
		{readFiltered, filteredQuery(""), true, nil},
		{"GET list … +urgency", filteredQuery("&urgency=urgent"), true, nil},
		{readText, fixedQuery("view=list&q=insulina"), true, nil},
		{"GET list q=insul&type=request", fixedQuery("view=list&q=insul&type=request"), true, nil},
		{"GET panorama", fixedQuery("view=panorama"), false, nil},
	}
}

func anyRead(selected func(string, int) bool) bool {
	for _, sc := range readScenarios([]string{"x"}) {
		if selected(sc.name, 1) || selected(sc.name, 16) {
			return true
		}
	}
	return false
}

// reads runs the read scenarios on srv at 1 and 16 connections.
func (r *runner) reads(srv *server, store, set string, ids []string, selected func(string, int) bool) error {
	for _, sc := range readScenarios(ids) {
		for _, conns := range []int{1, 16} {
			if selected != nil && !selected(sc.name, conns) {
				continue
			}
			if _, err := r.measure(srv, store, sc.name, set, r.o.readDuration(), sc.config(conns)); err != nil {
				return err
			}
		}
	}
	return nil
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2f", float64(d)/float64(time.Millisecond)) }

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
