package httpapi

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/directaid/directaid/backend"
	"github.com/directaid/directaid/backend/badgerstore"
	"github.com/directaid/directaid/backend/store"
	"github.com/directaid/directaid/backend/store/storetest"
	"github.com/directaid/directaid/internal/testserver"
	"github.com/directaid/directaid/schema"
)

// countingStore records the page size of every List call.
type countingStore struct {
	store.Store
	mu     sync.Mutex
	limits []int
}

func (c *countingStore) List(ctx context.Context, spec *store.ListSpec) (*store.ListResult, error) {
	c.mu.Lock()
	c.limits = append(c.limits, spec.Limit)
	c.mu.Unlock()
	return c.Store.List(ctx, spec)
}

func (c *countingStore) calls() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.limits)
}

// flushRecorder notes, at each Flush, how many bytes were written and how many store pages were read.
type flushRecorder struct {
	*httptest.ResponseRecorder
	st      *countingStore
	flushes []struct{ bytes, calls int }
}

func (f *flushRecorder) Flush() {
	f.flushes = append(f.flushes, struct{ bytes, calls int }{f.Body.Len(), f.st.calls()})
	f.ResponseRecorder.Flush()
}

func exportFixture(t testing.TB, n int) (*Handler, *countingStore) {
	t.Helper()
	bs := testserver.Badger(t)
	storetest.Seed(t, bs, n, time.Date(2026, 8, 11, 10, 0, 0, 0, time.UTC), 7*time.Second)
	st := &countingStore{Store: bs}
	svc := backend.NewService(st, backend.Config{Emergencies: []backend.Emergency{{Slug: "eje-cafetero", Title: "Terremoto"}, {Slug: "la-mojana", Title: "Inundaciones"}}})
	h, err := NewHandler(svc, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return h, st
}

// pagedIDs walks the JSON list page by page (the reference the export must equal).
func pagedIDs(t *testing.T, h *Handler, query string) []string {
	t.Helper()
	var ids []string
	cursor := ""
	for {
		v, _ := url.ParseQuery(query)
		v.Set("limit", "100")
		if cursor != "" {
			v.Set("cursor", cursor)
		}
		q, errs := parseListQuery(v)
		if errs != nil {
			t.Fatal(errs)
		}
		list, err := h.svc.List(context.Background(), "http://x", q)
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range list.Items {
			ids = append(ids, it.ID)
		}
		if cursor = list.NextCursor; cursor == "" {
			return ids
		}
	}
}

// TestExportStreamsAllPages: all=true returns every record that matches, in list order, equal to walking
// the paged list; each page is flushed before the one after the next is read from the store (so the
// handler holds at most two pages), and no store read asks for more than one page.
func TestExportStreamsAllPages(t *testing.T) {
	const n, page = 537, 20
	h, st := exportFixture(t, n)
	for _, query := range []string{"", "category=salud", "latitude=4.53&longitude=-75.68&radiusKm=8", "q=agua&type=request"} {
		want := pagedIDs(t, h, query)
		if query == "" && len(want) != n {
			t.Fatalf("paged list has %d records, want %d", len(want), n)
		}
		for _, format := range []string{schema.FormatCSV, schema.FormatGeoJSON} {
			v, _ := url.ParseQuery(query)
			q, _ := parseListQuery(v)
			before := st.calls()
			rec := &flushRecorder{ResponseRecorder: httptest.NewRecorder(), st: st}
			h.serveExport(rec, httptest.NewRequest("GET", "/?"+query, nil), q, format, "http://x", page)
			if rec.Code != 200 {
				t.Fatalf("%s %s: %d %s", query, format, rec.Code, rec.Body)
			}
			var got []string
			if format == schema.FormatCSV {
				rows, err := csv.NewReader(bytes.NewReader(rec.Body.Bytes())).ReadAll()
				if err != nil || len(rows) < 2 || rows[0][0] != "id" || rows[1][0] != "#meta+id" {
					t.Fatalf("%s csv: %v %d rows", query, err, len(rows))
				}
				for _, r := range rows[2:] {
					got = append(got, r[0])
				}
			} else {
				var g schema.GeoJSONList
				if err := json.Unmarshal(rec.Body.Bytes(), &g); err != nil || g.Type != "FeatureCollection" || g.Total != len(g.Features) || !g.TotalExact {
					t.Fatalf("%s geojson: %v %s", query, err, rec.Body.String()[:min(300, rec.Body.Len())])
				}
				for _, f := range g.Features {
					got = append(got, f.ID)
					if p := f.Properties; (p.Location != nil && p.Location.Latitude != nil) != (f.Geometry != nil) {
						t.Errorf("feature %s: geometry %v, location %v", f.ID, f.Geometry, p.Location)
					}
				}
			}
			if !slices.Equal(got, want) {
				t.Errorf("%s %s: %d records, want %d (first %v, want %v)", query, format, len(got), len(want), got[:min(3, len(got))], want[:min(3, len(want))])
			}
			calls := st.limits[before:]
			for _, l := range calls {
				if l != page {
					t.Fatalf("%s %s: a store read of %d records, want pages of %d", query, format, l, page)
				}
			}
			// Flush k happens after page k is read and before page k+2 is (page k+1 is read while page k
			// is written: at most two pages held).
			if len(rec.flushes) != len(calls) {
				t.Errorf("%s %s: %d flushes for %d pages", query, format, len(rec.flushes), len(calls))
			}
			for k, f := range rec.flushes {
				if f.calls-before < k+1 || f.calls-before > k+2 {
					t.Errorf("%s %s: flush %d after %d store reads", query, format, k+1, f.calls-before)
				}
			}
		}
	}
}

// TestExportParams: all=true goes only with csv/geojson and without limit; its answer is not cached by
// ETag but streamed.
func TestExportParams(t *testing.T) {
	h, _ := exportFixture(t, 3)
	srv := httptest.NewServer(h)
	defer srv.Close()
	for query, field := range map[string]string{
		"all=true":                     "/query/all",
		"all=true&format=json":         "/query/all",
		"all=yes&format=csv":           "/query/all",
		"all=true&format=csv&limit=10": "/query/limit",
	} {
		resp, err := http.Get(srv.URL + schema.HelpPath + "?view=list&" + query)
		if err != nil {
			t.Fatal(err)
		}
		var body schema.ErrorBody
		_ = json.NewDecoder(resp.Body).Decode(&body)
		resp.Body.Close()
		if resp.StatusCode != 400 || len(body.Details) != 1 || body.Details[0].Field != field {
			t.Errorf("%s: %d %+v", query, resp.StatusCode, body)
		}
	}
	resp, err := http.Get(srv.URL + schema.HelpPath + "?view=list&format=csv&all=true")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	rows, err := csv.NewReader(resp.Body).ReadAll()
	if resp.StatusCode != 200 || err != nil || len(rows) != 5 || resp.ContentLength != -1 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/csv") {
		t.Errorf("export: %d %v %d rows, length %d", resp.StatusCode, err, len(rows), resp.ContentLength)
	}
}

// discardFlusher is a ResponseWriter that throws the body away; with sample, it measures the live heap
// (after a GC) at every tenth flush.
type discardFlusher struct {
	hd       http.Header
	n        int64
	sample   bool
	peakLive uint64
	flushes  int
}

func (d *discardFlusher) Header() http.Header         { return d.hd }
func (d *discardFlusher) WriteHeader(int)             {}
func (d *discardFlusher) Write(b []byte) (int, error) { d.n += int64(len(b)); return len(b), nil }
func (d *discardFlusher) Flush() {
	if d.flushes++; d.sample && d.flushes%10 == 0 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		d.peakLive = max(d.peakLive, m.HeapAlloc)
	}
}

// BenchmarkExport: a whole export of 20,000 records (BENCH_EXPORT_RECORDS) in the server's pages.
// Reports records/s and bytes allocated, and from one more export, measured apart, the growth of the
// live heap over the export (after a GC at every tenth page): with one page held at a time it stays flat
// however many records the export has.
func BenchmarkExport(b *testing.B) {
	n := 20000
	if s := os.Getenv("BENCH_EXPORT_RECORDS"); s != "" {
		n, _ = strconv.Atoi(s)
	}
	var h *Handler
	if dir := os.Getenv("BENCH_EXPORT_DIR"); dir != "" {
		// An existing store, e.g. badgerstore's BenchmarkUniform* one at 1M density:
		// BENCH_EXPORT_DIR=$TMPDIR/directaid-bench-uniform-250000 BENCH_EXPORT_RECORDS=250000
		bs, err := badgerstore.Open(badgerstore.Options{Dir: dir})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = bs.Close() })
		svc := backend.NewService(bs, backend.Config{Emergencies: []backend.Emergency{{Slug: "eje-cafetero", Title: "Terremoto"}}})
		if h, err = NewHandler(svc, Options{}); err != nil {
			b.Fatal(err)
		}
	} else {
		h, _ = exportFixture(b, n)
	}
	export := func(d *discardFlusher, format string) {
		d.hd = http.Header{}
		h.serveExport(d, httptest.NewRequest("GET", "/", nil), schema.ListQuery{}, format, "http://x", backend.ExportPage)
	}
	for _, format := range []string{schema.FormatCSV, schema.FormatGeoJSON} {
		b.Run(format, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				d := &discardFlusher{}
				export(d, format)
				b.SetBytes(d.n)
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "records/s")
			var base runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&base)
			d := &discardFlusher{sample: true}
			export(d, format)
			b.ReportMetric(max(0, float64(int64(d.peakLive)-int64(base.HeapAlloc)))/(1<<20), "live-heap-growth-MiB")
		})
	}
}

// failingWriter takes the first flush, then fails every write, as a client that went away.
type failingWriter struct {
	discardFlusher
	gone bool
}

func (f *failingWriter) Write(b []byte) (int, error) {
	if f.gone {
		return 0, errors.New("client gone")
	}
	return f.discardFlusher.Write(b)
}

func (f *failingWriter) Flush() { f.gone = true }

// observeExports makes h serve a service over st like its own with an export log, and returns what the
// log receives.
func observeExports(t testing.TB, h *Handler, st store.Store) *observer.ObservedLogs {
	t.Helper()
	core, logs := observer.New(zapcore.DebugLevel)
	cfg := h.svc.Config()
	cfg.Observe = &backend.Observe{Exports: zap.New(core)}
	nh, err := NewHandler(backend.NewService(st, cfg), Options{})
	if err != nil {
		t.Fatal(err)
	}
	*h = *nh
	return logs
}

// checkCutLine wants one line of an export cut, at level, whose fields say cause, err and how far it got.
func checkCutLine(t *testing.T, logs *observer.ObservedLogs, level zapcore.Level, cause, err string, records, bytes int64) {
	t.Helper()
	all := logs.FilterMessage("export cut").All() // these writers cannot move a deadline: that is logged too
	if len(all) != 1 {
		t.Fatalf("%d log lines for a cut export, want 1: %v", len(all), logs.All())
	}
	e := all[0]
	f := e.ContextMap()
	if e.Message != "export cut" || e.Level != level || f["cause"] != cause || f["error"] != err || f["format"] != schema.FormatCSV ||
		f["records"] != records || f["bytes"] != bytes {
		t.Fatalf("the line of a cut export: %s %q %v; want %s, cause %s, error %q, %d records, %d bytes", e.Level, e.Message, f, level, cause, err, records, bytes)
	}
}

// TestExportStopsWhenClientGoes: a client that goes away mid-export cuts the connection
// (http.ErrAbortHandler) and the goroutine reading ahead stops: the store is read no further and no
// goroutine is left behind. The cut is logged (a warning: the client's doing).
func TestExportStopsWhenClientGoes(t *testing.T) {
	h, st := exportFixture(t, 300)
	logs := observeExports(t, h, st)
	var w *failingWriter
	baseline := runtime.NumGoroutine()
	func() {
		defer func() {
			if r := recover(); r != http.ErrAbortHandler {
				t.Fatalf("recovered %v, want http.ErrAbortHandler", r)
			}
		}()
		w = &failingWriter{discardFlusher: discardFlusher{hd: http.Header{}}}
		h.serveExport(w, httptest.NewRequest("GET", "/", nil), schema.ListQuery{}, schema.FormatCSV, "http://x", 10)
	}()
	checkCutLine(t, logs, zapcore.WarnLevel, "client", "client gone", 20, w.n) // the second page's write failed
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > baseline && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > baseline {
		t.Errorf("%d goroutines after the export, %d before", n, baseline)
	}
	if calls := st.calls(); calls > 3 {
		t.Errorf("%d store pages read for a client gone after the first", calls)
	}
}

// failingStore fails every List after the first ok ones.
type failingStore struct {
	*countingStore
	ok int
}

func (f *failingStore) List(ctx context.Context, spec *store.ListSpec) (*store.ListResult, error) {
	if f.calls() >= f.ok {
		return nil, errors.New("store gone")
	}
	return f.countingStore.List(ctx, spec)
}

// TestExportCutByStoreIsLogged: a store failing mid-export cuts the connection, and the cut is logged as
// an error with the store's error and how far the export got.
func TestExportCutByStoreIsLogged(t *testing.T) {
	h, st := exportFixture(t, 300)
	logs := observeExports(t, h, &failingStore{countingStore: st, ok: 2})
	w := &discardFlusher{hd: http.Header{}}
	func() {
		defer func() {
			if r := recover(); r != http.ErrAbortHandler {
				t.Fatalf("recovered %v, want http.ErrAbortHandler", r)
			}
		}()
		h.serveExport(w, httptest.NewRequest("GET", "/", nil), schema.ListQuery{}, schema.FormatCSV, "http://x", 10)
	}()
	checkCutLine(t, logs, zapcore.ErrorLevel, "store", "store gone", 20, w.n)
}

// TestExportDeadlineNotMovedIsLogged: a response writer that cannot move its write deadline (here one
// that does not reach a connection) is said once per export, in the export log; the export still runs.
func TestExportDeadlineNotMovedIsLogged(t *testing.T) {
	h, st := exportFixture(t, 300)
	logs := observeExports(t, h, st)
	w := httptest.NewRecorder()
	h.serveExport(w, httptest.NewRequest("GET", "/", nil), schema.ListQuery{}, schema.FormatCSV, "http://x", 10)
	all := logs.All()
	if len(all) != 1 || all[0].Level != zapcore.WarnLevel || !strings.HasPrefix(all[0].Message, "export write deadline not moved") ||
		all[0].ContextMap()["error"] != http.ErrNotSupported.Error() {
		t.Fatalf("log of an export that cannot move its deadline over 30 pages: %v; want one warning with %v", all, http.ErrNotSupported)
	}
	if rows, err := csv.NewReader(w.Body).ReadAll(); err != nil || len(rows) != 302 {
		t.Fatalf("export of %d rows (%v), want 302 (2 header rows)", len(rows), err)
	}
}
