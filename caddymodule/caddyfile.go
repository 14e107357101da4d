package caddymodule

import (
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"github.com/dustin/go-humanize"

	"github.com/directaid/directaid/schema"
	"github.com/directaid/directaid/site"
)

func init() {
	httpcaddyfile.RegisterGlobalOption("directaid", parseGlobal)
	httpcaddyfile.RegisterHandlerDirective("directaid", parseHandler)
	// After rate_limit (which sits before basic_auth) and the operator's own respond/reverse_proxy routes.
	httpcaddyfile.RegisterDirectiveOrder("directaid", httpcaddyfile.Before, "file_server")
}

// parseGlobal parses the global option block:
//
//	directaid {
//	    database badger <dir> {          (or: database postgres <dsn>)
//	        min_free_space <size>   # default 256MiB; off never refuses
//	    }
//	    public_url <url>
//	    hide_after_reports <n>           # distinct reporters that hide a record; default 3
//	    operator_contact <text>          # how people reach the operator: every page's footer, /privacidad
//	    map_tiles <url> <attribution>    # the maps' background: an XYZ tile URL template and its attribution
//	    feed {                           # the live feed (GET /api/public/v1/help/events)
//	        streams <n>                  # open streams on this node; default 1000
//	        streams_per_client <n>       # open streams per client (IPv4 address, IPv6 /64); default 4
//	    }
//	    webhook <url> {                  # POSTs signed events about the records published under sources (repeatable)
//	        secret  <secret>             # at least 16 characters; {env.VARIABLE} keeps it out of the file
//	        sources <source>...          # the publications' source (the app's name in its publications)
//	        timeout <duration>           # one attempt's bound; default 10s
//	    }
//	    emergency <slug> {
//	        title    <text>
//	        summary  <text>
//	        location <text>
//	        occurred <YYYY-MM-DD>
//	        inactive
//	        area <code>...           # DIVIPOLA codes of its departamentos (2 digits) or municipios (5)
//	        line "<name>" <number>   # a phone line its pages show (repeatable); none: 123
//	        request_ttl <duration>   # how long a request stays open unless renewed; default 14d
//	        offer_ttl   <duration>   # the same for an offer; default 30d
//	    }
//	}
func parseGlobal(d *caddyfile.Dispenser, _ any) (any, error) {
	app := new(App)
	if err := app.UnmarshalCaddyfile(d); err != nil {
		return nil, err
	}
	return httpcaddyfile.App{Name: "directaid", Value: caddyconfig.JSON(app, nil)}, nil
}

// UnmarshalCaddyfile implements caddyfile.Unmarshaler. Every unknown word is an error naming its line.
func (a *App) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	d.Next() // the option name
	if d.NextArg() {
		return d.ArgErr()
	}
	for d.NextBlock(0) {
		switch d.Val() {
		case "database":
			var kind, where string
			if !d.Args(&kind, &where) || d.NextArg() {
				return d.Err("usage: database badger <directory> [{ min_free_space <size> }] | database postgres <dsn>")
			}
			switch kind {
			case "badger":
				a.Database.Badger = where
			case "postgres":
				a.Database.Postgres = where
			default:
				return d.Errf("unknown database %q (supported: badger, postgres)", kind)
			}
			for nesting := d.Nesting(); d.NextBlock(nesting); {
				if kind == "postgres" {
					// The node writes nothing of its own to a local disk: a full disk is the database server's
					// to watch (and PostgreSQL fails a write there cleanly, which answers 503).
					return d.Errf("database postgres takes no options; found %q (min_free_space applies to database badger only: watch the PostgreSQL server's disk there)", d.Val())
				}
				if d.Val() != "min_free_space" {
					return d.Errf("unknown database option %q (known: min_free_space)", d.Val())
				}
				var size string
				if !d.Args(&size) || d.NextArg() {
					return d.Err("usage: min_free_space <size, e.g. 256MiB, or off>")
				}
				if size == "off" {
					a.Database.MinFreeSpace = -1
					continue
				}
				n, err := humanize.ParseBytes(size)
				if err != nil || n == 0 || n > 1<<50 {
					return d.Errf("min_free_space %q must be a size like 256MiB, or off", size)
				}
				a.Database.MinFreeSpace = int64(n)
			}
		case "public_url":
			if !d.Args(&a.PublicURL) || d.NextArg() {
				return d.Err("usage: public_url <https://host>")
			}
			if err := checkPublicURL(a.PublicURL); err != nil {
				return d.WrapErr(err)
			}
		case "hide_after_reports":
			var n string
			if !d.Args(&n) || d.NextArg() {
				return d.Err("usage: hide_after_reports <n>")
			}
			v, err := strconv.Atoi(n)
			if err != nil || v < 1 || v > 1000 {
				return d.Errf("hide_after_reports %q must be a whole number from 1 to 1000", n)
			}
			a.HideAfterReports = v
		case "operator_contact":
			if !d.Args(&a.OperatorContact) || d.NextArg() || strings.TrimSpace(a.OperatorContact) == "" {
				return d.Err(`usage: operator_contact "<how people reach you: an e-mail, a phone>"`)
			}
			if utf8.RuneCountInString(a.OperatorContact) > 200 || strings.ContainsFunc(a.OperatorContact, unicode.IsControl) {
				return d.Err("operator_contact must be one line of at most 200 characters")
			}
		case "map_tiles":
			var t site.MapTiles
			if !d.Args(&t.URL, &t.Attribution) || d.NextArg() {
				return d.Err(`usage: map_tiles "<https://tiles.example.org/{z}/{x}/{y}.png>" "<attribution, e.g. © OpenStreetMap>"`)
			}
			if err := site.CheckMapTiles(t); err != nil {
				return d.WrapErr(err)
			}
			a.MapTiles = &t
		case "feed":
			if d.NextArg() {
				return d.Err("usage: feed { streams <n>; streams_per_client <n> }")
			}
			for nesting := d.Nesting(); d.NextBlock(nesting); {
				var dst *int
				switch d.Val() {
				case "streams":
					dst = &a.Feed.Streams
				case "streams_per_client":
					dst = &a.Feed.StreamsPerClient
				default:
					return d.Errf("unknown feed option %q (known: streams, streams_per_client)", d.Val())
				}
				name := d.Val()
				var n string
				if !d.Args(&n) || d.NextArg() {
					return d.Errf("usage: %s <n>", name)
				}
				v, err := strconv.Atoi(n)
				if err != nil || v < 1 || v > 1000000 {
					return d.Errf("%s %q must be a whole number from 1 to 1000000", name, n)
				}
				*dst = v
			}
		case "webhook":
			w, err := parseWebhook(d)
			if err != nil {
				return err
			}
			if slices.ContainsFunc(a.Webhooks, func(o Webhook) bool { return o.URL == w.URL }) {
				return d.Errf("webhook %q is declared twice: give it every source in one block", w.URL)
			}
			a.Webhooks = append(a.Webhooks, w)
		case "emergency":
			e, err := parseEmergency(d, a.Emergencies)
			if err != nil {
				return err
			}
			a.Emergencies = append(a.Emergencies, e)
		default:
			return d.Errf("unknown directaid option %q (known: database, public_url, emergency, hide_after_reports, operator_contact, map_tiles, feed, webhook)", d.Val())
		}
	}
	if err := a.Validate(); err != nil {
		return d.WrapErr(err)
	}
	return nil
}

func parseEmergency(d *caddyfile.Dispenser, earlier []Emergency) (Emergency, error) {
	var e Emergency
	if !d.Args(&e.Slug) || d.NextArg() {
		return e, d.Err("usage: emergency <slug> { title ... }")
	}
	seen := map[string]bool{}
	for _, o := range earlier {
		seen[o.Slug] = true
	}
	if err := checkSlug(e.Slug, seen); err != nil {
		return e, d.WrapErr(err)
	}
	for d.NextBlock(1) {
		field := map[string]*string{"title": &e.Title, "summary": &e.Summary, "location": &e.Location, "occurred": &e.OccurredOn}
		switch name := d.Val(); name {
		case "inactive":
			if d.NextArg() {
				return e, d.ArgErr()
			}
			e.Inactive = true
		case "title", "summary", "location", "occurred":
			if !d.Args(field[name]) || d.NextArg() {
				return e, d.Errf("usage: %s <text> (quote text with spaces)", name)
			}
			if err := checkOccurred(e.Emergency); err != nil {
				return e, d.WrapErr(err)
			}
		case "area":
			codes := d.RemainingArgs()
			if len(codes) == 0 {
				return e, d.Err("usage: area <DIVIPOLA code>... (departamentos 2 digits, municipios 5: area 63 66 17)")
			}
			e.Area = append(e.Area, codes...)
			if err := checkArea(e.Emergency); err != nil {
				return e, d.WrapErr(err)
			}
		case "line":
			var l schema.PhoneLine
			if !d.Args(&l.Name, &l.Number) || d.NextArg() {
				return e, d.Err(`usage: line "<name>" <number> (line "Línea de emergencias" 123)`)
			}
			e.Lines = append(e.Lines, l)
			if err := checkLines(e.Emergency); err != nil {
				return e, d.WrapErr(err)
			}
		case "request_ttl", "offer_ttl":
			var v string
			if !d.Args(&v) || d.NextArg() {
				return e, d.Errf("usage: %s <duration, e.g. 14d or 720h>", name)
			}
			ttl, err := caddy.ParseDuration(v)
			if err != nil || ttl <= 0 {
				return e, d.Errf("%s %q must be a positive duration like 14d or 720h", name, v)
			}
			if name == "request_ttl" {
				e.RequestTTL = caddy.Duration(ttl)
			} else {
				e.OfferTTL = caddy.Duration(ttl)
			}
		default:
			return e, d.Errf("unknown emergency option %q (known: title, summary, location, occurred, area, line, inactive, request_ttl, offer_ttl)", name)
		}
	}
	if e.Title == "" {
		return e, d.Errf("emergency %q needs a title", e.Slug)
	}
	return e, nil
}

func parseHandler(h httpcaddyfile.Helper) (caddyhttp.MiddlewareHandler, error) {
	h.Next()
	if h.NextArg() {
		return nil, h.ArgErr()
	}
	if h.NextBlock(0) {
		return nil, h.Errf("the directaid directive takes no options (configure it in the global directaid block); found %q", h.Val())
	}
	return new(Handler), nil
}
