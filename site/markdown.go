package site

import (
	"bytes"
	"html"
	"regexp"
	"strings"
	"unicode"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/extension"
)

// newMarkdown is the one Markdown dialect of the site: CommonMark plus tables. Raw HTML stays disabled
// (goldmark's default), so nothing in a page — nor text from the configuration — can inject markup.
func newMarkdown() goldmark.Markdown {
	return goldmark.New(goldmark.WithExtensions(extension.Table))
}

// mdEscaper backslash-escapes what Markdown would read as markup inside a line of text.
var mdEscaper = strings.NewReplacer(
	`\`, `\\`, "`", "\\`", "*", `\*`, "_", `\_`, "[", `\[`, "]", `\]`, "<", `\<`, ">", `\>`,
	"|", `\|`, "&", `\&`, "#", `\#`,
)

// mdText makes s (text from the configuration or a schema) literal Markdown on one line.
func mdText(s string) string {
	s = strings.Join(strings.FieldsFunc(s, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }), " ")
	s = mdEscaper.Replace(s)
	// At the start of a line, these would open a list, a heading underline or a ~~~ code fence.
	if s != "" && strings.ContainsRune("-+=~", rune(s[0])) {
		s = `\` + s
	}
	if i := strings.IndexFunc(s, func(r rune) bool { return r < '0' || r > '9' }); i > 0 && (s[i] == '.' || s[i] == ')') {
		s = s[:i] + `\` + s[i:]
	}
	return s
}

// mdCode is s as a Markdown code span, fenced with more backticks than s contains in a row.
func mdCode(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	run, longest := 0, 0
	for _, r := range s {
		if r == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	fence := strings.Repeat("`", longest+1)
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") {
		s = " " + s + " "
	}
	return fence + s + fence
}

// mdFence wraps body in a fenced code block that body cannot close.
func mdFence(lang, body string) string {
	fence := "```"
	for strings.Contains(body, fence) {
		fence += "`"
	}
	return fence + lang + "\n" + strings.TrimRight(body, "\n") + "\n" + fence
}

// doc is a page's Markdown rendered to an HTML fragment, with its title and summary as plain text.
type doc struct {
	html           []byte
	title, summary string
}

func renderMarkdown(md goldmark.Markdown, src []byte) (*doc, error) {
	var b bytes.Buffer
	if err := md.Convert(src, &b); err != nil {
		return nil, err
	}
	d := &doc{html: b.Bytes()}
	d.title = elementText(d.html, "<h1>", "</h1>")
	d.summary = elementText(d.html, "<blockquote>", "</blockquote>")
	return d, nil
}

var tags = regexp.MustCompile(`<[^>]*>`)

// elementText is the text of the first element between open and closing in goldmark's HTML: goldmark
// escapes every < in text, so any < left is a tag.
func elementText(h []byte, open, closing string) string {
	_, rest, ok := bytes.Cut(h, []byte(open))
	if !ok {
		return ""
	}
	inner, _, _ := bytes.Cut(rest, []byte(closing))
	return strings.Join(strings.Fields(html.UnescapeString(tags.ReplaceAllString(string(inner), " "))), " ")
}
