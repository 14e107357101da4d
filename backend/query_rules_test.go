package backend_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/directaid/directaid/schema"
)

// TestEmptyQueryParameterIsAbsent: on every operation of the API, a parameter sent empty (name=, what an
// HTML form sends for a field left blank) is the same as not sending it; a bare name (?dryRun, no "=")
// says nothing clear and is a 400 naming it; an unknown name is refused whatever its value.
func TestEmptyQueryParameterIsAbsent(t *testing.T) {
	s := newExpiryServer(t, &fakeClock{at: time.Now().UTC()})
	offer := func(ext string) []byte {
		b, _ := json.Marshal(map[string]any{"type": "offer", "source": "app", "externalId": ext, "emergencySlug": "eje-cafetero",
			"title": "Transporte", "category": "transporte", "contactName": "Luis", "contactWhatsapp": "3109876543", "publishContact": true})
		return b
	}
	rec := s.publish(map[string]any{"type": "offer", "source": "app", "externalId": "a", "emergencySlug": "eje-cafetero",
		"title": "Transporte", "category": "transporte", "contactName": "Luis", "contactWhatsapp": "3109876543", "publishContact": true})

	same := func(a, b string) {
		t.Helper()
		ca, ba := s.do("GET", schema.HelpPath+a, nil)
		cb, bb := s.do("GET", schema.HelpPath+b, nil)
		if ca != http.StatusOK || ca != cb || stripGenerated(ba) != stripGenerated(bb) {
			t.Errorf("GET %s: %d %.300s\nGET %s: %d %.300s", a, ca, ba, b, cb, bb)
		}
	}
	same("?view=", "")
	same("?view=&format=&limit=&emergencySlug=", "")
	same("?view=list&format=&all=&limit=&q=&category=&type=&urgency=&municipio=&latitude=&longitude=&radiusKm=&status=&since=&total=&cursor=&emergencySlug=", "?view=list")
	same("?view=list&limit=&limit=5", "?view=list&limit=5")
	same("?view=detail&id="+rec.ID+"&format=&q=", "?view=detail&id="+rec.ID)
	same("?view=panorama&emergencySlug=", "?view=panorama")

	refused := func(method, target string, body []byte, field string, header ...string) {
		t.Helper()
		code, out := s.do(method, target, body, header...)
		var e errorBody
		_ = json.Unmarshal([]byte(out), &e)
		if code != http.StatusBadRequest || e.Code != schema.CodeInvalidParameter || len(e.Details) == 0 || e.Details[0].Field != field {
			t.Errorf("%s %s: %d %s, want 400 invalid_parameter naming %s", method, target, code, out, field)
		}
	}
	// A bare name: "?dryRun" may well mean true; publishing for real would be the wrong guess.
	refused("GET", schema.HelpPath+"?view", nil, "/query/view")
	refused("GET", schema.HelpPath+"?view=list&limit", nil, "/query/limit")
	refused("POST", schema.HelpPath+"?dryRun", offer("bare"), "/query/dryRun")
	refused("GET", schema.HelpPath+"?view=list&nope=", nil, "/query/nope")
	refused("POST", schema.HelpPath+"?dryrun=", offer("unknown"), "/query/dryrun")
	refused("POST", schema.ActionsPath(rec.ID)+"?dryRun=", []byte(`{"action":"resolve"}`), "/query/dryRun", "Authorization", "Bearer "+rec.ManageToken)

	// A pair url.ParseQuery rejects (";", an escape that does not decode) or without a name refuses the
	// whole query, on every path of the API: Caddy's query matchers see no parameter at all in such a
	// query, and skipping the pair would publish a dry run for real or ignore a filter. Nothing is stored.
	for _, c := range []struct{ method, target, field string }{
		{"POST", schema.HelpPath + "?dryRun=true;", "/query/dryRun"},
		{"POST", schema.HelpPath + "?dryRun=true%", "/query/dryRun"},
		{"POST", schema.HelpPath + "?dryRun=tr%ue", "/query/dryRun"},
		{"POST", schema.HelpPath + "?;dryRun=true", "/query/;dryRun"},
		{"GET", schema.HelpPath + "?view=detail&id=" + rec.ID + "&x=%zz", "/query/x"},
		{"GET", schema.HelpPath + "?view=detail&id=" + rec.ID + "&%", "/query/%"},
		{"GET", schema.HelpPath + "?view=detail&id=" + rec.ID + "&;", "/query/;"},
		{"GET", schema.HelpPath + "?view=list&q=%", "/query/q"},
		{"GET", schema.HelpPath + "?view=list&=1", "/query/"},
		{"GET", schema.MatchesPath(rec.ID) + "?radiusKm=5%", "/query/radiusKm"},
		{"GET", schema.OpenAPIPath + "?a;b", "/query/a;b"},
	} {
		body := []byte(nil)
		if c.method == "POST" {
			body = offer("malformed")
		}
		refused(c.method, c.target, body, c.field)
	}
	// The event stream too, which would otherwise stream until its request ends (here, in 5 s).
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req := httptest.NewRequestWithContext(ctx, "GET", schema.EventsPath+"?emergencySlug=eje-cafetero&%zz=1", nil)
	rec2 := httptest.NewRecorder()
	s.h.ServeHTTP(rec2, req)
	if rec2.Code != http.StatusBadRequest || !strings.Contains(rec2.Body.String(), `"field":"/query/%zz"`) {
		t.Errorf("GET events with a malformed pair: %d %.300s, want 400 naming /query/%%zz", rec2.Code, rec2.Body.String())
	}
	if code, out := s.do("POST", schema.HelpPath, offer("malformed")); code != http.StatusCreated {
		t.Errorf("after the refusals, the publication is new: %d %s, want 201 (a refused query stored it)", code, out)
	}

	// POST: dryRun= is no dry run (the default), as a form's empty field is.
	code, out := s.do("POST", schema.HelpPath+"?dryRun=", offer("empty"))
	if code != http.StatusCreated {
		t.Errorf("POST ?dryRun=: %d %s, want 201 (empty is absent)", code, out)
	}
	code, out = s.do("POST", schema.HelpPath+"?dryRun=&dryRun=true", offer("dry"))
	if code != http.StatusOK || !strings.Contains(out, `"dryRun":true`) {
		t.Errorf("POST ?dryRun=&dryRun=true: %d %s, want 200 with the dry run", code, out)
	}
}

// TestViewParametersAreChecked: a parameter of another view is a 400 invalid_parameter naming
// /query/<name> and saying which view takes it, never silently ignored.
func TestViewParametersAreChecked(t *testing.T) {
	s := newExpiryServer(t, &fakeClock{at: time.Now().UTC()})
	for _, c := range []struct{ query, name, says string }{
		{"view=detail&id=06h0hp5rv361w8am&limit=5", "limit", "view=list"},
		{"view=detail&id=06h0hp5rv361w8am&emergencySlug=eje-cafetero", "emergencySlug", "view=list o view=panorama"},
		{"view=list&id=06h0hp5rv361w8am", "id", "view=detail"},
		{"view=panorama&format=csv", "format", "view=list"},
		{"view=panorama&q=agua", "q", "view=list"},
	} {
		code, out := s.do("GET", schema.HelpPath+"?"+c.query, nil)
		var e errorBody
		_ = json.Unmarshal([]byte(out), &e)
		if code != http.StatusBadRequest || e.Code != schema.CodeInvalidParameter || len(e.Details) != 1 || e.Details[0].Field != "/query/"+c.name ||
			!strings.Contains(e.Details[0].Message, c.says) {
			t.Errorf("?%s: %d %s, want 400 invalid_parameter naming /query/%s and saying %s", c.query, code, out, c.name, c.says)
		}
	}
}

// stripGenerated removes the generatedAt of a list or panorama, the only member two reads may differ in.
func stripGenerated(body string) string {
	var m map[string]any
	if json.Unmarshal([]byte(body), &m) != nil {
		return body
	}
	delete(m, "generatedAt")
	delete(m, "filters")
	b, _ := json.Marshal(m)
	return string(b)
}

// TestDocumentedViewsAreTheServers: the served OpenAPI document says of every GET parameter which views
// take it (x-directaid-views, and its description); the server refuses it with every other view, as a 400
// naming /query/<name>.
func TestDocumentedViewsAreTheServers(t *testing.T) {
	s := newExpiryServer(t, &fakeClock{at: time.Now().UTC()})
	_, raw := s.do("GET", schema.OpenAPIPath, nil)
	var doc struct {
		Paths map[string]map[string]struct {
			Parameters []struct {
				Name        string   `json:"name"`
				Description string   `json:"description"`
				Views       []string `json:"x-directaid-views"`
			} `json:"parameters"`
		} `json:"paths"`
	}
	if err := json.Unmarshal([]byte(raw), &doc); err != nil {
		t.Fatal(err)
	}
	params := doc.Paths[schema.HelpPath]["get"].Parameters
	if len(params) < 10 {
		t.Fatalf("%d parameters documented", len(params))
	}
	for _, p := range params {
		if len(p.Views) == 0 {
			t.Errorf("%s: no x-directaid-views", p.Name)
			continue
		}
		if p.Name == "view" {
			continue
		}
		for _, v := range p.Views {
			if !strings.Contains(p.Description, "view="+v) {
				t.Errorf("%s: the description does not say view=%s: %q", p.Name, v, p.Description)
			}
		}
		for _, v := range schema.Views {
			if slices.Contains(p.Views, v) {
				continue
			}
			code, out := s.do("GET", schema.HelpPath+"?view="+v+"&"+p.Name+"=1", nil)
			var e errorBody
			_ = json.Unmarshal([]byte(out), &e)
			if code != http.StatusBadRequest || e.Code != schema.CodeInvalidParameter ||
				!slices.ContainsFunc(e.Details, func(d struct{ Field, Message string }) bool { return d.Field == "/query/"+p.Name }) {
				t.Errorf("%s with view=%s, which the document does not list: %d %s", p.Name, v, code, out)
			}
		}
	}
}

// TestMunicipioFilterNamesTheCentroPoblado: a municipio filter given a centro poblado's name (what a
// person published with, «El Caimo») is refused with the municipio it belongs to and its code; a name cut
// short («armeni») with the municipios it begins (the emergency's area's first); an unknown name, with no
// hint.
func TestMunicipioFilterNamesTheCentroPoblado(t *testing.T) {
	s := newExpiryServer(t, &fakeClock{at: time.Now().UTC()})
	for q, want := range map[string]string{
		"El+Caimo": "es un centro poblado: filtre por su municipio, en Armenia (Quindío) (municipio=63001)",
		"armeni":   "; empiezan así: Armenia (Antioquia) (municipio=05059) y Armenia (Quindío) (municipio=63001)",
		"pereria":  "; ¿quiso decir Pereira (Risaralda) (municipio=66001) o Pereira, Montería (Córdoba) (municipio=23001)?", // a typo
		"Xyzzy":    "",
	} {
		code, out := s.do("GET", schema.HelpPath+"?view=list&municipio="+q, nil)
		var e errorBody
		_ = json.Unmarshal([]byte(out), &e)
		if code != http.StatusBadRequest || len(e.Details) != 1 || e.Details[0].Field != "/query/municipio" ||
			(want != "" && !strings.Contains(e.Details[0].Message, want)) || (want == "" && (strings.Contains(e.Details[0].Message, "centro poblado") || strings.Contains(e.Details[0].Message, "empiezan así") || strings.Contains(e.Details[0].Message, "quiso decir"))) {
			t.Errorf("municipio=%s: %d %s, want 400 on /query/municipio saying %q", q, code, out, want)
		}
	}
}
