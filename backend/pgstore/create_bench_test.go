package pgstore_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/directaid/directaid/backend/places"
	"github.com/directaid/directaid/backend/store"
	"github.com/directaid/directaid/internal/benchdata"
	"github.com/directaid/directaid/internal/pgtest"
	"github.com/directaid/directaid/schema"
)

// benchRecord is the n-th publication of make bench's generator (internal/bench's publishBody) as the
// service stores it: the same words, categories, share of offers and spread of places.
func benchRecord(n int, now time.Time) *store.Record {
	r := uint64(n)*0x9e3779b97f4a7c15 + 12345
	next := func(k int) int {
		r += 0x9e3779b97f4a7c15
		z := r
		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
		z = (z ^ (z >> 27)) * 0x94d049bb133111eb
		return int((z ^ (z >> 31)) % uint64(k))
	}
	pick := func(s []string) string { return s[next(len(s))] }
	rec := &store.Record{ID: store.NewID(now), CreatedAt: now.UTC().Truncate(time.Millisecond)}
	p := &rec.Publication
	p.Source, p.ExternalID, p.EmergencySlug = "bench", fmt.Sprintf("pg-%d", n), "eje-cafetero"
	p.Title = pick(benchdata.Titles)
	words := make([]string, 8+next(30))
	for i := range words {
		words[i] = pick(benchdata.Words)
	}
	p.Description = strings.Join(words, " ") + "."
	p.Category = pick(benchdata.Categories)
	p.ContactName, p.ContactWhatsapp, p.PublishContact = "Ana Gómez", "+57 300 1234567", true
	p.ContactE164 = "+573001234567"
	lat, lon := 4.4+float64(next(80000))/1e5, -76.0+float64(next(60000))/1e5
	p.Latitude, p.Longitude, p.Address = &lat, &lon, fmt.Sprintf("Calle %d # %d-%d", 1+next(99), 1+next(99), 1+next(99))
	p.MunicipioCode = places.Nearest(lat, lon).MunicipioCode() // as schema's place resolution sets it
	if next(4) == 0 {
		p.Type, p.CollectionCenterStatus = schema.TypeOffer, "needs_resources"
	} else {
		p.Type, p.Neighborhood, p.Urgency = schema.TypeRequest, "Centro", schema.Urgencies[next(3)]
		k := 1 + next(200)
		p.NeededPeople = &k
	}
	rec.ExpiresAt = rec.CreatedAt.Add(14 * 24 * time.Hour)
	return rec
}

// BenchmarkCreate64 is issue 15's "POST new at 64 connections" in process: 64 goroutines calling
// Store.Create with new pairs on a durable throwaway cluster (fsync on, synchronous_commit on). Besides
// the wall-clock rate (noisy on a shared machine) it reports deterministic work per record: WAL bytes,
// commits, statements (pg_stat_statements) and the CPU of PostgreSQL and of this process.
// PGWRITE_TOP=n prints the n statements of most execution time and the WAL by record type;
// PGWRITE_SETUP is SQL run before (an experiment: drop an index, change its settings).
//
//	go test -run '^$' -bench Create64 -benchtime 4000x ./backend/pgstore/
func BenchmarkCreate64(b *testing.B) {
	ctx := context.Background()
	c := pgtest.StartWith(b, pgtest.Options{Durable: true})
	admin, err := pgx.Connect(ctx, c.DSN("postgres"))
	if err != nil {
		b.Fatal(err)
	}
	if _, err := admin.Exec(ctx, `ALTER SYSTEM SET shared_preload_libraries = 'pg_stat_statements'`); err != nil {
		b.Fatal(err)
	}
	_ = admin.Close(ctx)
	if err := c.Restart("fast"); err != nil {
		b.Fatal(err)
	}
	db, s := openStore(b, c.NewDatabase(b)+"&pool_max_conns=16")
	b.Cleanup(func() { _ = s.Close() })
	if err := db.Ready(ctx); err != nil {
		b.Fatal(err)
	}
	if _, err := db.Pool.Exec(ctx, `CREATE EXTENSION pg_stat_statements; CREATE EXTENSION pg_walinspect`); err != nil {
		b.Fatal(err)
	}
	if setup := os.Getenv("PGWRITE_SETUP"); setup != "" { // an experiment's SQL, e.g. dropping an index to price it
		if _, err := db.Pool.Exec(ctx, setup); err != nil {
			b.Fatal(err)
		}
	}
	now := time.Now()
	recs := make([]*store.Record, b.N)
	for i := range recs {
		recs[i] = benchRecord(i, now.Add(time.Duration(i)*time.Millisecond))
	}
	type probe struct {
		lsn string
		xid int64
	}
	read := func() (p probe) {
		if err := db.Pool.QueryRow(ctx, `SELECT pg_current_wal_insert_lsn()::text,
			pg_snapshot_xmax(pg_current_snapshot())::text::bigint`).Scan(&p.lsn, &p.xid); err != nil {
			b.Fatal(err)
		}
		return p
	}
	if _, err := db.Pool.Exec(ctx, `SELECT pg_stat_statements_reset()`); err != nil {
		b.Fatal(err)
	}
	before := read()
	pgCPU0, goCPU0 := pgtest.ClusterCPU(filepath.Join(c.Dir, "data")), pgtest.ProcessCPU()
	b.ResetTimer()
	began := time.Now()
	var next atomic.Int64
	var wg sync.WaitGroup
	var failed atomic.Value
	for range 64 {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= len(recs) {
					return
				}
				if _, created, err := s.Create(ctx, recs[i]); err != nil || !created {
					failed.Store(fmt.Sprintf("create %d: created %v, %v", i, created, err))
					return
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(began)
	b.StopTimer()
	if f := failed.Load(); f != nil {
		b.Fatal(f)
	}
	pgCPU, goCPU := pgtest.ClusterCPU(filepath.Join(c.Dir, "data"))-pgCPU0, pgtest.ProcessCPU()-goCPU0
	after := read()
	var wal int64
	if err := db.Pool.QueryRow(ctx, `SELECT ($1::pg_lsn - $2::pg_lsn)::bigint`, after.lsn, before.lsn).Scan(&wal); err != nil {
		b.Fatal(err)
	}
	var calls int64
	if err := db.Pool.QueryRow(ctx, `SELECT coalesce(sum(calls), 0)::bigint FROM pg_stat_statements
		WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) AND query NOT LIKE '%pg_stat%' AND query NOT LIKE '%pg_current_wal%'`).Scan(&calls); err != nil {
		b.Fatal(err)
	}
	n := float64(b.N)
	b.ReportMetric(n/elapsed.Seconds(), "rec/s")
	b.ReportMetric(float64(wal)/n, "WAL-B/rec")
	b.ReportMetric(float64(after.xid-before.xid)/n, "write-txns/rec") // transaction ids assigned
	b.ReportMetric(float64(calls)/n, "stmts/rec")
	b.ReportMetric(float64(pgCPU.Microseconds())/n, "pg-cpu-µs/rec")
	b.ReportMetric(float64(goCPU.Microseconds())/n, "go-cpu-µs/rec")
	if top := os.Getenv("PGWRITE_TOP"); top != "" && b.N > 1 {
		rows, err := db.Pool.Query(ctx, `SELECT calls, total_exec_time, rows, wal_bytes, left(regexp_replace(query, '\s+', ' ', 'g'), 160)
			FROM pg_stat_statements ORDER BY total_exec_time DESC LIMIT `+top)
		if err != nil {
			b.Fatal(err)
		}
		var calls, nrows int64
		var ms float64
		var walB string
		var q string
		_, err = pgx.ForEachRow(rows, []any{&calls, &ms, &nrows, &walB, &q}, func() error {
			fmt.Fprintf(os.Stderr, "%7d calls %9.1f ms %8d rows %12s WAL B  %s\n", calls, ms, nrows, walB, q)
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
		// Where the WAL went: bytes of records and of full-page images per resource manager.
		rows, err = db.Pool.Query(ctx, `SELECT "resource_manager/record_type", count, record_size, fpi_size
			FROM pg_get_wal_stats($1::pg_lsn, $2::pg_lsn, true) WHERE count > 0 ORDER BY combined_size DESC LIMIT 12`, before.lsn, after.lsn)
		if err != nil {
			b.Fatal(err)
		}
		var rm string
		var cnt, rsz, fsz int64
		_, err = pgx.ForEachRow(rows, []any{&rm, &cnt, &rsz, &fsz}, func() error {
			fmt.Fprintf(os.Stderr, "WAL %-22s %8.1f records/rec %8.0f B/rec %8.0f FPI B/rec\n", rm, float64(cnt)/n, float64(rsz)/n, float64(fsz)/n)
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}
