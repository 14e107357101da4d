package site

import (
	"bytes"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// contexts are the places the Markdown templates put text through md (content/*.md): a heading, a
// summary quote, a list item, a link's text, the middle of a sentence.
var contexts = [][2]string{
	{"# ", "\n"},
	{"> ", "\n"},
	{"- Lugar: ", "\n"},
	{"- [", "](https://ayuda.example.org/emergencias/x), desde el 11 de agosto.\n"},
	{"Escriba al equipo: ", ". Incluya el enlace.\n"},
	{"", "\n"},
}

// FuzzMarkdownText checks md (mdText): whatever the text, in every context the page has the same
// structure as with a plain word, and the reader sees the text itself (spaces and control characters
// collapsed to single spaces) — no markup, link, heading, list or HTML comes out of it.
func FuzzMarkdownText(f *testing.F) {
	for _, s := range []string{
		"Terremoto en el Eje Cafetero", `<script>alert(1)</script> & [x](javascript:alert(2)) *b* "q"`,
		"# h", "- a", "+ b", "1. uno", "12) doce", "> cita", "```js", "~~~", "---", "===", "***", "___",
		"    sangría", "a  \nb", `fin\`, "&amp; &#60; &copy;", "<!-- c -->", "<https://x.org>", "![i](x.png)",
		"[a]: https://x.org", "| a | b |", "a\u0085b\u2028c", "\x00\x1b[31m",
	} {
		f.Add(s)
	}
	md := newMarkdown()
	render := func(t *testing.T, src string) string {
		var b bytes.Buffer
		if err := md.Convert([]byte(src), &b); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !utf8.ValidString(s) {
			return // user and configuration text is valid UTF-8 by the time it is rendered
		}
		want := strings.Join(strings.FieldsFunc(s, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }), " ")
		if want == "" || strings.ContainsRune(want, utf8.RuneError) {
			return
		}
		const mark = "PALABRA"
		for _, c := range contexts {
			got := render(t, c[0]+mdText(s)+c[1])
			expect := strings.Replace(render(t, c[0]+mark+c[1]), mark, escapeLikeGoldmark(want), 1)
			if got != expect {
				t.Fatalf("md(%q) in %q changes the page:\n got  %q\n want %q", s, c[0]+"…"+c[1], got, expect)
			}
		}
	})
}

// FuzzMarkdownCode checks code (mdCode): its text is one code span that shows the text as written
// (runs of spaces collapsed), whatever backticks it holds.
func FuzzMarkdownCode(f *testing.F) {
	for _, s := range []string{"eje-cafetero", "`", "``a``", "` a `", "a ` b", "<b>", "\\", "  x  "} {
		f.Add(s)
	}
	md := newMarkdown()
	f.Fuzz(func(t *testing.T, s string) {
		want := strings.Join(strings.Fields(s), " ")
		if want == "" || !utf8.ValidString(s) || strings.ContainsFunc(s, unicode.IsControl) {
			return
		}
		var b bytes.Buffer
		if err := md.Convert([]byte("Valor: "+mdCode(s)+" fin\n"), &b); err != nil {
			t.Fatal(err)
		}
		if expect := "<p>Valor: <code>" + escapeLikeGoldmark(want) + "</code> fin</p>\n"; b.String() != expect {
			t.Fatalf("code(%q):\n got  %q\n want %q", s, b.String(), expect)
		}
	})
}

// FuzzMarkdownFence checks fence (mdFence): the body cannot close its block early, and shows as written.
func FuzzMarkdownFence(f *testing.F) {
	for _, s := range []string{"{\"a\": 1}", "```", "a\n```\n# fuera", "````\n```", "~~~\nx", "<script>"} {
		f.Add(s)
	}
	md := newMarkdown()
	f.Fuzz(func(t *testing.T, body string) {
		body = strings.TrimRight(body, "\n")
		if body == "" || !utf8.ValidString(body) || strings.ContainsFunc(body, func(r rune) bool { return unicode.IsControl(r) && r != '\n' }) {
			return
		}
		var b bytes.Buffer
		if err := md.Convert([]byte(mdFence("json", body)+"\n\nDespués.\n"), &b); err != nil {
			t.Fatal(err)
		}
		expect := `<pre><code class="language-json">` + escapeLikeGoldmark(body) + "\n</code></pre>\n<p>Después.</p>\n"
		if b.String() != expect {
			t.Fatalf("fence(%q):\n got  %q\n want %q", body, b.String(), expect)
		}
	})
}

// escapeLikeGoldmark is how goldmark writes text: &, <, > and " as entities.
var escapeLikeGoldmark = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;").Replace
