package backend

import (
	"bufio"
	"cmp"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/directaid/directaid/backend/store"
	"github.com/directaid/directaid/schema"
)

// A whole export (view=list&format=csv|geojson&all=true) streams every record that matches, page by page
// from the store, flushing each page before reading the next: the handler holds one page, whatever the
// size of the result, and the client starts receiving at once (Transfer-Encoding: chunked).
const (
	// exportPage is the records read from the store per page of a whole export.
	exportPage = 200
	// exportWriteWindow is how long the client has to take each page: the server's write timeout covers
	// a whole response, which a large export outlives, so it is moved on page by page.
	exportWriteWindow = 30 * time.Second
)

// exportPager reads the pages of a whole export from the store, in list order (cursor paging, so every
// record is read exactly once even while new ones arrive). A goroutine reads page k+1 while the handler
// writes page k: on two cores reading (mostly decoding records) and writing overlap, and the handler
// still holds at most two pages.
type exportPager struct {
	s      *Service
	base   string
	spec   *store.ListSpec
	done   bool
	pages  chan exportPageRead
	cancel context.CancelFunc
}

type exportPageRead struct {
	items []schema.PublicHelp
	last  bool
	err   error
}

// export starts a whole export of q; errors are *Problem for bad input. q.Limit must be unset. The
// caller must stop it.
func (s *Service) export(ctx context.Context, q schema.ListQuery, base string, page int) (*exportPager, error) {
	spec, errs := s.listSpec(&q)
	if errs != nil {
		return nil, invalidParams(errs)
	}
	spec.Limit, spec.NoTotal, spec.Bulk = page, true, true
	p := &exportPager{s: s, base: base, spec: spec, pages: make(chan exportPageRead)}
	ctx, p.cancel = context.WithCancel(ctx)
	go p.read(ctx)
	return p, nil
}

// stop ends the reading goroutine (at once, or after the page it is reading).
func (p *exportPager) stop() { p.cancel() }

func (p *exportPager) read(ctx context.Context) {
	defer close(p.pages)
	for {
		items, last, err := p.readPage(ctx)
		select {
		case p.pages <- exportPageRead{items, last, err}:
		case <-ctx.Done():
			return
		}
		if last || err != nil {
			return
		}
	}
}

// next returns the next page (empty once done).
func (p *exportPager) next(ctx context.Context) ([]schema.PublicHelp, error) {
	if p.done {
		return nil, nil
	}
	select {
	case r, ok := <-p.pages:
		if !ok {
			return nil, cmp.Or(ctx.Err(), context.Canceled)
		}
		p.done = r.last || r.err != nil
		return r.items, r.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (p *exportPager) readPage(ctx context.Context) (items []schema.PublicHelp, last bool, err error) {
	res, err := p.s.store.List(ctx, p.spec)
	if err != nil {
		return nil, false, err
	}
	items = make([]schema.PublicHelp, 0, len(res.Records))
	now := p.s.now()
	counts, err := p.s.responseCounts(ctx, res.Records, now)
	if err != nil {
		return nil, false, err
	}
	for i, rec := range res.Records {
		rec = readAt(rec, now)
		if !listed(rec.Status) { // a change feed's tombstone: nothing to export
			continue
		}
		var dist *float64
		if p.spec.Near {
			d := math.Round(res.Distances[i]*1000) / 1000
			dist = &d
		}
		item := schema.PublicHelp(publicRecord(p.s, p.base, rec, dist, schema.PublicContact{Name: rec.ContactName, Available: contactShown(rec)}))
		item.Responses = counts[rec.ID]
		items = append(items, item)
	}
	if res.Next == nil {
		return items, true, nil
	}
	p.spec.After = res.Next
	return items, false, nil
}

// exportAllParam checks the «all» parameter of view=list: "true" (only with format=csv or geojson, and
// without limit) asks for the whole result in one response.
func exportAllParam(v url.Values, format string) (bool, []schema.FieldError) {
	all := strings.TrimSpace(v.Get("all"))
	switch {
	case all == "":
		return false, nil
	case all != "true":
		return false, []schema.FieldError{paramError("all", fmt.Sprintf("«all» solo admite true (se recibió %s)", schema.Quote(all)), "true")}
	case format != schema.FormatCSV && format != schema.FormatGeoJSON:
		return false, []schema.FieldError{paramError("all", "«all» solo se usa con format=csv o format=geojson: la lista JSON se recorre por páginas con nextCursor")}
	case v.Has("limit"):
		return false, []schema.FieldError{paramError("limit", "«limit» no se usa con all=true: la exportación completa trae todos los registros")}
	}
	return true, nil
}

// serveExport streams a whole export. A store error before the first byte is an error answer; after it,
// the connection is cut (http.ErrAbortHandler) so that the client sees an incomplete body, never a
// complete-looking partial file.
func (h *Handler) serveExport(w http.ResponseWriter, r *http.Request, q schema.ListQuery, format, base string, page int) {
	pager, err := h.svc.export(r.Context(), q, base, page)
	if err != nil {
		writeProblem(w, withQueryFields(AsProblem(err)))
		return
	}
	defer pager.stop()
	start, generated := time.Now(), h.svc.now().UTC()
	items, err := pager.next(r.Context())
	if err != nil {
		writeProblem(w, withQueryFields(AsProblem(err)))
		return
	}
	hd := w.Header()
	hd.Set("Cache-Control", cacheList)
	switch format {
	case schema.FormatCSV:
		hd.Set("Content-Type", "text/csv; charset=utf-8")
		hd.Set("Content-Disposition", `attachment; filename="ayudas.csv"`)
	default:
		hd.Set("Content-Type", "application/geo+json")
	}
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodHead {
		return
	}
	if wrap := h.svc.cfg.ExportWriter; wrap != nil {
		w = wrap(w, r)
	}
	rc := http.NewResponseController(w)
	cw := &countWriter{w: w}
	bw := bufio.NewWriterSize(cw, 32<<10)
	var ew exportWriter
	if format == schema.FormatCSV {
		ew = newCSVExport(bw)
	} else {
		ew = &geoJSONExport{w: bw, generated: generated}
	}
	// A cut is logged with how far the export got (the client only sees a cut body), then the
	// connection is cut.
	var written int64
	abort := func(byStore bool, err error) {
		h.svc.cfg.Observe.exportCut(format, written, cw.n, start, byStore, err)
		panic(http.ErrAbortHandler)
	}
	if err := ew.start(); err != nil {
		abort(false, err)
	}
	deadlineMoved := true
	for {
		// Without a deadline moved, the export is cut at the server's write timeout: say so once.
		if err := rc.SetWriteDeadline(time.Now().Add(exportWriteWindow)); err != nil && deadlineMoved {
			deadlineMoved = false
			h.svc.cfg.Observe.exportDeadlineFixed(format, err)
		}
		for i := range items {
			if err := ew.item(&items[i]); err != nil {
				abort(false, err)
			}
			written++
		}
		if err := bw.Flush(); err != nil {
			abort(false, err)
		}
		if err := rc.Flush(); err != nil {
			abort(false, err)
		}
		if pager.done {
			break
		}
		if items, err = pager.next(r.Context()); err != nil {
			abort(r.Context().Err() == nil, err)
		}
	}
	if err := ew.end(); err != nil {
		abort(false, err)
	}
	if err := bw.Flush(); err != nil {
		abort(false, err)
	}
}

// countWriter counts the bytes written through it.
type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

type exportWriter interface {
	start() error
	item(*schema.PublicHelp) error
	end() error
}

// csvExport writes the rows of listCSV, one page at a time.
type csvExport struct {
	cw  *csv.Writer
	row []string
}

func newCSVExport(w *bufio.Writer) *csvExport {
	return &csvExport{cw: csv.NewWriter(w), row: make([]string, len(schema.CSVColumns))}
}

func (c *csvExport) start() error {
	for _, head := range csvHeaderRows() {
		if err := c.cw.Write(head); err != nil {
			return err
		}
	}
	return nil
}

func (c *csvExport) item(it *schema.PublicHelp) error {
	for i, col := range schema.CSVColumns {
		c.row[i] = col.Cell(it)
	}
	return c.cw.Write(c.row)
}

func (c *csvExport) end() error {
	c.cw.Flush()
	return c.cw.Error()
}

// geoJSONExport writes the FeatureCollection of listGeoJSON, feature by feature; total (every feature,
// exact) comes after them, since it is known only at the end.
type geoJSONExport struct {
	w         *bufio.Writer
	generated time.Time
	n         int
}

func (g *geoJSONExport) start() error {
	_, err := g.w.WriteString(`{"type":"FeatureCollection","features":[`)
	return err
}

func (g *geoJSONExport) item(it *schema.PublicHelp) error {
	b, err := json.Marshal(geoJSONFeature(*it))
	if err != nil {
		return err
	}
	if g.n > 0 {
		_ = g.w.WriteByte(',')
	}
	g.n++
	_, err = g.w.Write(b)
	return err
}

func (g *geoJSONExport) end() error {
	at, err := json.Marshal(g.generated)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(g.w, `],"generatedAt":%s,"total":%d,"totalExact":true}`, at, g.n)
	return err
}
