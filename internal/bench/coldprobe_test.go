package bench

import (
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/directaid/directaid/internal/loadgen"
)

// TestColdProbe measures Badger's cold memory-cgroup reads (the 1M run's step 7) in a minute, over one
// directory published once and reused (skipped unless BENCH_COLD_SRC names it):
//   - BENCH_COLD_SRC absent: publishes BENCH_COLD_N records (64 connections, no cgroup) with
//     BENCH_COLD_BIN and keeps the directory there;
//   - present: restarts BENCH_COLD_BIN over it in a BENCH_COLD_MEM MiB cgroup (256 by default), dropped
//     from the page cache, and measures the 5 km radius, filtered and q=insulina reads (BENCH_COLD_ONLY
//     narrows them; BENCH_COLD_D per row, 5s by default) with the major faults and bytes read a request;
//     BENCH_COLD_EXPORT=1 adds a whole CSV export; BENCH_COLD_PUBLISH=N publishes N more records
//     (tag BENCH_COLD_TAG) into a copy instead of reading, kept at BENCH_COLD_KEEP if set (the state the
//     1M run restarts in: just written, compactions pending). BENCH_COLD_ENV: the server's extra environment.
//   - BENCH_COLD_WARM=1 keeps the page cache (set a large BENCH_COLD_MEM: a warm, unconstrained server),
//     BENCH_COLD_CONNS=16 runs only that many connections, BENCH_COLD_ECHO=1 shows the server's output, and
//     BENCH_COLD_PROFILE="GET list within 5 km/16=/tmp/r.trace" saves that row's CPU profile (or, for a
//     path ending in .trace, its runtime trace) from Caddy's admin endpoint.
//   - BENCH_COLD_MIXED=1: the 1M run's step 6 instead, into a copy: the radius (and filtered) rows while 64
//     connections publish (tag "mixed"), after the whole export when BENCH_COLD_EXPORT=1, as the 1M run does.
//     With BENCH_COLD_WARM=1 the copy, just written from outside the cgroup, stays cached and charged
//     outside it, as after migrate in the 1M run: only what the server writes counts against the cgroup;
//     BENCH_COLD_SETTLE=1 waits, before the rows, until the compactions the restart owes are done (no
//     table written or removed for 5 s); BENCH_COLD_FILL=N then publishes N records (tag "fill") before the
//     rows, which leaves that many records' memtable flushes in level 0 (its compaction comes at 16 tables).
//
// Each row prints level 0's tables and the tables compactions wrote and removed meanwhile (the MANIFEST).
//
// E.g. (README, "The cold cgroup"): 507k records in 160 MiB behave like the 1M run's 1.4 GB in 256 MiB.
func TestColdProbe(t *testing.T) {
	src := os.Getenv("BENCH_COLD_SRC")
	if src == "" {
		t.Skip("BENCH_COLD_SRC not set: a measuring harness")
	}
	n, _ := strconv.ParseInt(os.Getenv("BENCH_COLD_N"), 10, 64)
	o, d, conns, only := probeOptions()
	tmp := t.TempDir()
	r := &runner{o: o, tmp: tmp, rep: &Report{}, began: time.Now()}
	if _, err := os.Stat(src); err != nil {
		srv, err := startServer(o, tmp, nil, "")
		if err != nil {
			t.Fatal(err)
		}
		res, err := loadgen.Run(loadgen.Config{Addr: srv.Addr, Method: "POST", Path: helpPath, Header: jsonHeader, Conns: 64,
			Requests: n, Body: publishBody("million"), Expect: []int{201}})
		srv.stop()
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("published %d at %.0f/s", res.Requests, res.Throughput())
		if err := os.Rename(srv.DataDir, src); err != nil {
			t.Fatal(err)
		}
		return
	}
	var mem int64 = 256 << 20
	if v := os.Getenv("BENCH_COLD_MEM"); v != "" {
		mem, _ = strconv.ParseInt(v, 10, 64)
		mem <<= 20
	}
	cg, err := newMemCgroup(mem)
	if err != nil {
		t.Fatal(err)
	}
	defer cg.remove()
	srv, err := startServer(o, tmp, cg, "")
	if err != nil {
		t.Fatal(err)
	}
	srv.stop()
	if err := os.RemoveAll(srv.DataDir); err != nil {
		t.Fatal(err)
	}
	pubN, _ := strconv.ParseInt(os.Getenv("BENCH_COLD_PUBLISH"), 10, 64)
	mixed := os.Getenv("BENCH_COLD_MIXED") != ""
	if pubN > 0 || mixed { // publishing changes the directory: on a copy
		if out, err := exec.Command("cp", "-a", src, srv.DataDir).CombinedOutput(); err != nil {
			t.Fatal(err, string(out))
		}
	} else {
		if err := os.Rename(src, srv.DataDir); err != nil {
			t.Fatal(err)
		}
		defer func() { _ = os.Rename(srv.DataDir, src) }()
	}
	if os.Getenv("BENCH_COLD_WARM") == "" {
		if err := dropPageCache(srv.DataDir); err != nil {
			t.Fatal(err)
		}
	}
	tables0 := tableNames(srv.DataDir)
	fmt.Fprintf(os.Stderr, "before the start: %s\n", levelShape(srv.DataDir))
	t0 := time.Now()
	if err := srv.restart(); err != nil {
		t.Fatal(err)
	}
	defer srv.stop()
	fmt.Fprintf(os.Stderr, "started in %s: major faults %d, read %d MB, cgroup cache %d MB\n", time.Since(t0).Round(time.Millisecond), srv.majorFaults(), readBytes(srv)>>20, cgStat(cg, "total_cache")>>20)
	total, _ := listTotal(srv.Addr)
	fmt.Fprintf(os.Stderr, "records %d\n", total)
	log, _ := os.ReadFile(filepath.Join(srv.Dir, "caddy.log"))
	fmt.Fprintf(os.Stderr, "GOMEMLIMIT %d\n", goMemLimit(srv.out.String()+string(log)))
	if pubN > 0 {
		f0, b0 := srv.majorFaults(), readBytes(srv)
		res, err := loadgen.Run(loadgen.Config{Addr: srv.Addr, Method: "POST", Path: helpPath, Header: jsonHeader, Conns: 64,
			Requests: pubN, Body: publishBody(os.Getenv("BENCH_COLD_TAG")), Expect: []int{201}})
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(os.Stderr, "published %d in %s: %.0f req/s, p50 %s p99 %s; major faults %d, read %d MB\n", res.Requests, res.Elapsed.Round(time.Millisecond),
			res.Throughput(), ms(res.Percentile(0.5)), ms(res.Percentile(0.99)), srv.majorFaults()-f0, (readBytes(srv)-b0)>>20)
		if keep := os.Getenv("BENCH_COLD_KEEP"); keep != "" {
			t1 := time.Now()
			srv.stop()
			fmt.Fprintf(os.Stderr, "stopped in %s\n", time.Since(t1).Round(time.Millisecond))
			if err := os.Rename(srv.DataDir, keep); err != nil {
				t.Fatal(err)
			}
		}
		return
	}
	export := func() {
		f0, b0 := srv.majorFaults(), readBytes(srv)
		e, err := exportAll(srv, 5*time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(os.Stderr, "export: %d records in %s = %.0f/s; major faults %d, read %d MB\n", e.Records, e.Duration.Round(time.Millisecond),
			float64(e.Records)/e.Duration.Seconds(), srv.majorFaults()-f0, (readBytes(srv)-b0)>>20)
	}
	rows := func(set string, names ...string) {
		for _, sc := range readScenarios([]string{"x"}) {
			if !slices.Contains(names, sc.name) || only != "" && !strings.Contains(sc.name, only) {
				continue
			}
			sc = probeExtra(sc)
			for _, conns := range conns {
				f0, b0, mf0, tb0 := srv.majorFaults(), readBytes(srv), minorFaults(srv), tableNames(srv.DataDir)
				cfg := sc.config(conns)
				ms, err := r.measure(srv, Badger, sc.name, set, d, cfg)
				if err != nil {
					t.Fatal(err)
				}
				st := srv.status("RssAnon", "RssFile")
				gone, added := tableChanges(tb0, tableNames(srv.DataDir))
				perReq := func(v float64) float64 { return v / float64(max(ms.Res.Requests, 1)) }
				fmt.Fprintf(os.Stderr, "  server CPU %.2f ms/req; minor faults %.1f/req; %s; tables removed %d, written %d (warm-up included)\n",
					perReq(float64(ms.ServerCPU)/1e6), perReq(float64(minorFaults(srv)-mf0)), levelShape(srv.DataDir), gone, added)
				fmt.Fprintf(os.Stderr, "  read %.0f KB/req; major faults %d, %.1f/req; RssAnon %d MB RssFile %d MB; cgroup cache %d MB\n",
					float64(readBytes(srv)-b0)/1024/float64(max(ms.Res.Requests, 1)), srv.majorFaults()-f0, float64(srv.majorFaults()-f0)/float64(max(ms.Res.Requests, 1)), st["RssAnon"]>>20, st["RssFile"]>>20, cgStat(cg, "total_cache")>>20)
			}
		}
	}
	if mixed {
		if os.Getenv("BENCH_COLD_SETTLE") != "" {
			t1, quiet := time.Now(), time.Now()
			for prev := tableNames(srv.DataDir); time.Since(quiet) < 5*time.Second && time.Since(t1) < 5*time.Minute; {
				time.Sleep(500 * time.Millisecond)
				if now := tableNames(srv.DataDir); !maps.Equal(now, prev) {
					prev, quiet = now, time.Now()
				}
			}
			fmt.Fprintf(os.Stderr, "settled in %s: %s\n", time.Since(t1).Round(time.Second), levelShape(srv.DataDir))
		}
		if fill, _ := strconv.ParseInt(os.Getenv("BENCH_COLD_FILL"), 10, 64); fill > 0 {
			res, err := loadgen.Run(loadgen.Config{Addr: srv.Addr, Method: "POST", Path: helpPath, Header: jsonHeader, Conns: 64,
				Requests: fill, Body: publishBody("fill"), Expect: []int{201}})
			if err != nil {
				t.Fatal(err)
			}
			time.Sleep(time.Second) // the last memtable's flush
			fmt.Fprintf(os.Stderr, "filled with %d records at %.0f/s: %s\n", res.Requests, res.Throughput(), levelShape(srv.DataDir))
		}
		if os.Getenv("BENCH_COLD_EXPORT") != "" {
			export()
		}
		// As mixed (million.go): the publisher outlasts the rows, which begin after its ramp.
		ramp, n := max(d/5, 200*time.Millisecond), 4
		if only != "" {
			n = 2
		}
		pubFor := ramp + time.Duration(n)*(d+d/10) + max(d, 2*time.Second)
		done := make(chan *loadgen.Result, 1)
		f0, b0 := srv.majorFaults(), readBytes(srv)
		go func() {
			res, err := loadgen.Run(loadgen.Config{Addr: srv.Addr, Method: "POST", Path: helpPath, Header: jsonHeader, Conns: 64,
				Duration: pubFor, Body: publishBody("mixed"), Expect: []int{201}})
			if err != nil {
				t.Error(err)
			}
			done <- res
		}()
		time.Sleep(ramp)
		rows("while publishing", readRadius, readFiltered)
		if res := <-done; res != nil {
			fmt.Fprintf(os.Stderr, "published %d meanwhile: %.0f req/s, p50 %s p99 %s; major faults %d, read %d MB\n", res.Requests, res.Throughput(),
				ms(res.Percentile(0.5)), ms(res.Percentile(0.99)), srv.majorFaults()-f0, (readBytes(srv)-b0)>>20)
		}
	} else {
		rows("cold", readRadius, readFiltered, readText)
		if os.Getenv("BENCH_COLD_EXPORT") != "" {
			export()
		}
	}
	mu, fc, oom := cg.stats()
	fmt.Fprintf(os.Stderr, "cgroup max %d MB failcnt %d oom %d\n", mu>>20, fc, oom)
	// A restart after a busy run owes Badger's compactions (Close compacts level 0 only): they read
	// whole tables while the rows above run.
	gone, added := tableChanges(tables0, tableNames(srv.DataDir))
	fmt.Fprintf(os.Stderr, "tables compacted away during the rows %d of %d, written %d\n", gone, len(tables0), added)
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
