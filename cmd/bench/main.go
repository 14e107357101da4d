// Command bench runs the directaid benchmark (`make bench`): the real binary on loopback over a fresh
// Badger and, when PostgreSQL is installed, over a throwaway PostgreSQL cluster too, driven by the
// closed-loop generator in internal/loadgen, reported as one table with the stores side by side and the
// targets judged from the run. It exits 1 when a scenario answered errors.
//
// Its subcommands are measuring probes over data kept loaded (probes.go): `cold` (Badger's cold reads in
// a memory cgroup), `pg` (list rows on a node over a PostgreSQL database) and `alike` (the two stores'
// radius pages compared over the same records).
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/directaid/directaid/internal/bench"
	"github.com/directaid/directaid/internal/pgtest"
)

func main() {
	if len(os.Args) > 1 {
		if sub, ok := subcommands[os.Args[1]]; ok {
			os.Exit(sub.run(os.Args[2:]))
		}
	}
	flag.Usage = usage
	table()
}

// usage prints the table's flags and the subcommands.
func usage() {
	out := flag.CommandLine.Output()
	fmt.Fprintf(out, "Usage: go run ./cmd/bench [flags]             the benchmark table (make bench)\n")
	for _, name := range subcommandNames() {
		fmt.Fprintf(out, "       go run ./cmd/bench %-6s [flags]      %s\n", name, subcommands[name].what)
	}
	fmt.Fprintf(out, "(go run ./cmd/bench SUBCOMMAND -h: its flags)\n\nThe table's flags:\n")
	flag.PrintDefaults()
}

// table runs the benchmark table.
func table() {
	exit := 0
	defer func() { os.Exit(exit) }() // after the deferred cluster.Close
	bin := flag.String("bin", os.Getenv("DIRECTAID_BIN"), "directaid binary (default $DIRECTAID_BIN)")
	d := flag.Duration("d", 10*time.Second, "measured time per scenario")
	seeds := flag.Int64("seeds", 10000, "records published before the retry scenario")
	million := flag.Int64("million", 0, "also publish this many records into a fresh server (1000000 for the real figure)")
	backup := flag.Int64("backup", 0, "without -million: publish this many records into a fresh server and run the backup scenario over them (the million run has it)")
	millionTime := flag.Duration("million-time", 20*time.Minute, "stop publishing the -million records after this long and go on over those published")
	profile := flag.String("profile", "", `save the Badger server's CPU profile during one scenario: "POST new/64", "ceiling (Caddy respond)/64", "million", ...`)
	profileOut := flag.String("profile-out", "", "where to write the profile (default ./cpu-<scenario>.pprof)")
	only := flag.String("only", "", `run only the scenarios whose "name/conns" contains this (and the ceiling), e.g. "POST new/64"`)
	memLimit := flag.String("memory-limit", "", "run the -million server in a cgroup v1 memory cgroup of this size (e.g. 256MiB)")
	serverLog := flag.String("server-log", "", "append what the servers print to this file")
	postgres := flag.String("postgres", "auto", "run every scenario on PostgreSQL too (a throwaway cluster, fsync on): auto (when installed), on (fail without it), off")
	sharedBuffers := flag.String("pg-shared-buffers", quarterOfMemory(), "the PostgreSQL cluster's shared_buffers: a quarter of the machine's memory, as docs/postgres.md tells operators (empty: PostgreSQL's 128 MB)")
	feedSubs := flag.Int("feed", 0, "run only the live feed's fan-out: this many subscribers (1000 for the figure) of one Badger server, records published at -feed-rate for -d")
	feedRate := flag.Int("feed-rate", 20, "with -feed: publications per second")
	var serverEnv []string
	flag.Func("server-env", "KEY=VALUE added to the servers' environment (repeatable), e.g. GOMEMLIMIT=150MiB", func(v string) error {
		if !strings.Contains(v, "=") {
			return fmt.Errorf("want KEY=VALUE, got %q", v)
		}
		serverEnv = append(serverEnv, v)
		return nil
	})
	flag.Parse()
	if *bin == "" {
		fmt.Fprintln(os.Stderr, "bench: set -bin or DIRECTAID_BIN (make bench does)")
		os.Exit(2)
	}
	if *profile != "" && *profileOut == "" {
		*profileOut = bench.ProfilePath(".", *profile)
	}
	host, _ := os.Hostname()
	fmt.Printf("directaid benchmark — %s, %s, %d CPUs, %s\n", time.Now().Format(time.DateTime), host, runtime.NumCPU(), runtime.Version())
	fmt.Printf("command: %s\n", strings.Join(os.Args, " "))
	if *feedSubs > 0 {
		res, err := bench.FeedFanout(bench.Options{Bin: *bin, Duration: *d, ServerEnv: serverEnv}, *feedSubs, *feedRate)
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		res.Print(os.Stdout)
		if res.Missing > 0 {
			os.Exit(1)
		}
		return
	}
	var serverOut io.Writer
	if *serverLog != "" {
		f, err := os.OpenFile(*serverLog, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(2)
		}
		defer f.Close()
		serverOut = f
	}
	var memBytes int64
	if *memLimit != "" {
		n, unit := int64(0), ""
		if _, err := fmt.Sscanf(*memLimit, "%d%s", &n, &unit); err != nil || (unit != "MiB" && unit != "GiB") {
			fmt.Fprintln(os.Stderr, "bench: -memory-limit wants a size like 256MiB or 1GiB")
			os.Exit(2)
		}
		memBytes = n << 20
		if unit == "GiB" {
			memBytes = n << 30
		}
	}
	var newDB func() (string, error)
	var pgData, pgMissing, pgConf string
	switch *postgres {
	case "off":
		pgMissing = "-postgres=off (BENCH_PG=0)"
	case "auto", "on":
		pgBin, err := pgtest.FindBin()
		if err != nil {
			if *postgres == "on" {
				fmt.Fprintln(os.Stderr, "bench: -postgres=on:", err)
				os.Exit(2)
			}
			pgMissing = err.Error()
			break
		}
		cluster, err := pgtest.New(pgBin, pgtest.Options{Durable: true, SharedBuffers: *sharedBuffers})
		if err != nil && *postgres == "on" {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		if err != nil {
			pgMissing = "PostgreSQL did not start: " + err.Error()
			break
		}
		defer cluster.Close()
		newDB, pgData = cluster.CreateDatabase, filepath.Join(cluster.Dir, "data")
		if *sharedBuffers != "" {
			pgConf = "shared_buffers " + *sharedBuffers
		}
	default:
		fmt.Fprintln(os.Stderr, "bench: -postgres wants auto, on or off")
		os.Exit(2)
	}
	if newDB == nil {
		fmt.Fprintf(os.Stderr, "bench: PostgreSQL not run (%s): Badger only\n", pgMissing)
	}
	rep, err := bench.Run(bench.Options{Postgres: newDB, PostgresDataDir: pgData, PostgresMissing: pgMissing, PostgresConf: pgConf, MemoryLimit: memBytes, ServerOutput: serverOut, ServerEnv: serverEnv, Bin: *bin, Duration: *d, Seeds: *seeds, Million: *million, Backup: *backup, MillionTime: *millionTime,
		Profile: *profile, ProfilePath: *profileOut, Only: *only, Progress: os.Stderr})
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		exit = 1
		if rep == nil || len(rep.Measures) == 0 {
			return
		}
		fmt.Println("\nTHE RUN STOPPED EARLY (" + err.Error() + "); what it measured:")
	}
	fmt.Printf("load average at start: %s\n\n", rep.Load)
	rep.Print(os.Stdout)
	if *profile != "" {
		fmt.Printf("\nCPU profile of %q: %s (go tool pprof -top %s)\n", *profile, *profileOut, *profileOut)
	}
	if len(rep.Failures()) > 0 {
		exit = 1
	}
}

// quarterOfMemory is a quarter of the machine's memory in PostgreSQL's units ("6144MB"), or "" when
// /proc/meminfo cannot tell.
func quarterOfMemory() string {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return ""
	}
	var kb int64
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "MemTotal:"); ok {
			if _, err := fmt.Sscanf(strings.TrimSpace(rest), "%d kB", &kb); err != nil {
				return ""
			}
		}
	}
	if kb < 4<<10 {
		return ""
	}
	return fmt.Sprintf("%dMB", kb/4>>10)
}
