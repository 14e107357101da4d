package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/directaid/directaid/internal/bench"
)

// subcommand is a probe of cmd/bench: what it does (for the usage) and how it runs (its exit code).
type subcommand struct {
	what string
	run  func(args []string) int
}

var subcommands = map[string]subcommand{
	"cold":  {"Badger's cold reads in a memory cgroup, over a directory kept loaded", cold},
	"pg":    {"list rows on a node over a PostgreSQL database kept loaded", pgProbe},
	"alike": {"the two stores' 5 km pages compared over the same records", alike},
}

func subcommandNames() []string {
	names := make([]string, 0, len(subcommands))
	for name := range subcommands {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// probeFlags declares the flags cold and pg share on fs and returns the options they fill.
func probeFlags(fs *flag.FlagSet) *bench.ProbeOptions {
	o := &bench.ProbeOptions{}
	fs.StringVar(&o.Bin, "bin", os.Getenv("DIRECTAID_BIN"), "directaid binary (default $DIRECTAID_BIN)")
	fs.DurationVar(&o.Row, "d", 5*time.Second, "measured time of each row (its warm-up is extra)")
	fs.Func("conns", "connections of each row, comma-separated (default 1,16)", func(v string) error {
		for _, f := range strings.Split(v, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n <= 0 {
				return fmt.Errorf("want positive numbers, got %q", f)
			}
			o.Conns = append(o.Conns, n)
		}
		return nil
	})
	fs.StringVar(&o.Only, "only", "", `run only the rows whose name contains this, e.g. "within 5 km"`)
	fs.StringVar(&o.Extra, "extra", "", `appended to every request's query: a scoped row, e.g. "&municipio=66001"`)
	fs.Func("server-env", "KEY=VALUE added to the server's environment (repeatable), e.g. GOMEMLIMIT=150MiB", func(v string) error {
		if !strings.Contains(v, "=") {
			return fmt.Errorf("want KEY=VALUE, got %q", v)
		}
		o.ServerEnv = append(o.ServerEnv, v)
		return nil
	})
	fs.BoolFunc("echo", "show what the server prints", func(v string) error {
		on, err := strconv.ParseBool(v)
		if on {
			o.ServerOutput = os.Stderr
		}
		return err
	})
	fs.Func("profile", `"row=path": save that row's CPU profile (a path ending in .trace: its runtime trace), e.g. "GET list within 5 km/16=/tmp/r.trace"`, func(v string) error {
		i := strings.LastIndex(v, "=") // a row's query may hold one
		if i <= 0 || i == len(v)-1 {
			return fmt.Errorf(`want "row=path", got %q`, v)
		}
		o.Profile, o.ProfilePath = v[:i], v[i+1:]
		return nil
	})
	return o
}

// parse parses args into fs, which has no positional arguments; false with the exit code on an error.
func parse(fs *flag.FlagSet, args []string) (int, bool) {
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return 0, false
		}
		return 2, false
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "bench %s: unexpected arguments %q\n", fs.Name(), fs.Args())
		return 2, false
	}
	return 0, true
}

func newFlagSet(name, synopsis string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: go run ./cmd/bench %s [flags]\n\n%s\n\n", name, synopsis)
		fs.PrintDefaults()
	}
	return fs
}

func cold(args []string) int {
	fs := newFlagSet("cold", `Badger's cold reads (the 1M run's step 7) in a minute: restarts the binary over -src in a memory
cgroup, dropped from the page cache, and measures the 5 km radius, filtered and q=insulina rows with
the major faults and bytes read per request and the tables compactions wrote and removed meanwhile.
Without -src existing, publishes -records records into it first (64 connections, no cgroup).
Needs root (the cgroup, the page cache).`)
	p := probeFlags(fs)
	var o bench.ColdOptions
	var memMiB int64
	fs.StringVar(&o.Src, "src", "", "the Badger directory kept loaded (required)")
	fs.Int64Var(&o.Records, "records", 0, "when -src does not exist: publish this many records into it")
	fs.Int64Var(&memMiB, "mem", 256, "the memory cgroup's limit, MiB")
	fs.BoolVar(&o.Warm, "warm", false, "keep the page cache (with a large -mem: a warm, unconstrained server)")
	fs.BoolVar(&o.Export, "export", false, "add a whole CSV export")
	fs.Int64Var(&o.Publish, "publish", 0, "publish this many more records into a copy instead of reading")
	fs.StringVar(&o.Tag, "tag", "", "with -publish: the records' tag")
	fs.StringVar(&o.Keep, "keep", "", "with -publish: keep the copy here (just written, compactions pending)")
	fs.BoolVar(&o.Mixed, "mixed", false, "the 1M run's step 6 instead, into a copy: the radius and filtered rows while 64 connections publish")
	fs.BoolVar(&o.Settle, "settle", false, "with -mixed: wait until the compactions the restart owes are done (no table written or removed for 5 s)")
	fs.Int64Var(&o.Fill, "fill", 0, "with -mixed: publish this many records before the rows (their flushes stay in level 0)")
	if code, ok := parse(fs, args); !ok {
		return code
	}
	if p.Bin == "" {
		fmt.Fprintln(os.Stderr, "bench cold: set -bin or DIRECTAID_BIN")
		return 2
	}
	o.ProbeOptions, o.Memory = *p, memMiB<<20
	if err := bench.ColdProbe(o); err != nil {
		fmt.Fprintln(os.Stderr, "bench cold:", err)
		return 1
	}
	return 0
}

func pgProbe(args []string) int {
	fs := newFlagSet("pg", `The list rows on a node over a PostgreSQL database kept loaded (e.g. the 1M records moved once with
directaid migrate), without the 1M run's publishing and copying: the node's and PostgreSQL's CPU per
request.`)
	o := probeFlags(fs)
	dsn := fs.String("dsn", "", "the database, postgres://… (required)")
	data := fs.String("data", "", "its cluster's data directory, for PostgreSQL's CPU")
	if code, ok := parse(fs, args); !ok {
		return code
	}
	if o.Bin == "" {
		fmt.Fprintln(os.Stderr, "bench pg: set -bin or DIRECTAID_BIN")
		return 2
	}
	if err := bench.PGProbe(*o, *dsn, *data); err != nil {
		fmt.Fprintln(os.Stderr, "bench pg:", err)
		return 1
	}
	return 0
}

func alike(args []string) int {
	fs := newFlagSet("alike", `Compares the two stores over the same records (a copy of a Badger directory and the PostgreSQL
database migrated from it): 5 km lists, unscoped and scoped to municipios, at the bench's radius
points, their first two pages' ids, distances, totals and records. Exits 1 at the first difference.`)
	dir := fs.String("badger", "", "a copy of the Badger directory (required; opened read-write)")
	dsn := fs.String("dsn", "", "the PostgreSQL database migrated from it, postgres://… (required)")
	if code, ok := parse(fs, args); !ok {
		return code
	}
	compared, nonEmpty, err := bench.Alike(context.Background(), *dir, *dsn)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench alike:", err)
		return 1
	}
	fmt.Printf("%d pages alike, %d of them not empty\n", compared, nonEmpty)
	return 0
}
