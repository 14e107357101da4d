package loadgen

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// The generator parses responses itself; check it against net/http's server in each framing.
func TestRunReadsEveryFraming(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		switch r.URL.Path {
		case "/chunked":
			for i := range 3 {
				fmt.Fprintf(w, "part %d of %s\n", i, body)
				w.(http.Flusher).Flush()
			}
		case "/close":
			w.Header().Set("Connection", "close")
			fmt.Fprint(w, "bye")
		case "/created":
			w.WriteHeader(http.StatusCreated)
			fmt.Fprint(w, strings.Repeat("x", 20000))
		case "/empty":
			w.WriteHeader(http.StatusNoContent)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	for _, c := range []struct {
		path   string
		expect []int
		errors int64
	}{
		{"/chunked", nil, 0}, {"/close", nil, 0}, {"/created", []int{201}, 0}, {"/empty", nil, 0}, {"/missing", []int{200}, 40},
	} {
		res, err := Run(Config{Addr: addr, Method: "POST", Path: c.path, Conns: 4, Requests: 40, Expect: c.expect, MarkEvery: 10,
			Body: func(n int64, b []byte) []byte { return fmt.Appendf(b, "body-%d", n) }})
		if err != nil {
			t.Fatal(err)
		}
		if res.Requests != 40 || res.Errors != c.errors || len(res.Marks) != 4 || res.Percentile(1) <= 0 {
			t.Errorf("%s: %d answered, %d errors (%s), %d marks", c.path, res.Requests, res.Errors, res.FirstError, len(res.Marks))
		}
	}
	if _, err := Run(Config{Addr: "192.0.2.1:80", Requests: 1}); err == nil {
		t.Error("a non-loopback address was accepted")
	}
	res, err := Run(Config{Addr: addr, Path: "/empty", Conns: 2, Duration: 50 * time.Millisecond})
	if err != nil || res.Requests == 0 || res.Errors != 0 {
		t.Errorf("duration-bounded run: %v %+v", err, res)
	}
}
