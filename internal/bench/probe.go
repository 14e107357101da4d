package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/directaid/directaid/backend/badgerstore"
	"github.com/directaid/directaid/backend/pgstore"
	"github.com/directaid/directaid/backend/store"
	"github.com/directaid/directaid/internal/loadgen"
)

// ProbeOptions are what the measuring probes (`go run ./cmd/bench cold|pg`) share: single rows of the
// 1M run over a directory or database kept loaded, in a minute instead of twenty.
type ProbeOptions struct {
	Bin          string        // the directaid binary
	ServerEnv    []string      // KEY=VALUE pairs added to the server's environment
	ServerOutput io.Writer     // receives what the server prints; nil keeps it quiet
	Row          time.Duration // measured time of each row (default 5 s; its warm-up is extra)
	Conns        []int         // the connections of each row (default 1 and 16)
	Only         string        // run only the rows whose name contains it
	Extra        string        // appended to every request's query, e.g. "&municipio=66001": a scoped row
	// Profile names a row ("GET list within 5 km/16") whose CPU profile (or, for a ProfilePath ending in
	// .trace, its runtime trace) is saved to ProfilePath from Caddy's admin endpoint.
	Profile, ProfilePath string
	Out                  io.Writer // the probe's lines (default os.Stderr)
}

func (p *ProbeOptions) defaults() {
	if p.Row <= 0 {
		p.Row = 5 * time.Second
	}
	if len(p.Conns) == 0 {
		p.Conns = []int{1, 16}
	}
	if p.Out == nil {
		p.Out = os.Stderr
	}
}

// runner is a runner over one probe's settings; its report is thrown away (each row prints as it ends).
func (p *ProbeOptions) runner(tmp, pgData string) *runner {
	o := Options{Bin: p.Bin, ServerEnv: p.ServerEnv, ServerOutput: p.ServerOutput, Duration: 2 * p.Row, Progress: p.Out,
		Profile: p.Profile, ProfilePath: p.ProfilePath, PostgresDataDir: pgData}
	return &runner{o: o, tmp: tmp, rep: &Report{}, began: time.Now()}
}

// scenario applies Extra to sc's queries and name.
func (p *ProbeOptions) scenario(sc readScenario) readScenario {
	if p.Extra == "" {
		return sc
	}
	q, extra := sc.query, p.Extra
	sc.query = func(n int64, b []byte) []byte { return append(q(n, b), extra...) }
	sc.name += " " + extra
	return sc
}

// selected reports whether the row named name runs.
func (p *ProbeOptions) selected(name string) bool {
	return p.Only == "" || strings.Contains(name, p.Only)
}

// ColdOptions configure ColdProbe.
type ColdOptions struct {
	ProbeOptions
	// Src is the Badger directory published once and reused. When it does not exist, ColdProbe publishes
	// Records records into a fresh server (64 connections, no cgroup) and keeps its directory there.
	Src     string
	Records int64
	Memory  int64 // the memory cgroup's limit in bytes (default 256 MiB)
	Warm    bool  // keep the page cache (with a large Memory: a warm, unconstrained server)
	Export  bool  // add a whole CSV export
	// Publish, when > 0, publishes that many more records (tagged Tag) into a copy instead of reading; the
	// copy is kept at Keep if set (the state the 1M run restarts in: just written, compactions pending).
	Publish   int64
	Tag, Keep string
	// Mixed runs the 1M run's step 6 instead, into a copy: the radius (and filtered) rows while 64
	// connections publish, after the whole export when Export is set. With Warm the copy, just written
	// from outside the cgroup, stays cached and charged outside it, as after migrate in the 1M run.
	Mixed bool
	// Settle waits, before Mixed's rows, until the compactions the restart owes are done (no table written
	// or removed for 5 s); Fill then publishes that many records (tag "fill"), which leaves their memtable
	// flushes in level 0 (its compaction comes at 16 tables).
	Settle bool
	Fill   int64
}

// ColdProbe measures Badger's cold memory-cgroup reads (the 1M run's step 7) over o.Src, restarted in a
// memory cgroup and dropped from the page cache: the 5 km radius, filtered and q=insulina rows with the
// major faults and bytes read per request, level 0's tables and the tables compactions wrote and removed
// meanwhile (the MANIFEST). E.g. 507k records in 160 MiB behave like the 1M run's 1.4 GB in 256 MiB.
func ColdProbe(o ColdOptions) (err error) {
	o.defaults()
	if o.Src == "" {
		return errors.New("the Badger directory (-src) is required")
	}
	out := o.Out
	tmp, err := os.MkdirTemp("", "directaid-cold-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	r := o.runner(tmp, "")
	if _, err := os.Stat(o.Src); err != nil {
		if o.Records <= 0 {
			return fmt.Errorf("%s does not exist: -records N publishes N records into it", o.Src)
		}
		srv, err := startServer(r.o, tmp, nil, "")
		if err != nil {
			return err
		}
		res, err := loadgen.Run(loadgen.Config{Addr: srv.Addr, Method: "POST", Path: helpPath, Header: jsonHeader, Conns: 64,
			Requests: o.Records, Body: publishBody("million"), Expect: []int{201}})
		srv.stop()
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "published %d at %.0f/s into %s\n", res.Requests, res.Throughput(), o.Src)
		return os.Rename(srv.DataDir, o.Src)
	}
	mem := o.Memory
	if mem <= 0 {
		mem = 256 << 20
	}
	cg, err := newMemCgroup(mem)
	if err != nil {
		return err
	}
	defer cg.remove()
	srv, err := startServer(r.o, tmp, cg, "")
	if err != nil {
		return err
	}
	srv.stop()
	if err := os.RemoveAll(srv.DataDir); err != nil {
		return err
	}
	if o.Publish > 0 || o.Mixed { // publishing changes the directory: on a copy
		if b, err := exec.Command("cp", "-a", o.Src, srv.DataDir).CombinedOutput(); err != nil {
			return fmt.Errorf("copying %s: %v: %s", o.Src, err, b)
		}
	} else {
		if err := os.Rename(o.Src, srv.DataDir); err != nil {
			return err
		}
		defer func() {
			if e := os.Rename(srv.DataDir, o.Src); e != nil && err == nil {
				err = e
			}
		}()
	}
	if !o.Warm {
		if err := dropPageCache(srv.DataDir); err != nil {
			return err
		}
	}
	tables0 := tableNames(srv.DataDir)
	fmt.Fprintf(out, "before the start: %s\n", levelShape(srv.DataDir))
	t0 := time.Now()
	if err := srv.restart(); err != nil {
		return err
	}
	defer srv.stop()
	fmt.Fprintf(out, "started in %s: major faults %d, read %d MB, cgroup cache %d MB\n", time.Since(t0).Round(time.Millisecond), srv.majorFaults(), readBytes(srv)>>20, cgStat(cg, "total_cache")>>20)
	total, _ := listTotal(srv.Addr)
	fmt.Fprintf(out, "records %d\n", total)
	log, _ := os.ReadFile(filepath.Join(srv.Dir, "caddy.log"))
	fmt.Fprintf(out, "GOMEMLIMIT %d\n", goMemLimit(srv.out.String()+string(log)))
	if o.Publish > 0 {
		f0, b0 := srv.majorFaults(), readBytes(srv)
		res, err := loadgen.Run(loadgen.Config{Addr: srv.Addr, Method: "POST", Path: helpPath, Header: jsonHeader, Conns: 64,
			Requests: o.Publish, Body: publishBody(o.Tag), Expect: []int{201}})
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "published %d in %s: %.0f req/s, p50 %s p99 %s; major faults %d, read %d MB\n", res.Requests, res.Elapsed.Round(time.Millisecond),
			res.Throughput(), ms(res.Percentile(0.5)), ms(res.Percentile(0.99)), srv.majorFaults()-f0, (readBytes(srv)-b0)>>20)
		if o.Keep != "" {
			t1 := time.Now()
			srv.stop()
			fmt.Fprintf(out, "stopped in %s\n", time.Since(t1).Round(time.Millisecond))
			return os.Rename(srv.DataDir, o.Keep)
		}
		return nil
	}
	export := func() error {
		f0, b0 := srv.majorFaults(), readBytes(srv)
		e, err := exportAll(srv, 5*time.Minute)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "export: %d records in %s = %.0f/s; major faults %d, read %d MB\n", e.Records, e.Duration.Round(time.Millisecond),
			float64(e.Records)/e.Duration.Seconds(), srv.majorFaults()-f0, (readBytes(srv)-b0)>>20)
		return nil
	}
	rows := func(set string, names ...string) error {
		for _, sc := range readScenarios([]string{"x"}) {
			if !slices.Contains(names, sc.name) || !o.selected(sc.name) {
				continue
			}
			sc = o.scenario(sc)
			for _, conns := range o.Conns {
				f0, b0, mf0, tb0 := srv.majorFaults(), readBytes(srv), minorFaults(srv), tableNames(srv.DataDir)
				m, err := r.measure(srv, Badger, sc.name, set, o.Row, sc.config(conns))
				if err != nil {
					return err
				}
				st := srv.status("RssAnon", "RssFile")
				gone, added := tableChanges(tb0, tableNames(srv.DataDir))
				perReq := func(v float64) float64 { return v / float64(max(m.Res.Requests, 1)) }
				fmt.Fprintf(out, "  server CPU %.2f ms/req; minor faults %.1f/req; %s; tables removed %d, written %d (warm-up included)\n",
					perReq(float64(m.ServerCPU)/1e6), perReq(float64(minorFaults(srv)-mf0)), levelShape(srv.DataDir), gone, added)
				fmt.Fprintf(out, "  read %.0f KB/req; major faults %d, %.1f/req; RssAnon %d MB RssFile %d MB; cgroup cache %d MB\n",
					perReq(float64(readBytes(srv)-b0)/1024), srv.majorFaults()-f0, perReq(float64(srv.majorFaults()-f0)), st["RssAnon"]>>20, st["RssFile"]>>20, cgStat(cg, "total_cache")>>20)
			}
		}
		return nil
	}
	if o.Mixed {
		if o.Settle {
			t1, quiet := time.Now(), time.Now()
			for prev := tableNames(srv.DataDir); time.Since(quiet) < 5*time.Second && time.Since(t1) < 5*time.Minute; {
				time.Sleep(500 * time.Millisecond)
				if now := tableNames(srv.DataDir); !maps.Equal(now, prev) {
					prev, quiet = now, time.Now()
				}
			}
			fmt.Fprintf(out, "settled in %s: %s\n", time.Since(t1).Round(time.Second), levelShape(srv.DataDir))
		}
		if o.Fill > 0 {
			res, err := loadgen.Run(loadgen.Config{Addr: srv.Addr, Method: "POST", Path: helpPath, Header: jsonHeader, Conns: 64,
				Requests: o.Fill, Body: publishBody("fill"), Expect: []int{201}})
			if err != nil {
				return err
			}
			time.Sleep(time.Second) // the last memtable's flush
			fmt.Fprintf(out, "filled with %d records at %.0f/s: %s\n", res.Requests, res.Throughput(), levelShape(srv.DataDir))
		}
		if o.Export {
			if err := export(); err != nil {
				return err
			}
		}
		// As mixed (million.go): the publisher outlasts the rows, which begin after its ramp.
		d := o.Row
		ramp, n := max(d/5, 200*time.Millisecond), 4
		if o.Only != "" {
			n = 2
		}
		pubFor := ramp + time.Duration(n)*(d+d/10) + max(d, 2*time.Second)
		type published struct {
			res *loadgen.Result
			err error
		}
		done := make(chan published, 1)
		f0, b0 := srv.majorFaults(), readBytes(srv)
		go func() {
			res, err := loadgen.Run(loadgen.Config{Addr: srv.Addr, Method: "POST", Path: helpPath, Header: jsonHeader, Conns: 64,
				Duration: pubFor, Body: publishBody("mixed"), Expect: []int{201}})
			done <- published{res, err}
		}()
		time.Sleep(ramp)
		rowsErr := rows("while publishing", readRadius, readFiltered)
		p := <-done
		if err := errors.Join(rowsErr, p.err); err != nil {
			return err
		}
		fmt.Fprintf(out, "published %d meanwhile: %.0f req/s, p50 %s p99 %s; major faults %d, read %d MB\n", p.res.Requests, p.res.Throughput(),
			ms(p.res.Percentile(0.5)), ms(p.res.Percentile(0.99)), srv.majorFaults()-f0, (readBytes(srv)-b0)>>20)
	} else {
		if err := rows("cold", readRadius, readFiltered, readText); err != nil {
			return err
		}
		if o.Export {
			if err := export(); err != nil {
				return err
			}
		}
	}
	mu, fc, oom := cg.stats()
	fmt.Fprintf(out, "cgroup max %d MB failcnt %d oom %d\n", mu>>20, fc, oom)
	// A restart after a busy run owes Badger's compactions (Close compacts level 0 only): they read
	// whole tables while the rows above run.
	gone, added := tableChanges(tables0, tableNames(srv.DataDir))
	fmt.Fprintf(out, "tables compacted away during the rows %d of %d, written %d\n", gone, len(tables0), added)
	return nil
}

// PGProbe measures the list rows on a node over a PostgreSQL database kept loaded (e.g. the 1M records
// moved once with directaid migrate), without the 1M run's publishing and copying: the node's and
// PostgreSQL's CPU per request (PostgreSQL's when dataDir names the cluster's data directory).
func PGProbe(o ProbeOptions, dsn, dataDir string) error {
	o.defaults()
	if dsn == "" {
		return errors.New("the database (-dsn) is required")
	}
	tmp, err := os.MkdirTemp("", "directaid-pgprobe-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	r := o.runner(tmp, dataDir)
	srv, err := startServer(r.o, tmp, nil, dsn)
	if err != nil {
		return err
	}
	defer srv.stop()
	for _, sc := range readScenarios([]string{"x"}) {
		if !sc.list || !o.selected(sc.name) {
			continue
		}
		sc = o.scenario(sc)
		for _, c := range o.Conns {
			cfg := loadgen.Config{Path: helpPath, Query: sc.query, Conns: c, Expect: []int{200}}
			m, err := r.measure(srv, Postgres, sc.name, "1M", o.Row, cfg)
			if err != nil {
				return err
			}
			n := float64(max(m.Res.Requests, 1))
			fmt.Fprintf(o.Out, "  node %.0f µs/req, PostgreSQL %.0f µs/req\n", float64(m.ServerCPU.Microseconds())/n, float64(m.DBCPU.Microseconds())/n)
		}
	}
	return nil
}

// Alike compares the two stores over the same records kept loaded (e.g. a copy of the 1M Badger
// directory and the PostgreSQL database moved from it with directaid migrate): 5 km lists, unscoped and
// scoped to municipios, at the bench's radius points, their first two pages, ids, distances, totals and
// records (an unscoped first page reads them in PostgreSQL's walk, the others by id). It returns how many
// pages it compared and how many of them had records, or the first difference.
func Alike(ctx context.Context, badgerDir, dsn string) (compared, nonEmpty int, err error) {
	if badgerDir == "" || dsn == "" {
		return 0, 0, errors.New("a Badger directory (-badger) and a PostgreSQL database (-dsn) are required")
	}
	b, err := badgerstore.Open(badgerstore.Options{Dir: badgerDir})
	if err != nil {
		return 0, 0, err
	}
	defer b.Close()
	db, err := pgstore.Open(dsn)
	if err != nil {
		return 0, 0, err
	}
	defer db.Close()
	if err := db.Ready(ctx); err != nil {
		return 0, 0, err
	}
	p := pgstore.NewStore(db)
	defer p.Close()
	ids := func(res *store.ListResult) []string {
		var out []string
		for _, rec := range res.Records {
			out = append(out, rec.ID)
		}
		return out
	}
	for n := range int64(150) {
		r := rng(uint64(n) * 0x9e3779b97f4a7c15) // radiusQuery's points
		lat, lon := 4.45+float64(r.intn(70000))/1e5, -75.95+float64(r.intn(50000))/1e5
		for _, m := range []string{"", "66001", "17001", "66170", "63001"} {
			spec := store.ListSpec{Near: true, Lat: lat, Lon: lon, RadiusKm: 5, Limit: 20, Municipio: m}
			for page := 0; page < 2; page++ {
				rb, err := b.List(ctx, &spec)
				if err != nil {
					return compared, nonEmpty, err
				}
				rp, err := p.List(ctx, &spec)
				if err != nil {
					return compared, nonEmpty, err
				}
				if !slices.Equal(ids(rb), ids(rp)) || !slices.Equal(rb.Distances, rp.Distances) || rb.Total != rp.Total || rb.TotalExact != rp.TotalExact || len(rb.Records) > 0 && !reflect.DeepEqual(rb.Records, rp.Records) {
					return compared, nonEmpty, fmt.Errorf("%+v page %d: Badger %d records (total %d, exact %v), PostgreSQL %d (total %d, exact %v)\n%v\n%v",
						spec, page, len(rb.Records), rb.Total, rb.TotalExact, len(rp.Records), rp.Total, rp.TotalExact, ids(rb), ids(rp))
				}
				compared++
				if len(rb.Records) > 0 {
					nonEmpty++
				}
				if rb.Next == nil {
					break
				}
				spec.After = rb.Next
			}
		}
	}
	return compared, nonEmpty, nil
}

func minorFaults(srv *server) int64 {
	f := srv.stat()
	n, _ := strconv.ParseInt(f[7], 10, 64)
	return n
}

func readBytes(srv *server) int64 {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/io", srv.cmd.Process.Pid))
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "read_bytes: "); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	return -1
}

func cgStat(cg *memCgroup, name string) int64 {
	b, _ := os.ReadFile(filepath.Join(cg.Dir, "memory.stat"))
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, name+" "); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	return -1
}
