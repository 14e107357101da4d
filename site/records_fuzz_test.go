package site

import (
	"bytes"
	"slices"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"golang.org/x/net/html"

	"github.com/directaid/directaid/schema"
	"github.com/directaid/directaid/site/sitetest"
)

// FuzzRecordPage renders a record's page and its Markdown twin with anything a person can publish in
// the text fields, and checks that the page has exactly the structure it has with plain words: no
// element, attribute or link comes out of the text, and the heading shows the title as written.
func FuzzRecordPage(f *testing.F) {
	for _, s := range []string{
		"Agua potable", `<script>alert(1)</script>`, "[x](javascript:alert(2))", "**negrita** _it_", "# título",
		"- lista", "1. uno", "> cita", "```", "~~~", "<!-- c -->", "&amp; &#60;", "![i](x.png)", "| a | b |",
		"<https://x.org>", "https://evil.example", "línea 1\n\n# línea 2\n- tres", `"><img src=x onerror=alert(1)>`,
	} {
		f.Add(s, s, s, s)
	}
	store := &records{}
	id := store.add(eje.Slug, schema.TypeRequest, "x")
	h, err := New(store.options(eje))
	if err != nil {
		f.Fatal(err)
	}
	c := sitetest.HandlerClient(h)
	md := newMarkdown()
	// page is the record page's HTML and its twin rendered to HTML, as token shapes.
	page := func(t *testing.T, title, description, name, address string) (htmlShape, twinShape []string, heading string) {
		store.mu.Lock()
		r := &store.all[0]
		r.Title, r.Description, r.Contact.Name, r.Location.Address, r.Location.Neighborhood = title, description, name, address, address
		store.mu.Unlock()
		res, body := sitetest.Get(t, c, testBase+"/ayudas/"+id)
		if res.StatusCode != 200 {
			t.Fatalf("page: %d", res.StatusCode)
		}
		htmlShape, heading = shape(t, body)
		res, twin := sitetest.Get(t, c, testBase+"/ayudas/"+id+".md")
		if res.StatusCode != 200 {
			t.Fatalf("twin: %d", res.StatusCode)
		}
		var b bytes.Buffer
		if err := md.Convert(twin, &b); err != nil {
			t.Fatal(err)
		}
		twinShape, _ = shape(t, b.Bytes())
		return htmlShape, twinShape, heading
	}
	f.Fuzz(func(t *testing.T, title, description, name, address string) {
		// What the publish schema lets through: valid UTF-8, no control characters (line breaks only in
		// the description), something left after trimming.
		for _, s := range []string{title, name, address} {
			if !utf8.ValidString(s) || strings.ContainsFunc(s, unicode.IsControl) || strings.TrimSpace(s) == "" {
				return
			}
		}
		if !utf8.ValidString(description) || strings.ContainsFunc(description, func(r rune) bool { return unicode.IsControl(r) && r != '\n' }) {
			return
		}
		var lines []string
		for line := range strings.SplitSeq(description, "\n") {
			if strings.TrimSpace(line) != "" {
				lines = append(lines, "PALABRA")
			}
		}
		wantHTML, wantTwin, _ := page(t, "PALABRA", strings.Join(lines, "\n"), "PALABRA", "PALABRA")
		gotHTML, gotTwin, heading := page(t, title, description, name, address)
		if !slices.Equal(gotHTML, wantHTML) {
			t.Fatalf("the text changes the page's structure:\n got  %q\n want %q", gotHTML, wantHTML)
		}
		if !slices.Equal(gotTwin, wantTwin) {
			t.Fatalf("the text changes the twin's structure:\n got  %q\n want %q", gotTwin, wantTwin)
		}
		if want := strings.Join(strings.Fields(title), " "); heading != want {
			t.Fatalf("the heading shows %q, want %q", heading, want)
		}
	})
}

// shape lists a document's elements with their attribute names, and the value of every attribute that
// can lead somewhere (href, src, action): text may change words, never these. heading is the text of
// the first h1.
func shape(t *testing.T, doc []byte) (out []string, heading string) {
	t.Helper()
	z := html.NewTokenizer(bytes.NewReader(doc))
	inH1, seenH1 := false, false
	for {
		switch z.Next() {
		case html.ErrorToken:
			return out, strings.Join(strings.Fields(heading), " ")
		case html.StartTagToken, html.SelfClosingTagToken:
			tok := z.Token()
			s := "<" + tok.Data
			for _, a := range tok.Attr {
				s += " " + a.Key
				if a.Key == "href" || a.Key == "src" || a.Key == "action" {
					s += "=" + a.Val
				}
			}
			out = append(out, s+">")
			if tok.Data == "h1" && !seenH1 {
				inH1, seenH1 = true, true
			}
		case html.EndTagToken:
			tok := z.Token()
			out = append(out, "</"+tok.Data+">")
			if tok.Data == "h1" {
				inH1 = false
			}
		case html.TextToken:
			if inH1 {
				heading += string(z.Text())
			}
		case html.CommentToken:
			out = append(out, "<!--"+string(z.Text())+"-->")
		}
	}
}
