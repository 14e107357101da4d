package site

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/directaid/directaid/schema"
)

// The published records on the site: a page per record at its publicUrl (/ayudas/{id}, the only page
// with the phone number), and on each emergency's page the list of its records, filtered and paged by
// query parameters (a name for the contact, never a number). Both are read per request through
// Options.List and Options.Detail and rendered from Markdown like every page, but never kept in the
// render cache: they change with every publication.

const (
	// A record's page carries a phone number: only the reader's own browser may keep it, as view=detail.
	recordCache = "private, max-age=60"
	// An emergency's page lists records, which change with every publication, as view=list does.
	listCache = "public, max-age=15"
)

// maxSitemapRecords bounds the record pages in sitemap.xml: the newest maxSitemapRecords/n records of
// each of the n active emergencies (at least one each); records of inactive emergencies are left out.
// The sitemap helps search engines find what is current; it is not an export (the API pages through
// everything, and each emergency's page links to its older records). Building it costs about
// maxSitemapRecords/schema.MaxListLimit list reads.
const maxSitemapRecords = 1000

// ErrNotFound is what Options.Detail returns when no record has the id.
var ErrNotFound = errors.New("site: no such record")

// ErrGone is what Options.Detail returns for a record withdrawn by its publisher or hidden by
// moderation: its page answers 410.
var ErrGone = errors.New("site: record withdrawn or hidden")

// QueryError is what Options.List returns for filters it refuses; Details name each parameter.
type QueryError struct{ Details []schema.FieldError }

func (e *QueryError) Error() string {
	return fmt.Sprintf("site: %d invalid list parameters", len(e.Details))
}

// listHeading is the heading of an emergency page's list; the filter form goes right after it.
const listHeading = "Solicitudes y ofrecimientos publicados"

// The query parameters an emergency's page honours, with the names view=list gives them: the filters
// of its form and the cursor of its paging. Any other parameter (emergencySlug: the page's own; limit;
// a campaign tag) is ignored, as web pages do.
var (
	filterParams = []string{"type", "category", "urgency", "q", "attended"}
	nearParams   = []string{"latitude", "longitude", "radiusKm"}
)

// filterHints replace the API's descriptions of the filters, which speak of parameters, not of a form.
var filterHints = map[string]string{
	"q":         "Palabras del título o de la descripción; no importan las mayúsculas ni las tildes.",
	"latitude":  "Por ejemplo 4.5339. Su aplicación de mapas la muestra al mantener presionado un lugar.",
	"longitude": "Por ejemplo -75.6811.",
	"radiusKm":  fmt.Sprintf("Por defecto %d km; como máximo %d.", schema.DefaultRadiusKm, schema.MaxRadiusKm),
}

// filterSpec is the filter form of the emergency pages, derived from the ListQuery schema.
type filterSpec struct{ filters, near []field }

func newFilterSpec() (*filterSpec, error) {
	fields, err := schemaFields("ListQuery")
	if err != nil {
		return nil, err
	}
	s := &filterSpec{}
	for _, f := range fields {
		switch {
		case slices.Contains(filterParams, f.Name):
			s.filters = append(s.filters, f)
		case slices.Contains(nearParams, f.Name):
			s.near = append(s.near, f)
		}
	}
	if len(s.filters) != len(filterParams) || len(s.near) != len(nearParams) {
		return nil, errors.New("site: the ListQuery schema lacks a filter of the emergency pages")
	}
	return s, nil
}

// filterView is what the filter form template sees.
type filterView struct {
	Action       string
	Open         bool // filters are refused: show the form unfolded (else the list comes first, on a phone)
	Applied      int  // how many filters are applied
	Inputs, Near []input
	Reset        string // the page without filters, when some are applied
}

func (s *filterSpec) view(action string, vals url.Values) *filterView {
	fv := &filterView{Action: action}
	build := func(fields []field) []input {
		var out []input
		for _, f := range fields {
			in := newInput(f)
			in.ID = "filtro-" + f.Name
			if h, ok := filterHints[f.Name]; ok {
				in.Hint = h
			}
			if in.Kind == "select" {
				in.Options[0].Label = "Todas" // categories and urgencies are feminine
				if f.Name == "type" {
					in.Options[0].Label = "Todos" // types are masculine
				}
			}
			if f.Name == "attended" {
				in.Label = "Respuestas"
				for i, o := range in.Options {
					in.Options[i].Label = map[string]string{"": "Todas", "false": "Solo las que nadie ha respondido todavía", "true": "Solo las que alguien ya está atendiendo"}[o.Value]
				}
			}
			in.setValue(vals.Get(f.Name))
			out = append(out, in)
		}
		return out
	}
	fv.Inputs, fv.Near = build(s.filters), build(s.near)
	return fv
}

// refuse marks the inputs that details name and returns the messages, with the fields' labels.
func (fv *filterView) refuse(details []schema.FieldError) []string {
	var out []string
	for _, d := range details {
		name, m := strings.TrimPrefix(d.Field, "/"), d.Message
		var field *input
		for _, ins := range [][]input{fv.Inputs, fv.Near} {
			for i := range ins {
				m = withLabel(m, &ins[i]) // "«longitude» es obligatorio junto con «latitude»" names two
				if ins[i].Name == name {
					field = &ins[i]
				}
			}
		}
		if field != nil {
			field.Error = m
		}
		if name == "cursor" {
			m = "El enlace «Ver más» ya no sirve con estos filtros: vuelva a la primera página."
		}
		out = append(out, upperFirst(m)+".")
	}
	return out
}

func upperFirst(s string) string {
	r, n := utf8.DecodeRuneInString(s)
	return strings.ToUpper(string(r)) + s[n:]
}

// recordView is a record as the pages show it: its facts in words, user text still raw (the templates
// pass it through md). It has no phone number; detailView adds it for the record's own page.
type recordView struct {
	URL, Title                              string
	Type, Category, Urgency, People, Status string // in words; "" when the record has none
	EmergencyTitle, EmergencyURL            string // EmergencyURL is "" when its page is gone (inactive)
	Address, Neighborhood, Place            string
	Coords, MapURL, Distance                string
	// Municipio and Town name where the record is (Town: the centro poblado, when one was given);
	// Precision says in words how exact Coords are ("" when exact).
	Municipio, Town, Precision string
	Created                    string
	Updated                    string   // "" when the record has not changed since (to the minute)
	Description                []string // its lines, without the empty ones
	Excerpt                    string   // its beginning, on one line
	ContactName                string
	// Helping is «N personas dicen que están ayudando» (its responses), "" when nobody responded.
	Helping string
}

type detailView struct {
	recordView
	Phone       string
	WhatsappURL string       // "" unless it is a plain https://wa.me/ link
	Details     []detailItem // the lines of «Detalles» (recordLines)
	Expired     bool         // its time passed unrenewed: no phone shown until its publisher renews it
}

// excerptRunes is how much of a description the lists show.
const excerptRunes = 160

var colombiaTime = time.FixedZone("COT", -5*60*60) // no daylight saving time

func newRecordView[C any](v *view, r *schema.HelpRecord[C], contactName string) recordView {
	rv := recordView{URL: v.base + schema.RecordPath(r.ID), Title: r.Title, Type: enumLabels[r.Type], Category: enumLabels[r.Category],
		Urgency: enumLabels[r.Urgency], Status: enumLabels[r.CollectionCenterStatus], EmergencyTitle: r.Emergency.Title,
		Created: spanishDateTime(r.CreatedAt), ContactName: contactName}
	if u := spanishDateTime(r.UpdatedAt); !r.UpdatedAt.IsZero() && u != rv.Created {
		rv.Updated = u
	}
	switch n := r.Responses; {
	case n == 1:
		rv.Helping = "1 persona dice que está ayudando"
	case n > 1:
		rv.Helping = fmt.Sprintf("%d personas dicen que están ayudando", n)
	}
	if r.NeededPeople != nil {
		rv.People = fmt.Sprintf("%d personas", *r.NeededPeople)
		if *r.NeededPeople == 1 {
			rv.People = "1 persona"
		}
	}
	for _, e := range v.ems {
		if e.Slug == r.Emergency.Slug {
			rv.EmergencyURL = v.base + schema.EmergencyPath(e.Slug)
		}
	}
	if l := r.Location; l != nil {
		rv.Address, rv.Neighborhood = l.Address, l.Neighborhood
		rv.Municipio = l.Municipio
		if len(l.PlaceCode) == 8 {
			rv.Town = l.PlaceName
		}
		rv.Place = strings.Join(nonEmpty(l.Address, l.Neighborhood, cmp.Or(rv.Town, rv.Municipio)), ", ")
		rv.Precision = precisionWords[l.Precision]
		if l.Latitude != nil && l.Longitude != nil {
			lat, lon := strconv.FormatFloat(*l.Latitude, 'f', -1, 64), strconv.FormatFloat(*l.Longitude, 'f', -1, 64)
			rv.Coords = lat + ", " + lon
			rv.MapURL = fmt.Sprintf("https://www.openstreetmap.org/?mlat=%s&mlon=%s#map=16/%s/%s", lat, lon, lat, lon)
		}
		if l.DistanceKm != nil {
			rv.Distance = strings.Replace(strconv.FormatFloat(*l.DistanceKm, 'f', 1, 64), ".", ",", 1) + " km"
		}
	}
	for line := range strings.SplitSeq(r.Description, "\n") {
		if line = strings.TrimSpace(line); line != "" {
			rv.Description = append(rv.Description, line)
		}
	}
	rv.Excerpt = strings.Join(strings.Fields(r.Description), " ")
	if utf8.RuneCountInString(rv.Excerpt) > excerptRunes {
		rv.Excerpt = string([]rune(rv.Excerpt)[:excerptRunes]) + "…"
	}
	return rv
}

// precisionWords say how exact a record's coordinates are, after them.
var precisionWords = map[string]string{
	schema.PrecisionPlace: "aproximadas: el punto del municipio o centro poblado, no el de la dirección",
	schema.PrecisionGPS:   "del GPS de un teléfono",
}

func nonEmpty(ss ...string) []string {
	var out []string
	for _, s := range ss {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}

var waLink = regexp.MustCompile(`^https://wa\.me/[0-9]{6,15}$`)

func newDetailView(v *view, d *schema.PublicHelpDetail) *detailView {
	r := schema.HelpRecord[schema.DetailContact](*d)
	dv := &detailView{recordView: newRecordView(v, &r, d.Contact.Name), Phone: d.Contact.Whatsapp, Expired: d.Status == "expired"}
	if waLink.MatchString(d.Contact.WhatsappURL) {
		dv.WhatsappURL = d.Contact.WhatsappURL
	}
	rec, err := json.Marshal(d)
	if err == nil {
		dv.Details, err = detailItems(dv, rec)
	}
	if err != nil { // a record the server just encoded as JSON
		panic(err)
	}
	return dv
}

// listView is what an emergency page's template sees of its list.
type listView struct {
	Heading  string
	Intro    string // how many records, in which order
	Items    []recordView
	Filtered bool
	Errors   []string // why the filters were refused; no items then
	// Absolute URLs: the next page, the first page (on a later one), the page without filters, and
	// the same list from the API.
	Next, First, Reset, API string
}

// list reads the records an emergency's page shows for the request's query parameters, and builds
// the filter form that chose them. status is 400 when the filters are refused.
func (v *view) list(ctx context.Context, e *schema.EmergencyInfo, query url.Values) (*listView, *filterView, int, error) {
	path := schema.EmergencyPath(e.Slug)
	kept := url.Values{}
	for _, name := range append(append(filterParams, nearParams...), "cursor") {
		if s := strings.TrimSpace(query.Get(name)); s != "" {
			kept.Set(name, s)
		}
	}
	filters := maps.Clone(kept)
	filters.Del("cursor")
	lv := &listView{Heading: listHeading, Filtered: len(filters) > 0}
	fv := v.h.filter.view(path, kept)
	if lv.Filtered {
		lv.Reset, fv.Reset = v.base+path, path
		for _, name := range filterParams {
			if filters.Has(name) {
				fv.Applied++
			}
		}
		if slices.ContainsFunc(nearParams, filters.Has) {
			fv.Applied++ // a point and its radius are one filter
		}
	}
	q, errs := v.h.o.ParseList(kept)
	var list *schema.HelpList
	if len(errs) == 0 {
		q.EmergencySlug = e.Slug
		var err error
		list, err = v.h.o.List(ctx, v.base, q)
		var qe *QueryError
		switch {
		case errors.As(err, &qe):
			errs = qe.Details
		case err != nil:
			return nil, nil, 0, err
		}
	}
	if len(errs) > 0 {
		lv.Errors, fv.Open = fv.refuse(errs), true
		lv.Reset = v.base + path
		return lv, fv, http.StatusBadRequest, nil
	}
	api := url.Values{"view": {schema.ViewList}, "emergencySlug": {e.Slug}}
	maps.Copy(api, kept)
	lv.API = v.base + schema.HelpPath + "?" + api.Encode()
	if list.NextCursor != "" {
		next := maps.Clone(filters)
		next.Set("cursor", list.NextCursor)
		lv.Next = v.base + path + "?" + next.Encode()
	}
	if kept.Has("cursor") {
		lv.First = v.base + path
		if len(filters) > 0 {
			lv.First += "?" + filters.Encode()
		}
	}
	for i := range list.Items {
		r := schema.HelpRecord[schema.PublicContact](list.Items[i])
		lv.Items = append(lv.Items, newRecordView(v, &r, r.Contact.Name))
	}
	lv.Intro = listIntro(list, lv.Filtered, q.Latitude != nil, kept.Has("cursor"))
	return lv, fv, http.StatusOK, nil
}

// listIntro says how many records there are and in which order they come.
func listIntro(l *schema.HelpList, filtered, near, later bool) string {
	switch {
	case l.Total == 0 && filtered:
		return "Ninguna publicación cumple estos filtros."
	case l.Total == 0:
		return "Todavía no hay publicaciones en esta emergencia."
	case len(l.Items) == 0:
		return "No hay más publicaciones."
	}
	n := fmt.Sprintf("%d publicaciones", l.Total)
	if l.Total == 1 {
		n = "1 publicación"
	}
	if !l.TotalExact {
		n = "Alrededor de " + n
	}
	s := n + " en esta emergencia"
	if filtered {
		s = n + " cumplen los filtros"
		if l.Total == 1 {
			s = n + " cumple los filtros"
		}
	}
	order := "las más recientes primero"
	if near {
		order = "las más cercanas al punto primero"
	}
	page := "aquí están"
	if later {
		page = "esta página sigue la lista,"
	}
	return fmt.Sprintf("%s; %s %s. Cada una muestra el nombre de contacto; el número de WhatsApp está en su propia página.", s, page, order)
}

// recentRecords are the records the sitemap lists: see maxSitemapRecords.
func (v *view) recentRecords(ctx context.Context) ([]schema.PublicHelp, error) {
	if v.h.o.List == nil || len(v.ems) == 0 {
		return nil, nil
	}
	share := max(maxSitemapRecords/len(v.ems), 1)
	var out []schema.PublicHelp
	for _, e := range v.ems {
		q := schema.ListQuery{EmergencySlug: e.Slug}
		for n := 0; n < share; {
			q.Limit = min(share-n, schema.MaxListLimit)
			l, err := v.h.o.List(ctx, v.base, q)
			if err != nil {
				return nil, err
			}
			out = append(out, l.Items...)
			n += len(l.Items)
			if l.NextCursor == "" || len(l.Items) == 0 {
				break
			}
			q.Cursor = l.NextCursor
		}
	}
	return out, nil
}
