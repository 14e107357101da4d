package bench

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/dgraph-io/badger/v4"

	"github.com/directaid/directaid/internal/loadgen"
)

// MigrateResult is `directaid migrate --from badger <dir> --to postgres <dsn>` over the million records.
type MigrateResult struct {
	Records   int64 // records PostgreSQL holds afterwards (from the node's exact list total)
	Duration  time.Duration
	CPU       time.Duration // the migrate process (user + system)
	DBCPU     time.Duration // PostgreSQL's processes meanwhile (0 when unknown)
	DiskBytes int64         // pg_database_size afterwards
	Summary   string        // migrate's line with its counts
}

// exportLimit caps one whole export: a slow store must not eat the run's time budget.
const exportLimit = 5 * time.Minute

// million publishes o.Million records at 64 connections into a fresh Badger server (in the memory
// cgroup when asked, after an unconstrained first slice for comparison), copies them into PostgreSQL with
// `directaid migrate`, then over the same records runs the read scenarios, a whole CSV export and the
// mixed load on Badger (on the server restarted once, after the migrate), then the reads and the export on
// PostgreSQL (its node started before the mixed load, for the comparison, and idle during it); after
// the mixed load, the backup scenario (backup.go) on Badger. A step that fails on one store is an error row of the report (step), not the run's end.
func (r *runner) million() error {
	o := r.o
	m := &MillionResult{Records: o.Million, Asked: o.Million, Slice: max(o.Million/10, 1)}
	r.rep.Million = m
	publish := func(addr string, n int64, tag string, mark int64) (*loadgen.Result, error) {
		return loadgen.Run(loadgen.Config{Addr: addr, Method: "POST", Path: helpPath, Header: jsonHeader, Conns: 64,
			Requests: n, Duration: o.MillionTime, Body: publishBody(tag), Expect: []int{201}, MarkEvery: mark})
	}
	var cg *memCgroup
	if o.MemoryLimit > 0 {
		var err error
		if cg, err = newMemCgroup(o.MemoryLimit); err != nil {
			m.CgroupError = err.Error()
			r.progress("no memory cgroup: %v", err)
		} else {
			defer cg.remove()
			m.MemoryLimit = o.MemoryLimit
		}
	}
	if cg != nil {
		// The unconstrained figure, cheaply: the first slice of the same bodies into a fresh server
		// outside the cgroup, against the constrained run's first slice.
		r.progress("[Badger] publishing the first %s records outside the memory cgroup (64 connections), for comparison", count(m.Slice))
		free, err := startServer(o, r.tmp, nil, "")
		if err != nil {
			return err
		}
		cpu0 := free.cpu()
		res, err := publish(free.Addr, m.Slice, "million", 0)
		cpu := free.cpu() - cpu0
		free.stop()
		_ = os.RemoveAll(free.Dir)
		if err != nil {
			return err
		}
		m.Unconstrained = res
		r.add(Measure{Store: Badger, Name: fmt.Sprintf("POST first %s, no cgroup", count(m.Slice)), Set: "fresh server", Conns: 64, Res: res, ServerCPU: cpu})
	}

	srv, err := startServer(o, r.tmp, cg, "")
	if err != nil {
		return err
	}
	defer srv.stop()
	if cg != nil {
		// Read however the run ends (a run that stopped early printed "OOM kills 0" unread).
		defer func() { m.CgroupMaxUsage, m.CgroupFailcnt, m.OOMKills = cg.stats() }()
		log, _ := os.ReadFile(filepath.Join(srv.Dir, "caddy.log")) // Caddy's start-up lines land in its configured log
		m.GoMemLimit = goMemLimit(srv.out.String() + string(log))
	}
	name := fmt.Sprintf("POST %s records, all", count(o.Million))
	if cg != nil {
		name += fmt.Sprintf(", %d MiB cgroup", o.MemoryLimit>>20)
	}
	r.progress("[Badger] publishing %d records (64 connections)", o.Million)
	cpu0 := srv.cpu()
	profDone := o.profileIf(srv, Badger, "million", 60*time.Second)
	stopWatch := make(chan struct{})
	peakAnon, peakFile := srv.watchMemory(stopWatch)
	m.Res, err = publish(srv.Addr, o.Million, "million", m.Slice)
	close(stopWatch)
	if err != nil {
		return err
	}
	if m.Res.Requests < o.Million {
		// Stopped by MillionTime: what follows runs over what was published.
		m.Records = m.Res.Status[201]
		r.progress("  STOPPED after %s: %d of %d records published; the rest of the run is over those", o.MillionTime, m.Records, o.Million)
		if m.Records == 0 {
			return fmt.Errorf("no record published in %s", o.MillionTime)
		}
	}
	set := count(m.Records) + " records"
	m.PeakAnon, m.PeakFile = peakAnon(), peakFile()
	if err := <-profDone; err != nil {
		return fmt.Errorf("profile: %w", err)
	}
	m.ServerCPU = srv.cpu() - cpu0
	m.PeakRSS = srv.peakRSS()
	r.add(Measure{Store: Badger, Name: name, Set: "fresh server", Conns: 64, Res: m.Res, ServerCPU: m.ServerCPU})
	t0 := time.Now()
	srv.stop()
	m.CloseAfter = time.Since(t0)
	if m.DiskBytes, err = diskUsage(srv.DataDir); err != nil {
		return err
	}

	// From here a step that fails on one store is an error row of the report, and the rest goes on:
	// Badger's reads, export and mixed load are reported whatever PostgreSQL does.
	dsn := ""
	if o.Postgres != nil && !r.step(Postgres, "migrate", func() error {
		var err error
		if dsn, err = o.Postgres(); err != nil {
			return err
		}
		r.progress("[PostgreSQL] copying the %s with directaid migrate", set)
		if m.Migrate, err = r.migrate(srv.DataDir, dsn); err != nil {
			return err
		}
		r.progress("  [PostgreSQL] migrate: %s in %s = %.0f records/s (%s)", set, m.Migrate.Duration.Round(100*time.Millisecond),
			float64(m.Records)/m.Migrate.Duration.Seconds(), m.Migrate.Summary)
		return nil
	}) {
		dsn = ""
	}

	// The reads run on the server restarted over those records, as after a deploy: measured right
	// after the bulk load they would time the compactions it left behind.
	// Level 0 as the last Close left it sets what a radius total costs until its next compaction.
	r.progress("[Badger] restarting over the %s (%s)", set, levelShape(srv.DataDir))
	if err := srv.restart(); err != nil {
		return err
	}
	r.checkTotal(srv.Addr, Badger)
	ids, err := someIDs(srv.Addr, 1000)
	if err != nil {
		return err
	}
	r.step(Badger, "reads", func() error { return r.reads(srv, Badger, set, ids, nil) })
	m.ReadPeakRSS = srv.peakRSS()
	r.export(srv, Badger, set, &m.Export)
	var pg *server
	if dsn != "" && r.step(Postgres, "start", func() error {
		var err error
		pg, err = startServer(o, r.tmp, nil, dsn)
		return err
	}) {
		defer pg.stop()
		// Compared before the mixed load adds records to Badger.
		r.checkTotal(pg.Addr, Postgres)
		r.step(Postgres, "list total", func() error {
			var err error
			m.Migrate.Records, err = listTotal(pg.Addr)
			return err
		})
		r.compare(srv.Addr, pg.Addr, ids) // the node stays up, idle, warmed by these queries
	}
	// The mixed load on the Badger server already running over the records (no restart for it).
	r.step(Badger, "mixed load", func() error { return r.mixed(srv, set) })
	// Publishing while a slow client takes a backup, on the same server (issue 28).
	r.step(Badger, "backup", func() error { return r.backupLoad(srv, set, false) })
	srv.stop() // PostgreSQL's reads get the machine to themselves, as Badger's did
	if cg != nil {
		r.step(Badger, "cold cgroup reads", func() error { return r.coldReads(srv, set, ids) })
		srv.stop()
	}
	if pg != nil {
		r.step(Postgres, "reads", func() error { return r.reads(pg, Postgres, set, ids, nil) })
		r.export(pg, Postgres, set, &m.PGExport)
	}
	return nil
}

// coldSet marks the rows of coldReads.
const coldSet = ", cold cgroup"

// coldReads runs the 5 km radius, filtered and q=insulina reads again on the Badger server restarted in
// its memory cgroup over a directory dropped from the page cache. cgroup v1 charges a cached page to the
// cgroup that first read it, and migrate read the whole directory from outside: the reads above had the
// machine's page cache (their VmHWM passes the limit). These rows are what the limited box itself does.
func (r *runner) coldReads(srv *server, set string, ids []string) error {
	if err := dropPageCache(srv.DataDir); err != nil {
		return err
	}
	r.progress("[Badger] restarting in the memory cgroup over the %s, dropped from the page cache", set)
	if err := srv.restart(); err != nil {
		return err
	}
	for _, sc := range readScenarios(ids) {
		if sc.name != readRadius && sc.name != readFiltered && sc.name != readText {
			continue
		}
		for _, conns := range []int{1, 16} {
			f0 := srv.majorFaults()
			cfg := sc.config(conns)
			ms, err := r.measure(srv, Badger, sc.name, set+coldSet, r.o.readDuration(), cfg)
			if err != nil {
				return err
			}
			r.progress("  major page faults: %d, %.1f per request (its warm-up's included)", srv.majorFaults()-f0,
				float64(srv.majorFaults()-f0)/float64(max(ms.Res.Requests, 1)))
		}
	}
	return nil
}

// export is the step of one whole CSV export from srv on store, its result put in *into.
func (r *runner) export(srv *server, store, set string, into **ExportResult) {
	r.step(store, "export", func() error {
		r.progress("[%s] exporting the %s as one CSV", store, set)
		e, err := exportAll(srv, exportLimit)
		if err == nil {
			*into = e
			r.printExport(store, e)
		}
		return err
	})
}

// step runs fn, a step of the million run on store; a failure is noted (an error row of the report)
// and the run goes on. It reports whether fn succeeded.
func (r *runner) step(store, name string, fn func() error) bool {
	var err error
	if r.o.failStep == store+" "+name {
		err = errors.New("failed on purpose (Options.failStep)")
	} else {
		err = fn()
	}
	if err == nil {
		return true
	}
	m := r.rep.Million
	m.StepErrors = append(m.StepErrors, fmt.Sprintf("[%s] %s: %v", store, name, err))
	r.progress("  FAILED [%s] %s: %v (the run goes on)", store, name, err)
	return false
}

// add records a measurement made outside measure and prints it.
func (r *runner) add(m Measure) {
	r.rep.Measures = append(r.rep.Measures, m)
	r.printResult(m)
}

func (r *runner) printExport(store string, e *ExportResult) {
	cut := ""
	if e.Cut {
		cut = fmt.Sprintf(" — CUT at the %s cap", exportLimit)
	}
	r.progress("  [%s] CSV export: %d records in %s = %.0f records/s, %.1f MB, RSS %.1f → peak %.1f MB%s", store, e.Records,
		e.Duration.Round(10*time.Millisecond), float64(e.Records)/e.Duration.Seconds(), float64(e.Bytes)/(1<<20),
		float64(e.RSSBefore)/(1<<20), float64(e.RSSPeak)/(1<<20), cut)
}

// migrate runs `directaid migrate` from the Badger directory dir into dsn, its progress lines passed on.
func (r *runner) migrate(dir, dsn string) (*MigrateResult, error) {
	cmd := exec.Command(r.o.Bin, "migrate", "--from", "badger", dir, "--to", "postgres", dsn)
	cmd.Env = append(os.Environ(), r.o.ServerEnv...)
	var errOut lockedBuffer
	cmd.Stderr = &errOut
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	res := &MigrateResult{}
	db0 := r.dbCPU(Postgres)
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	var out strings.Builder
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		line := sc.Text()
		out.WriteString(line + "\n")
		if r.o.ServerOutput != nil {
			fmt.Fprintln(r.o.ServerOutput, line)
		}
		if strings.HasPrefix(line, "…") {
			r.progress("  migrate: %s", line)
		}
		if strings.HasPrefix(line, "read ") {
			res.Summary = line
		}
	}
	err = cmd.Wait()
	res.Duration = time.Since(t0)
	res.DBCPU = r.dbCPU(Postgres) - db0
	if cmd.ProcessState != nil {
		res.CPU = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	}
	if err != nil {
		return nil, fmt.Errorf("directaid migrate: %v\n%s%s", err, out.String(), errOut.String())
	}
	if res.DiskBytes, err = databaseSize(dsn); err != nil {
		return nil, err
	}
	return res, nil
}

// listPage is what the comparison reads of a list answer.
type listPage struct {
	Total      int64 `json:"total"`
	TotalExact bool  `json:"totalExact"`
	Items      []struct {
		ID string `json:"id"`
	} `json:"items"`
}

func getList(addr, query string) (*listPage, error) {
	resp, err := http.Get("http://" + addr + helpPath + "?" + query)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return nil, fmt.Errorf("%s: %s", query, resp.Status)
	}
	var p listPage
	return &p, json.NewDecoder(resp.Body).Decode(&p)
}

func listTotal(addr string) (int64, error) {
	p, err := getList(addr, "view=list&limit=1")
	if err != nil {
		return 0, err
	}
	if !p.TotalExact {
		return 0, fmt.Errorf("the total of every record is not exact")
	}
	return p.Total, nil
}

// checkTotal notes a mismatch when the server on store does not hold exactly the million records.
func (r *runner) checkTotal(addr, store string) {
	m := r.rep.Million
	n, err := listTotal(addr)
	switch {
	case err != nil:
		m.Mismatches = append(m.Mismatches, fmt.Sprintf("%s: every record: %v", store, err))
	case n != m.Records:
		m.Mismatches = append(m.Mismatches, fmt.Sprintf("%s holds %d records, not %d", store, n, m.Records))
	}
}

// compare asks both stores the first page of each list scenario's first queries: the same ids in the
// same order, and the same total where both say it is exact, or, without q, the same total and exactness
// (issue 16: the results stay identical).
func (r *runner) compare(badgerAddr, pgAddr string, ids []string) {
	m := r.rep.Million
	seen := map[string]bool{}
	for _, sc := range readScenarios(ids) {
		if !sc.list {
			continue
		}
		for n := range int64(5) {
			q := string(sc.query(n, nil))
			if seen[q] {
				continue
			}
			seen[q] = true
			m.Compared++
			b, errB := getList(badgerAddr, q)
			p, errP := getList(pgAddr, q)
			if errB != nil || errP != nil {
				m.Mismatches = append(m.Mismatches, fmt.Sprintf("%s: Badger %v, PostgreSQL %v", q, errB, errP))
				continue
			}
			idsOf := func(l *listPage) []string {
				var s []string
				for _, it := range l.Items {
					s = append(s, it.ID)
				}
				return s
			}
			if !slices.Equal(idsOf(b), idsOf(p)) {
				m.Mismatches = append(m.Mismatches, fmt.Sprintf("%s: first page ids differ (Badger %d items, PostgreSQL %d)", q, len(b.Items), len(p.Items)))
			} else if (b.TotalExact && p.TotalExact || !strings.Contains(q, "q=")) && (b.Total != p.Total || b.TotalExact != p.TotalExact) {
				// Totals without q are decided alike, estimates included (store.RadiusTotal over the same counters).
				m.Mismatches = append(m.Mismatches, fmt.Sprintf("%s: total Badger %d (exact %v), PostgreSQL %d (exact %v)", q, b.Total, b.TotalExact, p.Total, p.TotalExact))
			}
		}
	}
	if len(m.Mismatches) == 0 {
		r.progress("  both stores answered the first pages of %d list queries alike", m.Compared)
	}
	for _, s := range m.Mismatches {
		r.progress("  MISMATCH %s", s)
	}
}

// mixed measures the reads people make (5 km radius, filtered list; 1 and 16 clients) while others
// publish at 64 connections, on the Badger server over the million records.
func (r *runner) mixed(srv *server, set string) error {
	o, m := r.o, r.rep.Million
	d := o.readDuration()
	warm := max(d/10, 100*time.Millisecond)
	reads := []struct {
		name  string
		query func(int64, []byte) []byte
	}{{readRadius, radiusQuery}, {readFiltered, filteredQuery("")}}
	// The publisher outlasts the four rows (warm-ups, connecting, and slow last requests included); it
	// cannot be stopped early, so it is given their time plus some slack, and the run says if a read
	// outlived it.
	ramp := max(d/5, 200*time.Millisecond)
	pubFor := ramp + 4*(d+warm) + max(d, 2*time.Second)
	type result struct {
		res *loadgen.Result
		err error
		end time.Time
	}
	done := make(chan result, 1)
	r.progress("[Badger] mixed load: reads while publishing at 64 connections for %s", pubFor.Round(100*time.Millisecond))
	cpu0 := srv.cpu()
	go func() {
		res, err := loadgen.Run(loadgen.Config{Addr: srv.Addr, Method: "POST", Path: helpPath, Header: jsonHeader, Conns: 64,
			Duration: pubFor, Requests: o.MaxRequests, Body: publishBody("mixed"), Expect: []int{201}})
		done <- result{res, err, time.Now()}
	}()
	time.Sleep(ramp)
	var readErr error
	for _, sc := range reads {
		for _, conns := range []int{1, 16} {
			if readErr != nil {
				break
			}
			cfg := loadgen.Config{Path: helpPath, Query: sc.query, Conns: conns, Expect: []int{200}}
			tables := tableNames(srv.DataDir)
			if _, readErr = r.measure(srv, Badger, sc.name+", while publishing at 64", set, d, cfg); readErr == nil {
				// A level-0 compaction (every 16 memtable flushes) and the ones below it rewrite hundreds of
				// tables; a row they overlap is slower (README, "A second run an hour later").
				gone, added := tableChanges(tables, tableNames(srv.DataDir))
				r.progress("  tables compacted away during the row %d, written %d (warm-up included)", gone, added)
			}
		}
	}
	readsEnd := time.Now()
	pub := <-done
	if readErr != nil {
		return readErr
	}
	if pub.err != nil {
		return pub.err
	}
	m.MixedPublish = pub.res
	if readsEnd.After(pub.end) {
		m.MixedUncovered = readsEnd.Sub(pub.end)
	}
	r.add(Measure{Store: Badger, Name: "POST new, during the mixed reads", Set: set, Conns: 64, Res: pub.res, ServerCPU: srv.cpu() - cpu0})
	return nil
}

// tableNames is the set of Badger tables (.sst) in dir.
func tableNames(dir string) map[string]bool {
	names := map[string]bool{}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if filepath.Ext(e.Name()) == ".sst" {
			names[e.Name()] = true
		}
	}
	return names
}

// tableChanges counts the tables of before gone from after, and those of after new.
func tableChanges(before, after map[string]bool) (gone, added int) {
	for name := range before {
		if !after[name] {
			gone++
		}
	}
	for name := range after {
		if !before[name] {
			added++
		}
	}
	return gone, added
}

// levelShape is how many tables (and MB) each non-empty level of the Badger directory dir holds, from its
// MANIFEST (read while the server runs: Badger appends whole changes to it).
func levelShape(dir string) string {
	f, err := os.Open(filepath.Join(dir, badger.ManifestFilename))
	if err != nil {
		return err.Error()
	}
	defer f.Close()
	m, _, err := badger.ReplayManifestFile(f, 0, badger.DefaultOptions(dir))
	if err != nil {
		return "MANIFEST: " + err.Error()
	}
	var b strings.Builder
	for i, l := range m.Levels {
		var size int64
		for id := range l.Tables {
			if fi, err := os.Stat(filepath.Join(dir, fmt.Sprintf("%06d.sst", id))); err == nil {
				size += fi.Size()
			}
		}
		if len(l.Tables) > 0 {
			fmt.Fprintf(&b, " L%d %d (%d MB)", i, len(l.Tables), size>>20)
		}
	}
	return "levels:" + b.String()
}
