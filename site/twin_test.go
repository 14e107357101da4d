package site

import (
	"strings"
	"testing"

	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/text"

	"github.com/directaid/directaid/site/sitetest"
)

// A record's twin carries the phone number and the address as an agent can copy them: parsed as
// Markdown, the code span after «WhatsApp:» and «Dirección:» is exactly the stored value, with none of
// the backslashes that escaping for Markdown text would add.
func TestRecordTwinValuesCopyVerbatim(t *testing.T) {
	s := &records{}
	id := s.add(eje.Slug, "request", "Agua")
	const address = "Cra 14 # 20-31 *bis* [casa_2] <esquina> \\ `patio`"
	s.all[0].Location.Address = address
	c := newSite(t, s.options(eje))
	_, twin := sitetest.Get(t, c, testBase+"/ayudas/"+id+".md")
	got := codeAfter(t, twin)
	if got["WhatsApp:"] != s.all[0].Contact.Whatsapp || got["Dirección:"] != address {
		t.Errorf("values read back from the twin: %q\n%s", got, twin)
	}
	// The page shows them as text, with no backslash either, the number grouped for reading.
	_, page := sitetest.Get(t, c, testBase+"/ayudas/"+id)
	if p := visibleText(string(page)); !strings.Contains(p, phoneText(s.all[0].Contact.Whatsapp)) || !strings.Contains(p, "Cra 14 # 20-31 *bis*") {
		t.Errorf("page text: %s", p)
	}
}

// codeAfter maps each list item's leading text ("WhatsApp:") to the code span that follows it.
func codeAfter(t *testing.T, md []byte) map[string]string {
	t.Helper()
	out := map[string]string{}
	root := newMarkdown().Parser().Parse(text.NewReader(md))
	_ = ast.Walk(root, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		cs, ok := n.(*ast.CodeSpan)
		if !entering || !ok {
			return ast.WalkContinue, nil
		}
		label := ""
		if prev, ok := cs.PreviousSibling().(*ast.Text); ok {
			label = strings.TrimSpace(string(prev.Segment.Value(md)))
		}
		var b strings.Builder
		for c := cs.FirstChild(); c != nil; c = c.NextSibling() {
			if tx, ok := c.(*ast.Text); ok {
				b.Write(tx.Segment.Value(md))
			}
		}
		out[label] = b.String()
		return ast.WalkContinue, nil
	})
	return out
}
