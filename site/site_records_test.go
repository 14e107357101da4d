package site

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/directaid/directaid/schema"
	"github.com/directaid/directaid/site/sitetest"
)

// The site's side of the records: how it renders, links, caches and bounds what Service.List and
// Service.Detail answer. The records here come from a slice; the end-to-end tests read them from the
// real service (e2e/site_records_test.go).

// records is a store of records in a slice, newest last, answering as the service does in the ways
// the site relies on: filters by emergency and type, pages of Limit with a cursor, the phone only in
// a detail.
type records struct {
	mu    sync.Mutex
	all   []schema.PublicHelpDetail
	reads int // List calls
	fail  error
}

func (s *records) add(em, typ, title string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := len(s.all) + 1
	id := fmt.Sprintf("%016d", n)
	people := n
	s.all = append(s.all, schema.PublicHelpDetail{ID: id, Type: typ, Emergency: schema.EmergencyRef{Slug: em, Title: em},
		Content:  schema.Content{Title: title, Description: "Primera línea.\nSegunda línea.", Category: "salud"},
		Needs:    schema.Needs{Urgency: "urgent", NeededPeople: &people},
		Location: &schema.PublicLocation{Place: schema.Place{Address: "Calle 1", Latitude: ptr(4.5), Longitude: ptr(-75.6)}},
		Contact: schema.DetailContact{Name: "Ana", Available: true, Whatsapp: fmt.Sprintf("+5730000%05d", n),
			WhatsappURL: fmt.Sprintf("https://wa.me/5730000%05d", n)},
		CreatedAt: time.Date(2026, 8, 12, 14, 30, 0, 0, time.UTC).Add(time.Duration(n) * time.Minute)})
	return id
}

func ptr(f float64) *float64 { return &f }

func (s *records) parse(v url.Values) (schema.ListQuery, []schema.FieldError) {
	q := schema.ListQuery{Type: v.Get("type"), Category: v.Get("category"), Cursor: v.Get("cursor"), Urgency: v.Get("urgency"),
		Q: v.Get("q"), Municipio: v.Get("municipio")}
	if l := v.Get("latitude"); l != "" {
		f, err := strconv.ParseFloat(l, 64)
		if err != nil {
			return q, []schema.FieldError{{Field: "latitude", Message: "«latitude» debe ser un número"}}
		}
		q.Latitude = &f
	}
	if l := v.Get("longitude"); l != "" {
		f, err := strconv.ParseFloat(l, 64)
		if err != nil {
			return q, []schema.FieldError{{Field: "longitude", Message: "«longitude» debe ser un número"}}
		}
		q.Longitude = &f
	}
	return q, nil
}

func (s *records) list(_ context.Context, base string, q schema.ListQuery) (*schema.HelpList, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reads++
	if s.fail != nil {
		return nil, s.fail
	}
	if q.Type != "" && q.Type != schema.TypeRequest && q.Type != schema.TypeOffer {
		return nil, &QueryError{Details: []schema.FieldError{{Field: "type", Message: "«type» no admite " + strconv.Quote(q.Type)}}}
	}
	limit := q.Limit
	if limit == 0 {
		limit = schema.DefaultListLimit
	}
	from := len(s.all)
	if q.Cursor != "" {
		n, err := strconv.Atoi(q.Cursor)
		if err != nil {
			return nil, &QueryError{Details: []schema.FieldError{{Field: "cursor", Message: "«cursor» no es válido"}}}
		}
		from = n
	}
	out := &schema.HelpList{Filters: q}
	for i := len(s.all) - 1; i >= 0; i-- {
		r := s.all[i]
		if (q.EmergencySlug != "" && r.Emergency.Slug != q.EmergencySlug) || (q.Type != "" && r.Type != q.Type) ||
			(q.Urgency != "" && r.Urgency != q.Urgency) || (q.Category != "" && r.Category != q.Category) || !s.matches(r, q) {
			continue
		}
		out.Total++
		if i >= from {
			continue
		}
		if len(out.Items) == limit {
			if out.NextCursor == "" {
				out.NextCursor = strconv.Itoa(i + 1)
			}
			continue
		}
		h := schema.HelpRecord[schema.DetailContact](r)
		out.Items = append(out.Items, schema.PublicHelp{ID: h.ID, Type: h.Type, Emergency: h.Emergency,
			Content: h.Content, Needs: h.Needs, Location: h.Location,
			Contact: schema.PublicContact{Name: h.Contact.Name, Available: true}, CreatedAt: h.CreatedAt, PublicURL: base + "/ayudas/" + h.ID})
	}
	out.Returned, out.TotalExact = len(out.Items), true
	return out, nil
}

func (s *records) detail(_ context.Context, base, id string) (*schema.PublicHelpDetail, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if u := (*UnavailableError)(nil); errors.As(s.fail, &u) {
		return nil, s.fail
	}
	for _, r := range s.all {
		if r.ID == id {
			r.PublicURL = base + "/ayudas/" + id
			return &r, nil
		}
	}
	return nil, ErrNotFound
}

func (s *records) options(ems ...schema.EmergencyInfo) Options {
	return Options{Emergencies: emergencies(ems...), Service: &funcs{parse: s.parse, list: s.list, detail: s.detail}}
}

func TestRecordsCrawl(t *testing.T) {
	s := &records{}
	hostile := s.add(eje.Slug, schema.TypeRequest, "<script>alert(1)</script> **b** [x](javascript:alert(2))")
	for i := range 25 {
		s.add(eje.Slug, schema.TypeOffer, fmt.Sprintf("Ofrecimiento %d", i))
	}
	s.add(mojana.Slug, schema.TypeRequest, "En La Mojana")
	c := newSite(t, s.options(eje, mojana))
	res := sitetest.Check(t, c, testBase)
	if want := 10 + 27; len(res.Pages) != want {
		t.Errorf("sitemap lists %d pages, want %d", len(res.Pages), want)
	}
	if n := len(res.Outside); n != 2*27+1 { // the records share their coordinates, so their map link
		t.Errorf("want a wa.me link and a share link per record and a map link, got %d: %v", n, res.Outside)
	}
	_, page := sitetest.Get(t, c, testBase+"/ayudas/"+hostile)
	for _, bad := range []string{"<script>alert", `href="javascript:`, "<strong>"} {
		if strings.Contains(string(page), bad) {
			t.Errorf("the record page contains %q", bad)
		}
	}
}

func TestRecordsCaching(t *testing.T) {
	s := &records{}
	id := s.add(eje.Slug, schema.TypeRequest, "Agua")
	c := newSite(t, s.options(eje))
	for _, tc := range []struct{ path, cache, robots string }{
		{"/ayudas/" + id, recordCache, recordRobots}, {"/ayudas/" + id + ".md", recordCache, recordRobots},
		{"/emergencias/eje-cafetero", listCache, ""}, {"/emergencias/eje-cafetero.md?type=offer", listCache, ""},
	} {
		res, _ := sitetest.Get(t, c, testBase+tc.path)
		etag := res.Header.Get("ETag")
		if res.StatusCode != http.StatusOK || res.Header.Get("Cache-Control") != tc.cache || etag == "" {
			t.Errorf("GET %s: %d Cache-Control %q ETag %q", tc.path, res.StatusCode, res.Header.Get("Cache-Control"), etag)
		}
		// A record's page (with its phone) asks search engines for no copy and no extract.
		if got := res.Header.Get("X-Robots-Tag"); got != tc.robots {
			t.Errorf("GET %s: X-Robots-Tag %q, want %q", tc.path, got, tc.robots)
		}
		if res, _ := sitetest.Get(t, c, testBase+tc.path, "If-None-Match: "+etag); res.StatusCode != http.StatusNotModified {
			t.Errorf("GET %s If-None-Match: %d", tc.path, res.StatusCode)
		}
	}
	// The emergency's page is read per request: a new record shows at once (no render cache).
	_, before := sitetest.Get(t, c, testBase+"/emergencias/eje-cafetero.md")
	s.add(eje.Slug, schema.TypeOffer, "Carpas nuevas")
	_, after := sitetest.Get(t, c, testBase+"/emergencias/eje-cafetero.md")
	if strings.Contains(string(before), "Carpas nuevas") || !strings.Contains(string(after), "Carpas nuevas") {
		t.Errorf("the list did not change with a new record:\n%s", after)
	}
	// llms.txt reads no record: its note on each page comes from the page's own header.
	s.reads = 0
	if res, _ := sitetest.Get(t, c, testBase+"/llms.txt"); res.StatusCode != http.StatusOK || s.reads != 0 {
		t.Errorf("llms.txt: %d after %d list reads", res.StatusCode, s.reads)
	}
}

func TestRecordsErrors(t *testing.T) {
	s := &records{}
	id := s.add(eje.Slug, schema.TypeRequest, "Agua")
	var logged []error
	o := s.options(eje)
	var statuses []int
	o.OnError = func(_ *http.Request, status int, err error) {
		logged, statuses = append(logged, err), append(statuses, status)
	}
	c := newSite(t, o)
	for _, p := range []string{"/ayudas/0000000000000099", "/ayudas/0000000000000099.md", "/ayudas/", "/ayudas/" + id + "/"} {
		if res, body := sitetest.Get(t, c, testBase+p); res.StatusCode != http.StatusNotFound || !strings.Contains(string(body), "Página no encontrada") {
			t.Errorf("GET %s: %d, want the 404 page", p, res.StatusCode)
		}
	}
	for q, want := range map[string]string{"type=nada": "«Tipo» no admite", "latitude=x": "«Latitud» debe ser un número", "cursor=x": "«Ver más»"} {
		res, body := sitetest.Get(t, c, testBase+"/emergencias/eje-cafetero.md?"+q)
		if res.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), want) {
			t.Errorf("?%s: %d, want 400 saying %q:\n%s", q, res.StatusCode, want, body)
		}
	}
	s.fail = errors.New("disk on fire")
	if res, body := sitetest.Get(t, c, testBase+"/emergencias/eje-cafetero"); res.StatusCode != http.StatusInternalServerError || strings.Contains(string(body), "fire") {
		t.Errorf("a failing store: %d %s", res.StatusCode, body)
	}
	if len(logged) != 1 || statuses[0] != http.StatusInternalServerError {
		t.Errorf("the failure was logged %d times (%v)", len(logged), statuses)
	}
	// A database that cannot answer for now: 503 with its Retry-After, on the page and on its twin, as the
	// API answers; nothing of the cause in the body.
	s.fail = &UnavailableError{RetryAfter: 2, Err: errors.New("database unreachable: 127.0.0.1:5432 refused")}
	for p, typ := range map[string]string{"/emergencias/eje-cafetero": htmlType, "/emergencias/eje-cafetero.md": markdownType, "/ayudas/" + id: htmlType} {
		res, body := sitetest.Get(t, c, testBase+p)
		if res.StatusCode != http.StatusServiceUnavailable || res.Header.Get("Retry-After") != "2" || res.Header.Get("Content-Type") != typ ||
			!strings.Contains(string(body), "no está disponible por un momento") || !strings.Contains(string(body), "2 segundos") || strings.Contains(string(body), "127.0.0.1") {
			t.Errorf("GET %s with the database unreachable: %d Retry-After %q %s\n%s", p, res.StatusCode, res.Header.Get("Retry-After"), res.Header.Get("Content-Type"), body)
		}
	}
	if len(statuses) != 4 || statuses[3] != http.StatusServiceUnavailable {
		t.Errorf("logged statuses %v, want the 503s after the 500", statuses)
	}
	// Without Detail there are no record pages; without List the emergency pages list nothing.
	c = newSite(t, Options{Emergencies: emergencies(eje)})
	if res, _ := sitetest.Get(t, c, testBase+"/ayudas/"+id); res.StatusCode != http.StatusNotFound {
		t.Errorf("record page without Detail: %d", res.StatusCode)
	}
	if _, body := sitetest.Get(t, c, testBase+"/emergencias/eje-cafetero.md"); strings.Contains(string(body), listHeading) {
		t.Error("an emergency page lists records without List")
	}
}

// The sitemap lists at most maxSitemapRecords record pages, shared among the active emergencies.
func TestRecordsSitemapBound(t *testing.T) {
	s := &records{}
	for i := range 1300 {
		em := eje.Slug
		if i%2 == 1 {
			em = mojana.Slug
		}
		s.add(em, schema.TypeOffer, "x")
	}
	s.add("sequia-guajira", schema.TypeOffer, "of an inactive emergency")
	c := newSite(t, s.options(eje, mojana))
	_, body := sitetest.Get(t, c, testBase+"/sitemap.xml")
	per := map[string]int{}
	for _, part := range strings.Split(string(body), "<loc>"+testBase+"/ayudas/")[1:] {
		id := part[:16]
		n, _ := strconv.Atoi(id)
		per[s.all[n-1].Emergency.Slug]++
	}
	if per[eje.Slug] != maxSitemapRecords/2 || per[mojana.Slug] != maxSitemapRecords/2 || len(per) != 2 {
		t.Errorf("sitemap record pages per emergency: %v", per)
	}
	if n := strings.Count(string(body), "<lastmod>2026-08-"); n != maxSitemapRecords {
		t.Errorf("%d record pages carry their creation time as lastmod", n)
	}
}

// The filter form shows what is applied, folded so that the list comes first; refused, it unfolds.
func TestRecordsFilterForm(t *testing.T) {
	s := &records{}
	s.add(eje.Slug, schema.TypeRequest, "Agua")
	c := newSite(t, s.options(eje))
	for q, want := range map[string]string{
		"":                                     "<details>\n<summary>Filtrar la lista</summary>",
		"type=request&latitude=4.5&radiusKm=5": "<details>\n<summary>Filtrar la lista (2 filtros aplicados)</summary>",
		"type=nada":                            "<details open>",
	} {
		_, body := sitetest.Get(t, c, testBase+"/emergencias/eje-cafetero?"+q)
		if !strings.Contains(string(body), want) {
			t.Errorf("?%s: the filter form lacks %q", q, want)
		}
	}
	_, body := sitetest.Get(t, c, testBase+"/emergencias/eje-cafetero?type=offer")
	doc := sitetest.ParseHTML(t, body)
	if sel := sitetest.ByID(doc, "filtro-type"); sel == nil || !strings.Contains(sitetest.Text(sel), "Ofrecimiento") {
		t.Fatal("no type filter")
	}
	if !strings.Contains(string(body), `<option value="offer" selected>`) {
		t.Error("the form does not show the applied type")
	}
}

// TestRecordNoPeople: a record that says 0 people needed shows no count («0 personas» read as nobody
// needing it), on its page, its twin and the list; one that says 1 shows «1 persona».
func TestRecordNoPeople(t *testing.T) {
	s := &records{}
	id := s.add(eje.Slug, schema.TypeOffer, "Carpas")
	zero := 0
	s.all[0].NeededPeople = &zero
	c := newSite(t, s.options(eje))
	for _, p := range []string{"/ayudas/" + id, "/ayudas/" + id + ".md", "/emergencias/eje-cafetero", "/emergencias/eje-cafetero.md"} {
		res, body := sitetest.Get(t, c, testBase+p)
		if res.StatusCode != http.StatusOK || !strings.Contains(string(body), "Carpas") || strings.Contains(string(body), "0 personas") {
			t.Errorf("GET %s: %d, «0 personas» shown or the record missing:\n%.2000s", p, res.StatusCode, body)
		}
	}
	one := 1
	s.all[0].NeededPeople = &one
	if _, body := sitetest.Get(t, c, testBase+"/ayudas/"+id+".md"); !strings.Contains(string(body), "1 persona") {
		t.Errorf("one person: %.2000s", body)
	}
}

// TestStaleCursorSentence: a «Ver más» link that no longer fits its filters says so in one sentence with
// one full stop, and every other refusal of the list ends with one too.
func TestStaleCursorSentence(t *testing.T) {
	s := &records{}
	s.add(eje.Slug, schema.TypeRequest, "Agua")
	c := newSite(t, s.options(eje))
	for _, q := range []string{"?cursor=zzz", "?type=nada"} {
		_, body := sitetest.Get(t, c, testBase+"/emergencias/eje-cafetero.md"+q)
		if strings.Contains(string(body), "..") {
			t.Errorf("%s: a double full stop:\n%.2000s", q, body)
		}
	}
	if _, body := sitetest.Get(t, c, testBase+"/emergencias/eje-cafetero.md?cursor=zzz"); !strings.Contains(string(body), "vuelva a la primera página.") {
		t.Errorf("a stale cursor is not explained:\n%.2000s", body)
	}
}
