package backend_test

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"

	"github.com/directaid/directaid/backend"
	"github.com/directaid/directaid/backend/badgerstore"
	"github.com/directaid/directaid/backend/httpapi"
	"github.com/directaid/directaid/schema"
)

// nopWriter is a ResponseWriter that keeps only the status: the benchmarks measure the handler, not a
// recorder.
type nopWriter struct {
	hd   http.Header
	code int
}

func (w *nopWriter) Header() http.Header         { return w.hd }
func (w *nopWriter) WriteHeader(code int)        { w.code = code }
func (w *nopWriter) Write(b []byte) (int, error) { return len(b), nil }

// BenchmarkListRead: the first page of the list reads of `make bench` through the HTTP handler, in
// process, over an existing store at 1M density (badgerstore's BenchmarkUniform* store), for the CPU and
// allocations of one request (the JSON encoding, record decode, cursor):
//
//	BENCH_READ_DIR=$TMPDIR/directaid-bench-uniform-250000 go test ./backend -run '^$' -bench ListRead -benchmem
func BenchmarkListRead(b *testing.B) {
	dir := os.Getenv("BENCH_READ_DIR")
	if dir == "" {
		b.Skip("BENCH_READ_DIR names a seeded store (see badgerstore's BenchmarkUniform*)")
	}
	bs, err := badgerstore.Open(badgerstore.Options{Dir: dir})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = bs.Close() })
	h, err := httpapi.NewHandler(withMCP(backend.NewService(bs, backend.Config{Emergencies: []backend.Emergency{{Slug: "eje-cafetero", Title: "Terremoto"}}})))
	if err != nil {
		b.Fatal(err)
	}
	for name, query := range map[string]string{
		"insulina":        "q=insulina",
		"type+category":   "emergencySlug=eje-cafetero&type=request&category=salud",
		"radius5km":       "latitude=4.6&longitude=-75.85&radiusKm=5&total=none",
		"radius5km+total": "latitude=4.6&longitude=-75.85&radiusKm=5",
	} {
		b.Run(name, func(b *testing.B) {
			req := httptest.NewRequest("GET", "http://localhost"+schema.HelpPath+"?view=list&"+query, nil)
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != 200 {
				b.Fatalf("%d %s", rec.Code, rec.Body)
			}
			b.ReportAllocs()
			b.SetBytes(int64(rec.Body.Len()))
			for b.Loop() {
				h.ServeHTTP(&nopWriter{hd: http.Header{}}, req)
			}
		})
	}
	// A 5 km radius around a different point each time, as the bench's clients ask: the page's records
	// come from the disk's blocks, not the block cache.
	b.Run("radius5km+total/points", func(b *testing.B) {
		b.ReportAllocs()
		rng := rand.New(rand.NewPCG(1, 2))
		for b.Loop() {
			q := fmt.Sprintf("latitude=%.5f&longitude=%.5f&radiusKm=5", 4.6+(rng.Float64()-0.5)*0.06, -75.85+(rng.Float64()-0.5)*0.06)
			req := httptest.NewRequest("GET", "http://localhost"+schema.HelpPath+"?view=list&"+q, nil)
			w := &nopWriter{hd: http.Header{}}
			h.ServeHTTP(w, req)
		}
	})
}
