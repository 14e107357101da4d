package httpapi

import (
	"context"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/directaid/directaid/backend"
	"github.com/directaid/directaid/backend/pgstore"
	"github.com/directaid/directaid/backend/store"
	"github.com/directaid/directaid/backend/store/storetest"
	"github.com/directaid/directaid/internal/pgtest"
	"github.com/directaid/directaid/schema"
)

// BenchmarkExportPostgres: a whole CSV export of 20,000 records (BENCH_EXPORT_RECORDS) from a PostgreSQL
// store, in the server's pages. Reports records/s and the PostgreSQL cluster's CPU per record besides
// this process's: CPU per record says more than records/s on a loaded machine.
func BenchmarkExportPostgres(b *testing.B) {
	n := 20000
	if s := os.Getenv("BENCH_EXPORT_RECORDS"); s != "" {
		n, _ = strconv.Atoi(s)
	}
	cluster := pgtest.Start(b)
	db, err := pgstore.Open(cluster.NewDatabase(b))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(db.Close)
	ps := pgstore.NewStore(db)
	rng := rand.New(rand.NewPCG(1, 2))
	start := time.Date(2026, 8, 11, 10, 0, 0, 0, time.UTC)
	for i := 0; i < n; i += 1000 {
		recs := make([]*store.Record, min(1000, n-i))
		for j := range recs {
			recs[j] = storetest.SynthRecord(rng, start.Add(time.Duration(i+j)*7*time.Second), i+j)
		}
		if _, err := ps.Import(context.Background(), recs); err != nil {
			b.Fatal(err)
		}
	}
	if err := ps.VacuumAnalyze(context.Background()); err != nil {
		b.Fatal(err)
	}
	h, err := NewHandler(backend.NewService(ps, backend.Config{Emergencies: []backend.Emergency{{Slug: "eje-cafetero", Title: "Terremoto"}, {Slug: "la-mojana", Title: "Inundaciones"}}}), Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	pgCPU, ownCPU := pgtest.ClusterCPU(filepath.Join(cluster.Dir, "data")), pgtest.ProcessCPU()
	for b.Loop() {
		d := &discardFlusher{hd: http.Header{}}
		h.serveExport(d, httptest.NewRequest("GET", "/", nil), schema.ListQuery{}, schema.FormatCSV, "http://x", backend.ExportPage)
		b.SetBytes(d.n)
	}
	pgCPU, ownCPU = pgtest.ClusterCPU(filepath.Join(cluster.Dir, "data"))-pgCPU, pgtest.ProcessCPU()-ownCPU
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "records/s")
	b.ReportMetric(float64(pgCPU.Microseconds())/float64(n*b.N), "pg-cpu-µs/record")
	b.ReportMetric(float64(ownCPU.Microseconds())/float64(n*b.N), "node-cpu-µs/record")
}
