package backend_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/directaid/directaid/backend"
	"github.com/directaid/directaid/backend/badgerstore"
	"github.com/directaid/directaid/backend/httpapi"
	"github.com/directaid/directaid/backend/mcpserver"
	"github.com/directaid/directaid/backend/store"
	"github.com/directaid/directaid/schema"
)

// The views of a record that readers get. Each shows every public field of the record type, except
// where privateIn says otherwise.
var recordViews = []string{"detail JSON", "list JSON", "CSV", "GeoJSON", "record page", "record twin"}

// privateIn lists, once, the fields of the record type that a view leaves out on purpose.
var privateIn = map[string][]string{
	// The phone is on the record's own page and its detail only: bulk views cannot be harvested for numbers.
	"/contact/whatsapp":    {"list JSON", "CSV", "GeoJSON"},
	"/contact/whatsappUrl": {"list JSON", "CSV", "GeoJSON"},
	// Always true: it says that the phone is one read away; a person sees the contact itself.
	"/contact/available": {"CSV", "record page", "record twin"},
	// Only a search around a point has a distance; a record read on its own has none.
	"/location/distanceKm": {"detail JSON", "record page", "record twin"},
	// When an open record lapses unless renewed: for mirrors and apps, which keep their copies' lists as
	// the server does. A person reading the record's page sees its status; its publisher, who alone can
	// renew it, sees the date on the confirmation and at /gestionar.
	"/expiresAt": {"record page", "record twin"},
}

// storedOnly lists, once, the stored fields of a record that no reader sees, and why. Each is changed
// alone below and no view may change with it.
var storedOnly = map[string]string{
	// The publisher's idempotency pair: it tells retries apart, and says nothing to a reader.
	"/source": "idempotency", "/externalId": "idempotency",
	// How many updates the record had: it names the live feed's event (published for 0, else updated),
	// not a field of any view.
	"/revision": "the feed's event",
	// A keyed hash of the publishing client's network: it decides whether a retry gets the manage token,
	// and must reach no reader (it would tell which records one network published).
	"/publisher": "the manage token's retry",
	// The status a hidden record had: what an operator's restore gives back. A hidden record has no view.
	"/hiddenFrom": "the restore's status",
	// Who hid a hidden record: whether undoing one reporter's reports may show it.
	"/hiddenBy": "the reporter's undo",
}

// shownAs names the public field through which a stored field shows, where the names differ (what the
// stored field decides: whether the phone is shown, or its parsed form).
var shownAs = map[string]string{
	"/emergencySlug": "/emergency/slug", "/contactName": "/contact/name", "/contactWhatsapp": "/contact/whatsapp",
	"/contactE164": "/contact/whatsapp", "/publishContact": "/contact/available", "/contactHidden": "/contact/available",
	"/locationPrecision": "/location/precision",
}

// publishedFrom names the property of the published shapes that a public field shows, where the names
// differ (the public shape nests the contact, the place and the emergency).
var publishedFrom = map[string]string{
	"/emergency/slug": "emergencySlug", "/emergency/title": "emergencySlug",
	"/contact/name": "contactName", "/contact/whatsapp": "contactWhatsapp", "/contact/whatsappUrl": "contactWhatsapp",
}

// otherValue is another valid value of the published properties that a generic change would make
// invalid.
var otherValue = map[string]any{"emergencySlug": "inundaciones-la-mojana", "contactWhatsapp": "+57 310 987 6543"}

// sample is one record published into a fresh server at a fixed time; views are what readers get of it.
type sample struct {
	pub  map[string]any
	at   time.Time
	near string // the point of the list views' search, for distanceKm
	// status, when set, is given to the record after its publication (as a publisher's action would),
	// at touchedAt when that is set (the store's clock then stands there: updatedAt moves alone).
	status    string
	touchedAt time.Time
	// expiresAt, when set, is given to the record after its publication.
	expiresAt time.Time
	// updates, before that, updates the record so many times more without changing it (its revision).
	updates int
	// responses is how many «yo puedo ayudar» answer the record after its publication.
	responses int
	// from, when set, is the address of the client that publishes it (the stored publisher's key).
	from string
	// hiddenFrom and hiddenBy, when set, are stored with the status and expiresAt update.
	hiddenFrom, hiddenBy string
	id                   string
	views                map[string]string
}

var fieldsBase = time.Date(2026, 8, 11, 14, 30, 0, 0, time.UTC)

func fieldSamples() (request, offer map[string]any) {
	request = map[string]any{"type": "request", "source": "campos", "externalId": "r-1", "emergencySlug": "eje-cafetero",
		"title": "Agua potable", "description": "Sin agua desde el sismo.", "category": "alimentos", "contactName": "Ana Gómez",
		"contactWhatsapp": "+57 300 123 4567", "publishContact": true, "address": "Cra 14 # 20-31", "neighborhood": "Centro",
		"latitude": 4.5339, "longitude": -75.6811, "urgency": "urgent", "neededPeople": 12}
	offer = map[string]any{"type": "offer", "source": "campos", "externalId": "o-1", "emergencySlug": "eje-cafetero",
		"title": "Centro de acopio", "description": "Recibimos mercados.", "category": "acopio", "contactName": "Luis",
		"contactWhatsapp": "+57 300 123 4567", "publishContact": true, "address": "Calle 10 # 5-20",
		"latitude": 4.54, "longitude": -75.67, "collectionCenterStatus": "needs_volunteers"}
	return request, offer
}

// render publishes s.pub into a fresh server whose clock stands at s.at and reads every view of it.
func (s *sample) render(t *testing.T) {
	t.Helper()
	var clock atomic.Int64 // the store's writer reads it
	clock.Store(s.at.UnixNano())
	st, err := badgerstore.Open(badgerstore.Options{Dir: t.TempDir(), Now: func() time.Time { return time.Unix(0, clock.Load()).UTC() }})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	svc := backend.NewService(st, backend.Config{Emergencies: []backend.Emergency{{Slug: "eje-cafetero", Title: "Terremoto en el Eje Cafetero"},
		{Slug: "inundaciones-la-mojana", Title: "Inundaciones en La Mojana"}},
		RateLimits: map[string]backend.Limit{backend.ZonePublish: {1000, time.Minute}, backend.ZoneDetail: {1000, time.Minute}}})
	svc.SetNow(func() time.Time { return s.at })
	h, err := httpapi.NewHandler(svc, httpapi.Options{MCP: mcpserver.New(svc)})
	if err != nil {
		t.Fatal(err)
	}
	get := func(method, path string, body []byte) string {
		t.Helper()
		r := httptest.NewRequest(method, "http://ayuda.test"+path, strings.NewReader(string(body)))
		r.Header.Set("Content-Type", "application/json")
		if s.from != "" {
			r.RemoteAddr = s.from
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code/100 != 2 {
			t.Fatalf("%s %s: %d %s", method, path, w.Code, w.Body)
		}
		return w.Body.String()
	}
	body, _ := json.Marshal(s.pub)
	var res schema.PublishResult
	if err := json.Unmarshal([]byte(get("POST", schema.HelpPath, body)), &res); err != nil {
		t.Fatal(err)
	}
	s.id = res.ID
	list := schema.HelpPath + "?view=list" + s.near
	for range s.updates {
		if _, err := st.Update(t.Context(), s.id, func(*store.Record) error { return nil }); err != nil {
			t.Fatal(err)
		}
	}
	if s.status != "" || !s.expiresAt.IsZero() || s.hiddenFrom != "" || s.hiddenBy != "" {
		if !s.touchedAt.IsZero() {
			clock.Store(s.touchedAt.UnixNano())
		}
		if _, err := st.Update(t.Context(), s.id, func(r *store.Record) error {
			if s.status != "" {
				r.Status = s.status
			}
			r.HiddenFrom, r.HiddenBy = s.hiddenFrom, s.hiddenBy
			if !s.expiresAt.IsZero() {
				r.ExpiresAt = s.expiresAt
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range s.responses {
		get("POST", schema.ResponsesPath(s.id), fmt.Appendf(nil, `{"message":"Puedo ayudar %d","contactWhatsapp":"+57 311 222 3344"}`, i))
	}
	if s.status != "" {
		list += "&status=" + s.status
	}
	s.views = map[string]string{
		"detail JSON": get("GET", schema.HelpPath+"?view=detail&id="+s.id, nil),
		"list JSON":   get("GET", list, nil),
		"CSV":         get("GET", list+"&format=csv", nil),
		"GeoJSON":     get("GET", list+"&format=geojson", nil),
		"record page": get("GET", schema.RecordPath(s.id), nil),
		"record twin": get("GET", schema.RecordPath(s.id)+".md", nil),
	}
	for v, text := range s.views { // the id differs from sample to sample; what it names is compared
		s.views[v] = strings.ReplaceAll(text, s.id, "ID")
	}
}

// publicFields are the JSON pointers of the leaves of the record type (the detail: the list's shape and
// the phone), in declaration order.
func publicFields(t reflect.Type, prefix string) []string {
	var out []string
	for f := range t.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if !f.IsExported() || name == "-" {
			continue
		}
		ft := f.Type
		if ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		switch {
		case f.Anonymous && name == "":
			out = append(out, publicFields(ft, prefix)...)
		case ft.Kind() == reflect.Struct && ft != reflect.TypeFor[time.Time]():
			out = append(out, publicFields(ft, prefix+"/"+name)...)
		default:
			out = append(out, prefix+"/"+name)
		}
	}
	return out
}

// changed returns pub with prop set to another valid value, read from the published shape's schema.
func changed(t *testing.T, pub map[string]any, prop string) map[string]any {
	t.Helper()
	out := maps.Clone(pub)
	out["externalId"] = fmt.Sprint(pub["externalId"], "-", prop)
	if v, ok := otherValue[prop]; ok {
		out[prop] = v
		return out
	}
	name := map[any]string{"request": "HelpRequest", "offer": "HelpOffer"}[pub["type"]]
	p, ok := schema.JSONSchema(name).Properties.Get(prop)
	if !ok {
		t.Fatalf("%s has no property %s", name, prop)
	}
	switch {
	case len(p.Enum) > 1:
		i := slices.IndexFunc(p.Enum, func(e any) bool { return e == pub[prop] })
		out[prop] = p.Enum[(i+1)%len(p.Enum)]
	case p.Type == "string":
		out[prop] = fmt.Sprint(pub[prop], " más")
	case p.Type == "number":
		out[prop] = pub[prop].(float64) + 0.01
	case p.Type == "integer":
		out[prop] = pub[prop].(int) + 1
	default:
		t.Fatalf("%s/%s: no other value for a %s: add one to otherValue", name, prop, p.Type)
	}
	return out
}

// TestEveryFieldInEveryView: every public field of the record type shows in every view of a record
// (its JSON, the CSV and GeoJSON exports, its page and the page's twin) unless privateIn lists it. Each
// field is changed alone, and each view must change with it: a field added to the record type and
// forgotten by a view fails here.
func TestEveryFieldInEveryView(t *testing.T) {
	request, offer := fieldSamples()
	samples := map[string]*sample{}
	rendered := func(pub map[string]any, at time.Time, near string) *sample {
		key := fmt.Sprint(pub, at, near, "")
		if s, ok := samples[key]; ok {
			return s
		}
		s := &sample{pub: pub, at: at, near: near}
		s.render(t)
		samples[key] = s
		return s
	}
	// The same record published again gives the same views: what differs below is the field.
	if a, b := rendered(request, fieldsBase, ""), rendered(changed(t, request, "externalId"), fieldsBase, ""); !maps.Equal(a.views, b.views) {
		for v := range a.views {
			if a.views[v] != b.views[v] {
				t.Fatalf("%s differs between two publications of one record:\n%s\n---\n%s", v, a.views[v], b.views[v])
			}
		}
	}
	fields := publicFields(reflect.TypeFor[schema.PublicHelpDetail](), "")
	if len(fields) < 15 {
		t.Fatalf("the record type has only %v", fields)
	}
	// Every stored field reaches readers through a public field, or storedOnly says why it does not.
	for _, f := range publicFields(reflect.TypeFor[store.Record](), "") {
		_, only := storedOnly[f]
		to, mapped := shownAs[f]
		public := slices.ContainsFunc(fields, func(p string) bool { return p == f || strings.HasSuffix(p, f) || publishedFrom[p] == f[1:] })
		switch {
		case only && (mapped || public):
			t.Errorf("stored field %s is listed in storedOnly, but readers see it", f)
		case mapped && !slices.Contains(fields, to):
			t.Errorf("stored field %s: shownAs names %s, which is not a public field", f, to)
		case !only && !mapped && !public:
			t.Errorf("stored field %s reaches no reader: add it to the public record (and the views), or list it once in storedOnly saying why", f)
		}
	}
	t.Run("storedOnly", func(t *testing.T) {
		a := &sample{pub: request, at: fieldsBase, expiresAt: fieldsBase.Add(14 * 24 * time.Hour)}
		b := &sample{pub: request, at: fieldsBase, expiresAt: fieldsBase.Add(30 * 24 * time.Hour)}
		a.render(t)
		b.render(t)
		// One update more, at the time of the publication: the last update stamps the same updatedAt.
		later := fieldsBase.Add(time.Hour)
		c := &sample{pub: request, at: fieldsBase, expiresAt: a.expiresAt, touchedAt: later}
		d := &sample{pub: request, at: fieldsBase, expiresAt: a.expiresAt, touchedAt: later, updates: 1}
		c.render(t)
		d.render(t)
		e := &sample{pub: request, at: fieldsBase, from: "198.51.100.1:4000"}
		f := &sample{pub: request, at: fieldsBase, from: "[2001:db8::1]:4000"}
		e.render(t)
		f.render(t)
		g := &sample{pub: request, at: fieldsBase, expiresAt: a.expiresAt, touchedAt: later, hiddenFrom: store.StatusResolved}
		g.render(t)
		h := &sample{pub: request, at: fieldsBase, expiresAt: a.expiresAt, touchedAt: later, hiddenBy: store.ActorOperator}
		h.render(t)
		pairs := map[string][2]*sample{"/revision": {c, d}, "/publisher": {e, f}, "/hiddenFrom": {c, g}, "/hiddenBy": {c, h}}
		for _, prop := range []string{"source", "externalId"} {
			pairs["/"+prop] = [2]*sample{rendered(request, fieldsBase, ""), rendered(changed(t, request, prop), fieldsBase, "")}
		}
		if len(pairs) != len(storedOnly) {
			t.Fatalf("change each field of storedOnly alone here: %d of %d", len(pairs), len(storedOnly))
		}
		for f, p := range pairs {
			for _, v := range recordViews {
				if p[0].views[v] != p[1].views[v] {
					t.Errorf("%s is in storedOnly, but the %s shows it:\n%s\n---\n%s", f, v, p[0].views[v], p[1].views[v])
				}
			}
		}
	})
	for _, field := range fields {
		t.Run(strings.TrimPrefix(field, "/"), func(t *testing.T) {
			var a, b *sample
			what := "two values"
			switch field {
			case "/id", "/publicUrl":
				// Chosen by the server, different in every record: each view must name it.
				s := rendered(request, fieldsBase, "")
				for _, v := range recordViews {
					if !strings.Contains(s.views[v], "ID") {
						t.Errorf("%s: the %s does not show it", field, v)
					}
				}
				return
			case "/contact/available":
				s := rendered(request, fieldsBase, "")
				for _, v := range recordViews {
					if !slices.Contains(privateIn[field], v) && !strings.Contains(s.views[v], `"available":true`) {
						t.Errorf("%s: the %s does not show it", field, v)
					}
				}
				return
			case "/status":
				// Set by the server and by publishers' actions; lists show one status at a time.
				a, b = &sample{pub: request, at: fieldsBase, status: store.StatusOpen}, &sample{pub: request, at: fieldsBase, status: store.StatusResolved}
				a.render(t)
				b.render(t)
			case "/responses":
				// Set by the responses to the record: none, then two.
				a, b = &sample{pub: request, at: fieldsBase}, &sample{pub: request, at: fieldsBase, responses: 2}
				a.render(t)
				b.render(t)
			case "/createdAt":
				a, b = rendered(request, fieldsBase, ""), rendered(request, fieldsBase.Add(26*time.Hour+7*time.Minute), "")
			case "/expiresAt":
				// Set by the server from the emergency's time to live, and by a renewal.
				a = &sample{pub: request, at: fieldsBase, expiresAt: fieldsBase.Add(14 * 24 * time.Hour)}
				b = &sample{pub: request, at: fieldsBase, expiresAt: fieldsBase.Add(30 * 24 * time.Hour)}
				a.render(t)
				b.render(t)
			case "/updatedAt":
				// Moved alone: the same record changed (to the same status) at two times.
				a = &sample{pub: request, at: fieldsBase, status: store.StatusOpen, touchedAt: fieldsBase.Add(time.Hour)}
				b = &sample{pub: request, at: fieldsBase, status: store.StatusOpen, touchedAt: fieldsBase.Add(26*time.Hour + 7*time.Minute)}
				a.render(t)
				b.render(t)
			case "/location/precision":
				a, b = rendered(request, fieldsBase, ""), rendered(withMember(request, "locationPrecision", "gps"), fieldsBase, "")
			case "/location/placeCode", "/location/place":
				// Set from placeCode: two centros poblados of one municipio.
				a, b = rendered(withMember(request, "placeCode", "63001001"), fieldsBase, ""), rendered(withMember(request, "placeCode", "63001002"), fieldsBase, "")
			case "/location/municipioCode", "/location/municipio":
				// Set from placeCode, or from the coordinates (the nearest listed place) without one.
				a, b = rendered(request, fieldsBase, ""), rendered(withMember(request, "placeCode", "63130"), fieldsBase, "")
			case "/location/distanceKm":
				a, b = rendered(request, fieldsBase, "&latitude=4.53&longitude=-75.68"), rendered(request, fieldsBase, "&latitude=4.54&longitude=-75.69")
			default:
				prop, ok := publishedFrom[field]
				if !ok {
					prop = field[strings.LastIndex(field, "/")+1:]
				}
				base := request
				if _, ok := base[prop]; !ok {
					base = offer
				}
				if _, ok := base[prop]; !ok {
					t.Fatalf("%s: no published property %q shows in it; say in publishedFrom which one does, or how the server sets it", field, prop)
				}
				if field == "/type" {
					a, b = rendered(request, fieldsBase, ""), rendered(offer, fieldsBase, "")
				} else {
					a, b = rendered(base, fieldsBase, ""), rendered(changed(t, base, prop), fieldsBase, "")
					what = fmt.Sprintf("%s %v and %v", prop, a.pub[prop], b.pub[prop])
				}
			}
			for _, v := range recordViews {
				private := slices.Contains(privateIn[field], v)
				if shows := a.views[v] != b.views[v]; shows == private {
					if private {
						t.Errorf("%s shows in the %s, but privateIn says it does not", field, v)
					} else {
						t.Errorf("%s: the %s does not show it (the same for %s); show it or list it once in privateIn", field, v, what)
					}
				}
			}
		})
	}
}

// withMember is pub with one more member.
func withMember(pub map[string]any, name string, v any) map[string]any {
	out := maps.Clone(pub)
	out[name] = v
	return out
}
