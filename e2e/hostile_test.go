package e2e

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/extension"
	"golang.org/x/net/html"

	"github.com/directaid/directaid/internal/testserver"
	"github.com/directaid/directaid/site/sitetest"
)

// Hostile input: each is refused with a clear 4xx, nothing is stored, and the server keeps serving.

// rawConn opens a plain TCP connection to s that gives up after d.
func rawConn(t *testing.T, s *testserver.Server, d time.Duration) net.Conn {
	t.Helper()
	conn, err := net.DialTimeout("tcp", strings.TrimPrefix(s.URL, "http://"), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	_ = conn.SetDeadline(time.Now().Add(d))
	return conn
}

// readAnswer reads one HTTP answer from conn and its JSON error code, if any.
func readAnswer(t *testing.T, conn net.Conn) (*http.Response, string) {
	t.Helper()
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no answer: %v", err)
	}
	defer resp.Body.Close()
	var body struct{ Code string }
	raw, _ := io.ReadAll(resp.Body)
	_ = json.Unmarshal(raw, &body)
	return resp, body.Code
}

// stillServes checks the server is unharmed: a normal publication is accepted.
func stillServes(t *testing.T, s *testserver.Server) {
	t.Helper()
	if resp, out := publish(t, s, validRequest()); resp.StatusCode != http.StatusCreated {
		t.Fatalf("a normal publication after the hostile ones: %d %v", resp.StatusCode, out)
	}
}

// onlyNormalStored checks the server still publishes, stops it, and checks that the normal
// publication is the only record: nothing hostile was stored.
func onlyNormalStored(t *testing.T, s *testserver.Server) {
	t.Helper()
	stillServes(t, s)
	s.Stop()
	if n := countRecords(t, s.DataDir); n != 1 {
		t.Fatalf("%d records stored, want only the normal one", n)
	}
}

func TestHostileBodies(t *testing.T) {
	s := testserver.Start(t, testserver.Options{})
	valid := string(mustJSON(t, validRequest()))
	// set replaces the value of one field of a valid body with raw JSON text.
	set := func(field, raw string) string {
		m := validRequest()
		m[field] = "\x00MARK\x00"
		return strings.Replace(string(mustJSON(t, m)), `"\u0000MARK\u0000"`, raw, 1)
	}
	manyKeys := func() string {
		var b strings.Builder
		b.WriteString(strings.TrimSuffix(valid, "}"))
		for i := 0; b.Len() < 60<<10; i++ {
			fmt.Fprintf(&b, `,"k%d":0`, i)
		}
		return b.String() + "}"
	}
	type hostile struct {
		name, body, contentType string
		status                  int
		code, field             string
	}
	cases := []hostile{
		{"nesting 10k arrays in a field", set("title", strings.Repeat("[", 10000)+strings.Repeat("]", 10000)), "", 400, "invalid_json", ""},
		{"nesting 10k arrays", strings.Repeat("[", 10000) + strings.Repeat("]", 10000), "", 400, "invalid_json", ""},
		{"nesting 10k objects", strings.Repeat(`{"a":`, 10000) + "1" + strings.Repeat("}", 10000), "", 400, "invalid_json", ""},
		{"nesting 10k unclosed", strings.Repeat("[", 10000), "", 400, "invalid_json", ""},
		{"invalid UTF-8", set("title", "\"Agua \xff\xfe\""), "", 400, "invalid_json", ""},
		{"overlong UTF-8", set("title", "\"\xc0\xaf\""), "", 400, "invalid_json", ""},
		{"UTF-8 surrogate bytes", set("title", "\"\xed\xa0\x80\""), "", 400, "invalid_json", ""},
		{"raw control byte in a string", set("title", "\"Agua\x01\""), "", 400, "invalid_json", ""},
		{"byte order mark", "\xef\xbb\xbf" + valid, "", 400, "invalid_json", ""},
		{"NaN", set("latitude", "NaN"), "", 400, "invalid_json", ""},
		{"Infinity", set("latitude", "Infinity"), "", 400, "invalid_json", ""},
		{"-Infinity", set("longitude", "-Infinity"), "", 400, "invalid_json", ""},
		{"1e400", set("latitude", "1e400"), "", 400, "invalid_body", "/latitude"},
		{"-1e400", set("neededPeople", "-1e400"), "", 400, "invalid_body", "/neededPeople"},
		{"1e9999999", set("longitude", "1e9999999"), "", 400, "invalid_json", ""},
		{"hex number", set("neededPeople", "0x10"), "", 400, "invalid_json", ""},
		{"latitude as string", set("latitude", `"4.5"`), "", 400, "invalid_body", "/latitude"},
		{"longitude as string", set("longitude", `"-75.6"`), "", 400, "invalid_body", "/longitude"},
		{"neededPeople as string", set("neededPeople", `"12"`), "", 400, "invalid_body", "/neededPeople"},
		{"publishContact as string", set("publishContact", `"true"`), "", 400, "invalid_body", "/publishContact"},
		{"publishContact as 1", set("publishContact", `1`), "", 400, "invalid_body", "/publishContact"},
		{"duplicate key", strings.Replace(valid, `"title":`, `"title":"Otro","title":`, 1), "", 400, "invalid_json", ""},
		{"duplicate consent", strings.Replace(valid, `"publishContact":true`, `"publishContact":false,"publishContact":true`, 1), "", 400, "invalid_json", ""},
		{"duplicate key, escaped", strings.Replace(valid, `"title":`, `"t\u0069tle":"Otro","title":`, 1), "", 400, "invalid_json", ""},
		{"key differing in case", strings.Replace(valid, `"title":`, `"Title":"Otro","title":`, 1), "", 400, "invalid_body", "/Title"},
		{"thousands of unknown keys", manyKeys(), "", 400, "invalid_body", ""}, // details: the first 20 (TestContractDetailsCapped)
		{"trailing data", valid + `{"title":"otro"}`, "", 400, "invalid_json", ""},
		{"array", "[" + valid + "]", "", 400, "invalid_body", ""},
		{"string", `"hola"`, "", 400, "invalid_body", ""},
		{"number", `42`, "", 400, "invalid_body", ""},
		{"null", `null`, "", 400, "invalid_body", ""},
		{"true", `true`, "", 400, "invalid_body", ""},
		{"empty", ``, "", 400, "invalid_json", ""},
		{"text/plain", valid, "text/plain", 415, "unsupported_media_type", ""},
		{"form", valid, "application/x-www-form-urlencoded", 415, "unsupported_media_type", ""},
		{"multipart", valid, "multipart/form-data; boundary=x", 415, "unsupported_media_type", ""},
		{"UTF-16 charset", valid, "application/json; charset=utf-16", 415, "unsupported_media_type", ""},
		{"json-like type", valid, "application/jsonx", 415, "unsupported_media_type", ""},
		{"malformed type", valid, "application/json; charset", 415, "unsupported_media_type", ""},
		{"no type", valid, "-", 415, "unsupported_media_type", ""},
	}
	// NUL, escape, DEL and C1 controls in every single-line text field; NUL in the description.
	for _, f := range []string{"source", "externalId", "emergencySlug", "title", "contactName", "contactWhatsapp", "address", "neighborhood"} {
		for _, c := range []string{`\u0000`, `\u001b[31m`, `\u007f`, `\u009b31m`, `\n`} {
			cases = append(cases, hostile{fmt.Sprintf("%s with %s", f, c), set(f, `"a`+c+`b"`), "", 400, "invalid_body", "/" + f})
		}
	}
	cases = append(cases, hostile{"description with NUL", set("description", `"a\u0000b"`), "", 400, "invalid_body", "/description"})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ct := c.contentType
			switch ct {
			case "":
				ct = "application/json"
			case "-":
				ct = ""
			}
			start := time.Now()
			resp, out := call(t, s, "POST", "/api/public/v1/help", []byte(c.body), "Content-Type", ct)
			if resp.StatusCode != c.status || out["code"] != c.code || (c.field != "" && !slices.Contains(fields(out), c.field)) {
				t.Fatalf("want %d %s naming %q; got %d %.2000v", c.status, c.code, c.field, resp.StatusCode, out)
			}
			if msg, _ := out["error"].(string); msg == "" {
				t.Errorf("no message in Spanish: %v", out)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("took %v to refuse", d)
			}
		})
	}
	onlyNormalStored(t, s)
}

// TestHostileCompressedBody: a body sent with a content coding is refused with 415 that names the coding
// (it read «no es UTF-8 válido»), with Accept-Encoding: identity, on the API and on /mcp, and stores
// nothing; Content-Encoding: identity is a plain body.
func TestHostileCompressedBody(t *testing.T) {
	s := testserver.Start(t, testserver.Options{})
	gz := func(b []byte) []byte {
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		if _, err := zw.Write(b); err != nil {
			t.Fatal(err)
		}
		if err := zw.Close(); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}
	for _, enc := range []string{"gzip", "br", "GZIP"} {
		resp, out := call(t, s, "POST", "/api/public/v1/help", gz(mustJSON(t, validRequest())), "Content-Type", "application/json", "Content-Encoding", enc)
		if resp.StatusCode != http.StatusUnsupportedMediaType || out["code"] != "unsupported_media_type" ||
			!strings.Contains(fmt.Sprint(out["error"]), "comprimido (Content-Encoding: "+enc+")") || resp.Header.Get("Accept-Encoding") != "identity" {
			t.Errorf("%s body: %d %v %v", enc, resp.StatusCode, out, resp.Header)
		}
	}
	ping := gz(mustJSON(t, map[string]any{"jsonrpc": "2.0", "id": 1, "method": "ping"}))
	resp, body := call(t, s, "POST", "/mcp", ping, "Content-Type", "application/json", "Content-Encoding", "gzip")
	rpcError(t, "gzip body to /mcp", resp, body, http.StatusUnsupportedMediaType)
	if e, _ := body["error"].(map[string]any); !strings.Contains(fmt.Sprint(e["message"]), "comprimido") || resp.Header.Get("Accept-Encoding") != "identity" {
		t.Errorf("gzip body to /mcp: %v %v", body, resp.Header)
	}
	if resp, out := call(t, s, "POST", "/api/public/v1/help", mustJSON(t, validRequest()), "Content-Type", "application/json", "Content-Encoding", "identity"); resp.StatusCode != http.StatusCreated {
		t.Fatalf("Content-Encoding: identity: %d %v", resp.StatusCode, out)
	}
	s.Stop()
	if n := countRecords(t, s.DataDir); n != 1 {
		t.Fatalf("%d records stored, want the identity one only", n)
	}
}

// TestHostileHugeBody declares a 10 MB body and sends only its start: the answer must be 413 without
// the server waiting for the rest (it would wait in vain), and the connection is then closed.
func TestHostileHugeBody(t *testing.T) {
	s := testserver.Start(t, testserver.Options{})
	start := `{"type":"request","description":"` + strings.Repeat("a", 1000)
	for _, c := range []struct{ name, header, body string }{
		{"Content-Length 10 MB", "Content-Length: 10485760\r\n", start},
		{"chunked, 128 KiB of 10 MB sent", "Transfer-Encoding: chunked\r\n",
			strings.Repeat(fmt.Sprintf("%x\r\n%s\r\n", 32<<10, strings.Repeat("a", 32<<10)), 4)},
	} {
		t.Run(c.name, func(t *testing.T) {
			conn := rawConn(t, s, 10*time.Second)
			fmt.Fprintf(conn, "POST /api/public/v1/help HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n%s\r\n%s",
				strings.TrimPrefix(s.URL, "http://"), c.header, c.body)
			resp, code := readAnswer(t, conn)
			if resp.StatusCode != http.StatusRequestEntityTooLarge || code != "body_too_large" {
				t.Fatalf("want 413 body_too_large, got %d %q", resp.StatusCode, code)
			}
			if !resp.Close {
				t.Errorf("the connection should be closed after a refused body: %v", resp.Header)
			}
		})
	}
	onlyNormalStored(t, s)
}

// TestHostileHugeHeaders sends headers over the server's limit: with Caddy's default (Go's, 1 MB) a 2 MB
// header, with the shipped Caddyfile's max_header_size (64 KB) a 100 KB one, and 2,000 small ones that
// add up to as much. Each is 431, whatever the path, and the server goes on.
func TestHostileHugeHeaders(t *testing.T) {
	send := func(t *testing.T, s *testserver.Server, path, headers string) {
		t.Helper()
		conn := rawConn(t, s, 10*time.Second)
		go func() {
			// The server stops reading once over its limit; this write then fails, which is the point.
			fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n%s\r\n{}", path, headers)
		}()
		if resp, _ := readAnswer(t, conn); resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
			t.Fatalf("%s with %d bytes of headers: %d, want 431", path, len(headers), resp.StatusCode)
		}
	}
	defaults := testserver.Start(t, testserver.Options{})
	shipped := startShipped(t, testserver.Options{}, nil)
	for _, path := range []string{"/api/public/v1/help", "/mcp", "/"} {
		send(t, defaults, path, "X-Big: "+strings.Repeat("a", 2<<20)+"\r\n")
		send(t, shipped, path, "X-Big: "+strings.Repeat("a", 100<<10)+"\r\n")
		send(t, shipped, path, strings.Repeat("X-Many: "+strings.Repeat("a", 40)+"\r\n", 2000))
	}
	stillServes(t, defaults)
	stillServes(t, shipped)
}

// hostileText is markup that must stay text wherever a record is shown: HTML, script, attribute
// breaking, Markdown structure, templates. Each field carries its own, with a marker to find it by.
var hostileText = map[string]string{
	"title":        `ZQ1 <script>alert("t")</script> **negrita**`,
	"description":  "ZQ2 </textarea></script><!-- [enlace](javascript:alert(1)) <img src=x onerror=alert(2)>\n# Encabezado\n```\n<b>b</b>\n> cita\n- lista ]]> {{.}}",
	"contactName":  "ZQ3 \"><svg onload=alert(3)> _x_ `c`",
	"address":      `ZQ4 </script><script>alert(4)</script> &amp; &lt;`,
	"neighborhood": `ZQ5 ' onmouseover='alert(5) [r]: javascript:x`,
	"externalId":   `ZQ6 <i>"'&`,
}

// checkNoActiveContent fails if an HTML document holds anything that would run or load: an inline
// script, an event handler attribute, a javascript: URL, an embedded frame, or the image our hostile
// text spells out. (Markup that does nothing, like <b>, is caught by checkShownAsText.)
func checkNoActiveContent(t *testing.T, where string, doc *html.Node) {
	t.Helper()
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode {
			switch n.Data {
			case "script":
				if sitetest.Attr(n, "src") == "" || n.FirstChild != nil {
					t.Errorf("%s: inline <script> %q", where, sitetest.Text(n))
				}
			case "iframe", "object", "embed":
				t.Errorf("%s: <%s> element", where, n.Data)
			}
			for _, a := range n.Attr {
				v := strings.ToLower(strings.TrimSpace(a.Val))
				if strings.HasPrefix(a.Key, "on") || strings.HasPrefix(v, "javascript:") || a.Key == "src" && v == "x" {
					t.Errorf("%s: active attribute %s=%q on <%s>", where, a.Key, a.Val, n.Data)
				}
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
}

// checkTwinNeutral fails if a Markdown twin, rendered as the site renders Markdown, links to a
// javascript: URL or holds active content.
func checkTwinNeutral(t *testing.T, where string, md []byte) *html.Node {
	t.Helper()
	for _, l := range sitetest.MarkdownLinks(md) {
		if strings.Contains(strings.ToLower(l), "javascript") || l == "x" {
			t.Errorf("%s: the twin links to %q", where, l)
		}
	}
	var b bytes.Buffer
	if err := goldmark.New(goldmark.WithExtensions(extension.Table)).Convert(md, &b); err != nil {
		t.Fatal(err)
	}
	doc := sitetest.ParseHTML(t, b.Bytes())
	checkNoActiveContent(t, where+" (rendered)", doc)
	return doc
}

// checkShownAsText fails unless a reader of doc sees every hostile text as written (spacing aside): had
// any of it been read as markup, its <, *, #, [ or ` would be gone.
func checkShownAsText(t *testing.T, where string, doc *html.Node) {
	t.Helper()
	seen := strings.Join(strings.Fields(sitetest.VisibleText(doc)), " ")
	for k, v := range hostileText {
		if k != "externalId" && !strings.Contains(seen, strings.Join(strings.Fields(v), " ")) {
			t.Errorf("%s: %s is not shown as the text it is (%q)", where, k, v)
		}
	}
}

// TestHostileTextStaysText publishes markup in every text field: it is stored and answered as the
// text it is, and every surface that shows it — JSON, CSV, the site's pages and their Markdown twins,
// the no-JavaScript form — keeps it inert.
func TestHostileTextStaysText(t *testing.T) {
	s := testserver.Start(t, testserver.Options{})
	body := validRequest()
	for k, v := range hostileText {
		body[k] = v
	}
	resp, out := publish(t, s, body)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("markup is text and must be accepted as such: %d %v", resp.StatusCode, out)
	}
	id := out["id"].(string)
	if r, again := publish(t, s, body); r.StatusCode != 200 || again["contentMatches"] != true {
		t.Fatalf("stored differently from what was sent: %d %v", r.StatusCode, again)
	}
	formula := with(validOffer(), "title", `=HYPERLINK("http://x.example","ZQ7")`, "address", "+cmd|' /C calc'!A0", "description", "@SUM(1+1)")
	if r, out := publish(t, s, formula); r.StatusCode != http.StatusCreated {
		t.Fatalf("formula-looking text: %d %v", r.StatusCode, out)
	}

	// JSON: the text comes back exactly, and no < or > reaches the bytes (JSON in an HTML context).
	r, raw := s.Do("GET", "/api/public/v1/help?view=detail&id="+id, nil)
	if r.StatusCode != http.StatusOK {
		t.Fatalf("detail: %d %s", r.StatusCode, raw)
	}
	for k, v := range hostileText {
		if k != "externalId" && !strings.Contains(string(raw), strings.Trim(string(mustJSON(t, v)), `"`)) {
			t.Errorf("detail does not carry %s as sent (%q)", k, v)
		}
	}
	for _, u := range []string{"/api/public/v1/help?view=detail&id=" + id, "/api/public/v1/help?view=list", "/api/public/v1/help?view=list&format=geojson"} {
		if r, raw := s.Do("GET", u, nil); r.StatusCode != 200 || bytes.ContainsAny(raw, "<>") {
			t.Errorf("%s: %d; raw < or > in JSON: %v", u, r.StatusCode, bytes.ContainsAny(raw, "<>"))
		}
	}
	// CSV: what a spreadsheet would read as a formula starts with a quote.
	r, raw = s.Do("GET", "/api/public/v1/help?view=list&format=csv", nil)
	rows, err := csv.NewReader(bytes.NewReader(raw)).ReadAll()
	if r.StatusCode != 200 || err != nil {
		t.Fatalf("csv: %d %v", r.StatusCode, err)
	}
	for _, row := range rows[2:] {
		for _, cell := range row {
			if cell != "" && strings.ContainsRune("=+@", rune(cell[0])) {
				t.Errorf("csv cell %q would run as a formula", cell)
			}
		}
	}

	// Every page of the site, and its twin.
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	// pageAndTwin checks one page and its Markdown twin for active content, and returns both, parsed.
	pageAndTwin := func(t *testing.T, u string) (page, twin *html.Node, status int) {
		r, body := sitetest.Get(t, client, u)
		if r.StatusCode != http.StatusOK {
			return nil, nil, r.StatusCode
		}
		page = sitetest.ParseHTML(t, body)
		checkNoActiveContent(t, u, page)
		r, md := sitetest.Get(t, client, sitetest.TwinURL(u))
		if r.StatusCode != http.StatusOK {
			t.Errorf("GET %s: %d", sitetest.TwinURL(u), r.StatusCode)
			return page, nil, http.StatusOK
		}
		return page, checkTwinNeutral(t, sitetest.TwinURL(u), md), http.StatusOK
	}
	_, sm := s.Do("GET", "/sitemap.xml", nil)
	for _, m := range strings.Split(string(sm), "<loc>")[1:] {
		if u := strings.Split(m, "</loc>")[0]; !strings.HasSuffix(u, "/ayudas/"+id) {
			if _, _, status := pageAndTwin(t, u); status != http.StatusOK {
				t.Errorf("GET %s: %d", u, status)
			}
		}
	}
	t.Run("record page", func(t *testing.T) {
		page, twin, status := pageAndTwin(t, s.URL+"/ayudas/"+id)
		if status != http.StatusOK {
			t.Fatalf("record page: %d", status)
		}
		// Its own page shows every field in full.
		checkShownAsText(t, "record page", page)
		if twin != nil {
			checkShownAsText(t, "record twin", twin)
		}
	})

	// The no-JavaScript form shows what was typed back, as text, when the publication is refused.
	vals := url.Values{"emergencySlug": {"eje-cafetero"}, "category": {"alimentos"}, "contactWhatsapp": {"3001234567"},
		"latitude": {"4.5"}, "longitude": {"-75.6"}}
	for k, v := range hostileText {
		if k != "externalId" {
			vals.Set(k, v)
		}
	}
	r, page := s.Do("POST", "/pedir", []byte(vals.Encode()), "Content-Type", "application/x-www-form-urlencoded")
	if r.StatusCode != http.StatusBadRequest {
		t.Fatalf("form without consent: %d", r.StatusCode)
	}
	doc := sitetest.ParseHTML(t, page)
	checkNoActiveContent(t, "POST /pedir", doc)
	for k, v := range hostileText {
		n := sitetest.ByID(doc, "f-"+k)
		if n == nil {
			continue
		}
		got := sitetest.Attr(n, "value")
		if n.Data == "textarea" {
			got = sitetest.Text(n)
		}
		if strings.Join(strings.Fields(got), " ") != strings.Join(strings.Fields(v), " ") {
			t.Errorf("form field %s shows %q, typed %q", k, got, v)
		}
	}
}

// TestHostileMCP sends /mcp what POST help is sent above: a batch of 10,000 publishing calls streamed
// without a length, nesting, invalid UTF-8, NaN, duplicate keys and non-objects in the arguments. Each is
// refused — a JSON-RPC error or a tool error, never a 5xx — and nothing is published.
func TestHostileMCP(t *testing.T) {
	s := testserver.Start(t, testserver.Options{})
	t.Run("batch of 10k calls, chunked", func(t *testing.T) {
		conn := rawConn(t, s, 20*time.Second)
		fmt.Fprintf(conn, "POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n",
			strings.TrimPrefix(s.URL, "http://"))
		args := mustJSON(t, mcpArgs(validOffer()))
		go func() {
			// The server answers after its bound (128 KiB) and closes; these writes then fail, as they should.
			w := bufio.NewWriter(conn)
			for i := range 10000 {
				call := fmt.Sprintf(`%c{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"publicar_ofrecimiento","arguments":%s}}`,
					"[,"[min(i, 1)], i, args)
				fmt.Fprintf(w, "%x\r\n%s\r\n", len(call), call)
			}
			fmt.Fprint(w, "1\r\n]\r\n0\r\n\r\n")
			_ = w.Flush()
		}()
		if resp, _ := readAnswer(t, conn); resp.StatusCode != http.StatusRequestEntityTooLarge && resp.StatusCode != http.StatusBadRequest {
			t.Fatalf("want 413 or 400, got %d", resp.StatusCode)
		}
	})
	args := string(mustJSON(t, mcpArgs(validOffer())))
	for _, c := range []struct{ name, arguments string }{
		{"nesting 10k in the arguments", `{"title":` + strings.Repeat("[", 10000) + strings.Repeat("]", 10000) + `}`},
		{"invalid UTF-8 in the arguments", strings.Replace(args, `"title":"`, "\"title\":\"\xff", 1)},
		{"NaN in the arguments", strings.Replace(args, `"publishContact":true`, `"publishContact":true,"latitude":NaN`, 1)},
		{"consent false then true", strings.Replace(args, `"publishContact":true`, `"publishContact":false,"publishContact":true`, 1)},
		{"duplicate title", strings.Replace(args, `"title":`, `"title":"Otro","title":`, 1)},
		{"consent as a string", strings.Replace(args, `"publishContact":true`, `"publishContact":"true"`, 1)},
		{"a control character", strings.Replace(args, `"title":"`, `"title":"\u009b`, 1)},
		{"arguments as a list", `[` + args + `]`},
		{"arguments as a string", string(mustJSON(t, args))},
	} {
		t.Run(c.name, func(t *testing.T) {
			body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"publicar_ofrecimiento","arguments":` + c.arguments + `}}`
			resp, raw := s.Do("POST", "/mcp", []byte(body), "Content-Type", "application/json", "Accept", "application/json, text/event-stream")
			var out struct {
				Error  any
				Result struct{ IsError bool }
			}
			_ = json.Unmarshal(raw, &out)
			if resp.StatusCode >= 500 || (out.Error == nil && !out.Result.IsError) {
				t.Fatalf("want a JSON-RPC or tool error, got %d %.500s", resp.StatusCode, raw)
			}
		})
	}
	onlyNormalStored(t, s)
}
