package e2e

import (
	"fmt"
	"html"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/directaid/directaid/internal/testserver"
	"github.com/directaid/directaid/schema"
)

// TestGestionar: the manage page without JavaScript acts through the same service as the API; a wrong
// token gets a Spanish error page and changes nothing; the token never reaches a log line.
func TestGestionar(t *testing.T) {
	t.Parallel()
	s := testserver.Start(t, testserver.Options{})
	_, pub := publish(t, s, validRequest())
	id, token := pub["id"].(string), pub["manageToken"].(string)
	if id == "" || token == "" {
		t.Fatalf("201: %v", pub)
	}
	status := func() any {
		_, d := call(t, s, "GET", schema.HelpPath+"?view=detail&id="+id, nil)
		return d["status"]
	}
	post := func(tok, action string) (int, string) {
		v := url.Values{"id": {id}, "token": {tok}, "action": {action}}
		resp, body := s.Do("POST", "/gestionar", []byte(v.Encode()), "Content-Type", "application/x-www-form-urlencoded")
		return resp.StatusCode, string(body)
	}
	code, page := post(token+"x", schema.ActionResolve)
	if code != 403 || !strings.Contains(page, "El código para gestionar esta publicación no es válido") {
		t.Fatalf("wrong token: %d\n%.3000s", code, page)
	}
	if st := status(); st != "open" {
		t.Fatalf("a wrong token changed the status to %v", st)
	}
	code, page = post(token, schema.ActionResolve)
	if code != 200 || !strings.Contains(page, "quedó marcada como resuelta") || !strings.Contains(html.UnescapeString(page), "Su número sigue en la página de la publicación, para quien la abra; si quiere quitarlo, use «Retirar».") {
		t.Fatalf("resolve: %d\n%.3000s", code, page)
	}
	if st := status(); st != "resolved" {
		t.Fatalf("after resolve: status %v", st)
	}
	done := regexp.MustCompile(`<p id="gestion-hecho">([^<]*)</p>`)
	if m := done.FindStringSubmatch(page); m == nil || strings.Contains(m[1], "deja de mostrarse") {
		t.Errorf("resolved: %q, want no date it stops showing", m)
	}
	// Reopened, it has a lifetime again, and the page says until when.
	code, page = post(token, schema.ActionReopen)
	if code != 200 {
		t.Fatalf("reopen: %d\n%.3000s", code, page)
	}
	checkExpiryLine(t, html.UnescapeString(done.FindStringSubmatch(page + `<p id="gestion-hecho"></p>`)[1]),
		"Listo: la publicación quedó abierta de nuevo. Estado: vigente. Si nadie la renueva, deja de mostrarse el ", ".")
	// Opened again without an action (the confirmation's «Gestionar»), the page says it too.
	if code, page = post(token, ""); code != 200 || !strings.Contains(html.UnescapeString(page), "Estado: vigente. Si nadie la renueva, deja de mostrarse el ") {
		t.Errorf("opened without an action: %d, no date it stops showing\n%.3000s", code, page)
	}
	if code, _ = post(token, schema.ActionResolve); code != 200 {
		t.Fatalf("resolve again: %d", code)
	}
	if code, page = post(token, "borrar"); code != 400 || !strings.Contains(page, "Acción desconocida") {
		t.Fatalf("unknown action: %d\n%.3000s", code, page)
	}
	for _, p := range []string{"/gestionar", "/gestionar.md"} {
		if resp, body := s.Do("GET", p, nil); resp.StatusCode != 200 || !strings.Contains(string(body), "Gestionar su publicación") {
			t.Fatalf("GET %s: %d", p, resp.StatusCode)
		}
	}
	if _, llms := s.Do("GET", "/llms.txt", nil); !strings.Contains(string(llms), "/gestionar.md") {
		t.Fatalf("llms.txt does not list /gestionar.md:\n%s", llms)
	}
	// A no-JavaScript publication shows its manage link once, with the warning.
	_, fresh := s.Do("GET", "/pedir", nil)
	ext := regexp.MustCompile(`name="externalId" value="([^"]+)"`).FindStringSubmatch(string(fresh))
	if ext == nil {
		t.Fatal("no externalId in the form")
	}
	form := url.Values{"type": {"request"}, "source": {"directaid-web"}, "externalId": {ext[1]}, "emergencySlug": {"eje-cafetero"},
		"title": {"Agua"}, "category": {"alimentos"}, "address": {"Cra 1"}, "latitude": {"4.5"}, "longitude": {"-75.6"},
		"contactName": {"Ana"}, "contactWhatsapp": {"3001234567"}, "publishContact": {"true"}}
	resp, body := s.Do("POST", "/pedir", []byte(form.Encode()), "Content-Type", "application/x-www-form-urlencoded")
	m := regexp.MustCompile(`id="resultado-gestionar" href="([^"]+)"`).FindStringSubmatch(string(body))
	if resp.StatusCode != 201 && resp.StatusCode != 200 || m == nil || !strings.Contains(string(body), `<div id="resultado-gestion">`) || !strings.Contains(string(body), "Guarde este enlace: allí verá quién le responde, y es la única forma") ||
		!strings.Contains(html.UnescapeString(m[1]), s.URL+"/gestionar#id=") {
		t.Fatalf("form publication: %d, manage link %v\n%.3000s", resp.StatusCode, m, body)
	}
	vence := regexp.MustCompile(`(?s)<p id="resultado-vence" data-meses="[^"]*">(.*?)</p>`).FindStringSubmatch(string(body))
	if vence == nil {
		t.Fatalf("the confirmation does not say when the publication stops showing:\n%.3000s", body)
	}
	checkExpiryLine(t, regexp.MustCompile(`<[^>]+>`).ReplaceAllString(html.UnescapeString(vence[1]), ""),
		"Si nadie renueva la publicación, deja de mostrarse el ", ". Para mantenerla más tiempo, abra el enlace y pulse «Renovar».")
	s.Stop()
	if strings.Contains(s.Log()+s.Output(), token) {
		t.Fatal("the manage token reached a log line")
	}
}

// checkExpiryLine checks a line that says when a publication stops showing: before, a date in Colombian
// words, after; the date in Colombia's time, after now and within 45 days (the longest default lifetime is 30).
func checkExpiryLine(t *testing.T, line, before, after string) {
	t.Helper()
	m := regexp.MustCompile(`^` + regexp.QuoteMeta(before) + `(\d{1,2}) de (\p{L}+) de (\d{4}) a las (\d\d):(\d\d) \(hora de Colombia\)` + regexp.QuoteMeta(after) + `$`).FindStringSubmatch(line)
	if m == nil {
		t.Fatalf("the expiry line reads %q", line)
	}
	months := []string{"enero", "febrero", "marzo", "abril", "mayo", "junio", "julio", "agosto", "septiembre", "octubre", "noviembre", "diciembre"}
	month := slices.Index(months, m[2])
	at, err := time.Parse("2006-1-2 15:04 -0700", fmt.Sprintf("%s-%d-%s %s:%s -0500", m[3], month+1, m[1], m[4], m[5]))
	if month < 0 || err != nil || !at.After(time.Now()) || at.After(time.Now().AddDate(0, 0, 45)) {
		t.Errorf("the expiry line names %v (%q): not a time in the next 45 days", at, line)
	}
}
