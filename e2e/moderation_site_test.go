package e2e

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/directaid/directaid/internal/testserver"
)

const (
	modUser     = "voluntaria"
	modPassword = "clave de prueba"
)

// startModerated starts the binary with basic_auth in front of /moderacion, as the shipped Caddyfile
// shows it (the bcrypt hash made by the binary's own `hash-password`), and basic_auth's 401 rendered by
// directaid.
func startModerated(t *testing.T) *testserver.Server {
	t.Helper()
	out, err := exec.Command(testserver.Binary(t), "hash-password", "--plaintext", modPassword).Output()
	if err != nil {
		t.Fatalf("directaid hash-password: %v", err)
	}
	hash := strings.TrimSpace(string(out))
	return testserver.Start(t, testserver.Options{Site: `
	basic_auth /moderacion* bcrypt moderacion {
		` + modUser + ` ` + hash + `
	}
	handle_errors 401 {
		directaid
	}`})
}

// modClient does not follow redirects: the test reads each 303.
var modClient = &http.Client{Timeout: 30 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// modDo sends a request to /moderacion… as a browser on the site would (Accept HTML; a POST carries the
// site's Origin and Sec-Fetch-Site same-origin unless header overrides them), with user:password unless empty.
func modDo(t *testing.T, s *testserver.Server, method, path, user, password string, form url.Values, header ...string) (*http.Response, string) {
	t.Helper()
	var body []byte
	if form != nil {
		body = []byte(form.Encode())
	}
	h := []string{"Accept", "text/html"}
	if method == "POST" {
		h = append(h, "Content-Type", "application/x-www-form-urlencoded", "Origin", s.URL, "Sec-Fetch-Site", "same-origin")
	}
	req := s.NewRequest(method, path, body, append(h, header...)...)
	if user != "" {
		req.SetBasicAuth(user, password)
	}
	resp, err := modClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

var tokenRe = regexp.MustCompile(`name="token" value="([^"]+)"`)

// TestModerationPage: /moderacion through the binary behind basic_auth, without JavaScript (plain form
// POSTs): refused without or with wrong credentials, the queue with the right ones, hide, restore, erase
// (confirmed), set status and restore-by-reporter, cross-site POSTs refused, and every action in the
// audit trail under the volunteer's name.
func TestModerationPage(t *testing.T) {
	t.Parallel()
	s := startModerated(t)
	_, a := publish(t, s, validRequest())
	_, b := publish(t, s, validOffer())
	idA, idB := a["id"].(string), b["id"].(string)
	for _, ip := range []string{"127.0.0.2", "127.0.0.3", "127.0.0.4"} {
		report(t, s, ip, idA, map[string]any{"reason": "spam", "note": "pide dinero"})
	}
	report(t, s, "127.0.0.2", idB, map[string]any{"reason": "not_my_number"})
	if code, _ := detailStatus(t, s, idA); code != 410 {
		t.Fatalf("three reporters hide A: %d", code)
	}

	for name, creds := range map[string][2]string{"no credentials": {"", ""}, "wrong password": {modUser, "otra"}, "unknown user": {"nadie", modPassword}} {
		resp, body := modDo(t, s, "GET", "/moderacion", creds[0], creds[1], nil)
		if resp.StatusCode != 401 || !strings.Contains(resp.Header.Get("WWW-Authenticate"), `realm="moderacion"`) ||
			!strings.Contains(body, "Acceso solo para moderación") || strings.Contains(body, idA) {
			t.Errorf("%s: %d %v\n%s", name, resp.StatusCode, resp.Header, body)
		}
	}
	// A POST without credentials changes nothing either.
	if resp, _ := modDo(t, s, "POST", "/moderacion", "", "", url.Values{"action": {"restore"}, "id": {idA}}); resp.StatusCode != 401 {
		t.Errorf("POST without credentials: %d", resp.StatusCode)
	}

	resp, page := modDo(t, s, "GET", "/moderacion", modUser, modPassword, nil)
	if resp.StatusCode != 200 || resp.Header.Get("Cache-Control") != "no-store" || !strings.Contains(resp.Header.Get("X-Robots-Tag"), "noindex") {
		t.Fatalf("GET with credentials: %d %v\n%s", resp.StatusCode, resp.Header, page)
	}
	var queue []struct {
		Record  struct{ ID string }
		Reports []struct{ Reporter string }
	}
	if err := json.Unmarshal([]byte(moderate(t, s, "queue")), &queue); err != nil {
		t.Fatal(err)
	}
	reporter := map[string]string{} // the reporter of B's report, 127.0.0.2
	for _, it := range queue {
		reporter[it.Record.ID] = it.Reports[0].Reporter
	}
	for _, want := range []string{idA, idB, "pide dinero", "Es mi número y no quiero que se muestre", reporter[idB][:8] + "</code>: 2 reportes", "Restaurar todo lo que ocultó"} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	m := tokenRe.FindStringSubmatch(page)
	if m == nil {
		t.Fatal("no token on the page")
	}
	token := m[1]

	// Cross-site POSTs: refused, nothing changes.
	for name, h := range map[string][]string{"origin": {"Origin", "http://malo.example"}, "fetch site": {"Sec-Fetch-Site", "cross-site"}} {
		resp, body := modDo(t, s, "POST", "/moderacion", modUser, modPassword, url.Values{"token": {token}, "action": {"hide"}, "id": {idB}}, h...)
		if resp.StatusCode != 403 || !strings.Contains(body, "Se rechazó la acción") {
			t.Errorf("%s: %d", name, resp.StatusCode)
		}
	}
	if resp, _ := modDo(t, s, "POST", "/moderacion", modUser, modPassword, url.Values{"token": {"x"}, "action": {"hide"}, "id": {idB}}); resp.StatusCode != 403 {
		t.Errorf("wrong token: %d", resp.StatusCode)
	}
	if code, _ := detailStatus(t, s, idB); code != 200 {
		t.Fatalf("a refused POST hid B: %d", code)
	}

	// act posts an action and follows its 303 back to the page, which must say want.
	act := func(vals url.Values, want string) {
		t.Helper()
		vals.Set("token", token)
		resp, body := modDo(t, s, "POST", "/moderacion", modUser, modPassword, vals)
		loc := resp.Header.Get("Location")
		if resp.StatusCode != 303 || !strings.HasPrefix(loc, "/moderacion?") {
			t.Fatalf("%v: %d %q\n%s", vals, resp.StatusCode, loc, body)
		}
		_, body = modDo(t, s, "GET", strings.Split(loc, "#")[0], modUser, modPassword, nil)
		if !strings.Contains(body, want) {
			t.Fatalf("%v: the page after the redirect lacks %q\n%s", vals, want, body)
		}
	}
	// 127.0.0.2 hid B's phone and, with two others, A: restoring what it hid brings back both.
	act(url.Values{"action": {"restore_reporter"}, "reporter": {reporter[idB]}}, "se restauraron 2 publicaciones")
	if code, d := detailStatus(t, s, idA); code != 200 {
		t.Fatalf("A after restore-by-reporter: %d %v", code, d)
	}
	if code, d := detailStatus(t, s, idB); code != 200 || d["contact"].(map[string]any)["whatsapp"] == nil {
		t.Fatalf("B after restore-by-reporter: %d %v", code, d)
	}
	act(url.Values{"action": {"hide"}, "id": {idB}}, "quedó oculta")
	if code, _ := detailStatus(t, s, idB); code != 410 {
		t.Fatalf("B hidden: %d", code)
	}
	act(url.Values{"action": {"restore"}, "id": {idB}}, "se muestra de nuevo")
	if code, _ := detailStatus(t, s, idB); code != 200 {
		t.Fatalf("B restored: %d", code)
	}
	act(url.Values{"action": {"set_status"}, "id": {idB}, "status": {"resolved"}}, "quedó en estado «Resuelta»")
	// Erasing asks first, without JavaScript: the POST without confirmation only shows the question.
	act(url.Values{"action": {"erase"}, "id": {idA}}, "¿Borrar los datos personales?")
	if code, _ := detailStatus(t, s, idA); code != 200 {
		t.Fatalf("A erased before the confirmation: %d", code)
	}
	act(url.Values{"action": {"erase"}, "id": {idA}, "confirmar": {"si"}}, "se borraron los datos personales")
	if code, _ := detailStatus(t, s, idA); code != 410 {
		t.Fatalf("A erased: %d", code)
	}

	var trail []struct{ Action, RecordID, Actor, By string }
	if err := json.Unmarshal([]byte(moderate(t, s, "audit")), &trail); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range trail {
		if e.Actor == "operator" {
			got = append(got, e.Action+" "+e.RecordID+" "+e.By)
		}
	}
	want := []string{"restore " + idA + " " + modUser, "restore " + idB + " " + modUser, "hide " + idB + " " + modUser, "restore " + idB + " " + modUser,
		"set_status " + idB + " " + modUser, "erase " + idA + " " + modUser}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("the audit trail's operator entries:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// The admin endpoint's actions name nobody.
	moderate(t, s, "hide", idB)
	if err := json.Unmarshal([]byte(moderate(t, s, "audit")), &trail); err != nil {
		t.Fatal(err)
	}
	if last := trail[len(trail)-1]; last.Action != "hide" || last.By != "" {
		t.Errorf("the admin endpoint's hide: %+v", last)
	}
}

// TestBrowserModeration: /moderacion in headless Chromium at 390×844 behind basic_auth, with and
// without JavaScript: it fits the phone, axe finds nothing serious, and «Ocultar» works as a plain form.
func TestBrowserModeration(t *testing.T) {
	artifacts := needBrowser(t)
	axe := installAxe(t)
	s := startModerated(t)
	_, a := publish(t, s, validRequest())
	_, b := publish(t, s, validOffer())
	idA, idB := a["id"].(string), b["id"].(string)
	for _, ip := range []string{"127.0.0.2", "127.0.0.3", "127.0.0.4"} {
		report(t, s, ip, idA, map[string]any{"reason": "spam", "note": "pide dinero por adelantado"})
	}
	report(t, s, "127.0.0.2", idB, map[string]any{"reason": "not_my_number"})

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	p := &phone{ctx: startPhone(ctx, t), s: s, artifacts: artifacts}
	p.watchConsole(t)
	auth := "Basic " + base64.StdEncoding.EncodeToString([]byte(modUser+":"+modPassword))
	if _, err := chromedp.Call(p.ctx, network.SetExtraHTTPHeaders, network.SetExtraHTTPHeadersParams{Headers: network.Headers{"Authorization": auth}}); err != nil {
		t.Fatal(err)
	}
	for _, js := range []bool{true, false} {
		name := "moderacion-390x844-" + map[bool]string{true: "js", false: "nojs"}[js]
		setScripts(t, p.ctx, js)
		p.do(t, "open", chromedp.Navigate(s.URL+"/moderacion"), chromedp.WaitVisible(chromedp.ID("pub-"+idA)))
		w := run(p.ctx, t, "page width", chromedp.Evaluate[[]int](`[document.documentElement.scrollWidth, window.innerWidth]`))
		if len(w) != 2 || w[0] > w[1] || w[1] != phoneWidth {
			t.Errorf("%s: content %v CSS px wide in a %v px window (scrolls sideways)", name, w[0], w[1])
		}
		p.screenshot(t, name)
		for _, v := range axeViolations(t, p.ctx, axe) {
			t.Errorf("%s: axe: %s", name, v)
		}
	}
	// Without JavaScript, «Ocultar» on B: the form posts, the server redirects, the page says so.
	setScripts(t, p.ctx, false)
	p.do(t, "open", chromedp.Navigate(s.URL+"/moderacion"), chromedp.WaitVisible(chromedp.ID("pub-"+idB)))
	p.do(t, "hide B", chromedp.Click(chromedp.CSS(`#pub-`+idB+` button[value="hide"]`), chromedp.NodeVisible),
		chromedp.WaitVisible(chromedp.ID("mod-hecho")))
	if msg := run(p.ctx, t, "message", chromedp.Text(chromedp.ID("mod-hecho"))); !strings.Contains(msg, "quedó oculta") {
		t.Errorf("after «Ocultar»: %q", msg)
	}
	p.screenshot(t, "moderacion-390x844-nojs-oculta")
	setScripts(t, p.ctx, true)
	if code, _ := detailStatus(t, s, idB); code != 410 {
		t.Errorf("B after «Ocultar» in the browser: %d", code)
	}
	for _, m := range p.consoleErrors() {
		t.Errorf("browser console: %s", m)
	}
}
