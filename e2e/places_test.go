package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/directaid/directaid/internal/testserver"
	"github.com/directaid/directaid/schema"
)

// TestPlaceCodeThroughAPI: a request located by its DIVIPOLA code alone is published with the place's
// point, marked approximate, and its municipio's name; an unknown code is refused by name; coordinates
// still work; San Andrés, beyond the typed longitude bounds, is reachable by its code; lists filter by
// municipio, by code or by name.
func TestPlaceCodeThroughAPI(t *testing.T) {
	t.Parallel()
	s := testserver.Start(t, testserver.Options{})
	byCode := with(validRequest(), "latitude", nil, "longitude", nil, "placeCode", "63001001")
	resp, out := publish(t, s, byCode)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("placeCode only: %d %v", resp.StatusCode, out)
	}
	_, d := call(t, s, "GET", "/api/public/v1/help?view=detail&id="+out["id"].(string), nil)
	loc, _ := d["location"].(map[string]any)
	if loc["precision"] != "place" || loc["placeCode"] != "63001001" || loc["municipioCode"] != "63001" ||
		loc["municipio"] != "Armenia (Quindío)" || loc["place"] != "El Caimo, Armenia (Quindío)" || loc["latitude"] == nil || loc["longitude"] == nil {
		t.Errorf("location of a record by place: %v", loc)
	}

	resp, out = publish(t, s, with(validRequest(), "latitude", nil, "longitude", nil, "placeCode", "99999"))
	if resp.StatusCode != 400 || out["code"] != "unknown_place" || strings.Join(fields(out), ",") != "/placeCode" || !strings.Contains(out["error"].(string), "DIVIPOLA") {
		t.Errorf("unknown placeCode: %d %v", resp.StatusCode, out)
	}
	resp, out = publish(t, s, with(validRequest(), "latitude", nil, "longitude", nil))
	if resp.StatusCode != 400 || strings.Join(fields(out), ",") != "/latitude,/longitude" {
		t.Errorf("request without location: %d %v", resp.StatusCode, out)
	}

	resp, out = publish(t, s, with(validRequest(), "locationPrecision", "gps"))
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("coordinates: %d %v", resp.StatusCode, out)
	}
	_, d = call(t, s, "GET", "/api/public/v1/help?view=detail&id="+out["id"].(string), nil)
	loc, _ = d["location"].(map[string]any)
	if loc["precision"] != "gps" || loc["latitude"] != 4.5339 || loc["municipioCode"] != "63001" || loc["placeCode"] != nil {
		t.Errorf("location of a record by coordinates: %v", loc)
	}

	resp, out = publish(t, s, with(validRequest(), "latitude", nil, "longitude", nil, "placeCode", "88001"))
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("San Andrés by code: %d %v", resp.StatusCode, out)
	}
	if resp, out := publish(t, s, with(validRequest(), "longitude", -81.7, "latitude", 12.58)); resp.StatusCode != 400 || strings.Join(fields(out), ",") != "/longitude" {
		t.Errorf("typed San Andrés coordinates (SPEC's bounds): %d %v", resp.StatusCode, out)
	}

	// The municipio filter: Armenia has two records, San Andrés one; a name works too; an ambiguous one
	// asks for the departamento.
	for q, want := range map[string]int{"63001": 2, "armenia quindio": 2, "San Andrés archipiélago": 1, "05001": 0} {
		_, l := call(t, s, "GET", "/api/public/v1/help?view=list&municipio="+url.QueryEscape(q), nil)
		if n, _ := l["total"].(float64); int(n) != want {
			t.Errorf("municipio=%s: total %v, want %d: %v", q, l["total"], want, l)
		}
	}
	resp, out = call(t, s, "GET", "/api/public/v1/help?view=list&municipio=armenia", nil)
	if resp.StatusCode != 400 || strings.Join(fields(out), ",") != "/query/municipio" || !strings.Contains(out["error"].(string), "63001") {
		t.Errorf("ambiguous municipio: %d %v", resp.StatusCode, out)
	}
	_, csv := s.Do("GET", "/api/public/v1/help?view=list&format=csv&municipio=88001", nil)
	if !strings.Contains(string(csv), `,place,88001,"San Andrés (Archipiélago de San Andrés, Providencia y Santa Catalina)",88001,"San Andrés (Archipiélago`) {
		t.Errorf("CSV of a record by place:\n%s", csv)
	}

	// The place list: a stable address with an ETag for apps, the page's copy at a hashed address.
	resp, list := s.Do("GET", "/lugares.tsv", nil)
	if resp.StatusCode != 200 || resp.Header.Get("ETag") == "" || !strings.Contains(string(list), "63001001\tEl Caimo\t") {
		t.Errorf("/lugares.tsv: %d %v", resp.StatusCode, resp.Header)
	}
	_, page := s.Do("GET", "/pedir", nil)
	m := regexp.MustCompile(`data-lugares="(/assets/lugares\.[0-9a-f]+\.tsv)"`).FindSubmatch(page)
	if m == nil {
		t.Fatalf("/pedir names no place list")
	}
	resp, hashed := s.Do("GET", string(m[1]), nil)
	if resp.StatusCode != 200 || string(hashed) != string(list) || !strings.Contains(resp.Header.Get("Cache-Control"), "immutable") {
		t.Errorf("%s: %d %v", m[1], resp.StatusCode, resp.Header)
	}
	t.Logf("place list: %d bytes", len(list))
}

// TestPlacePickerWithoutJavaScript: a person without JavaScript picks departamento, then municipio, then
// publishes; each step re-renders the form with everything typed, and the record has the place.
func TestPlacePickerWithoutJavaScript(t *testing.T) {
	t.Parallel()
	s := testserver.Start(t, testserver.Options{})
	post := func(v url.Values) (int, string) {
		resp, body := s.Do("POST", "/pedir", []byte(v.Encode()), "Content-Type", "application/x-www-form-urlencoded")
		return resp.StatusCode, string(body)
	}
	_, fresh := s.Do("GET", "/pedir", nil)
	if strings.Contains(string(fresh), `name="latitude"`) && strings.Contains(string(fresh), `id="f-latitude" name="latitude" value="" required`) {
		t.Errorf("latitude is still required on /pedir")
	}
	ext := regexp.MustCompile(`name="externalId" value="([^"]+)"`).FindStringSubmatch(string(fresh))
	if ext == nil {
		t.Fatal("no externalId in the form")
	}
	v := url.Values{"type": {"request"}, "source": {"directaid-web"}, "externalId": {ext[1]}, "emergencySlug": {"eje-cafetero"},
		"title": {"Agua para la vereda"}, "category": {"alimentos"}, "address": {"Finca La Esperanza"}, "contactName": {"Ana"},
		"contactWhatsapp": {"3001234567"}, "publishContact": {"true"}, "lugar-departamento": {"63"}, "paso": {"departamento"}}
	status, body := post(v)
	if status != 200 || !strings.Contains(body, `<option value="63001">Armenia</option>`) || !strings.Contains(body, `value="Finca La Esperanza"`) ||
		!strings.Contains(body, `value="Agua para la vereda"`) || strings.Contains(body, "/ayudas/") {
		t.Fatalf("step departamento: %d\n%s", status, body)
	}
	// The search step too: «el caimo» finds the centro poblado; choosing it keeps the form.
	v.Del("paso")
	v.Set("lugar-buscar", "el caimo")
	v.Set("paso", "buscar")
	if status, body = post(v); status != 200 || !strings.Contains(body, `name="lugar-elegir" value="63001001"`) || !strings.Contains(body, "El Caimo, Armenia (Quindío)") {
		t.Fatalf("search step: %d\n%s", status, body)
	}
	v.Del("paso")
	v.Del("lugar-buscar")
	v.Set("lugar-municipio", "63001")
	v.Set("paso", "municipio")
	if status, body = post(v); status != 200 || !strings.Contains(body, `<option value="63001001">El Caimo</option>`) || !strings.Contains(body, "Lugar: <strong>Armenia (Quindío)</strong>") {
		t.Fatalf("step municipio: %d\n%s", status, body)
	}
	v.Del("paso")
	v.Set("lugar-centro", "63001001")
	status, body = post(v)
	id := regexp.MustCompile(`/ayudas/([0-9a-z]{16})`).FindStringSubmatch(body)
	if status != 200 || id == nil {
		t.Fatalf("publish: %d\n%s", status, body)
	}
	_, d := call(t, s, "GET", "/api/public/v1/help?view=detail&id="+id[1], nil)
	loc, _ := d["location"].(map[string]any)
	if loc["placeCode"] != "63001001" || loc["precision"] != "place" {
		t.Errorf("the record's place: %v", loc)
	}
	// The record page names the place and says the point is approximate.
	_, pageBody := s.Do("GET", "/ayudas/"+id[1], nil)
	for _, want := range []string{"El Caimo, Armenia (Quindío)", "Armenia (Quindío)", "aproximadas"} {
		if !strings.Contains(string(pageBody), want) {
			t.Errorf("record page lacks %q", want)
		}
	}
	// Without a place or coordinates the form says so once, at the picker, and keeps what was typed.
	v.Del("lugar-centro")
	v.Del("lugar-municipio")
	v.Del("lugar-departamento")
	v.Set("externalId", "web-otro")
	status, body = post(v)
	if status != 400 || strings.Count(body, "Diga dónde") < 1 || !strings.Contains(body, `href="#f-placeCode"`) || !strings.Contains(body, `value="Finca La Esperanza"`) {
		t.Errorf("no place: %d\n%s", status, body)
	}
	_ = json.Valid
}

// TestPlaceSearchOverHTTP: a bot that speaks HTTP only finds a place's code by name (GET places, what
// buscar_lugar does over MCP, with the same answer), publishes with it, and gets a clear error for every
// bad query; the answer is cacheable and validated against the OpenAPI document.
func TestPlaceSearchOverHTTP(t *testing.T) {
	t.Parallel()
	s := testserver.Start(t, testserver.Options{})
	_, disc := call(t, s, "GET", schema.HelpPath, nil)
	if disc["places"] != s.URL+schema.PlaceSearchPath {
		t.Errorf("discovery's places: %v", disc["places"])
	}
	resp, out := call(t, s, "GET", schema.PlaceSearchPath+"?q=el+caimo&emergencySlug=eje-cafetero", nil)
	ps, _ := out["places"].([]any)
	if resp.StatusCode != 200 || len(ps) == 0 {
		t.Fatalf("places «el caimo»: %d %v", resp.StatusCode, out)
	}
	first, _ := ps[0].(map[string]any)
	if first["placeCode"] != "63001001" || first["place"] != "El Caimo, Armenia (Quindío)" || first["inEmergencyArea"] != true {
		t.Fatalf("places «el caimo»: %v", first)
	}
	resp, pub := publish(t, s, with(validRequest(), "latitude", nil, "longitude", nil, "placeCode", first["placeCode"]))
	if resp.StatusCode != 201 {
		t.Fatalf("publish with the code found: %d %v", resp.StatusCode, pub)
	}

	// The same answer as buscar_lugar, whatever the words.
	cs := sdkSession(t, s, "")
	for _, args := range []map[string]any{{"q": "Armenia", "emergencySlug": "eje-cafetero"}, {"q": "Armenia"}, {"q": "la union", "emergencySlug": "eje-cafetero"},
		{"q": "pueblo tapao"}, {"q": "zzzzqqq"}, {"q": "majagual", "emergencySlug": "inundaciones-la-mojana"}} {
		v := url.Values{}
		for k, a := range args {
			v.Set(k, a.(string))
		}
		_, raw := s.Do("GET", schema.PlaceSearchPath+"?"+v.Encode(), nil)
		var overHTTP schema.PlaceList
		if err := json.Unmarshal(raw, &overHTTP); err != nil {
			t.Fatal(err)
		}
		overMCP := roundTrip[schema.PlaceList](t, callTool(t, cs, schema.ToolFindPlace, args).StructuredContent)
		if !reflect.DeepEqual(overHTTP, overMCP) || overHTTP.Places == nil {
			t.Errorf("%v: HTTP and buscar_lugar differ:\n%+v\n%+v", args, overHTTP, overMCP)
		}
	}

	// Cacheable: HEAD has GET's headers, If-None-Match gets 304.
	resp, raw := s.Do("GET", schema.PlaceSearchPath+"?q=calarca", nil)
	etag := resp.Header.Get("ETag")
	if resp.StatusCode != 200 || etag == "" || !strings.Contains(resp.Header.Get("Cache-Control"), "public") || !strings.Contains(string(raw), `"63130"`) {
		t.Fatalf("places «calarca»: %d %v %s", resp.StatusCode, resp.Header, raw)
	}
	if resp, _ := call(t, s, "GET", schema.PlaceSearchPath+"?q=calarca", nil, "If-None-Match", etag); resp.StatusCode != 304 {
		t.Errorf("If-None-Match: %d", resp.StatusCode)
	}
	if resp, raw := s.Do("HEAD", schema.PlaceSearchPath+"?q=calarca", nil); resp.StatusCode != 200 || len(raw) != 0 || resp.Header.Get("ETag") != etag {
		t.Errorf("HEAD: %d %v", resp.StatusCode, resp.Header)
	}
	if resp, _ := call(t, s, "OPTIONS", schema.PlaceSearchPath, nil, "Origin", "https://bot.example", "Access-Control-Request-Method", "GET"); resp.StatusCode != 204 {
		t.Errorf("OPTIONS: %d", resp.StatusCode)
	}
	if resp, out := call(t, s, "POST", schema.PlaceSearchPath+"?q=calarca", []byte(`{}`), "Content-Type", "application/json"); resp.StatusCode != 405 || resp.Header.Get("Allow") != "GET, HEAD, OPTIONS" {
		t.Errorf("POST: %d %v", resp.StatusCode, out)
	}

	// Every bad query is named, as a query parameter.
	for _, c := range []struct{ query, fields, says string }{
		{"", "/query/q", "falta «q»"},
		{"q=", "/query/q", "falta «q»"},
		{"q", "/query/q", "sin valor"},
		{"q=%2A%2A", "/query/q", "no es el nombre de un lugar"},
		{"q=El%00Caimo", "/query/q", "no es el nombre de un lugar"},
		{"q=" + strings.Repeat("a", 101), "/query/q", "hasta 100"},
		{"q=a&q=b", "/query/q", "repetido"},
		{"lugar=armenia", "/query/lugar", "no existe"},
		{"q=armenia&emergencySlug=nope", "/query/emergencySlug", "eje-cafetero"},
		{"q=%2A&emergencySlug=nope", "/query/q,/query/emergencySlug", "no es el nombre"},
	} {
		resp, out := call(t, s, "GET", schema.PlaceSearchPath+"?"+c.query, nil)
		if resp.StatusCode != 400 || out["code"] != "invalid_parameter" || strings.Join(fields(out), ",") != c.fields || !strings.Contains(fmt.Sprint(out["details"]), c.says) {
			t.Errorf("?%s: %d %v", c.query, resp.StatusCode, out)
		}
	}
}
