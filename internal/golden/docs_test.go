package golden

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// The answers shown in the documentation are checked against the golden files, so that they cannot drift
// from what the server answers. A console block whose command is a curl and whose answer is to be checked
// is preceded by a line `<!-- golden: NAME -->` naming e2e/testdata/golden/NAME.golden. Then:
//
//   - the curl's method and path (with its query) are the golden request's; for /mcp, its body's members
//     are the golden request's;
//   - the status line and every header shown are the golden answer's;
//   - the JSON shown is the golden answer's, abbreviated only where it says so with "…": as a member (or a
//     "…": "…" member) an object has more members, as an element an array has more elements (those shown
//     come in the golden's order), as a value any value, inside a string any text. An object or array
//     shown without "…" is whole: a member the answer gained and the page lacks fails the test.
//
// Values are compared after the golden's placeholders are given their shape: HOST is localhost:8080, and
// an id, a time or a manage token shown in the page stands for {IDn}, {TIME} or {TOKEN}.
//
// Every curl answer of README.md must be so marked: the tour is the first thing a newcomer runs.
var checkedDocs = []struct {
	path     string
	allCurls bool // every console block with a curl and an answer must name its golden file
}{
	{"../../README.md", true},
	{"../../docs/api.md", false},
	{"../../docs/mcp.md", false},
}

const goldenDir = "../../e2e/testdata/golden"

var markerRE = regexp.MustCompile(`^<!-- golden: ([a-z0-9-]+) -->$`)

func TestDocExamplesMatchGoldens(t *testing.T) {
	for _, doc := range checkedDocs {
		t.Run(filepath.Base(doc.path), func(t *testing.T) {
			src, err := os.ReadFile(doc.path)
			if err != nil {
				t.Fatal(err)
			}
			blocks := consoleBlocks(string(src))
			marked := 0
			for _, b := range blocks {
				if b.golden == "" {
					if doc.allCurls && b.answer != "" {
						t.Errorf("%s:%d: a curl answer without a <!-- golden: NAME --> line before its block", doc.path, b.line)
					}
					continue
				}
				marked++
				g, err := readGolden(filepath.Join(goldenDir, b.golden+".golden"))
				if err != nil {
					t.Errorf("%s:%d: %v", doc.path, b.line, err)
					continue
				}
				for _, e := range checkBlock(b, g) {
					t.Errorf("%s:%d (golden %s): %s", doc.path, b.line, b.golden, e)
				}
			}
			if doc.allCurls && marked == 0 {
				t.Errorf("%s: no example checked against a golden file", doc.path)
			}
		})
	}
}

// block is a console block of a Markdown page: its first command and what it answers.
type block struct {
	line         int    // of the opening fence
	golden       string // the marker's name
	command      string // continuation lines joined
	answer       string // the lines after the command, up to the next command or the fence
	status       string // the answer's status line, when shown
	header, body string
}

func consoleBlocks(src string) []block {
	lines := strings.Split(src, "\n")
	var out []block
	for i := 0; i < len(lines); i++ {
		if lines[i] != "```console" {
			continue
		}
		b := block{line: i + 1}
		if i > 0 {
			if m := markerRE.FindStringSubmatch(strings.TrimSpace(lines[i-1])); m != nil {
				b.golden = m[1]
			}
		}
		j := i + 1
		if j < len(lines) && strings.HasPrefix(lines[j], "$ curl") {
			cmd := strings.TrimPrefix(lines[j], "$ ")
			// The command goes on while a line ends with a backslash or a single quote is open.
			for (strings.HasSuffix(cmd, "\\") || strings.Count(cmd, "'")%2 == 1) && j+1 < len(lines) {
				j++
				cmd = strings.TrimSuffix(cmd, "\\") + "\n" + lines[j]
			}
			b.command = cmd
			var ans []string
			for j++; j < len(lines) && lines[j] != "```" && !strings.HasPrefix(lines[j], "$ "); j++ {
				ans = append(ans, lines[j])
			}
			b.answer = strings.TrimSpace(strings.Join(ans, "\n"))
			splitAnswer(&b)
		}
		for ; j < len(lines) && lines[j] != "```"; j++ {
		}
		i = j
		out = append(out, b)
	}
	return out
}

// splitAnswer splits b.answer into a status line, headers and a body.
func splitAnswer(b *block) {
	a := b.answer
	if strings.HasPrefix(a, "HTTP/") {
		head, body, _ := strings.Cut(a, "\n\n")
		b.status, b.header, _ = strings.Cut(head, "\n")
		a = body
	}
	b.body = strings.TrimSpace(a)
}

// goldenFile is a golden file split into its parts.
type goldenFile struct {
	method, path, reqBody string
	status                string
	header                map[string]string // canonical name → value
	body                  string
}

func readGolden(path string) (*goldenFile, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	s := string(b)
	i := strings.Index(s, "\nHTTP/1.1 ")
	if i < 0 {
		return nil, fmt.Errorf("%s: no answer", path)
	}
	req, resp := s[:i], s[i+1:]
	reqLine, reqRest, _ := strings.Cut(req, "\n")
	g := &goldenFile{header: map[string]string{}}
	g.method, g.path, _ = strings.Cut(reqLine, " ")
	if _, body, ok := strings.Cut(reqRest, "\n\n"); ok {
		g.reqBody = strings.TrimSpace(body)
	}
	head, body, _ := strings.Cut(resp, "\n\n")
	g.status, head, _ = strings.Cut(head, "\n")
	for _, l := range strings.Split(head, "\n") {
		if k, v, ok := strings.Cut(l, ": "); ok {
			g.header[strings.ToLower(k)] = v
		}
	}
	if strings.HasPrefix(body, "[compact JSON") {
		_, body, _ = strings.Cut(body, "\n")
	}
	g.body = strings.TrimSpace(body)
	return g, nil
}

var (
	curlURLRE  = regexp.MustCompile(`'?http://localhost:8080(/[^\s']*)'?`)
	curlDataRE = regexp.MustCompile(`(?s)-d '(.*?)'`)
)

func checkBlock(b block, g *goldenFile) []string {
	var errs []string
	if b.command == "" || b.answer == "" {
		return []string{"the marked block has no curl with an answer"}
	}
	m := curlURLRE.FindStringSubmatch(b.command)
	if m == nil {
		return []string{"no http://localhost:8080 URL in the curl"}
	}
	method := "GET"
	data := curlDataRE.FindStringSubmatch(b.command)
	if data != nil {
		method = "POST"
	}
	if x := regexp.MustCompile(`-X (\w+)`).FindStringSubmatch(b.command); x != nil {
		method = x[1]
	}
	if method != g.method || normalizeDoc(m[1]) != normalizeGolden(g.path) {
		errs = append(errs, fmt.Sprintf("the curl sends %s %s, the golden request is %s %s", method, m[1], g.method, g.path))
	}
	if g.path == "/mcp" {
		if data == nil {
			errs = append(errs, "the curl sends no body")
		} else {
			errs = append(errs, compareJSON("request body", data[1], g.reqBody)...)
		}
	}
	if b.status != "" && normalizeDoc(b.status) != g.status {
		errs = append(errs, fmt.Sprintf("status %q, the golden's %q", b.status, g.status))
	}
	for _, l := range strings.Split(b.header, "\n") {
		if l == "" {
			continue
		}
		k, v, _ := strings.Cut(l, ": ")
		if gv, ok := g.header[strings.ToLower(k)]; !ok || normalizeDoc(v) != normalizeGolden(gv) {
			errs = append(errs, fmt.Sprintf("header %q, the golden's %q", l, gv))
		}
	}
	return append(errs, compareJSON("answer", b.body, g.body)...)
}

// compareJSON compares the abbreviated JSON shown in a page with the golden's.
func compareJSON(what, shown, golden string) []string {
	want, err := parseShown(shown)
	if err != nil {
		return []string{fmt.Sprintf("the %s shown does not parse: %v", what, err)}
	}
	dec := json.NewDecoder(strings.NewReader(golden))
	dec.UseNumber()
	var got any
	if err := dec.Decode(&got); err != nil {
		return []string{fmt.Sprintf("the golden %s is not JSON: %v", what, err)}
	}
	var errs []string
	match(&errs, what, want, got)
	return errs
}

// The abbreviated JSON of a page.
type (
	ellipsis struct{}
	shownObj struct {
		keys []string
		vals map[string]any
		more bool
	}
	shownArr struct {
		elems []any
		more  bool
	}
)

func match(errs *[]string, at string, want, got any) {
	fail := func(format string, a ...any) { *errs = append(*errs, at+": "+fmt.Sprintf(format, a...)) }
	switch w := want.(type) {
	case ellipsis:
	case *shownObj:
		g, ok := got.(map[string]any)
		if !ok {
			fail("an object shown, the golden has %T", got)
			return
		}
		for _, k := range w.keys {
			if gv, ok := g[k]; ok {
				match(errs, at+"."+k, w.vals[k], gv)
			} else {
				fail("member %q shown, the golden has none", k)
			}
		}
		if !w.more {
			var missing []string
			for k := range g {
				if _, ok := w.vals[k]; !ok {
					missing = append(missing, k)
				}
			}
			slices.Sort(missing)
			if len(missing) > 0 {
				fail("shown whole, but it lacks %q (show them, or say … for more)", missing)
			}
		}
	case *shownArr:
		g, ok := got.([]any)
		if !ok {
			fail("an array shown, the golden has %T", got)
			return
		}
		if !w.more && len(w.elems) != len(g) {
			fail("%d elements shown whole, the golden has %d (say … for more)", len(w.elems), len(g))
			return
		}
		// The elements shown come in the golden's order: each matches the first golden element after the
		// previous match that it matches without error.
		k := 0
		for i, we := range w.elems {
			found := false
			for ; k < len(g) && !found; k++ {
				var sub []string
				match(&sub, fmt.Sprintf("%s[%d]", at, i), we, g[k])
				if len(sub) == 0 || !w.more {
					*errs = append(*errs, sub...)
					found = true
				}
			}
			if !found {
				fail("element %d shown has no match in the golden's, in order", i)
				return
			}
		}
	case string:
		g, ok := got.(string)
		if !ok {
			fail("%q shown, the golden has %v", w, got)
			return
		}
		if !stringMatches(w, g) {
			fail("%q shown, the golden has %q", w, g)
		}
	case json.Number:
		g, ok := got.(json.Number)
		wf, _ := w.Float64()
		gf, _ := g.Float64()
		if !ok || wf != gf {
			fail("%s shown, the golden has %v", w, got)
		}
	default:
		if want != got {
			fail("%v shown, the golden has %v", want, got)
		}
	}
}

var (
	idRE            = regexp.MustCompile(`\b[0-9a-hjkmnp-tv-z]{16}\b`) // a record's id: 16 of Crockford's base32
	tokenDocRE      = regexp.MustCompile(`\b[A-Za-z0-9_-]{43}\b`)
	idPlaceholderRE = regexp.MustCompile(`\{ID\d+\}`)
)

// normalizeDoc gives a value shown in a page the golden's placeholders.
func normalizeDoc(s string) string {
	s = strings.ReplaceAll(s, "localhost:8080", "HOST")
	s = timeRE.ReplaceAllString(s, "{TIME}")
	s = tokenDocRE.ReplaceAllString(s, "{TOKEN}")
	return idRE.ReplaceAllStringFunc(s, func(id string) string {
		if strings.ContainsFunc(id, unicode.IsDigit) && strings.ContainsFunc(id, unicode.IsLetter) {
			return "{ID}"
		}
		return id
	})
}

// normalizeGolden makes every {IDn} an {ID}: a page shows one example's ids, not the golden's numbering.
func normalizeGolden(s string) string { return idPlaceholderRE.ReplaceAllString(s, "{ID}") }

// stringMatches reports whether the string shown (with … for any text) is the golden's.
func stringMatches(shown, golden string) bool {
	shown, golden = normalizeDoc(shown), normalizeGolden(golden)
	if !strings.Contains(shown, "…") {
		return shown == golden
	}
	parts := strings.Split(shown, "…")
	for i := range parts {
		parts[i] = regexp.QuoteMeta(parts[i])
	}
	return regexp.MustCompile(`(?s)^` + strings.Join(parts, ".*") + `$`).MatchString(golden)
}

// parseShown parses the JSON of a page, with "…" where it abbreviates. Commas next to a "…" may be
// left out, as prose does.
func parseShown(s string) (any, error) {
	p := &shownParser{s: s}
	v, err := p.value()
	if err != nil {
		return nil, err
	}
	if p.skip(); p.i != len(p.s) {
		return nil, fmt.Errorf("text after the value at %d: %q", p.i, p.rest())
	}
	return v, nil
}

type shownParser struct {
	s string
	i int
}

func (p *shownParser) skip() {
	for p.i < len(p.s) && strings.ContainsRune(" \t\r\n", rune(p.s[p.i])) {
		p.i++
	}
}

func (p *shownParser) rest() string { return p.s[p.i:min(p.i+30, len(p.s))] }

func (p *shownParser) peek(tok string) bool {
	p.skip()
	return strings.HasPrefix(p.s[p.i:], tok)
}

func (p *shownParser) eat(tok string) bool {
	if p.peek(tok) {
		p.i += len(tok)
		return true
	}
	return false
}

func (p *shownParser) value() (any, error) {
	switch {
	case p.eat("…"):
		return ellipsis{}, nil
	case p.eat("{"):
		o := &shownObj{vals: map[string]any{}}
		for !p.eat("}") {
			switch {
			case p.eat(","):
			case p.eat("…"):
				o.more = true
			case p.peek(`"`):
				k, err := p.str()
				if err != nil {
					return nil, err
				}
				if !p.eat(":") {
					return nil, fmt.Errorf("no colon after %q at %q", k, p.rest())
				}
				v, err := p.value()
				if err != nil {
					return nil, err
				}
				if k == "…" {
					o.more = true
					continue
				}
				if _, dup := o.vals[k]; dup {
					return nil, fmt.Errorf("member %q twice", k)
				}
				o.keys, o.vals[k] = append(o.keys, k), v
			default:
				return nil, fmt.Errorf("unexpected %q in an object", p.rest())
			}
		}
		return o, nil
	case p.eat("["):
		a := &shownArr{}
		for !p.eat("]") {
			switch {
			case p.eat(","):
			case p.eat("…"):
				a.more = true
			default:
				v, err := p.value()
				if err != nil {
					return nil, err
				}
				a.elems = append(a.elems, v)
			}
		}
		return a, nil
	case p.peek(`"`):
		return p.str()
	}
	for _, lit := range []struct {
		tok string
		v   any
	}{{"true", true}, {"false", false}, {"null", nil}} {
		if p.eat(lit.tok) {
			return lit.v, nil
		}
	}
	j := p.i
	for j < len(p.s) && strings.ContainsRune("+-.0123456789eE", rune(p.s[j])) {
		j++
	}
	if _, err := strconv.ParseFloat(p.s[p.i:j], 64); j == p.i || err != nil {
		return nil, fmt.Errorf("unexpected %q", p.rest())
	}
	n := json.Number(p.s[p.i:j])
	p.i = j
	return n, nil
}

// str reads a JSON string at p.i.
func (p *shownParser) str() (string, error) {
	p.skip()
	dec := json.NewDecoder(strings.NewReader(p.s[p.i:]))
	var s string
	if err := dec.Decode(&s); err != nil {
		return "", fmt.Errorf("a string at %q: %v", p.rest(), err)
	}
	p.i += int(dec.InputOffset())
	return s, nil
}

// Test the checker itself: the drift it exists for fails it.
func TestDocCheckerCatchesDrift(t *testing.T) {
	golden := `{"name":"directaid","capabilities":["a","b","report_help"],"rateLimit":{"events":60,"windowSeconds":60},"reportRateLimit":{"events":10}}`
	for _, c := range []struct {
		shown string
		ok    bool
	}{
		{`{"name":"directaid","capabilities":["a","b","report_help"],"rateLimit":{"events":60,"windowSeconds":60},"reportRateLimit":{"events":10}}`, true},
		{`{"name":"directaid", …}`, true},
		{`{"name":"directaid","capabilities":[…],"rateLimit":{"events":…,…},"reportRateLimit":{…}}`, true},
		{`{"name":"direct…","capabilities":["a",…,"report_help"],"rateLimit":{"events":60,"windowSeconds":60},"reportRateLimit":{"events":10}}`, true},
		{`{"name":"directaid","capabilities":["a","b","report_help"],"rateLimit":{"events":60,"windowSeconds":60}}`, false}, // a member lacking
		{`{"name":"directaid","capabilities":["a","b"],"rateLimit":{…},"reportRateLimit":{…}}`, false},                      // an element lacking
		{`{"name":"directaid","capabilities":["b","a",…],…}`, false},                                                        // out of order
		{`{"name":"directaid","rateLimit":{"events":30,…},…}`, false},                                                       // a value
		{`{"name":"directaid","gone":1,…}`, false},                                                                          // a member the golden has not
	} {
		if errs := compareJSON("answer", c.shown, golden); (len(errs) == 0) != c.ok {
			t.Errorf("%s: errors %q, want ok=%v", c.shown, errs, c.ok)
		}
	}
	if !stringMatches("http://localhost:8080/ayudas/06h0hp5rv361w8am", "http://HOST/ayudas/{ID1}") ||
		stringMatches("http://localhost:8080/ayuda/06h0hp5rv361w8am", "http://HOST/ayudas/{ID1}") {
		t.Error("ids and hosts are not normalized as they should")
	}
	if _, err := parseShown(`{"a": 1 "b"`); err == nil {
		t.Error("broken JSON parsed")
	}
}
