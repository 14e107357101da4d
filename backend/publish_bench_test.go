package backend_test

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/directaid/directaid/backend"
	"github.com/directaid/directaid/backend/httpapi"
	"github.com/directaid/directaid/internal/bench"
	"github.com/directaid/directaid/internal/testserver"
	"github.com/directaid/directaid/schema"
)

// BenchmarkPublishHandler: new publications (the bench's varied bodies) through the HTTP handler, in
// process, from 64 goroutines into a fresh Badger store: the CPU and allocations of a publication's
// request path and its share of the group commit, without the network and Caddy.
//
//	go test ./backend -run '^$' -bench PublishHandler -benchmem -benchtime 20000x
func BenchmarkPublishHandler(b *testing.B) {
	bs := testserver.Badger(b)
	svc := backend.NewService(bs, backend.Config{Emergencies: []backend.Emergency{{Slug: "eje-cafetero", Title: "Terremoto", Area: []string{"63", "66", "17"}}}})
	h, err := httpapi.NewHandler(withMCP(svc))
	if err != nil {
		b.Fatal(err)
	}
	body := bench.PublishBody("handler")
	var n atomic.Int64
	var failed atomic.Value
	b.ReportAllocs()
	b.SetParallelism(32) // 64 goroutines on 2 cores
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		buf := make([]byte, 0, 2048)
		w := &nopWriter{hd: http.Header{}}
		for pb.Next() {
			buf = body(n.Add(1), buf[:0])
			req := httptest.NewRequest("POST", "http://localhost"+schema.HelpPath, bytes.NewReader(buf))
			req.Header.Set("Content-Type", "application/json")
			w.code = 0
			h.ServeHTTP(w, req)
			if w.code != 201 {
				failed.Store(w.code)
			}
		}
	})
	if c := failed.Load(); c != nil {
		b.Fatalf("a publication answered %d, not 201", c)
	}
}
