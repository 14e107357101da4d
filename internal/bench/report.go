package bench

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// row is one line of the table: a scenario with its measure on each store.
type row struct {
	label string
	conns int
	by    map[string]Measure
}

// rows groups the measures by scenario, in the order they first ran.
func (r *Report) rows(keep func(Measure) bool) []*row {
	var out []*row
	index := map[string]*row{}
	for _, m := range r.Measures {
		if !keep(m) {
			continue
		}
		key := fmt.Sprintf("%s/%d", m.Label(), m.Conns)
		x := index[key]
		if x == nil {
			x = &row{label: m.Label(), conns: m.Conns, by: map[string]Measure{}}
			index[key] = x
			out = append(out, x)
		}
		x.by[m.Store] = m
	}
	return out
}

// find is the measure of a scenario on a store, or nil.
func (r *Report) find(store, name, set string, conns int) *Measure {
	for i := range r.Measures {
		m := &r.Measures[i]
		if m.Store == store && m.Name == name && m.Set == set && m.Conns == conns {
			return m
		}
	}
	return nil
}

func (r *Report) both() bool { return slices.Contains(r.Stores, Postgres) }

// readSet is what the read scenarios ran over: the million records, or the seeds.
func (r *Report) readSet() (set string, records int64) {
	if r.Million != nil {
		return count(r.Million.Records) + " records", r.Million.Records
	}
	return count(r.Seeds) + " records", r.Seeds
}

// Print writes the table, the notes of the long run and the targets of issues 15 and 16.
func (r *Report) Print(w io.Writer) {
	if r.both() {
		conf := "fsync on"
		if r.PostgresConf != "" {
			conf += ", " + r.PostgresConf
		}
		fmt.Fprintf(w, "stores: Badger (a fresh directory) | PostgreSQL (a throwaway cluster on this machine, %s, a fresh database\n", conf)
		fmt.Fprintln(w, "per server; its processes' CPU is the second figure of its CPU column)")
	} else {
		fmt.Fprintf(w, "stores: Badger only — PostgreSQL not run: %s\n", r.PostgresNote)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	head := "scenario\tconns\t"
	for _, st := range r.Stores {
		head += "|\t" + st + " req/s\tp50 ms\tp99 ms\terrors\t"
		if st == Badger {
			head += "vs ceiling\tCPU\t"
		} else {
			head += "CPU node+pg\t"
		}
	}
	if r.both() {
		head += "|\tBadger÷PG\t"
	}
	fmt.Fprintln(tw, head)
	print := func(x *row) {
		line := fmt.Sprintf("%s\t%d\t", x.label, x.conns)
		for _, st := range r.Stores {
			m, ok := x.by[st]
			if !ok {
				line += "|\t—\t—\t—\t—\t—\t"
				if st == Badger {
					line += "—\t"
				}
				continue
			}
			res := m.Res
			cores := func(d time.Duration) string { return fmt.Sprintf("%.2f", d.Seconds()/max(res.Elapsed.Seconds(), 1e-9)) }
			line += fmt.Sprintf("|\t%.0f\t%s\t%s\t%d\t", res.Throughput(), ms(res.Percentile(0.5)), ms(res.Percentile(0.99)), res.Errors)
			if st == Badger {
				ratio := "—"
				if r.Ceiling > 0 {
					ratio = fmt.Sprintf("%.0f%%", 100*res.Throughput()/r.Ceiling)
				}
				line += ratio + "\t" + cores(m.ServerCPU) + "\t"
			} else {
				line += cores(m.ServerCPU) + "+" + cores(m.DBCPU) + "\t"
			}
		}
		if r.both() {
			b, p := x.by[Badger], x.by[Postgres]
			if b.Res != nil && p.Res != nil && p.Res.Throughput() > 0 {
				line += fmt.Sprintf("|\t%.2f×\t", b.Res.Throughput()/p.Res.Throughput())
			} else {
				line += "|\t—\t"
			}
		}
		fmt.Fprintln(tw, line)
	}
	// special is a line of records/s (migrate, exports): only the throughput column of each store.
	special := func(label, conns string, rate map[string]float64) {
		line := label + "\t" + conns + "\t"
		for _, st := range r.Stores {
			v, ok := rate[st]
			cell := "—"
			if ok {
				cell = fmt.Sprintf("%.0f", v)
			}
			line += "|\t" + cell + "\t—\t—\t—\t—\t"
			if st == Badger {
				line += "—\t"
			}
		}
		if r.both() {
			line += "|\t—\t"
		}
		fmt.Fprintln(tw, line)
	}
	m := r.Million
	set, _ := r.readSet()
	for _, x := range r.rows(func(x Measure) bool { return m == nil || x.Set == "" }) {
		print(x)
	}
	if m != nil {
		for _, x := range r.rows(func(x Measure) bool { return x.Set == "fresh server" }) {
			print(x)
		}
		if g := m.Migrate; g != nil {
			special(fmt.Sprintf("directaid migrate, records/s (%s records, %.1f s)", count(m.Records), g.Duration.Seconds()), "—",
				map[string]float64{Postgres: float64(m.Records) / g.Duration.Seconds()})
		}
		backup := func(x Measure) bool { return x.Set == set && (x.Name == backupWithout || x.Name == backupDuring) }
		mixed := func(x Measure) bool {
			return x.Set == set && !backup(x) && (strings.Contains(x.Name, ", while publishing") || strings.HasPrefix(x.Name, "POST new, during"))
		}
		for _, x := range r.rows(func(x Measure) bool { return x.Set == set && !mixed(x) && !backup(x) }) {
			print(x)
		}
		rates := map[string]float64{}
		for st, e := range map[string]*ExportResult{Badger: m.Export, Postgres: m.PGExport} {
			if e != nil {
				rates[st] = float64(e.Records) / e.Duration.Seconds()
			}
		}
		if len(rates) > 0 {
			special(fmt.Sprintf("CSV export of all, records/s (%s records)", count(m.Records)), "1", rates)
		}
		for _, x := range r.rows(mixed) {
			print(x)
		}
		for _, x := range r.rows(backup) {
			print(x)
		}
		for _, x := range r.rows(func(x Measure) bool { return x.Set == set+coldSet }) {
			print(x)
		}
	}
	tw.Flush()
	fmt.Fprintln(w, "CPU: cores used on average (2 = both cores of a 2-core machine); server, PostgreSQL and load generator share them.")
	r.printWrites(w)
	if m != nil && m.Res != nil {
		r.printMillion(w)
	}
	r.printBackup(w)
	r.printTargets(w)
	if f := r.Failures(); len(f) > 0 {
		fmt.Fprintf(w, "\nFAILURES (%d):\n", len(f))
		for _, s := range f {
			fmt.Fprintln(w, "  "+s)
		}
	}
	if r.Duration > 0 {
		fmt.Fprintf(w, "\nwhole run: %s\n", r.Duration.Round(time.Second))
	}
}

// printWrites lists what Badger was handed to write per successful request of each publishing row: key
// writes (sets and deletes) and bytes, counters included (badger_put_num_user and
// badger_write_bytes_user of the server's /debug/vars, over the measured time).
func (r *Report) printWrites(w io.Writer) {
	first := true
	for _, m := range r.Measures {
		if !m.Writes {
			continue
		}
		if first {
			fmt.Fprintln(w, "Badger writes per successful request (badger_put_num_user, badger_write_bytes_user of /debug/vars):")
			first = false
		}
		fmt.Fprintf(w, "  %s/%d: %.1f key writes, %.0f bytes\n", m.Label(), m.Conns, m.KeyWrites, m.WriteBytes)
	}
}

func mb(n int64) float64 { return float64(n) / (1 << 20) }

func (r *Report) printMillion(w io.Writer) {
	m := r.Million
	first, last := m.sliceRates()
	loss := 0.0
	if first > 0 {
		loss = 100 * (first - last) / first
	}
	where := "fresh server"
	if m.MemoryLimit > 0 {
		where = fmt.Sprintf("fresh server in a %d MiB memory cgroup", m.MemoryLimit>>20)
	}
	fmt.Fprintf(w, "\n%s records at 64 connections on Badger (%s):\n", count(m.Records), where)
	if m.Records < m.Asked {
		fmt.Fprintf(w, "  STOPPED by -million-time after %s: %d of the %d records asked for; everything below ran over those\n",
			m.Res.Elapsed.Round(time.Second), m.Records, m.Asked)
	}
	if len(m.Res.Marks) > 0 {
		fmt.Fprintf(w, "  first %s: %.0f req/s   last %s: %.0f req/s   loss %.1f%%\n", count(m.Slice), first, count(m.Slice), last, loss)
		var slices []string
		for i := range m.Res.Marks {
			slices = append(slices, fmt.Sprintf("%.0f", m.Res.MarkRate(i, m.Slice)))
		}
		fmt.Fprintf(w, "  req/s per %s: %s\n", count(m.Slice), strings.Join(slices, " "))
	}
	if u := m.Unconstrained; u != nil && u.Throughput() > 0 {
		fmt.Fprintf(w, "  unconstrained (the same first %s into a fresh server outside the cgroup): %.0f req/s; in the cgroup the same %s: %.0f req/s (%.0f%%), the whole run %.0f req/s (%.0f%%, a lower bound: an unconstrained run slows down as the store grows too)\n",
			count(m.Slice), u.Throughput(), count(m.Slice), first, 100*first/u.Throughput(), m.Res.Throughput(), 100*m.Res.Throughput()/u.Throughput())
	}
	created := m.Res.Status[201]
	per := 0.0
	if created > 0 {
		per = float64(m.DiskBytes) / float64(created)
	}
	fmt.Fprintf(w, "  on disk after graceful close: %.1f MB = %.0f bytes/record (%d records created; close took %s)\n",
		mb(m.DiskBytes), per, created, m.CloseAfter.Round(100*time.Millisecond))
	fmt.Fprintf(w, "  server peak RSS (VmHWM): %.1f MB; sampled peaks: anonymous %.1f MB, file-backed %.1f MB\n",
		mb(m.PeakRSS), mb(m.PeakAnon), mb(m.PeakFile))
	if m.ReadPeakRSS > 0 {
		fmt.Fprintf(w, "  reads: on the server restarted over these records; its peak RSS (VmHWM): %.1f MB\n", mb(m.ReadPeakRSS))
	}
	if g := m.Migrate; g != nil {
		fmt.Fprintf(w, "  PostgreSQL loaded by `directaid migrate --from badger <dir> --to postgres <dsn>` in %.1f s (%.0f records/s; migrate %.2f cores, PostgreSQL %.2f cores): %s; %.1f MB in PostgreSQL (pg_database_size, an empty database's ~7 MB included)\n",
			g.Duration.Seconds(), float64(m.Records)/g.Duration.Seconds(), g.CPU.Seconds()/g.Duration.Seconds(), g.DBCPU.Seconds()/g.Duration.Seconds(), g.Summary, mb(g.DiskBytes))
	}
	if m.Compared > 0 {
		fmt.Fprintf(w, "  first pages of %d list queries compared between the stores: %d differ\n", m.Compared, len(m.Mismatches))
	}
	for _, e := range m.StepErrors {
		fmt.Fprintf(w, "  FAILED %s (the run went on without it)\n", e)
	}
	for _, x := range []struct {
		store string
		e     *ExportResult
	}{{Badger, m.Export}, {Postgres, m.PGExport}} {
		if e := x.e; e != nil {
			cut := ""
			if e.Cut {
				cut = fmt.Sprintf(" — CUT at the %s cap", exportLimit)
			}
			fmt.Fprintf(w, "  export (%s): %d records as one CSV (all=true, chunked %v) in %s = %.0f records/s, %.1f MB; server RSS %.1f → peak %.1f MB (anonymous %.1f → %.1f MB)%s\n",
				x.store, e.Records, e.Chunked, e.Duration.Round(10*time.Millisecond), float64(e.Records)/e.Duration.Seconds(), mb(e.Bytes),
				mb(e.RSSBefore), mb(e.RSSPeak), mb(e.AnonBefore), mb(e.AnonPeak), cut)
		}
	}
	if p := m.MixedPublish; p != nil {
		fmt.Fprintf(w, "  mixed load (Badger): publishing at 64 connections went on at %.0f req/s (p99 %s ms) during the reads marked «while publishing»",
			p.Throughput(), ms(p.Percentile(0.99)))
		if m.MixedUncovered > 0 {
			fmt.Fprintf(w, "; the last %s of reads ran after it had stopped", m.MixedUncovered.Round(10*time.Millisecond))
		}
		fmt.Fprintln(w)
	}
	switch {
	case m.CgroupError != "":
		fmt.Fprintf(w, "  memory cgroup: none (%s)\n", m.CgroupError)
	case m.MemoryLimit > 0:
		gml := "none logged"
		if m.GoMemLimit > 0 {
			gml = fmt.Sprintf("%.1f MiB", mb(m.GoMemLimit))
		}
		fmt.Fprintf(w, "  memory cgroup (v1) of %.0f MiB for Badger's publishing, reads, export and mixed load: GOMEMLIMIT %s, peak usage %.1f MiB, limit reached %d times, OOM kills %d\n",
			mb(m.MemoryLimit), gml, mb(m.CgroupMaxUsage), m.CgroupFailcnt, m.OOMKills)
	}
}

// Target is one target of an issue (15, 16, 28, 34), judged from the run.
type Target struct {
	Issue  int
	What   string
	Result string
	Status string // met, missed, or not measured
}

// Targets judges the targets of issues 15 (PostgreSQL), 16 (reads at 1M in 256 MB), 28 (publishing
// during a backup) and 34 (publishing varied records at full speed) from the run.
func (r *Report) Targets() []Target {
	var out []Target
	set, records := r.readSet()
	scale := ""
	if records != 1000000 {
		scale = fmt.Sprintf(" [at %s, not 1M]", set)
	}
	add := func(issue int, what, result string, ok bool, measured bool) {
		status := "missed"
		switch {
		case !measured:
			status = "not measured"
		case ok:
			status = "met"
		}
		out = append(out, Target{issue, what, result, status})
	}
	none := func(why string) (string, bool, bool) { return why, false, false }
	rate := func(m *Measure) float64 { return m.Res.Throughput() }

	// Issue 15.
	{
		b, p := r.find(Badger, "POST new", "", 64), r.find(Postgres, "POST new", "", 64)
		res, ok, measured := none("needs PostgreSQL and the POST new/64 scenario")
		if b != nil && p != nil {
			res, ok, measured = fmt.Sprintf("%.0f vs %.0f req/s = %.0f%%", rate(p), rate(b), 100*rate(p)/rate(b)), rate(p) >= 0.5*rate(b), true
		}
		add(15, "POST new at 64 connections on PostgreSQL ≥ 50% of Badger", res, ok, measured)
	}
	for _, conns := range []int{1, 16} {
		b, p := r.find(Badger, readRadius, set, conns), r.find(Postgres, readRadius, set, conns)
		res, ok, measured := none("needs PostgreSQL")
		if b != nil && p != nil {
			res, ok, measured = fmt.Sprintf("PostgreSQL %.0f vs Badger %.0f req/s%s", rate(p), rate(b), scale), rate(p) >= rate(b), true
		}
		add(15, fmt.Sprintf("5 km radius on PostgreSQL no slower than Badger, %d conn", conns), res, ok, measured)
	}
	// Issue 16.
	reads := []string{readRadius, readText, readFiltered}
	for _, name := range reads {
		for _, conns := range []int{1, 16} {
			b, p := r.find(Badger, name, set, conns), r.find(Postgres, name, set, conns)
			res, ok, measured := none("needs PostgreSQL")
			if b != nil && p != nil {
				res, ok, measured = fmt.Sprintf("%.0f vs %.0f req/s = %.2f×%s", rate(b), rate(p), rate(b)/max(rate(p), 1e-9), scale), rate(b) >= rate(p), true
			}
			add(16, fmt.Sprintf("Badger ≥ 1.0× PostgreSQL: %s/%d", strings.TrimPrefix(name, "GET list "), conns), res, ok, measured)
		}
	}
	for _, l := range []struct {
		conns int
		q     float64
		bound time.Duration
		what  string
	}{{1, 0.5, 2 * time.Millisecond, "p50 ≤ 2 ms at 1 client"}, {16, 0.99, 20 * time.Millisecond, "p99 ≤ 20 ms at 16 clients"}} {
		for _, name := range reads {
			b := r.find(Badger, name, set, l.conns)
			res, ok, measured := none("scenario not run")
			if b != nil {
				v := b.Res.Percentile(l.q)
				res, ok, measured = ms(v)+" ms"+scale, v <= l.bound, true
			}
			add(16, fmt.Sprintf("%s: %s", l.what, strings.TrimPrefix(name, "GET list ")), res, ok, measured)
		}
	}
	m := r.Million
	{
		res, ok, measured := none("needs -million (BENCH_1M=1) and a memory cgroup")
		if m != nil && m.CgroupError != "" {
			res = "no memory cgroup: " + m.CgroupError
		}
		if m != nil && m.MemoryLimit > 0 && m.Res != nil {
			res, ok, measured = fmt.Sprintf("%d OOM kills, %d errors%s", m.OOMKills, m.Res.Errors, scale), m.OOMKills == 0 && m.Res.Errors == 0, true
		}
		add(16, fmt.Sprintf("%s cgroup run: no OOM kill", memLabel(m)), res, ok, measured)
		res, ok, measured = none("needs -million (BENCH_1M=1) and a memory cgroup")
		if m != nil && m.Res != nil && len(m.Res.Marks) > 0 && m.Unconstrained != nil && m.Unconstrained.Throughput() > 0 {
			c, u := m.Res.MarkRate(0, m.Slice), m.Unconstrained.Throughput()
			res, ok, measured = fmt.Sprintf("first %s: %.0f vs %.0f req/s = %.0f%% (whole run: %.0f%%)", count(m.Slice), c, u, 100*c/u, 100*m.Res.Throughput()/u), c >= 0.8*u, true
		}
		add(16, fmt.Sprintf("%s cgroup publishing ≥ 80%% of unconstrained", memLabel(m)), res, ok, measured)
	}
	{
		res, ok, measured := none("needs -million (BENCH_1M=1)")
		if m != nil && m.Export == nil {
			res, ok, measured = none("the export failed (see the failures)")
		}
		res2, ok2, measured2 := res, ok, measured
		if m != nil && m.Export != nil {
			e := m.Export
			full := !e.Cut && e.Records == m.Records
			res, ok, measured = fmt.Sprintf("%.1f s for %d records%s", e.Duration.Seconds(), e.Records, scale), full && e.Duration <= 15*time.Second, true
			growth := e.RSSPeak - e.RSSBefore
			res2, ok2, measured2 = fmt.Sprintf("%+.1f MB (anonymous %+.1f MB)%s", mb(growth), mb(e.AnonPeak-e.AnonBefore), scale), full && growth <= 50<<20, true
		}
		add(16, "CSV export of every record in one request ≤ 15 s", res, ok, measured)
		add(16, "server RSS growth during that export ≤ 50 MB", res2, ok2, measured2)
	}
	r.backupTargets(add)
	r.publishingTargets(add, scale)
	return out
}

// publishingTargets judges the targets of issue 34 (publishing varied records at full speed) that one run
// can: the rates against the ceiling, what Badger writes a record, and the long run's rate and memory.
// The comparison with the binary before the record lifecycle needs that binary, alternated with this one.
func (r *Report) publishingTargets(add func(issue int, what, result string, ok, measured bool), scale string) {
	for _, t := range []struct {
		name  string
		share float64
	}{{"POST new", 0.20}, {"POST retry (existing)", 0.40}} {
		res, ok, measured := "needs the "+t.name+"/64 scenario", false, false
		if m := r.find(Badger, t.name, "", 64); m != nil && r.Ceiling > 0 {
			v := m.Res.Throughput()
			res, ok, measured = fmt.Sprintf("%.0f vs %.0f req/s = %.0f%%", v, r.Ceiling, 100*v/r.Ceiling), v >= t.share*r.Ceiling, true
		}
		add(34, fmt.Sprintf("%s/64 ≥ %.0f%% of Caddy's respond", t.name, 100*t.share), res, ok, measured)
	}
	add(34, "POST new/64 ≥ 1.0× the binary before the record lifecycle", "needs that binary, alternated with this one", false, false)
	const keys, written = "≤ 10 key writes a record (all of Badger's)", "≤ 900 bytes written a record (all of Badger's)"
	if m := r.find(Badger, "POST new", "", 64); m != nil && m.Writes {
		add(34, keys, fmt.Sprintf("%.1f keys (POST new/64)", m.KeyWrites), m.KeyWrites <= 10, true)
		add(34, written, fmt.Sprintf("%.0f bytes (POST new/64)", m.WriteBytes), m.WriteBytes <= 900, true)
	} else {
		add(34, keys, "needs the POST new/64 scenario", false, false)
		add(34, written, "needs the POST new/64 scenario", false, false)
	}
	const rate, slowdown, memory = "publishing the long run at ≥ 5,000 req/s on average", "its last slice at ≥ 0.85 of its first", "its server's peak anonymous RSS ≤ 300 MB"
	mil := r.Million
	if mil == nil || mil.Res == nil || len(mil.Res.Marks) == 0 {
		why := "needs -million (BENCH_1M=1)"
		if mil != nil {
			why = "the long run stopped before its first slice"
		}
		for _, what := range []string{rate, slowdown, memory} {
			add(34, what, why, false, false)
		}
		return
	}
	v := mil.Res.Throughput()
	add(34, rate, fmt.Sprintf("%.0f req/s%s", v, scale), v >= 5000, true)
	first, last := mil.sliceRates()
	add(34, slowdown, fmt.Sprintf("%.0f vs %.0f req/s = %.2f%s", last, first, last/max(first, 1e-9), scale), last >= 0.85*first, true)
	if mil.PeakAnon <= 0 {
		add(34, memory, "the server's memory was not sampled", false, false)
		return
	}
	add(34, memory, fmt.Sprintf("%.1f MB%s", mb(mil.PeakAnon), scale), mil.PeakAnon <= 300<<20, true)
}

func memLabel(m *MillionResult) string {
	if m != nil && m.MemoryLimit > 0 {
		return fmt.Sprintf("%d MiB", m.MemoryLimit>>20)
	}
	return "256 MiB"
}

func (r *Report) printTargets(w io.Writer) {
	fmt.Fprintln(w, "\nTargets of issues 15, 16, 28 and 34 (this machine; ratios from this one run):")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, t := range r.Targets() {
		fmt.Fprintf(tw, "  [%s]\t#%d\t%s\t%s\n", t.Status, t.Issue, t.What, t.Result)
	}
	tw.Flush()
}

// Failures are what makes a run wrong rather than slow: a scenario that answered errors or nothing,
// stores that answered differently, an export that did not deliver every record, an OOM kill, a backup
// that does not verify.
func (r *Report) Failures() []string {
	var out []string
	for _, m := range r.Measures {
		if m.Res.Errors > 0 || m.Res.Requests == 0 {
			out = append(out, fmt.Sprintf("[%s] %s/%d: %d errors in %d answers (first: %s)", m.Store, m.Label(), m.Conns, m.Res.Errors, m.Res.Requests, m.Res.FirstError))
		}
	}
	if b := r.Backup; b != nil && b.VerifyErr != "" {
		out = append(out, fmt.Sprintf("[Badger] backup of the %s: restore --verify: %s", b.Set, b.VerifyErr))
	}
	m := r.Million
	if m == nil {
		return out
	}
	out = append(out, m.Mismatches...)
	out = append(out, m.StepErrors...)
	for _, x := range []struct {
		store string
		e     *ExportResult
	}{{Badger, m.Export}, {Postgres, m.PGExport}} {
		if e := x.e; e != nil && !e.Cut && (e.Records != m.Records || !e.Chunked) { // a cut export is slow, not wrong: the notes say so
			out = append(out, fmt.Sprintf("[%s] export: %d records of %d (cut %v, chunked %v)", x.store, e.Records, m.Records, e.Cut, e.Chunked))
		}
	}
	if m.OOMKills > 0 {
		out = append(out, fmt.Sprintf("memory cgroup: %d OOM kills", m.OOMKills))
	}
	return out
}
