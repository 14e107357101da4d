package e2e

import (
	"net/http"
	"strings"
	"testing"

	"github.com/directaid/directaid/backend"
	"github.com/directaid/directaid/internal/testserver"
)

// TestIDsCaseInsensitive: an id read aloud and typed in capitals (Crockford's base32 is
// case-insensitive) finds its record in the API, on the site and through MCP, which all answer with
// the id in lower case.
func TestIDsCaseInsensitive(t *testing.T) {
	s := testserver.Start(t, testserver.Options{})
	_, res := publish(t, s, validRequest())
	id := res["id"].(string)
	upper := strings.ToUpper(id)
	resp, d := call(t, s, "GET", "/api/public/v1/help?view=detail&id="+upper, nil)
	if resp.StatusCode != 200 || d["id"] != id {
		t.Errorf("API detail of %s: %d %v", upper, resp.StatusCode, d["id"])
	}
	resp, page := s.Do("GET", "/ayudas/"+upper, nil)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(page), `<link rel="canonical" href="`+s.URL+"/ayudas/"+id+`">`) {
		t.Errorf("page /ayudas/%s: %d\n%s", upper, resp.StatusCode, page)
	}
	if resp, twin := s.Do("GET", "/ayudas/"+upper+".md", nil); resp.StatusCode != 200 || !strings.Contains(string(twin), "<"+s.URL+"/ayudas/"+id+">") {
		t.Errorf("twin /ayudas/%s.md: %d\n%s", upper, resp.StatusCode, twin)
	}
	cs := sdkSession(t, s, "")
	r := callTool(t, cs, backend.ToolViewHelp, map[string]any{"id": upper})
	if r.IsError || !strings.Contains(toolText(r), id) {
		t.Errorf("ver_ayuda %s: %s", upper, toolText(r))
	}
}
