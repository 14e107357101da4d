package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/directaid/directaid/internal/testserver"
	"github.com/directaid/directaid/schema"
)

// act posts a publisher's action with token (none when empty), checked against the served OpenAPI.
func act(t *testing.T, s *testserver.Server, id, token, action string) (*http.Response, map[string]any, []byte) {
	t.Helper()
	h := []string{"Content-Type", "application/json"}
	if token != "" {
		h = append(h, "Authorization", "Bearer "+token)
	}
	body := []byte(fmt.Sprintf(`{"action":%q}`, action))
	path := schema.ActionsPath(id)
	resp, raw := s.Do("POST", path, body, h...)
	s.CheckOpenAPI(s.NewRequest("POST", path, body, h...), resp, raw)
	var out map[string]any
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("%s: answer is not JSON: %v\n%s", path, err, raw)
	}
	return resp, out, raw
}

// TestManageActions: the token of a publication, every transition and every forbidden one, identical
// 401s without a token and identical 403s for a wrong one, a withdrawal that erases the contact and
// that a retry never undoes.
func TestManageActions(t *testing.T) {
	t.Parallel()
	s := testserver.Start(t, testserver.Options{})
	body := validRequest()
	resp, pub := publish(t, s, body)
	id, token := pub["id"].(string), pub["manageToken"].(string)
	if resp.StatusCode != 201 || len(token) != 43 || pub["status"] != "open" ||
		pub["manageUrl"] != s.URL+schema.ManageURL("", id, token) {
		t.Fatalf("201: %v", pub)
	}
	// A matching retry gets the same token; a differing one gets none.
	if _, again := publish(t, s, body); again["manageToken"] != token || again["contentMatches"] != true {
		t.Fatalf("matching retry: %v", again)
	}
	if _, other := publish(t, s, with(body, "title", "Otro")); other["manageToken"] != nil || other["manageUrl"] != nil {
		t.Fatalf("differing retry got the token: %v", other)
	}
	_, second := publish(t, s, validOffer())
	otherToken := second["manageToken"].(string)

	// Strangers: no token is a 401 with the Bearer challenge; a wrong or other record's token a 403; each
	// one body, for this id and for an unknown one.
	var first []byte
	for _, c := range []struct{ id, token string }{{id, ""}, {"06fz0000000000zz", ""}, {"nope", ""}} {
		resp, _, raw := act(t, s, c.id, c.token, "withdraw")
		if resp.StatusCode != 401 || resp.Header.Get("WWW-Authenticate") != "Bearer" {
			t.Fatalf("%+v: %d WWW-Authenticate %q %s", c, resp.StatusCode, resp.Header.Get("WWW-Authenticate"), raw)
		}
		if first == nil {
			first = raw
		} else if !bytes.Equal(raw, first) {
			t.Fatalf("401 bodies differ: %s vs %s", raw, first)
		}
	}
	if !strings.Contains(string(first), `"code":"unauthorized"`) {
		t.Fatalf("401 body: %s", first)
	}
	first = nil
	for _, c := range []struct{ id, token string }{{id, "x"}, {id, otherToken}, {id, token + "x"},
		{"06fz0000000000zz", token}, {"nope", "x"}, {second["id"].(string), token}} {
		resp, _, raw := act(t, s, c.id, c.token, "withdraw")
		if resp.StatusCode != 403 || resp.Header.Get("WWW-Authenticate") != "" {
			t.Fatalf("%+v: %d %s", c, resp.StatusCode, raw)
		}
		if first == nil {
			first = raw
		} else if !bytes.Equal(raw, first) {
			t.Fatalf("403 bodies differ: %s vs %s", raw, first)
		}
	}
	if !strings.Contains(string(first), `"code":"forbidden"`) {
		t.Fatalf("403 body: %s", first)
	}
	// Transitions: each idempotent, forbidden ones 409.
	steps := []struct {
		action, status string
		code           int
		changed        bool
	}{
		{"renew", "open", 200, true}, {"resolve", "resolved", 200, true}, {"resolve", "resolved", 200, false},
		{"renew", "", 409, false}, {"reopen", "open", 200, true}, {"reopen", "open", 200, false},
		{"withdraw", "withdrawn", 200, true}, {"withdraw", "withdrawn", 200, false},
		{"reopen", "", 409, false}, {"resolve", "", 409, false}, {"renew", "", 409, false},
	}
	for i, st := range steps {
		resp, out, raw := act(t, s, id, token, st.action)
		if resp.StatusCode != st.code {
			t.Fatalf("step %d %s: %d %s", i, st.action, resp.StatusCode, raw)
		}
		if st.code == 409 {
			if out["code"] != "invalid_transition" {
				t.Fatalf("step %d: %v", i, out)
			}
			continue
		}
		if out["status"] != st.status || out["changed"] != st.changed {
			t.Fatalf("step %d %s: %v", i, st.action, out)
		}
	}
	if resp, out, _ := act(t, s, id, token, "delete"); resp.StatusCode != 400 || out["code"] != "invalid_body" {
		t.Fatalf("unknown action: %d %v", resp.StatusCode, out)
	}
	// Withdrawn: gone from reads, a retry says withdrawn, never republishes, never gets the token.
	if resp, _ := call(t, s, "GET", schema.HelpPath+"?view=detail&id="+id, nil); resp.StatusCode != 410 {
		t.Fatalf("detail of a withdrawn record: %d", resp.StatusCode)
	}
	resp, retry := publish(t, s, body)
	if resp.StatusCode != 200 || retry["status"] != "withdrawn" || retry["id"] != id || retry["manageToken"] != nil || retry["warnings"] != nil {
		t.Fatalf("retry after withdrawal: %d %v (no pair_reused: it is the same content, whose contact was erased)", resp.StatusCode, retry)
	}
	// The feed tells mirrors.
	_, feed := call(t, s, "GET", schema.HelpPath+"?view=list&since=2000-01-01T00:00:00Z", nil)
	if !strings.Contains(fmt.Sprint(feed["removed"]), id) {
		t.Fatalf("feed without the tombstone: %v", feed)
	}
	// The token and externalId appear in no read, export, page, twin or log line.
	checkNeverShown(t, s, []string{token, otherToken, body["externalId"].(string)}, id, second["id"].(string))
}

// checkNeverShown reads every public view and the server's logs and fails on any of secrets.
func checkNeverShown(t *testing.T, s *testserver.Server, secrets []string, ids ...string) {
	t.Helper()
	paths := []string{schema.HelpPath, schema.HelpPath + "?view=list", schema.HelpPath + "?view=list&format=csv",
		schema.HelpPath + "?view=list&format=geojson", schema.HelpPath + "?view=list&format=csv&all=true",
		schema.HelpPath + "?view=list&since=2000-01-01T00:00:00Z", schema.HelpPath + "?view=list&status=resolved",
		schema.HelpPath + "?view=list&format=geojson&all=true", schema.HelpPath + "?view=list&status=expired",
		schema.HelpPath + "?view=panorama", "/", "/llms.txt", "/sitemap.xml", "/emergencias/eje-cafetero", "/emergencias/eje-cafetero.md",
		"/emergencias/eje-cafetero?status=resolved", schema.ManagePath, schema.ManagePath + ".md", "/integraciones.md", "/privacidad.md"}
	for _, id := range ids {
		paths = append(paths, schema.HelpPath+"?view=detail&id="+id, schema.RecordPath(id), schema.RecordPath(id)+".md")
	}
	var all strings.Builder
	for _, p := range paths {
		_, b := s.Do("GET", p, nil)
		all.Write(b)
	}
	tools := []string{`{"name":"buscar_ayudas","arguments":{}}`, `{"name":"buscar_ayudas","arguments":{"status":"resolved"}}`,
		`{"name":"listar_emergencias","arguments":{}}`}
	for _, id := range ids {
		tools = append(tools, fmt.Sprintf(`{"name":"ver_ayuda","arguments":{"id":%q}}`, id))
	}
	for _, tool := range tools {
		_, b := s.Do("POST", schema.MCPPath, []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":`+tool+`}`),
			"Content-Type", "application/json", "Accept", "application/json, text/event-stream")
		all.Write(b)
	}
	all.WriteString(s.Output())
	all.WriteString(s.Log())
	_ = filepath.WalkDir(s.Dir, func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".log") {
			b, _ := os.ReadFile(path)
			all.Write(b)
		}
		return nil
	})
	for _, sec := range secrets {
		if strings.Contains(all.String(), sec) {
			t.Errorf("%q shows in a public view or a log line", sec)
		}
	}
}

// TestManageWithdrawRace: 50 goroutines retry the publication while it is withdrawn: it is never
// republished, and its phone never comes back.
func TestManageWithdrawRace(t *testing.T) {
	t.Parallel()
	s := testserver.Start(t, testserver.Options{})
	body := with(validRequest(), "contactWhatsapp", "+57 311 765 4321")
	_, pub := publish(t, s, body)
	id, token := pub["id"].(string), pub["manageToken"].(string)
	raw := mustJSON(t, body)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			resp, b := s.Do("POST", schema.HelpPath, raw, "Content-Type", "application/json")
			if resp.StatusCode != 200 || !strings.Contains(string(b), `"id":"`+id+`"`) {
				t.Errorf("retry: %d %s", resp.StatusCode, b)
			}
		}()
	}
	close(start)
	if resp, out, _ := act(t, s, id, token, "withdraw"); resp.StatusCode != 200 || out["status"] != "withdrawn" {
		t.Fatalf("withdraw: %d %v", resp.StatusCode, out)
	}
	wg.Wait()
	resp, b := s.Do("POST", schema.HelpPath, raw, "Content-Type", "application/json")
	if resp.StatusCode != 200 || !strings.Contains(string(b), `"status":"withdrawn"`) {
		t.Fatalf("after the race: %d %s", resp.StatusCode, b)
	}
	_, list := s.Do("GET", schema.HelpPath+"?view=list&since=2000-01-01T00:00:00Z", nil)
	if strings.Contains(string(list), "765") || strings.Count(string(list), "Agua potable") != 0 {
		t.Fatalf("the withdrawn record or its phone is back: %s", list)
	}
	s.Stop()
	for rid, rec := range storedRecords(t, s.DataDir) {
		if fmt.Sprint(rec["contactWhatsapp"], rec["contactE164"]) != "<nil> <nil>" && strings.Contains(fmt.Sprint(rec), "765") {
			t.Fatalf("stored record %s keeps the phone: %v", rid, rec)
		}
	}
}
