package backend_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/directaid/directaid/backend/pgstore"
	"github.com/directaid/directaid/backend/store"
	"github.com/directaid/directaid/backend/store/storetest"
	"github.com/directaid/directaid/internal/pgtest"
	"github.com/directaid/directaid/internal/testserver"
	"github.com/directaid/directaid/schema"
)

// matchesFixture is a contract server with a request in Armenia and the records around it that its
// matches must take or leave, by name.
type matchesFixture struct {
	*contractServer
	st     store.Store
	ids    map[string]string
	tokens map[string]string
}

// Armenia's centre, and 0.01° of latitude (1.11 km).
const armLat, armLon, kmLat = 4.5339, -75.6811, 0.01

func newMatchesFixture(t *testing.T, st store.Store) *matchesFixture {
	t.Helper()
	f := &matchesFixture{contractServer: newContractServerOver(t, st, twoEmergencies), st: st, ids: map[string]string{}, tokens: map[string]string{}}
	offer := func(dLat float64, kv ...any) map[string]any {
		o := testserver.With(testserver.ValidOffer(), "category", "alimentos", "title", "Mercados para familias", "latitude", armLat+dLat, "longitude", armLon)
		return testserver.With(o, kv...)
	}
	for _, r := range []struct {
		name string
		pub  map[string]any
	}{
		{"request", testserver.ValidRequest()},
		{"far2km", offer(2 * kmLat)},
		{"near1km", offer(kmLat)},
		{"near1kmNewer", offer(kmLat)}, // same point, published later: before near1km
		{"at33km", offer(30 * kmLat)},
		{"otherCategory", offer(kmLat, "category", "salud")},
		{"otherEmergency", offer(kmLat, "emergencySlug", "inundaciones-la-mojana")},
		{"resolved", offer(kmLat)},
		{"sameType", testserver.With(testserver.ValidRequest(), "latitude", armLat+kmLat)},
		{"noPoint", offer(0, "latitude", nil, "longitude", nil)},
	} {
		resp, out := f.publish(string(testserver.MustJSON(t, r.pub)))
		if resp.StatusCode != 201 {
			t.Fatalf("publish %s: %d %v", r.name, resp.StatusCode, out)
		}
		f.ids[r.name], _ = out["id"].(string)
		f.tokens[r.name], _ = out["manageToken"].(string)
		time.Sleep(2 * time.Millisecond) // ids sort by the millisecond: the newer is newer
	}
	f.act("resolved", "resolve", 200)
	return f
}

func (f *matchesFixture) act(name, action string, want int) {
	f.t.Helper()
	resp, raw := f.Do("POST", schema.ActionsPath(f.ids[name]), []byte(`{"action":"`+action+`"}`),
		"Content-Type", "application/json", "Authorization", "Bearer "+f.tokens[name])
	if resp.StatusCode != want {
		f.t.Fatalf("%s %s: %d %s", action, name, resp.StatusCode, raw)
	}
}

// matches asks the matches of id with query and decodes a 200.
func (f *matchesFixture) matches(id, query string) schema.HelpMatches {
	f.t.Helper()
	path := schema.MatchesPath(id)
	if query != "" {
		path += "?" + query
	}
	resp, raw, _ := f.call("GET", path, nil)
	if resp.StatusCode != 200 {
		f.t.Fatalf("GET %s: %d %s", path, resp.StatusCode, raw)
	}
	if resp.Header.Get("ETag") == "" || resp.Header.Get("Cache-Control") != "public, max-age=15" {
		f.t.Errorf("GET %s: headers %v", path, resp.Header)
	}
	var m schema.HelpMatches
	if err := json.Unmarshal(raw, &m); err != nil {
		f.t.Fatal(err)
	}
	if m.Returned != len(m.Items) {
		f.t.Errorf("returned %d, %d items", m.Returned, len(m.Items))
	}
	return m
}

// names are the fixture's names of items, in order.
func (f *matchesFixture) names(items []schema.PublicHelp) []string {
	var out []string
	for _, it := range items {
		name := it.ID
		for n, id := range f.ids {
			if id == it.ID {
				name = n
			}
		}
		out = append(out, name)
	}
	return out
}

// TestContractMatches: a request's matches are the open offers of its emergency and category within
// radiusKm (default 25, at most 100) of it, nearest first then newest, at most limit (default 10, at
// most 20), as list items without phones; an offer's are requests; bad parameters, unknown, withdrawn
// and hidden records answer as the detail does.
func TestContractMatches(t *testing.T) { checkMatches(t, newMatchesFixture(t, testserver.Badger(t))) }

func checkMatches(t *testing.T, f *matchesFixture) {
	req := f.ids["request"]

	m := f.matches(req, "")
	if got, want := f.names(m.Items), []string{"near1kmNewer", "near1km", "far2km"}; !slices.Equal(got, want) {
		t.Errorf("default matches %v, want %v", got, want)
	}
	if m.ID != req || m.Type != schema.TypeOffer || m.Category != "alimentos" || m.MatchedBy != schema.MatchedByDistance ||
		m.RadiusKm == nil || *m.RadiusKm != 25 || m.Limit != 10 || m.PublicURL != f.URL+schema.RecordPath(req) {
		t.Errorf("matches: %+v", m)
	}
	for i, it := range m.Items {
		d := it.Location.DistanceKm
		if d == nil || it.Status != "open" || it.Type != schema.TypeOffer || it.Category != "alimentos" || it.Emergency.Slug != "eje-cafetero" {
			t.Errorf("item %d: %+v", i, it)
		}
		if i > 0 && *d < *m.Items[i-1].Location.DistanceKm {
			t.Errorf("item %d nearer than item %d", i, i-1)
		}
	}
	if d := *m.Items[2].Location.DistanceKm; d < 2.2 || d > 2.3 {
		t.Errorf("distance of far2km: %v km", d)
	}

	if got := f.names(f.matches(req, "radiusKm=50").Items); !slices.Equal(got, []string{"near1kmNewer", "near1km", "far2km", "at33km"}) {
		t.Errorf("radiusKm=50: %v", got)
	}
	if got := f.names(f.matches(req, "radiusKm=100").Items); len(got) != 4 {
		t.Errorf("radiusKm=100 (the cap): %v", got)
	}
	if got := f.names(f.matches(req, "radiusKm=1.5").Items); !slices.Equal(got, []string{"near1kmNewer", "near1km"}) {
		t.Errorf("radiusKm=1.5: %v", got)
	}
	if m := f.matches(req, "limit=2&radiusKm=50"); !slices.Equal(f.names(m.Items), []string{"near1kmNewer", "near1km"}) || m.Limit != 2 {
		t.Errorf("limit=2: %v", f.names(m.Items))
	}
	if m := f.matches(req, "limit=20"); m.Limit != 20 || len(m.Items) != 3 {
		t.Errorf("limit=20: %+v", m)
	}

	// An offer's matches are requests; an offer without a point or a municipio has none to measure from.
	if m := f.matches(f.ids["near1km"], ""); !slices.Equal(f.names(m.Items), []string{"sameType", "request"}) || m.Type != schema.TypeRequest {
		t.Errorf("an offer's matches: %v %+v", f.names(m.Items), m)
	}
	if m := f.matches(f.ids["noPoint"], ""); m.MatchedBy != schema.MatchedByNone || len(m.Items) != 0 || m.RadiusKm != nil {
		t.Errorf("an offer without a place: %+v", m)
	}

	// Contact as in lists: the name and whether a number exists, never the number.
	resp, raw := f.Do("GET", schema.MatchesPath(req), nil)
	if resp.StatusCode != 200 || strings.Contains(string(raw), "3109876543") || strings.Contains(string(raw), "whatsapp") ||
		!strings.Contains(string(raw), `"contact":{"name":"Luis","available":true}`) {
		t.Errorf("contact in matches: %s", raw)
	}
	if resp, _ := f.Do("GET", schema.MatchesPath(req), nil, "If-None-Match", resp.Header.Get("ETag")); resp.StatusCode != 304 {
		t.Errorf("If-None-Match: %d", resp.StatusCode)
	}
	if resp, raw := f.Do("HEAD", schema.MatchesPath(req), nil); resp.StatusCode != 200 || len(raw) != 0 {
		t.Errorf("HEAD: %d %q", resp.StatusCode, raw)
	}
	if resp, _, _ := f.call("OPTIONS", schema.MatchesPath(req), nil); resp.StatusCode != 204 || resp.Header.Get("Allow") != "GET, HEAD, OPTIONS" {
		t.Errorf("OPTIONS: %d %v", resp.StatusCode, resp.Header)
	}
	if resp, _ := f.Do("POST", schema.MatchesPath(req), []byte(`{}`), "Content-Type", "application/json"); resp.StatusCode != 405 {
		t.Errorf("POST: %d", resp.StatusCode)
	}

	for query, field := range map[string]string{
		"radiusKm=100.5": "/query/radiusKm", "radiusKm=0": "/query/radiusKm", "radiusKm=-3": "/query/radiusKm", "radiusKm=NaN": "/query/radiusKm",
		"radiusKm=diez": "/query/radiusKm", "limit=21": "/query/limit", "limit=0": "/query/limit", "limit=2.5": "/query/limit",
		"radius=5": "/query/radius", "limit=3&limit=4": "/query/limit", "type=offer": "/query/type",
	} {
		resp, raw, out := f.call("GET", schema.MatchesPath(req)+"?"+query, nil)
		if resp.StatusCode != 400 || out["code"] != schema.CodeInvalidParameter || !slices.Equal(testserver.ErrorFields(out), []string{field}) {
			t.Errorf("?%s: %d %s", query, resp.StatusCode, raw)
		}
	}
	if _, raw, _ := f.call("GET", schema.MatchesPath(req)+"?radius=5", nil); !strings.Contains(string(raw), "¿quiso decir «radiusKm»?") {
		t.Errorf("an alias is not explained: %s", raw)
	}
	if resp, raw, out := f.call("GET", schema.MatchesPath("abc"), nil); resp.StatusCode != 400 || !slices.Equal(testserver.ErrorFields(out), []string{"/path/id"}) {
		t.Errorf("malformed id: %d %s", resp.StatusCode, raw)
	}
	// Unknown, withdrawn and hidden records answer as their detail does.
	gone := func(name string) {
		t.Helper()
		resp, raw, _ := f.call("GET", schema.MatchesPath(f.ids[name]), nil)
		dresp, draw := f.Do("GET", schema.HelpPath+"?view=detail&id="+f.ids[name], nil)
		if resp.StatusCode != dresp.StatusCode || string(raw) != string(draw) {
			t.Errorf("%s: matches %d %s, detail %d %s", name, resp.StatusCode, raw, dresp.StatusCode, draw)
		}
	}
	f.ids["unknown"] = store.NewID(time.Now())
	gone("unknown")
	if resp, _ := f.Do("GET", schema.MatchesPath(f.ids["unknown"]), nil); resp.StatusCode != 404 {
		t.Errorf("unknown id: %d", resp.StatusCode)
	}
	f.act("far2km", "withdraw", 200)
	gone("far2km")
	if _, err := f.st.Update(context.Background(), f.ids["near1km"], func(r *store.Record) error { r.Status = store.StatusHidden; return nil }); err != nil {
		t.Fatal(err)
	}
	gone("near1km")
	if resp, _ := f.Do("GET", schema.MatchesPath(f.ids["near1km"]), nil); resp.StatusCode != 410 {
		t.Errorf("hidden: %d", resp.StatusCode)
	}
	// Neither stays among the request's matches.
	if got := f.names(f.matches(req, "").Items); !slices.Equal(got, []string{"near1kmNewer"}) {
		t.Errorf("after a withdrawal and a hiding: %v", got)
	}
}

// TestContractMatchesByMunicipio: a record with a place but no point matches the records of its
// municipio, newest first, without distances.
func TestContractMatchesByMunicipio(t *testing.T) {
	checkMatchesByMunicipio(t, newMatchesFixture(t, testserver.Badger(t)))
}

func checkMatchesByMunicipio(t *testing.T, f *matchesFixture) {
	add := func(name, typ, municipio string) {
		r := storetest.Record("municipio", name)
		r.Type, r.Latitude, r.Longitude, r.MunicipioCode = typ, nil, nil, municipio
		if typ == schema.TypeOffer {
			r.Needs = schema.Needs{}
		}
		stored, _, err := f.st.Create(context.Background(), r)
		if err != nil {
			t.Fatal(err)
		}
		f.ids[name] = stored.ID
		time.Sleep(2 * time.Millisecond)
	}
	add("placeRequest", schema.TypeRequest, "63001")
	add("placeOffer", schema.TypeOffer, "63001")
	add("pereiraOffer", schema.TypeOffer, "66001")
	m := f.matches(f.ids["placeRequest"], "radiusKm=1")
	got := f.names(m.Items)
	if m.MatchedBy != schema.MatchedByMunicipio || m.Municipio != "63001" || m.RadiusKm != nil || len(got) == 0 || got[0] != "placeOffer" ||
		slices.Contains(got, "pereiraOffer") || slices.Contains(got, "otherCategory") || slices.Contains(got, "resolved") {
		t.Errorf("matches by municipio: %v %+v", got, m)
	}
	for i, it := range m.Items {
		if it.Location != nil && it.Location.DistanceKm != nil {
			t.Errorf("item %d has a distance", i)
		}
		if i > 0 && it.CreatedAt.After(m.Items[i-1].CreatedAt) {
			t.Errorf("item %d newer than item %d", i, i-1)
		}
	}
	// The offers of Armenia with a point are of its municipio too.
	if !slices.Contains(got, "near1km") {
		t.Errorf("an offer with a point in the municipio: %v", got)
	}
}

// TestSiteMatches: a request's page (and its Markdown twin) lists the offers that can serve it under
// «Ofrecimientos cerca que pueden servirle», an offer's the requests, each linking to its page; the
// confirmation of a publication by the form without JavaScript lists them at once.
func TestSiteMatches(t *testing.T) { checkSiteMatches(t, newMatchesFixture(t, testserver.Badger(t))) }

func checkSiteMatches(t *testing.T, f *matchesFixture) {
	// Seven offers within the radius: the page shows the nearest five.
	for i := range 4 {
		pub := testserver.With(testserver.ValidOffer(), "category", "alimentos", "title", fmt.Sprintf("Oferta lejana %d", i),
			"latitude", armLat+(5+float64(i))*kmLat, "longitude", armLon)
		if resp, out := f.publish(string(testserver.MustJSON(t, pub))); resp.StatusCode != 201 {
			t.Fatalf("publish: %d %v", resp.StatusCode, out)
		}
	}
	link := func(name string) string { return "(" + f.URL + schema.RecordPath(f.ids[name]) + ")" }
	resp, raw := f.Do("GET", schema.RecordPath(f.ids["request"])+".md", nil)
	md := string(raw)
	_, section, _ := strings.Cut(md, "## Ofrecimientos cerca que pueden servirle\n")
	section, _, _ = strings.Cut(section, "\n## ")
	if resp.StatusCode != 200 || strings.Count(section, "\n- [") != 5 || !strings.Contains(section, "[Mercados para familias]"+link("near1kmNewer")+", a 1,1 km, Armenia (Quindío). Contacto: Luis") ||
		strings.Index(section, link("near1km")) > strings.Index(section, link("far2km")) || strings.Contains(section, "Oferta lejana 3") || strings.Contains(section, "3109876543") {
		t.Errorf("the request's twin:\n%s", md)
	}
	resp, raw = f.Do("GET", schema.RecordPath(f.ids["request"]), nil)
	page := string(raw)
	if resp.StatusCode != 200 || !strings.Contains(page, "<h2>Ofrecimientos cerca que pueden servirle</h2>") ||
		!strings.Contains(page, `<a href="`+f.URL+schema.RecordPath(f.ids["near1kmNewer"])+`">Mercados para familias</a>`) {
		t.Errorf("the request's page:\n%s", page)
	}
	_, raw = f.Do("GET", schema.RecordPath(f.ids["near1km"])+".md", nil)
	if md := string(raw); !strings.Contains(md, "## Solicitudes cerca que usted puede atender\n\n- [Agua potable para 12 familias]") ||
		!strings.Contains(md, link("request")) {
		t.Errorf("the offer's twin:\n%s", md)
	}
	// A resolved offer looks for no one.
	if _, raw = f.Do("GET", schema.RecordPath(f.ids["resolved"])+".md", nil); strings.Contains(string(raw), "## Solicitudes cerca") {
		t.Errorf("a resolved record lists matches:\n%s", raw)
	}

	form := "type=request&source=directaid-web&externalId=web-matches-1&emergencySlug=eje-cafetero&title=Mercado&category=alimentos" +
		fmt.Sprintf("&address=Cra+1&latitude=%g&longitude=%g&contactName=Ana&contactWhatsapp=3001234567&publishContact=true", armLat, armLon)
	resp, raw = f.Do("POST", "/pedir", []byte(form), "Content-Type", "application/x-www-form-urlencoded")
	page = string(raw)
	_, box, _ := strings.Cut(page, `<div id="coincidencias" class="coincidencias" data-limite="5" data-aprox="unos {d} (ubicación aproximada)">`)
	box, _, _ = strings.Cut(box, "</div>")
	if resp.StatusCode != 200 || !strings.Contains(box, "<h2>Ofrecimientos cerca que pueden servirle</h2>") || strings.Count(box, "<li>") != 5 ||
		!strings.Contains(box, `<li><a href="`+f.URL+schema.RecordPath(f.ids["near1kmNewer"])+`">Mercados para familias</a>, a 1,1 km, Armenia (Quindío)</li>`) ||
		!strings.Contains(box, `<p id="coincidencias-ninguna" hidden>`) {
		t.Errorf("the confirmation without JavaScript: %d\n%s", resp.StatusCode, page)
	}
	// The offer form's confirmation heads them for an offer; with none near, it says so.
	form = "type=offer&source=directaid-web&externalId=web-matches-2&emergencySlug=eje-cafetero&title=Cobijas&category=refugio" +
		"&latitude=4.5339&longitude=-75.6811&contactName=Ana&contactWhatsapp=3001234567&publishContact=true"
	_, raw = f.Do("POST", "/ofrecer", []byte(form), "Content-Type", "application/x-www-form-urlencoded")
	if page := string(raw); !strings.Contains(page, "<h2>Solicitudes cerca que usted puede atender</h2>") ||
		!strings.Contains(page, `<p id="coincidencias-ninguna">Todavía no hay solicitudes vigentes de refugio a menos de 25 km.</p>`) {
		t.Errorf("the offer's confirmation:\n%s", page)
	}
}

// TestMatchesPostgres runs the matches tests over a PostgreSQL store: the same answers as over Badger.
func TestMatchesPostgres(t *testing.T) {
	cluster := pgtest.Start(t)
	for name, check := range map[string]func(*testing.T, *matchesFixture){
		"contract": checkMatches, "municipio": checkMatchesByMunicipio, "site": checkSiteMatches,
	} {
		t.Run(name, func(t *testing.T) {
			db, err := pgstore.Open(cluster.NewDatabase(t))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(db.Close)
			check(t, newMatchesFixture(t, pgstore.NewStore(db)))
		})
	}
}

// TestMatchesUnansweredFirst: at the same distance (offers placed by one placeCode share its point), the
// offers nobody answered come before those with a response, whatever their age; farther ones after.
func TestMatchesUnansweredFirst(t *testing.T) {
	f := newMatchesFixture(t, testserver.Badger(t))
	ctx := context.Background()
	add := func(name, typ string, lat, lon float64) string {
		r := storetest.Record("same-point", name)
		r.Type, r.Latitude, r.Longitude = typ, &lat, &lon
		if typ == schema.TypeOffer {
			r.Needs = schema.Needs{}
		}
		stored, _, err := f.st.Create(ctx, r)
		if err != nil {
			t.Fatal(err)
		}
		f.ids[name] = stored.ID
		time.Sleep(2 * time.Millisecond)
		return stored.ID
	}
	req := add("samePointRequest", schema.TypeRequest, 4.4512, -75.7834)
	add("olderUnanswered", schema.TypeOffer, 4.4612, -75.7834)
	answered := add("newerAnswered", schema.TypeOffer, 4.4612, -75.7834)
	add("newestUnanswered", schema.TypeOffer, 4.4612, -75.7834)
	now := time.Now().UTC()
	if err := f.st.CreateResponse(ctx, &store.Response{RecordID: answered, ID: "0011223344556677", CreatedAt: now, UpdatedAt: now,
		ExpiresAt: now.Add(time.Hour), Status: store.ResponseActive, Message: "Ya voy"}); err != nil {
		t.Fatal(err)
	}
	got := f.names(f.matches(req, "radiusKm=5").Items)
	var samePoint []string
	for _, n := range got {
		if n == "olderUnanswered" || n == "newerAnswered" || n == "newestUnanswered" {
			samePoint = append(samePoint, n)
		}
	}
	if want := []string{"newestUnanswered", "olderUnanswered", "newerAnswered"}; !slices.Equal(samePoint, want) {
		t.Errorf("offers at one point: %v, want %v (unanswered first, newest first among them)", samePoint, want)
	}
	// With limit 1, the one a helper should see is unanswered.
	if one := f.names(f.matches(req, "radiusKm=5&limit=1").Items); len(one) != 1 || one[0] == "newerAnswered" {
		t.Errorf("limit 1: %v", one)
	}
}

// TestMatchesUnansweredPastTheNewest: at a point more records share than a page of matches holds, the
// unanswered ones come first even when all the newest were answered: 25 offers at one point, the 21
// newest answered, and a request's five matches are the four unanswered (newest first), then the newest
// answered one.
func TestMatchesUnansweredPastTheNewest(t *testing.T) {
	f := newMatchesFixture(t, testserver.Badger(t))
	ctx := context.Background()
	lat, lon := 4.4612, -75.7834
	base := time.Now().UTC().Add(-time.Hour)
	var offers []string
	for i := range 25 {
		r := storetest.Record("crowded", fmt.Sprint("offer-", i))
		r.Type, r.Latitude, r.Longitude, r.Needs = schema.TypeOffer, &lat, &lon, schema.Needs{}
		r.CreatedAt, r.UpdatedAt = base.Add(time.Duration(i)*time.Minute), base.Add(time.Duration(i)*time.Minute)
		stored, _, err := f.st.Create(ctx, r)
		if err != nil {
			t.Fatal(err)
		}
		f.ids[r.ExternalID] = stored.ID
		offers = append(offers, stored.ID)
	}
	now := time.Now().UTC()
	for i, id := range offers[4:] {
		if err := f.st.CreateResponse(ctx, &store.Response{RecordID: id, ID: fmt.Sprintf("%016d", i), CreatedAt: now, UpdatedAt: now,
			ExpiresAt: now.Add(time.Hour), Status: store.ResponseActive, Message: "Ya voy"}); err != nil {
			t.Fatal(err)
		}
	}
	r := storetest.Record("crowded", "request")
	r.Latitude, r.Longitude = &lat, &lon
	req, _, err := f.st.Create(ctx, r)
	if err != nil {
		t.Fatal(err)
	}
	got := f.names(f.matches(req.ID, "radiusKm=5&limit=5").Items)
	if want := []string{"offer-3", "offer-2", "offer-1", "offer-0", "offer-24"}; !slices.Equal(got, want) {
		t.Errorf("matches at a crowded point: %v, want %v (the unanswered first, newest first among them, then the newest answered)", got, want)
	}
}
