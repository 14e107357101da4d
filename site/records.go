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

	"github.com/directaid/directaid/backend/places"
	"github.com/directaid/directaid/schema"
)

// The published records on the site: a page per record at its publicUrl (/ayudas/{id}, the only page
// with the phone number), and on each emergency's page the list of its records, filtered and paged by
// query parameters (a name for the contact, never a number). Both are read per request through
// Service.List and Service.Detail and rendered from Markdown like every page, but never kept in the
// render cache: they change with every publication.

const (
	// A record's page carries a phone number: only the reader's own browser may keep it, and it asks
	// again (by ETag) every time, so that a report, a resolution or a withdrawal shows at once.
	recordCache = "private, no-cache"
	// recordRobots is the X-Robots-Tag of a record's page and twin.
	recordRobots = "noarchive, nosnippet"
	// An emergency's page lists records, which change with every publication: revalidated every time.
	listCache = "no-cache"
)

// maxSitemapRecords bounds the record pages in sitemap.xml: the newest maxSitemapRecords/n records of
// each of the n active emergencies (at least one each); records of inactive emergencies are left out.
// The sitemap helps search engines find what is current; it is not an export (the API pages through
// everything, and each emergency's page links to its older records). Building it costs about
// maxSitemapRecords/schema.MaxListLimit list reads.
const maxSitemapRecords = 1000

// ErrNotFound is what Service.Detail returns when no record has the id.
var ErrNotFound = errors.New("site: no such record")

// ErrGone is what Service.Detail returns for a record withdrawn by its publisher or hidden by
// moderation: its page answers 410.
var ErrGone = errors.New("site: record withdrawn or hidden")

// ErrHidden is the ErrGone of a record hidden while reports are reviewed, which its publisher can still
// withdraw.
var ErrHidden = fmt.Errorf("%w: hidden", ErrGone)

// ErrErased is what the moderation's Act returns for an action that would show again a record whose
// personal data were erased.
var ErrErased = errors.New("site: the record's personal data were erased")

// UnavailableError is what a Service read returns when the database cannot answer for now (a PostgreSQL
// restart, a disk that refuses writes): the page answers 503 with Retry-After, not 500.
type UnavailableError struct {
	RetryAfter int // seconds; 0 when unknown
	Err        error
}

func (e *UnavailableError) Error() string {
	return "site: the service is unavailable: " + e.Err.Error()
}
func (e *UnavailableError) Unwrap() error { return e.Err }

// QueryError is what Service.List returns for filters it refuses; Details name each parameter.
type QueryError struct{ Details []schema.FieldError }

func (e *QueryError) Error() string {
	return fmt.Sprintf("site: %d invalid list parameters", len(e.Details))
}

// listHeading is the heading of an emergency page's list; the filter form goes right after it.
const listHeading = "Publicaciones"

// The query parameters an emergency's page honours, with the names view=list gives them: the filters
// of its form and the cursor of its paging. Any other parameter (emergencySlug: the page's own; limit;
// a campaign tag) is ignored, as web pages do.
var (
	filterParams = []string{"type", "category", "urgency", "q", "municipio", "attended"}
	nearParams   = []string{"latitude", "longitude", "radiusKm"}
)

// filterHints replace the API's descriptions of the filters, which speak of parameters, not of a form.
var filterHints = map[string]string{
	"q":         "Palabras del título o de la descripción, o el nombre de un municipio; no importan las mayúsculas, las tildes ni el plural.",
	"municipio": "Su nombre («pereira», «armenia quindio») o su código DANE (66001).",
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
					in.Options[i].Label = map[string]string{"": "Todas", "false": "Sin nadie ayudando todavía", "true": "Con alguien ayudando"}[o.Value]
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

// municipioParam is how the service's messages give a municipio's code as a query parameter, and
// guessQuestion how they ask about a typo's places; the page says both with links (listView.Guesses).
var (
	municipioParam = regexp.MustCompile(` \(municipio=[0-9]{5}\)`)
	guessQuestion  = regexp.MustCompile(`; ¿quiso decir [^?]*\?`)
)

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
		m = municipioParam.ReplaceAllString(m, "") // the API's «Armenia (Quindío) (municipio=63001)»: Guesses link it
		m = guessQuestion.ReplaceAllString(m, "")  // «; ¿quiso decir Pereira (Risaralda)?»: Guesses ask it, with links
		m = strings.Replace(m, "no es el código DIVIPOLA (5 dígitos) ni el nombre de ningún municipio", "no es el nombre de ningún municipio", 1)
		if field != nil {
			field.Error = m
		}
		if name == "cursor" {
			m = "El enlace «Ver más» ya no sirve con estos filtros: vuelva a la primera página"
		}
		out = append(out, upperFirst(strings.TrimSuffix(m, "."))+".")
	}
	return out
}

// kmWords is a distance as a Colombian reader writes it: «1,2 km».
func kmWords(km float64) string {
	return strings.Replace(strconv.FormatFloat(km, 'f', 1, 64), ".", ",", 1) + " km"
}

// approximate says a distance (kmWords) is from or to a town's point, not a person's.
func approximate(dist string) string { return "unos " + dist + " (ubicación aproximada)" }

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
	// The place in a list: PlaceStart (address and neighbourhood) before the town, which links to
	// PlaceURL, the emergency's list of that municipio ("" without one).
	PlaceStart, PlaceTown, PlaceURL string
	Urgent                          bool   // an urgent request: the lists show a red badge
	Level                           string // the Markdown heading of its title in a list: ### or, in a part, ####
	// Rescue are the emergency's phone lines, on a record of the category rescate ("Rescate").
	Rescue                   []schema.PhoneLine
	Coords, MapURL, Distance string
	// Municipio and Town name where the record is (Town: the centro poblado, when one was given);
	// Precision says in words how exact Coords are ("" when exact).
	Municipio, Town, Precision string
	Created                    string
	Updated                    string   // "" when the record has not changed since (to the minute)
	Description                []string // its lines, without the empty ones
	Excerpt                    string   // its beginning, on one line
	ContactName                string
	// Helping is «N personas dicen que están ayudando» (its responses; of an offer, «… que les interesa»),
	// "" when nobody responded.
	Helping string
	// CategoryPhrase follows its type's name: «de alimentos», «de otro tipo».
	CategoryPhrase string
}

type detailView struct {
	recordView
	Phone       string       // as stored, E.164
	PhoneText   string       // the same for reading: +57 300 123 4567
	TelURL      string       // tel:+573001234567; "" when there is no phone or the record is closed
	WhatsappURL string       // "" unless it is a plain https://wa.me/ link, or when the record is closed
	Details     []detailItem // the lines of «Detalles» (recordLines)
	Expired     bool         // its time passed unrenewed: no phone shown until its publisher renews it
	// PhoneReported is an open record without its phone: someone reported it as not the publisher's
	// (not_my_number), and an operator reviews it.
	PhoneReported bool
	// Closed says first, in a banner, that nobody needs to write any more: resolved or expired.
	Closed string
	// Withheld says why the phone is not shown on a page served over the detail limit, and when it is.
	Withheld string
	Share    string // a WhatsApp link that shares the record's page (no number in it)
}

// excerptRunes is how much of a description the lists show.
const excerptRunes = 160

var colombiaTime = time.FixedZone("COT", -5*60*60) // no daylight saving time

func newRecordView[C any](v *view, r *schema.HelpRecord[C], contactName string) recordView {
	rv := recordView{URL: v.base + schema.RecordPath(r.ID), Title: r.Title, Urgent: r.Type == schema.TypeRequest && r.Urgency == "urgent", Level: "###", Type: enumLabels[r.Type], Category: enumLabels[r.Category],
		Urgency: enumLabels[r.Urgency], Status: enumLabels[r.CollectionCenterStatus], EmergencyTitle: r.Emergency.Title,
		Created: spanishDateTime(r.CreatedAt), ContactName: contactName}
	if u := spanishDateTime(r.UpdatedAt); !r.UpdatedAt.IsZero() && u != rv.Created {
		rv.Updated = u
	}
	rv.Helping = helpingWords(r.Type, r.Responses)
	rv.CategoryPhrase = schema.CategoryPhrase(r.Category)
	if r.NeededPeople != nil {
		rv.People = schema.PeopleWords(*r.NeededPeople)
	}
	for _, e := range v.ems {
		if e.Slug == r.Emergency.Slug {
			rv.EmergencyURL = v.base + schema.EmergencyPath(e.Slug)
			if r.Category == "rescate" {
				rv.Rescue = emergencyLines(e)
			}
		}
	}
	if r.Category == "rescate" && rv.Rescue == nil {
		rv.Rescue = schema.DefaultLines
	}
	if l := r.Location; l != nil {
		rv.Address, rv.Neighborhood = l.Address, l.Neighborhood
		rv.Municipio = l.Municipio
		if len(l.PlaceCode) == 8 {
			rv.Town = l.PlaceName
		}
		rv.Place = strings.Join(nonEmpty(l.Address, l.Neighborhood, cmp.Or(rv.Town, rv.Municipio)), ", ")
		rv.PlaceTown = cmp.Or(rv.Town, rv.Municipio)
		if start := strings.Join(nonEmpty(l.Address, l.Neighborhood), ", "); rv.PlaceTown != "" {
			rv.PlaceStart = start
		} else {
			rv.PlaceTown = start
		}
		if rv.EmergencyURL != "" && l.MunicipioCode != "" && rv.PlaceTown == cmp.Or(rv.Town, rv.Municipio) && rv.PlaceTown != "" {
			rv.PlaceURL = rv.EmergencyURL + "?municipio=" + l.MunicipioCode
		}
		rv.Precision = precisionWords[l.Precision]
		if l.Latitude != nil && l.Longitude != nil {
			lat, lon := strconv.FormatFloat(*l.Latitude, 'f', -1, 64), strconv.FormatFloat(*l.Longitude, 'f', -1, 64)
			rv.Coords = lat + ", " + lon
			rv.MapURL = fmt.Sprintf("https://www.openstreetmap.org/?mlat=%s&mlon=%s#map=16/%s/%s", lat, lon, lat, lon)
		}
		if l.DistanceKm != nil {
			rv.Distance = kmWords(*l.DistanceKm)
			if l.Precision == schema.PrecisionPlace {
				// To its town's point, not to the person: «a 0,2 km» read as next door.
				rv.Distance = approximate(rv.Distance)
			}
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

// emergencyLines are the phone lines of e: the operator's, else schema.DefaultLines.
func emergencyLines(e schema.EmergencyInfo) []schema.PhoneLine {
	if len(e.Lines) > 0 {
		return e.Lines
	}
	return schema.DefaultLines
}

// closedBanner is what a closed record's page says first, by status.
var closedBanner = map[string]string{
	schema.StatusResolved: "Ya resuelta: no hace falta escribir.",
	schema.StatusExpired:  "Vencida: quien la publicó no la renovó, así que puede que ya no haga falta. No se muestra el número.",
}

// phoneText groups an E.164 number for reading: a Colombian one as +57 300 123 4567, another as its
// country code and the rest in groups of three or four.
func phoneText(e164 string) string {
	digits, ok := strings.CutPrefix(e164, "+")
	if !ok || digits == "" || strings.Trim(digits, "0123456789") != "" {
		return e164
	}
	if rest, ok := strings.CutPrefix(digits, "57"); ok && len(rest) == 10 {
		return "+57 " + rest[:3] + " " + rest[3:6] + " " + rest[6:]
	}
	return e164
}

// shareURL is a WhatsApp link that shares text and a link, with no number: the person chooses to whom.
func shareURL(text, link string) string {
	return "https://wa.me/?text=" + strings.ReplaceAll(url.QueryEscape(text+" "+link), "+", "%20")
}

func newDetailView(v *view, d *schema.PublicHelpDetail) *detailView {
	r := schema.HelpRecord[schema.DetailContact](*d)
	dv := &detailView{recordView: newRecordView(v, &r, d.Contact.Name), Phone: d.Contact.Whatsapp, Expired: d.Status == schema.StatusExpired,
		Closed: closedBanner[d.Status], PhoneReported: d.Status == schema.StatusOpen && d.Contact.Whatsapp == ""}
	dv.Share = shareURL("Una publicación de ayuda directa:", dv.URL)
	if dv.Phone != "" {
		dv.PhoneText = phoneText(dv.Phone)
		if dv.Closed == "" {
			dv.TelURL = "tel:" + dv.Phone // a closed record is not to be called
		}
	}
	if waLink.MatchString(d.Contact.WhatsappURL) && dv.Closed == "" {
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
	Heading string
	Intro   string // how many records, in which order
	Items   []recordView
	// Groups replace Items in the default order: urgent requests, the other requests, then offers.
	Groups   []listGroup
	Note     string // how the search was understood («insulina» en Armenia (Quindío))
	Share    string // a WhatsApp link sharing this filtered list; "" without filters
	Filtered bool
	Errors   []string // why the filters were refused; no items then
	// Guesses, when the municipio filter named none, are the lists of the municipios whose name begins
	// as it does («armeni»: Armenia), with the other filters.
	Guesses []pageLink
	// Absolute URLs: the next page, the first page (on a later one), the page without filters, and
	// the same list from the API.
	Next, First, Reset, API string
	// MapURL is the same list on the emergency's map; on the map, ListURL is the list without it.
	MapURL, ListURL string
	// Unattended is the visible way to the same list without anyone helping yet (attended=false, which
	// the filter form's «Respuestas» also sets, folded on a phone) and, on that list, back to all of them;
	// its URL is "" on an emergency with no records.
	Unattended pageLink
	// Near, on an empty list of a named place (a municipio, or a village typed in «Municipio»), links
	// to what was published within the default radius of the place's point, when there is some.
	Near pageLink
}

// pageLink is a link of a page: its absolute URL and its words.
type pageLink struct {
	URL, Label string
	Total      int // of a link that counts what it opens
}

// unattendedLink links the list of filters to the same list of records nobody has answered yet, or, when
// it is that list, to the same list with every record.
// Of offers, a response is someone interested (helpingWords), and the words say so.
func unattendedLink(list string, filters url.Values) pageLink {
	link := maps.Clone(filters)
	words := [2]string{"Sin nadie ayudando", "Ver también las que tienen ayuda"} // to the list nobody answered, and back
	if link.Get("type") == schema.TypeOffer {
		words = [2]string{"Sin nadie interesado", "Ver también las que tienen interesados"}
	}
	l := pageLink{Label: words[0]}
	if link.Get("attended") == "false" {
		link.Del("attended")
		l.Label = words[1]
	} else {
		link.Set("attended", "false")
	}
	l.URL = list
	if len(link) > 0 {
		l.URL += "?" + link.Encode()
	}
	return l
}

// listGroup is one part of an emergency page's default list, with a link to all of its records.
type listGroup struct {
	Heading   string
	Items     []recordView
	More      string // absolute URL of the whole part, newest first with paging
	MoreLabel string
}

// groupLimit is how many records each part of the default list shows.
const groupLimit = 10

// listGroups are the parts of the default list, in order: each is a type and the urgencies it holds (read
// one by one and merged newest first), and the filters of its «Ver todas» link.
var listGroups = []struct {
	heading, more, typ string
	urgencies          []string
	link               url.Values
}{
	{"Solicitudes urgentes", "Ver todas las solicitudes urgentes", schema.TypeRequest, []string{"urgent"}, url.Values{"type": {schema.TypeRequest}, "urgency": {"urgent"}}},
	{"Otras solicitudes", "Ver todas las solicitudes", schema.TypeRequest, []string{"needed", "stable"}, url.Values{"type": {schema.TypeRequest}}},
	{"Ofrecimientos", "Ver todos los ofrecimientos", schema.TypeOffer, []string{""}, url.Values{"type": {schema.TypeOffer}}},
}

// grouped reads the default list of an emergency's page: open urgent requests first, then the other
// requests, then offers, each newest first, groupLimit of each. The API's own order stays newest first.
func (v *view) grouped(ctx context.Context, q schema.ListQuery, path string, filters url.Values) ([]listGroup, *schema.HelpList, error) {
	all := &schema.HelpList{TotalExact: true}
	var out []listGroup
	// A «Ver todas» link without an urgency lists every record of its type, the urgent ones too: its count
	// is of those (it said «(16)» and opened 21).
	typeTotal, typeInexact := map[string]int{}, map[string]bool{}
	for _, g := range listGroups {
		var items []schema.PublicHelp
		total, exact := 0, true
		for _, u := range g.urgencies {
			gq := q
			gq.Type, gq.Urgency, gq.Limit = g.typ, u, groupLimit
			l, err := v.h.o.Service.List(ctx, v.base, gq)
			if err != nil {
				return nil, nil, err
			}
			items = append(items, l.Items...)
			total += l.Total
			exact = exact && l.TotalExact
		}
		all.TotalExact = all.TotalExact && exact
		typeTotal[g.typ] += total
		typeInexact[g.typ] = typeInexact[g.typ] || !exact
		linkTotal, linkExact := total, exact
		if !g.link.Has("urgency") {
			linkTotal, linkExact = typeTotal[g.typ], !typeInexact[g.typ]
		}
		slices.SortStableFunc(items, func(a, b schema.PublicHelp) int { return b.CreatedAt.Compare(a.CreatedAt) })
		items = items[:min(len(items), groupLimit)]
		all.Total += total
		all.Items = append(all.Items, items...)
		if len(items) == 0 {
			continue
		}
		count := totalWords(total, exact, q.Attended != "")
		lg := listGroup{Heading: fmt.Sprintf("%s (%s)", g.heading, count)}
		for i := range items {
			r := schema.HelpRecord[schema.PublicContact](items[i])
			rv := newRecordView(v, &r, r.Contact.Name)
			rv.Level = "####"
			lg.Items = append(lg.Items, rv)
		}
		if linkTotal > len(items) {
			link := maps.Clone(filters)
			maps.Copy(link, g.link)
			lg.More, lg.MoreLabel = v.base+path+"?"+link.Encode(), fmt.Sprintf("%s (%s)", g.more, totalWords(linkTotal, linkExact, q.Attended != ""))
		}
		out = append(out, lg)
	}
	return out, all, nil
}

// list reads the records an emergency's page shows for the request's query parameters, and builds
// the filter form that chose them. status is 400 when the filters are refused.
func (v *view) list(ctx context.Context, e *schema.EmergencyInfo, query url.Values) (*listView, *filterView, int, error) {
	path := schema.EmergencyPath(e.Slug)
	kept := url.Values{}
	for _, name := range append(append(filterParams, nearParams...), "cursor") {
		if s := strings.TrimSpace(query.Get(name)); s != "" {
			if slices.Contains(nearParams, name) && strings.Count(s, ",") == 1 && !strings.Contains(s, ".") {
				s = strings.Replace(s, ",", ".", 1) // the decimal comma, as the publishing forms take it
			}
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
	// The default order puts urgent requests first: with no type, urgency, point or page chosen.
	group := !kept.Has("type") && !kept.Has("urgency") && !kept.Has("latitude") && !kept.Has("cursor")
	read := func(vals url.Values) (schema.ListQuery, *schema.HelpList, []listGroup, []schema.FieldError, error) {
		q, errs := v.h.o.Service.ParseList(vals)
		if len(errs) > 0 {
			return q, nil, nil, errs, nil
		}
		q.EmergencySlug = e.Slug
		var list *schema.HelpList
		var groups []listGroup
		var err error
		if group {
			groups, list, err = v.grouped(ctx, q, path, filters)
		} else {
			list, err = v.h.o.Service.List(ctx, v.base, q)
		}
		if qe := (*QueryError)(nil); errors.As(err, &qe) {
			return q, nil, nil, qe.Details, nil
		}
		return q, list, groups, nil, err
	}
	// The words of a search as a person types it («busco insulina en armenia»): a place is read in them
	// as typed (a village's name has its article: «insulina en el caimo»); of the others, those that
	// every text would have to hold are left out of what is searched, and the note says what was.
	// A category named among the words («rescate pereira») is the category filter, unless its word is
	// part of the place's name («el refugio», a village).
	byKind, kind := wordFilters(kept)
	placed, note, named := v.placeQuery(e, byKind)
	if kind != "" && named.Code == "" {
		if p, n, nm := v.placeQuery(e, kept); nm.Code != "" {
			placed, note, named, kind = p, n, nm, ""
		}
	}
	var early string // the filler words left out before the place was read
	if named.Code == "" {
		// A place not first nor last but for filler words («insulina armenia ya»).
		if stripped, left := withoutFillers(byKind); left != "" {
			if p, n, nm := v.placeQuery(e, stripped); nm.Code != "" {
				placed, note, named, early = p, n, nm, left
			}
		}
	}
	note = strings.TrimSpace(note + " " + kind)
	placed, dropped := withoutFillers(placed)
	dropped = cmp.Or(dropped, early)
	q, list, groups, errs, err := read(placed)
	near := placed // what nearPlace widens: the place's list, its own word taken out of q
	if err == nil && len(errs) == 0 && note != "" && list.Total == 0 && !kept.Has("municipio") {
		// Nothing in the municipio the text search named: its words may not have meant a place
		// («victoria», a name). A place typed in «Municipio» meant one: its empty list stands.
		asked := named
		var search url.Values
		search, dropped = withoutFillers(kept)
		note, placed, named = "", search, places.Place{}
		q, list, groups, errs, err = read(search)
		if err == nil && len(errs) == 0 && list.Total == 0 {
			named = asked // nothing with the words either: the empty list says which place it read
		}
	}
	if dropped != "" {
		note = strings.TrimSpace(note + dropped)
	}
	if err != nil {
		return nil, nil, 0, err
	}
	lv.Groups = groups
	if len(errs) > 0 {
		lv.Errors, fv.Open = fv.refuse(errs), true
		if m := kept.Get("municipio"); m != "" && slices.ContainsFunc(errs, func(d schema.FieldError) bool { return d.Field == "municipio" }) {
			guesses, _ := places.MunicipioGuesses(m, e.Area...) // as the service's message names them; a village by its own code
			for _, p := range guesses {
				link := maps.Clone(filters)
				link.Set("municipio", p.Code)
				in := path // the list of the emergency whose area holds it, this one's else
				if other, ok := otherArea(v.ems, e, p.Code); ok {
					in = schema.EmergencyPath(other.Slug)
				}
				lv.Guesses = append(lv.Guesses, pageLink{URL: v.base + in + "?" + link.Encode(), Label: places.Label(p)})
			}
		}
		lv.Reset = v.base + path
		return lv, fv, http.StatusBadRequest, nil
	}
	// The same list from the API (and the map's data): the filters as the page read them, with the
	// municipio that q or a municipio's name stood for.
	api := url.Values{"view": {schema.ViewList}, "emergencySlug": {e.Slug}}
	maps.Copy(api, placed)
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
	if !group {
		for i := range list.Items {
			r := schema.HelpRecord[schema.PublicContact](list.Items[i])
			lv.Items = append(lv.Items, newRecordView(v, &r, r.Contact.Name))
		}
	}
	lv.Intro, lv.Note = listIntro(list, lv.Filtered, q.Latitude != nil, kept.Has("cursor"), group, q.Attended != ""), note
	if q.Latitude != nil && q.Longitude != nil {
		lv.Note = strings.TrimSpace(lv.Note + " " + outsideColombia(*q.Latitude, *q.Longitude))
	}
	if list.Total > 0 || filters.Has("attended") {
		lv.Unattended = unattendedLink(v.base+path, filters)
	}
	if list.Total > 0 && named.Code != "" && !kept.Has("cursor") {
		// A town's list holds the records placed in it; those near its edge are often filed under the
		// next municipio (a point's municipio is the nearest listed place's): the nearby ones a tap away.
		if lv.Near, err = v.nearPlace(ctx, e, path, kept, near, named); err != nil {
			return nil, nil, 0, err
		}
		if lv.Near.Total <= list.Total {
			lv.Near = pageLink{} // nothing more near it than in it
		}
	}
	if list.Total == 0 && !kept.Has("cursor") {
		if lv.Near, err = v.nearPlace(ctx, e, path, kept, near, named); err != nil {
			return nil, nil, 0, err
		}
		if other, ok := otherArea(v.ems, e, named.Code); lv.Near.URL == "" && named.Code != "" && ok {
			// A place of another emergency's area («guaranda» on the earthquake's page): its list there.
			lv.Near = pageLink{URL: v.base + schema.EmergencyPath(other.Slug) + "?" + filters.Encode(),
				Label: places.Label(named) + " está en la zona de «" + other.Title + "»: ver sus publicaciones allí"}
		}
		if lv.Near.URL == "" && named.Code != "" && !kept.Has("latitude") {
			// Say which place was read («bogota», «cali»): an empty list alone does not tell a person
			// whether the town was understood. With words, or filters read from them, say them: the
			// town may have other records, and then link to them.
			var with []string
			town := maps.Clone(near)
			town.Del("q")
			if u := near.Get("urgency"); u != "" && !kept.Has("urgency") {
				with = append(with, "urgentes")
				town.Del("urgency")
			}
			if c := near.Get("category"); c != "" && !kept.Has("category") {
				with = append(with, "de la categoría «"+schema.EnumLabels[c]+"»")
				town.Del("category")
			}
			if words := near.Get("q"); words != "" {
				with = append(with, "con «"+words+"»")
			}
			if len(with) > 0 {
				if lv.Near, err = v.placeList(ctx, e, path, town, named); err != nil {
					return nil, nil, 0, err
				}
				with = append(with, "")
			}
			lv.Note = strings.TrimSpace(lv.Note + " " + fmt.Sprintf("No hay publicaciones %sen %s ni a menos de %d km de allí.",
				strings.Join(with, " "), places.Label(named), schema.DefaultRadiusKm))
		}
	}
	if lv.Filtered && list.Total > 0 { // an empty list is nothing to share
		lv.Share = shareURL("Publicaciones de «"+e.Title+"» con estos filtros:", v.base+path+"?"+filters.Encode())
	}
	return lv, fv, http.StatusOK, nil
}

// otherArea is the emergency of ems whose area holds the place of code, when e's does not.
func otherArea(ems []schema.EmergencyInfo, e *schema.EmergencyInfo, code string) (schema.EmergencyInfo, bool) {
	if places.InArea(code, e.Area) {
		return schema.EmergencyInfo{}, false
	}
	for _, other := range ems {
		if other.Slug != e.Slug && places.InArea(code, other.Area) {
			return other, true
		}
	}
	return schema.EmergencyInfo{}, false
}

// totalWords is a list's total as the page says it: exact, an upper bound («hasta 16»: a total with
// attended counts the records whatever their responses) or an estimate («unos 16»).
func totalWords(total int, exact, upperBound bool) string {
	switch {
	case exact:
		return strconv.Itoa(total)
	case upperBound:
		return "hasta " + strconv.Itoa(total)
	}
	return "unos " + strconv.Itoa(total)
}

// listIntro says how many records there are and in which order they come; upperBound says that an
// inexact total is an upper bound (attended), not an estimate.
func listIntro(l *schema.HelpList, filtered, near, later, grouped, upperBound bool) string {
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
	switch {
	case !l.TotalExact && upperBound:
		n = "Hasta " + n
	case !l.TotalExact:
		n = "Alrededor de " + n
	}
	s := n + " en esta emergencia"
	if filtered {
		s = n + " cumplen los filtros"
		if l.Total == 1 {
			s = n + " cumple los filtros"
		}
	}
	if grouped { // the first record must stay on a phone's first screen: the words are few
		return n + ", las urgentes primero; el WhatsApp está en la página de cada una."
	}
	order := "las más recientes primero"
	switch {
	case near:
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
	if v.h.o.Service == nil || len(v.ems) == 0 {
		return nil, nil
	}
	share := max(maxSitemapRecords/len(v.ems), 1)
	var out []schema.PublicHelp
	for _, e := range v.ems {
		q := schema.ListQuery{EmergencySlug: e.Slug}
		for n := 0; n < share; {
			q.Limit = min(share-n, schema.MaxListLimit)
			l, err := v.h.o.Service.List(ctx, v.base, q)
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

// placeQuery reads the place of a list's filters as a person means it: a municipio's name that several
// municipios share is the one in the emergency's area (Armenia, Quindío, for the Eje Cafetero), and a
// municipio named in the text search («insulina armenia», «pereira») becomes the municipio filter, the
// rest of the words staying the text. note says how the text was read ("" when it was left as typed);
// named is the place the query names (a village typed in «Municipio» itself, not its municipio), zero
// for none.
func (v *view) placeQuery(e *schema.EmergencyInfo, kept url.Values) (out url.Values, note string, named places.Place) {
	out = maps.Clone(kept)
	if m := kept.Get("municipio"); m != "" {
		if p, ok := areaMunicipio(m, e.Area); ok {
			out.Set("municipio", p.Code) // the API reads a name without the area
		}
		// A village's name: the publications of its municipio.
		if p, ok := village(m, e.Area); ok {
			out.Set("municipio", p.MunicipioCode())
			mun, _ := places.Lookup(p.MunicipioCode())
			return out, "Se muestran las publicaciones de " + places.Label(mun) + ", el municipio de " + p.Name + ".", p
		}
		p, ok := places.Lookup(out.Get("municipio"))
		if !ok {
			p, _ = areaMunicipio(m, e.Area) // a municipio's name
		}
		return out, "", p
	}
	if !kept.Has("q") {
		return out, "", places.Place{}
	}
	p, rest, ok := placeInText(kept.Get("q"), e.Area)
	if !ok {
		return out, "", places.Place{}
	}
	out.Set("municipio", p.MunicipioCode())
	shown, of := "en "+places.Label(p), places.Label(p)
	if p.Kind() == places.CentroPoblado {
		mun, _ := places.Lookup(p.MunicipioCode())
		of = places.Label(mun) + ", el municipio de " + p.Name
		shown = "de " + of
	}
	if rest == "" {
		out.Del("q")
		return out, "Se muestran las publicaciones " + shown + ".", p
	}
	out.Set("q", rest)
	words, _ := searchWords(rest) // what is searched of it (withoutFillers)
	return out, "Se buscó «" + words + "» en las publicaciones de " + of + ".", p
}

// filterWords are the words of a search that name a filter rather than a text («salud armenia»,
// «albergue», «insulina urgente»): texts seldom name their own category or urgency, which the filters
// hold. Folded (places.Fold), each with its filter and value.
var filterWords = map[string][2]string{
	"alimentos": {"category", "alimentos"}, "alimento": {"category", "alimentos"}, "comida": {"category", "alimentos"},
	"mercado": {"category", "alimentos"}, "mercados": {"category", "alimentos"},
	"salud": {"category", "salud"}, "medico": {"category", "salud"}, "medica": {"category", "salud"},
	"medicos": {"category", "salud"}, "medicamento": {"category", "salud"}, "medicamentos": {"category", "salud"},
	"medicina": {"category", "salud"}, "medicinas": {"category", "salud"},
	"refugio": {"category", "refugio"}, "albergue": {"category", "refugio"}, "alojamiento": {"category", "refugio"},
	"transporte": {"category", "transporte"}, "acopio": {"category", "acopio"},
	"rescate": {"category", "rescate"}, "rescatar": {"category", "rescate"},
	"urgente": {"urgency", "urgent"}, "urgentes": {"urgency", "urgent"}, "urgencia": {"urgency", "urgent"},
}

// wordFilters reads the filters named among the words of a search (filterWords) when they are not
// chosen: a category, the urgency. note says so ("" when the words were left as they were); when that
// list has nothing, the page reads the words as typed.
func wordFilters(filters url.Values) (url.Values, string) {
	if filters.Get("q") == "" {
		return filters, ""
	}
	words := strings.Fields(filters.Get("q"))
	set := map[string]string{}
	var rest []string
	for _, w := range words {
		f, ok := filterWords[places.Fold(w)]
		switch {
		case !ok || filters.Get(f[0]) != "":
			rest = append(rest, w)
		case set[f[0]] != "" && set[f[0]] != f[1]:
			return filters, "" // two categories: the words as typed
		default:
			set[f[0]] = f[1]
		}
	}
	if len(set) == 0 {
		return filters, ""
	}
	out := maps.Clone(filters)
	var notes []string
	if c := set["category"]; c != "" {
		out.Set("category", c)
		notes = append(notes, "Solo las de la categoría «"+schema.EnumLabels[c]+"».")
	}
	if set["urgency"] != "" {
		out.Set("urgency", set["urgency"])
		notes = append(notes, "Solo las solicitudes urgentes.")
	}
	if len(rest) > 0 {
		out.Set("q", strings.Join(rest, " "))
	} else {
		out.Del("q")
	}
	return out, strings.Join(notes, " ")
}

// withoutFillers is filters with the filler words of its q left out (searchWords), and the note that says
// which were ("" for none).
func withoutFillers(filters url.Values) (url.Values, string) {
	words, left := searchWords(filters.Get("q"))
	if left == "" {
		return filters, ""
	}
	out := maps.Clone(filters)
	out.Set("q", words)
	return out, " No se buscaron las palabras «" + left + "»."
}

// fillerWords are words a person puts around what they search («busco insulina en armenia») that a record's
// text need not hold: q matches a record only when its text has every word.
var fillerWords = []string{"a", "al", "alguien", "ayuda", "ayudar", "busca", "buscamos", "busco", "cerca", "con", "de",
	"del", "donde", "el", "en", "favor", "hay", "la", "las", "los", "me", "mi", "mis", "necesita", "necesitamos",
	"necesito", "o", "para", "por", "porfa", "porfavor", "que", "quien", "se", "su", "sus", "tiene", "tienen", "u", "un",
	"una", "unas", "unos", "y", "ya"}

// searchWords splits q into the words searched and the filler words left out ("" when none): every word
// stays when all are filler.
func searchWords(q string) (words, left string) {
	var keep, drop []string
	for _, w := range strings.Fields(q) {
		if _, filler := slices.BinarySearch(fillerWords, places.Fold(w)); filler {
			drop = append(drop, w)
		} else {
			keep = append(keep, w)
		}
	}
	if len(keep) == 0 || len(drop) == 0 {
		return q, ""
	}
	return strings.Join(keep, " "), strings.Join(drop, " ")
}

// outsideColombia says when a point typed in the nearby filter is not in Colombia (a box around it, San
// Andrés included), and the usual slip: a longitude without its minus sign. "" for a point in it.
func outsideColombia(lat, lon float64) string {
	in := func(lat, lon float64) bool { return lat >= -4.3 && lat <= 13.6 && lon >= -82 && lon <= -66.8 }
	if in(lat, lon) {
		return ""
	}
	words := fmt.Sprintf("El punto %s, %s no está en Colombia.", decimalComma(lat), decimalComma(lon))
	if in(lat, -lon) {
		words += fmt.Sprintf(" ¿Le faltó el signo menos a la longitud? En Colombia es negativa: %s.", decimalComma(-lon))
	} else if in(lon, lat) {
		words += " ¿Están invertidas la latitud y la longitud? En Colombia la latitud va de -4 a 13 y la longitud de -82 a -67."
	}
	return words
}

func decimalComma(f float64) string {
	return strings.Replace(strconv.FormatFloat(f, 'f', -1, 64), ".", ",", 1)
}

// nearPlace links an empty list of place p (placeQuery's named; kept as the person typed the query, placed
// as it was read) to what was published within the default radius of the place's point, with the same
// other filters: a village's or a small municipio's records are often a few km away, in the next
// municipio. It links nowhere when that list is empty too, or when the place has no point.
func (v *view) nearPlace(ctx context.Context, e *schema.EmergencyInfo, path string, kept, placed url.Values, p places.Place) (pageLink, error) {
	if kept.Has("latitude") || (p.Lat == 0 && p.Lon == 0) {
		return pageLink{}, nil
	}
	near := maps.Clone(placed)
	near.Del("municipio")
	near.Del("cursor")
	near.Set("latitude", strconv.FormatFloat(p.Lat, 'f', 5, 64))
	near.Set("longitude", strconv.FormatFloat(p.Lon, 'f', 5, 64))
	near.Set("radiusKm", strconv.Itoa(schema.DefaultRadiusKm))
	list, err := v.firstOf(ctx, e, near)
	if err != nil || list == nil {
		return pageLink{}, err
	}
	n := totalWords(list.Total, list.TotalExact, false)
	what := "publicaciones"
	if list.Total == 1 {
		what = "publicación"
	}
	return pageLink{URL: v.base + path + "?" + near.Encode(), Total: list.Total,
		Label: fmt.Sprintf("Ver %s %s a menos de %d km de %s", n, what, schema.DefaultRadiusKm, places.Label(p))}, nil
}

// firstOf reads the first record of e's list with filters, for a link that counts what it opens: nil when
// the filters are refused or the list is empty.
func (v *view) firstOf(ctx context.Context, e *schema.EmergencyInfo, filters url.Values) (*schema.HelpList, error) {
	q, errs := v.h.o.Service.ParseList(filters)
	if len(errs) > 0 {
		return nil, nil
	}
	q.EmergencySlug, q.Limit, q.Total = e.Slug, 1, ""
	list, err := v.h.o.Service.List(ctx, v.base, q)
	if qe := (*QueryError)(nil); errors.As(err, &qe) {
		return nil, nil
	}
	if err != nil || list.Total == 0 {
		return nil, err
	}
	return list, nil
}

// placeList links to the list of place p's municipio with the filters of town, when that list is not
// empty: where a search of words in a town found nothing, what the town has.
func (v *view) placeList(ctx context.Context, e *schema.EmergencyInfo, path string, town url.Values, p places.Place) (pageLink, error) {
	all := maps.Clone(town)
	all.Del("cursor")
	all.Set("municipio", p.MunicipioCode())
	list, err := v.firstOf(ctx, e, all)
	if err != nil || list == nil {
		return pageLink{}, err
	}
	mun, _ := places.Lookup(p.MunicipioCode())
	what := "las " + totalWords(list.Total, list.TotalExact, false) + " publicaciones"
	if list.Total == 1 {
		what = "la publicación"
	}
	return pageLink{URL: v.base + path + "?" + all.Encode(), Label: fmt.Sprintf("Ver %s de %s", what, places.Label(mun))}, nil
}

// placeInText finds a municipio named by the first or the last words of q (the longest such name), the
// one in area when several share it, and returns the other words. Without one, a centro poblado of area
// so named («insulina en el caimo»): only area's, since villages' names are often words of a search.
func placeInText(q string, area []string) (places.Place, string, bool) {
	words := strings.Fields(q) // the rest stays as typed («pañales»); the names compare folded
	for n := len(words); n > 0; n-- {
		for _, start := range []int{len(words) - n, 0} {
			name := strings.Join(words[start:start+n], " ")
			if places.IsDepartamento(name) {
				continue // «risaralda» means the departamento, not Risaralda (Caldas)
			}
			// The area's municipios, then its villages («la florida», a village of Pereira), then a
			// municipio elsewhere by its own name («leticia», «bogota» for Bogotá, D.C.): words are often a
			// place's shorter name («agua» of Agua de Dios).
			p, ok := areaMunicipio(name, area)
			inArea := ok && places.InArea(p.Code, area)
			if !inArea {
				v, found, shared := areaVillage(name, area)
				if found {
					p, ok, inArea = v, true, true
				} else if shared {
					continue // the area's villages' name, of several municipios: words
				}
			}
			ok = ok && (inArea || places.NamedBy(p, name) || places.Fold(name)+" d c" == places.Fold(p.Name))
			if ok {
				return p, strings.Join(slices.Concat(words[:start], words[start+n:]), " "), true
			}
		}
	}
	return places.Place{}, "", false
}

// areaVillage is the centro poblado of area that name names, when only one municipio of area has one so
// named (several «San José» in one municipio are searched alike: in their municipio). shared says that
// villages of several municipios of area are so named («la florida», of Pereira and of Santa Rosa de
// Cabal): the name is the area's, though not one place.
func areaVillage(name string, area []string) (p places.Place, found, shared bool) {
	var v places.Place
	for _, c := range places.VillagesNamed(name) { // alone or with its municipio's name, not what is searched
		if !places.InArea(c.Code, area) {
			continue
		}
		if v.Code != "" && v.MunicipioCode() != c.MunicipioCode() {
			return places.Place{}, false, true
		}
		if v.Code == "" {
			v = c
		}
	}
	return v, v.Code != "", false
}

// areaMunicipio is the municipio name names, those of area first (places.Municipios): when only one.
func areaMunicipio(name string, area []string) (places.Place, bool) {
	if ms := places.Municipios(name, area...); len(ms) == 1 {
		return ms[0], true
	}
	return places.Place{}, false
}

// helpingWords say how many responses a record of type has: «1 persona dice que está ayudando» (a
// request), «2 personas dicen que les interesa» (an offer); "" for none.
func helpingWords(typ string, n int) string {
	switch {
	case n <= 0:
		return ""
	case typ == schema.TypeOffer && n == 1:
		return "1 persona dice que le interesa"
	case typ == schema.TypeOffer:
		return fmt.Sprintf("%d personas dicen que les interesa", n)
	case n == 1:
		return "1 persona dice que está ayudando"
	}
	return fmt.Sprintf("%d personas dicen que están ayudando", n)
}
