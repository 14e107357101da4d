package site

import (
	"net/http/httptest"
	"testing"
)

// Pages are rendered per request (the base URL and the emergencies may change); this measures the cost.
func BenchmarkPages(b *testing.B) {
	h, err := New(Options{Emergencies: emergencies(eje, mojana)})
	if err != nil {
		b.Fatal(err)
	}
	for _, p := range []string{"/", "/integraciones", "/pedir", "/llms.txt"} {
		b.Run(p, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, httptest.NewRequest("GET", "http://ayuda.test"+p, nil))
				if rec.Code != 200 {
					b.Fatal(rec.Code)
				}
			}
		})
	}
}
