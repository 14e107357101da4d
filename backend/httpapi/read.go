package httpapi

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/directaid/directaid/backend"
	"github.com/directaid/directaid/internal/webutil"
	"github.com/directaid/directaid/schema"
)

// Cache lifetimes of the read side: lists and panorama change with every publication, so caches may
// keep them only briefly (and revalidate with the ETag); a detail carries a phone number, so only the
// reader's own browser may keep it.
const (
	cacheList   = "public, max-age=15"
	cacheDetail = "private, max-age=60"
)

// Query parameters each view accepts. "_" (a cache buster some HTTP clients add) is ignored everywhere.
var viewParams = schema.ViewParams

// Common misspellings of parameter names, so that the error says what was meant.
var paramAliases = map[string]string{
	"lat": "latitude", "latitud": "latitude", "lng": "longitude", "lon": "longitude", "long": "longitude", "longitud": "longitude",
	"radius": "radiusKm", "radio": "radiusKm", "radius_km": "radiusKm", "km": "radiusKm", "emergency": "emergencySlug", "slug": "emergencySlug",
	"emergencia": "emergencySlug", "search": "q", "query": "q", "text": "q", "buscar": "q", "tipo": "type", "categoria": "category",
	"categoría": "category", "urgencia": "urgency", "desde": "since", "limite": "limit", "límite": "limit", "page": "cursor",
	"offset": "cursor", "formato": "format",
}

// serveRead answers GET /api/public/v1/help?view=…; sent is its query (apiQuery).
func (h *Handler) serveRead(w http.ResponseWriter, r *http.Request, sent query) {
	q := sent.vals
	view := q.Get("view")
	allowed, ok := viewParams[view]
	if !ok {
		views := schema.Views
		backend.WriteProblem(w, backend.WithQueryFields(backend.InvalidParams([]schema.FieldError{backend.ParamError("view",
			fmt.Sprintf("«view» no admite %s; valores permitidos: %s (sin view: descubrimiento)", schema.Quote(view), strings.Join(views, ", ")), views...)})))
		return
	}
	if errs := checkParams(sent, view, allowed); len(errs) > 0 {
		backend.WriteProblem(w, backend.WithQueryFields(backend.InvalidParams(errs)))
		return
	}
	if f := readFormat(view, q.Get("format")); f != "" {
		defer h.svc.Config().Observe.Read(view, f, time.Now())
	}
	base := h.svc.BaseURL(r)
	switch view {
	case schema.ViewList:
		h.serveList(w, r, q, base)
	case schema.ViewDetail:
		d, err := h.svc.Detail(r.Context(), base, q.Get("id"))
		if err != nil {
			backend.WriteProblem(w, backend.WithQueryFields(backend.AsProblem(err)))
			return
		}
		body, err := json.Marshal(d)
		if err != nil {
			backend.WriteProblem(w, backend.AsProblem(err))
			return
		}
		serveCacheable(w, r, body, "application/json", cacheDetail)
	case schema.ViewPanorama:
		p, err := h.svc.Panorama(r.Context(), base, strings.TrimSpace(q.Get("emergencySlug")))
		if err != nil {
			backend.WriteProblem(w, backend.WithQueryFields(backend.AsProblem(err)))
			return
		}
		servePanorama(w, r, p)
	}
}

// readFormat is the format label of a read, or "" for a format that is refused (never a client's word).
func readFormat(view, format string) string {
	format = strings.TrimSpace(format)
	switch {
	case view != schema.ViewList || format == "":
		return schema.FormatJSON
	case slices.Contains([]string{schema.FormatJSON, schema.FormatCSV, schema.FormatGeoJSON, schema.FormatAtom}, format):
		return format
	}
	return ""
}

// checkParams names every parameter sent that view does not take (view "" is discovery, which takes
// none), unless it was sent empty and some view takes it (empty is absent); every one it takes sent bare
// (without a value); and every one repeated. A name no view takes is refused whatever its value.
func checkParams(sent query, view string, allowed []string) []schema.FieldError {
	var errs []schema.FieldError
	q := sent.vals
	for _, name := range sent.names {
		switch {
		case name == "_":
		case slices.Contains(sent.bare, name) && (slices.Contains(allowed, name) || name == "view"):
			errs = append(errs, bareParam(name))
		case !q.Has(name) && !slices.Contains(sent.bare, name) && (name == "view" || len(viewsTaking(name)) > 0):
			// Sent empty: absent, whichever view takes it.
		case !slices.Contains(allowed, name) && view == "":
			msg := fmt.Sprintf("el parámetro «%s» no existe", schema.Clip(name))
			if views := viewsTaking(name); len(views) > 0 {
				msg = fmt.Sprintf("el parámetro «%s» solo se usa con %s; sin view la respuesta es el documento de descubrimiento, que no admite parámetros", schema.Clip(name), strings.Join(views, " o "))
			}
			errs = append(errs, backend.ParamError(name, msg))
		case !slices.Contains(allowed, name):
			msg := fmt.Sprintf("el parámetro «%s» no existe con view=%s", schema.Clip(name), view)
			if views := viewsTaking(name); len(views) > 0 {
				msg += fmt.Sprintf(": solo se usa con %s", strings.Join(views, " o "))
			} else if a, ok := paramAliases[name]; ok && slices.Contains(allowed, a) {
				msg += fmt.Sprintf(" (¿quiso decir «%s»?)", a)
			} else if a, ok := paramAliases[strings.ToLower(name)]; ok && slices.Contains(allowed, a) {
				msg += fmt.Sprintf(" (¿quiso decir «%s»?)", a)
			}
			errs = append(errs, backend.ParamError(name, msg, allowed...))
		case len(q[name]) > 1:
			errs = append(errs, backend.ParamError(name, fmt.Sprintf("el parámetro «%s» está repetido: envíelo una sola vez", schema.Clip(name))))
		}
	}
	return errs
}

// viewsTaking lists the views that take the parameter name, as "view=…".
func viewsTaking(name string) []string {
	out := schema.ViewsTaking(name)
	for i, v := range out {
		out[i] = "view=" + v
	}
	return out
}

// decimal is what a number in a query string may be: digits with an optional decimal point and sign.
// strconv.ParseFloat alone takes Go's syntax too, which would read a typo as another number («4_5» is 45,
// «0x1p2» is 4) and take «Inf» and «NaN».
var decimal = regexp.MustCompile(`^[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)$`)

// parseDecimal reads a number of a query string (decimal).
func parseDecimal(s string) (float64, error) {
	if !decimal.MatchString(s) {
		return 0, strconv.ErrSyntax
	}
	return strconv.ParseFloat(s, 64)
}

// parseListQuery reads the list filters from a query string; it checks only syntax (numbers), the rest
// is Service.listSpec's.
func parseListQuery(v url.Values) (schema.ListQuery, []schema.FieldError) {
	var errs []schema.FieldError
	num := func(name string) *float64 {
		s := strings.TrimSpace(v.Get(name))
		if s == "" {
			return nil
		}
		f, err := parseDecimal(s)
		if err != nil {
			errs = append(errs, backend.ParamError(name, fmt.Sprintf("«%s» debe ser un número con punto decimal, p. ej. 4.5339 (se recibió %s)", name, schema.Quote(s))))
			return nil
		}
		return &f
	}
	q := schema.ListQuery{
		EmergencySlug: v.Get("emergencySlug"), Type: v.Get("type"), Category: v.Get("category"), Urgency: v.Get("urgency"),
		Municipio: v.Get("municipio"), Q: v.Get("q"), Latitude: num("latitude"), Longitude: num("longitude"), RadiusKm: num("radiusKm"),
		Status: v.Get("status"), Since: v.Get("since"), Attended: v.Get("attended"), Total: v.Get("total"), Cursor: v.Get("cursor"),
	}
	if s := strings.TrimSpace(v.Get("limit")); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			errs = append(errs, backend.ParamError("limit", fmt.Sprintf("«limit» debe ser un entero entre 1 y %d", schema.MaxListLimit)))
		} else {
			q.Limit = n
		}
	}
	return q, errs
}

func (h *Handler) serveList(w http.ResponseWriter, r *http.Request, v url.Values, base string) {
	format := strings.TrimSpace(v.Get("format"))
	formats := []string{schema.FormatJSON, schema.FormatCSV, schema.FormatGeoJSON, schema.FormatAtom}
	q, errs := parseListQuery(v)
	if format != "" && !slices.Contains(formats, format) {
		errs = append(errs, backend.ParamError("format", fmt.Sprintf("«format» no admite %s; valores permitidos: %s", schema.Quote(format), strings.Join(formats, ", ")), formats...))
	}
	all, allErrs := exportAllParam(v, format)
	if errs = append(errs, allErrs...); len(errs) > 0 {
		backend.WriteProblem(w, backend.WithQueryFields(backend.InvalidParams(errs)))
		return
	}
	if all {
		h.serveExport(w, r, q, format, base, backend.ExportPage)
		return
	}
	list, err := h.svc.List(r.Context(), base, q)
	if err != nil {
		backend.WriteProblem(w, backend.WithQueryFields(backend.AsProblem(err)))
		return
	}
	if list.NextCursor != "" {
		next := url.Values{}
		for k, vs := range v {
			next[k] = vs
		}
		next.Set("cursor", list.NextCursor)
		w.Header().Set("Link", "<"+base+schema.HelpPath+"?"+next.Encode()+`>; rel="next"`)
	}
	switch format {
	case schema.FormatCSV:
		body := listCSV(list)
		w.Header().Set("Content-Disposition", `inline; filename="ayudas.csv"`)
		serveCacheable(w, r, body, "text/csv; charset=utf-8", cacheList)
	case schema.FormatGeoJSON:
		serveStamped(w, r, listGeoJSON(list), func(g *schema.GeoJSONList) *time.Time { return &g.GeneratedAt }, "application/geo+json", cacheList)
	case schema.FormatAtom:
		serveCacheable(w, r, listAtom(h.svc, list, base, base+schema.HelpPath+"?"+r.URL.RawQuery), "application/atom+xml; charset=utf-8", cacheList) // atom.go
	default:
		serveStamped(w, r, list, func(l *schema.HelpList) *time.Time { return &l.GeneratedAt }, "application/json", cacheList)
	}
}

func servePanorama(w http.ResponseWriter, r *http.Request, p *schema.Panorama) {
	serveStamped(w, r, p, func(p *schema.Panorama) *time.Time { return &p.GeneratedAt }, "application/json", cacheList)
}

// serveStamped serves v with an ETag that ignores its generation time (stamp), so that an unchanged
// list revalidates with 304 although every answer says when it was generated. The body is encoded into
// a pooled buffer (ServeHTTP's Write copies it): a list's answer is its largest allocation.
func serveStamped[T any](w http.ResponseWriter, r *http.Request, v *T, stamp func(*T) *time.Time, contentType, cacheControl string) {
	buf := bodyPool.Get().(*bytes.Buffer)
	defer putBody(buf)
	buf.Reset()
	if err := json.NewEncoder(buf).Encode(v); err != nil { // Marshal's bytes, and a newline
		backend.WriteProblem(w, backend.AsProblem(err))
		return
	}
	body := buf.Bytes()[:buf.Len()-1]
	parts, ok := unstampedJSON(body, *stamp(v))
	if !ok { // not found (it always is): encode again without the stamp
		at := *stamp(v)
		*stamp(v) = time.Time{}
		unstamped, err := json.Marshal(v)
		*stamp(v) = at
		if err != nil {
			backend.WriteProblem(w, backend.AsProblem(err))
			return
		}
		parts = [][]byte{unstamped}
	}
	serveWithETag(w, r, body, webutil.ETagOf(parts...), contentType, cacheControl)
}

var bodyPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// putBody returns a buffer to bodyPool unless an unusual answer grew it (a page of 100 is ~75 KB).
func putBody(b *bytes.Buffer) {
	if b.Cap() <= 1<<20 {
		bodyPool.Put(b)
	}
}

// zeroStamp is how encoding/json writes a zero generatedAt.
var zeroStamp = []byte(`"generatedAt":"0001-01-01T00:00:00Z"`)

// unstampedJSON is body, the encoding of a value stamped `at` in its field generatedAt, as it would be
// encoded with a zero stamp, in parts to be read in a row: the first `"generatedAt":"<at>"` replaced.
// Inside a JSON string a quote is always escaped, so that text can only be a member; a list's items have
// no generatedAt, and it comes before them. This saves encoding every answer twice, and copying it
// (TestUnstampedJSON).
func unstampedJSON(body []byte, at time.Time) ([][]byte, bool) {
	if at.IsZero() {
		return [][]byte{body}, bytes.Contains(body, zeroStamp)
	}
	if y := at.Year(); y < 0 || y > 9999 { // encoding/json refuses them
		return nil, false
	}
	var member [64]byte // as encoding/json writes a time: RFC 3339 with nanoseconds, quoted
	m := append(at.AppendFormat(append(append(member[:0], `"generatedAt":`...), '"'), time.RFC3339Nano), '"')
	i := bytes.Index(body, m)
	if i < 0 {
		return nil, false
	}
	return [][]byte{body[:i], zeroStamp, body[i+len(m):]}, true
}

// listCSV renders a list as CSV: a header row, the HXL hashtag row, then one row per record, by the
// columns of schema.CSVColumns.
func listCSV(list *schema.HelpList) []byte {
	var buf bytes.Buffer
	cw := csv.NewWriter(&buf)
	for _, head := range csvHeaderRows() {
		_ = cw.Write(head)
	}
	row := make([]string, len(schema.CSVColumns))
	for k := range list.Items {
		for i, c := range schema.CSVColumns {
			row[i] = c.Cell(&list.Items[k])
		}
		_ = cw.Write(row)
	}
	cw.Flush()
	return buf.Bytes()
}

// listGeoJSON renders a list as a FeatureCollection. A record without coordinates (an offer may have
// none) keeps its place with a null geometry, so features line up with total and the paging.
func listGeoJSON(list *schema.HelpList) *schema.GeoJSONList {
	out := &schema.GeoJSONList{Type: "FeatureCollection", Features: make([]schema.GeoJSONFeature, len(list.Items)),
		GeneratedAt: list.GeneratedAt, Total: list.Total, TotalExact: list.TotalExact, NextCursor: list.NextCursor}
	for i, it := range list.Items {
		out.Features[i] = geoJSONFeature(it)
	}
	return out
}

// csvHeaderRows are the first two rows of a CSV export: the column names and their HXL hashtags.
func csvHeaderRows() [2][]string {
	var names, tags []string
	for _, c := range schema.CSVColumns {
		names, tags = append(names, c.Name), append(tags, c.HXL)
	}
	return [2][]string{names, tags}
}

func geoJSONFeature(it schema.PublicHelp) schema.GeoJSONFeature {
	f := schema.GeoJSONFeature{Type: "Feature", ID: it.ID, Properties: it}
	if it.Location != nil && it.Location.Latitude != nil && it.Location.Longitude != nil {
		f.Geometry = &schema.GeoJSONPoint{Type: "Point", Coordinates: [2]float64{*it.Location.Longitude, *it.Location.Latitude}}
	}
	return f
}
