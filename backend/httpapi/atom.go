package httpapi

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/directaid/directaid/backend"
	"github.com/directaid/directaid/schema"
	"github.com/directaid/directaid/site"
)

// The Atom 1.0 rendering of a list (view=list&format=atom), so that people follow an emergency, a
// municipio or a category in any feed reader. An entry says what the record asks or offers, where (the
// municipio, never the address) and links its page; no contact data.

type atomFeed struct {
	XMLName   xml.Name    `xml:"http://www.w3.org/2005/Atom feed"`
	Title     string      `xml:"title"`
	Subtitle  string      `xml:"subtitle,omitempty"`
	ID        string      `xml:"id"`
	Updated   string      `xml:"updated"`
	Links     []atomLink  `xml:"link"`
	Author    atomPerson  `xml:"author"`
	Generator string      `xml:"generator"`
	Entries   []atomEntry `xml:"entry"`
}

type atomLink struct {
	Rel  string `xml:"rel,attr,omitempty"`
	Type string `xml:"type,attr,omitempty"`
	Href string `xml:"href,attr"`
}

type atomPerson struct {
	Name string `xml:"name"`
	URI  string `xml:"uri,omitempty"`
}

type atomCategory struct {
	Term  string `xml:"term,attr"`
	Label string `xml:"label,attr,omitempty"`
}

type atomText struct {
	Type string `xml:"type,attr"`
	Text string `xml:",chardata"`
}

type atomEntry struct {
	Title     string         `xml:"title"`
	ID        string         `xml:"id"`
	Updated   string         `xml:"updated"`
	Published string         `xml:"published"`
	Links     []atomLink     `xml:"link"`
	Category  []atomCategory `xml:"category"`
	Summary   atomText       `xml:"summary"`
}

// atomSummaryRunes bounds the description quoted in an entry's summary.
const atomSummaryRunes = 300

// listAtom renders list (answered for the query self, an absolute URL) as an Atom feed.
func listAtom(s *backend.Service, list *schema.HelpList, base, self string) []byte {
	f := list.Filters
	title := "Ayudas en todas las emergencias"
	alternate := base + "/"
	if f.EmergencySlug != "" {
		title = "Ayudas: " + s.EmergencyTitle(f.EmergencySlug)
		alternate = base + schema.EmergencyPath(f.EmergencySlug)
	}
	var scope []string
	if f.Type != "" {
		scope = append(scope, map[string]string{schema.TypeRequest: "solicitudes", schema.TypeOffer: "ofrecimientos"}[f.Type])
	}
	for _, v := range []string{f.Category, f.Urgency} {
		if v != "" {
			scope = append(scope, strings.ToLower(site.EnumLabel(v)))
		}
	}
	if len(list.Items) > 0 && f.Municipio != "" && list.Items[0].Location != nil {
		scope = append(scope, "en "+list.Items[0].Location.Municipio)
	} else if f.Municipio != "" {
		scope = append(scope, "en el municipio "+f.Municipio)
	}
	if len(scope) > 0 {
		title += " — " + strings.Join(scope, ", ")
	}
	updated := list.GeneratedAt
	if len(list.Items) > 0 {
		updated = list.Items[0].UpdatedAt
		for _, it := range list.Items {
			if it.UpdatedAt.After(updated) {
				updated = it.UpdatedAt
			}
		}
	}
	feed := atomFeed{
		Title: title, Subtitle: "Solicitudes y ofrecimientos de ayuda publicados en directaid. Cada entrada enlaza su página, donde está el contacto.",
		ID: self, Updated: atomTime(updated), Author: atomPerson{Name: "directaid", URI: base + "/"}, Generator: "directaid",
		Links: []atomLink{{Rel: "self", Type: "application/atom+xml", Href: self}, {Rel: "alternate", Type: "text/html", Href: alternate}},
	}
	if list.NextCursor != "" {
		if u, err := url.Parse(self); err == nil {
			q := u.Query()
			q.Set("cursor", list.NextCursor)
			u.RawQuery = q.Encode()
			feed.Links = append(feed.Links, atomLink{Rel: "next", Type: "application/atom+xml", Href: u.String()})
		}
	}
	host := "directaid"
	if u, err := url.Parse(base); err == nil && u.Hostname() != "" {
		host = u.Hostname()
	}
	for _, it := range list.Items {
		feed.Entries = append(feed.Entries, atomEntry{
			Title: site.EnumLabel(it.Type) + ": " + it.Title,
			// A tag URI (RFC 4151): the host, the day the record was published, its page's path.
			ID:      fmt.Sprintf("tag:%s,%s:%s", host, it.CreatedAt.UTC().Format(time.DateOnly), schema.RecordPath(it.ID)),
			Updated: atomTime(it.UpdatedAt), Published: atomTime(it.CreatedAt),
			Links:    []atomLink{{Rel: "alternate", Type: "text/html", Href: it.PublicURL}},
			Category: []atomCategory{{Term: it.Category, Label: site.EnumLabel(it.Category)}},
			Summary:  atomText{Type: "text", Text: atomSummary(&it)},
		})
	}
	var buf bytes.Buffer
	buf.WriteString(xml.Header)
	enc := xml.NewEncoder(&buf)
	enc.Indent("", " ")
	_ = enc.Encode(feed) // strings only: it cannot fail
	buf.WriteByte('\n')
	return buf.Bytes()
}

func atomTime(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// atomSummary says what the record is, where and in which state, and quotes the start of its description:
// no name, no phone, no address.
func atomSummary(it *schema.PublicHelp) string {
	parts := []string{site.EnumLabel(it.Type) + " " + schema.CategoryPhrase(it.Category)}
	if it.Urgency != "" {
		parts = append(parts, "urgencia: "+strings.ToLower(site.EnumLabel(it.Urgency)))
	}
	if it.NeededPeople != nil && *it.NeededPeople > 0 {
		parts = append(parts, schema.PeopleWords(*it.NeededPeople))
	}
	if it.Location != nil && it.Location.Municipio != "" {
		parts = append(parts, it.Location.Municipio)
	}
	parts = append(parts, "estado: "+strings.ToLower(site.EnumLabel(it.Status)))
	out := strings.Join(parts, " · ") + "."
	if d := strings.TrimSpace(it.Description); d != "" {
		if utf8.RuneCountInString(d) > atomSummaryRunes {
			d = string([]rune(d)[:atomSummaryRunes]) + "…"
		}
		out += " " + d
	}
	return out
}
