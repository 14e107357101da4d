package httpapi

import (
	"bufio"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/directaid/directaid/backend"
	"github.com/directaid/directaid/schema"
)

// exportAllParam checks the «all» parameter of view=list: "true" (only with format=csv or geojson, and
// without limit) asks for the whole result in one response.
func exportAllParam(v url.Values, format string) (bool, []schema.FieldError) {
	all := strings.TrimSpace(v.Get("all"))
	switch {
	case all == "":
		return false, nil
	case all != "true":
		return false, []schema.FieldError{backend.ParamError("all", fmt.Sprintf("«all» solo admite true (se recibió %s)", schema.Quote(all)), "true")}
	case format != schema.FormatCSV && format != schema.FormatGeoJSON:
		return false, []schema.FieldError{backend.ParamError("all", "«all» solo se usa con format=csv o format=geojson: la lista JSON se recorre por páginas con nextCursor")}
	case v.Has("limit"):
		return false, []schema.FieldError{backend.ParamError("limit", "«limit» no se usa con all=true: la exportación completa trae todos los registros")}
	}
	return true, nil
}

// serveExport streams a whole export. A store error before the first byte is an error answer; after it,
// the connection is cut (http.ErrAbortHandler) so that the client sees an incomplete body, never a
// complete-looking partial file.
func (h *Handler) serveExport(w http.ResponseWriter, r *http.Request, q schema.ListQuery, format, base string, page int) {
	pager, err := h.svc.Export(r.Context(), backend.ClientNet(backend.ClientIP(r)), q, base, page)
	if err != nil {
		backend.WriteProblem(w, backend.WithQueryFields(backend.AsProblem(err)))
		return
	}
	defer pager.Stop()
	start, generated := time.Now(), h.svc.Now().UTC()
	items, err := pager.Next(r.Context())
	if err != nil {
		backend.WriteProblem(w, backend.WithQueryFields(backend.AsProblem(err)))
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
	if wrap := h.svc.Config().ExportWriter; wrap != nil {
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
		h.svc.Config().Observe.ExportCut(format, written, cw.n, start, byStore, err)
		panic(http.ErrAbortHandler)
	}
	if err := ew.start(); err != nil {
		abort(false, err)
	}
	deadlineMoved := true
	for {
		// Without a deadline moved, the export is cut at the server's write timeout: say so once.
		if err := rc.SetWriteDeadline(time.Now().Add(backend.ExportWriteWindow)); err != nil && deadlineMoved {
			deadlineMoved = false
			h.svc.Config().Observe.ExportDeadlineFixed(format, err)
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
		if pager.Done() {
			break
		}
		if items, err = pager.Next(r.Context()); err != nil {
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
