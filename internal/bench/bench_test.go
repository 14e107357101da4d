package bench

import (
	"strings"
	"testing"
	"time"

	"github.com/directaid/directaid/internal/pgtest"
	"github.com/directaid/directaid/internal/testserver"
)

// TestBenchSmoke runs the whole benchmark with tiny counts (`make bench-smoke`, and part of `make test`)
// so that the harness cannot rot. It checks that every scenario produced numbers without errors, never
// how fast they are: speed is measured by `make bench`, not asserted.
func TestBenchSmoke(t *testing.T) {
	rep, err := Run(Options{Bin: testserver.Binary(t), Duration: 300 * time.Millisecond, Seeds: 200, Million: 2000,
		TempDir: t.TempDir(), MemoryLimit: 256 << 20})
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	rep.Print(&out)
	t.Log("\n" + out.String())
	if len(rep.Rows) != 7 {
		t.Fatalf("%d scenarios, want 7", len(rep.Rows))
	}
	for _, r := range rep.Rows {
		if r.Res.Requests == 0 || r.Res.Throughput() <= 0 || r.Res.Percentile(0.5) <= 0 {
			t.Errorf("%s/%d: no measurement: %+v", r.Name, r.Conns, r.Res.Status)
		}
		if r.Res.Errors != 0 {
			t.Errorf("%s/%d: %d errors, first: %s", r.Name, r.Conns, r.Res.Errors, r.Res.FirstError)
		}
	}
	m := rep.Million
	if m == nil || m.Res.Errors != 0 || m.Res.Status[201] != 2000 || len(m.Res.Marks) != 10 {
		t.Fatalf("long run: %+v", m)
	}
	if len(m.Reads) != 16 {
		t.Errorf("%d read scenarios, want 16", len(m.Reads))
	}
	if e := m.Export; e == nil || e.Records != 2000 || !e.Chunked {
		t.Errorf("export: %+v", e)
	}
	// The cgroup run where the machine allows it (cgroup v1 memory, writable); else it says why not.
	if m.CgroupError == "" && (m.MemoryLimit != 256<<20 || m.OOMKills != 0 || m.CgroupMaxUsage <= 0 || m.GoMemLimit <= 0 || m.GoMemLimit >= 256<<20) {
		t.Errorf("memory cgroup: %+v", m)
	}
	for _, r := range m.Reads {
		if r.Res.Requests == 0 || r.Res.Errors != 0 || r.Res.Percentile(0.5) <= 0 {
			t.Errorf("%s/%d: %d requests, %d errors, first: %s", r.Name, r.Conns, r.Res.Requests, r.Res.Errors, r.Res.FirstError)
		}
	}
	if m.DiskBytes <= 0 || m.PeakRSS <= 0 {
		t.Errorf("long run: disk %d bytes, peak RSS %d bytes", m.DiskBytes, m.PeakRSS)
	}
	for _, want := range []string{"ceiling", "GET discovery", "POST new", "POST retry", "first 200", "VmHWM", "GET list within 5 km (2k records)"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the table lacks %q", want)
		}
	}
}

// TestBenchSmokePostgres: the same harness with every server on PostgreSQL (`make bench BENCH_PG=1`), so
// that the PostgreSQL rows of the README's table can be measured again; numbers without errors, never speed.
func TestBenchSmokePostgres(t *testing.T) {
	cluster := pgtest.Start(t)
	rep, err := Run(Options{Bin: testserver.Binary(t), Duration: 200 * time.Millisecond, Seeds: 100, Million: 1000,
		TempDir: t.TempDir(), Postgres: cluster.CreateDatabase, Only: "POST new/64"})
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	rep.Print(&out)
	t.Log("\n" + out.String())
	if rep.Store != "postgres" || len(rep.Rows) != 2 || !strings.Contains(out.String(), "store: PostgreSQL") {
		t.Fatalf("store %q, %d rows", rep.Store, len(rep.Rows))
	}
	m := rep.Million
	if m == nil || m.Res.Errors != 0 || m.Res.Status[201] != 1000 || len(m.Reads) != 16 || m.DiskBytes <= 0 {
		t.Fatalf("long run: %+v", m)
	}
	for _, r := range append(rep.Rows, m.Reads...) {
		if r.Res.Requests == 0 || r.Res.Errors != 0 {
			t.Errorf("%s/%d: %d requests, %d errors, first: %s", r.Name, r.Conns, r.Res.Requests, r.Res.Errors, r.Res.FirstError)
		}
	}
}
