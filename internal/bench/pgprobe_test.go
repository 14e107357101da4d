package bench

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/directaid/directaid/internal/loadgen"
)

// TestPGProbe measures read rows on a node over a PostgreSQL database kept loaded (e.g. the 1M records
// moved once with directaid migrate), without the 1M run's publishing and copying: a measuring harness.
//
//	BENCH_PG_PROBE_DSN=postgres://… BENCH_PG_PROBE_DATA=<its data directory, for PostgreSQL's CPU>
//	BENCH_COLD_BIN=bin/directaid BENCH_COLD_ONLY="within 5 km" BENCH_COLD_CONNS=16 BENCH_COLD_D=5s
//	go test ./internal/bench -run TestPGProbe -v
//
// BENCH_PROBE_EXTRA (e.g. "&municipio=66001") is appended to every request's query: a scoped row (here
// and in TestColdProbe).
func TestPGProbe(t *testing.T) {
	dsn := os.Getenv("BENCH_PG_PROBE_DSN")
	if dsn == "" {
		t.Skip("BENCH_PG_PROBE_DSN not set: a measuring harness")
	}
	o, d, conns, only := probeOptions()
	o.PostgresDataDir = os.Getenv("BENCH_PG_PROBE_DATA")
	tmp := t.TempDir()
	r := &runner{o: o, tmp: tmp, rep: &Report{}, began: time.Now()}
	srv, err := startServer(o, tmp, nil, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.stop()
	for _, sc := range readScenarios([]string{"x"}) {
		if !sc.list || only != "" && !strings.Contains(sc.name, only) {
			continue
		}
		sc = probeExtra(sc)
		for _, c := range conns {
			cfg := loadgen.Config{Path: helpPath, Query: sc.query, Conns: c, Expect: []int{200}}
			ms, err := r.measure(srv, Postgres, sc.name, "1M", d, cfg)
			if err != nil {
				t.Fatal(err)
			}
			n := float64(max(ms.Res.Requests, 1))
			fmt.Fprintf(os.Stderr, "  node %.0f µs/req, PostgreSQL %.0f µs/req\n", float64(ms.ServerCPU.Microseconds())/n, float64(ms.DBCPU.Microseconds())/n)
		}
	}
}

// probeOptions are the settings TestColdProbe and TestPGProbe share: the server's binary (BENCH_COLD_BIN),
// its environment (BENCH_COLD_ENV, fields), its output shown (BENCH_COLD_ECHO=1), a row's profile
// (BENCH_COLD_PROFILE, "scenario=path", e.g. "GET list within 5 km/16=/tmp/r.trace"), a row's duration
// (BENCH_COLD_D, 5 s), its connections (BENCH_COLD_CONNS, else 1 and 16) and the rows run (BENCH_COLD_ONLY,
// a part of their names).
func probeOptions() (o Options, d time.Duration, conns []int, only string) {
	if d, _ = time.ParseDuration(os.Getenv("BENCH_COLD_D")); d == 0 {
		d = 5 * time.Second
	}
	o = Options{Bin: os.Getenv("BENCH_COLD_BIN"), ServerEnv: strings.Fields(os.Getenv("BENCH_COLD_ENV")), Duration: 2 * d,
		Progress: os.Stderr}
	if os.Getenv("BENCH_COLD_ECHO") != "" {
		o.ServerOutput = os.Stderr
	}
	if p := os.Getenv("BENCH_COLD_PROFILE"); p != "" {
		o.Profile, o.ProfilePath = profileOpt(p)
	}
	conns = []int{1, 16}
	if c, _ := strconv.Atoi(os.Getenv("BENCH_COLD_CONNS")); c > 0 {
		conns = []int{c}
	}
	return o, d, conns, os.Getenv("BENCH_COLD_ONLY")
}

// probeExtra appends BENCH_PROBE_EXTRA, if set, to sc's queries and name.
func probeExtra(sc readScenario) readScenario {
	extra := os.Getenv("BENCH_PROBE_EXTRA")
	if extra == "" {
		return sc
	}
	q := sc.query
	sc.query = func(n int64, b []byte) []byte { return append(q(n, b), extra...) }
	sc.name += " " + extra
	return sc
}

// profileOpt splits BENCH_COLD_PROFILE's "scenario=path" at its last "=" (a scenario's query may hold one).
func profileOpt(p string) (scenario, path string) {
	i := strings.LastIndex(p, "=")
	return p[:max(i, 0)], p[i+1:]
}
