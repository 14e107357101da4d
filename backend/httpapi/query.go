package httpapi

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/directaid/directaid/backend"
	"github.com/directaid/directaid/schema"
)

// query is the query string of an API request read by the API's one rule for values: a parameter sent
// empty (name=, what an HTML form sends for a field left blank) is the same as absent, so vals leaves it
// out; a bare name without "=" (?dryRun) says nothing clear, so it is listed in bare, for the caller to
// refuse. names is every name sent, however, sorted: an unknown one is refused whatever its value.
type query struct {
	vals  url.Values
	bare  []string
	names []string
}

// malformedQuery refuses every pair of a raw query string that url.ParseQuery rejects (one holding ";",
// or an escape that does not decode), and a pair without a name ("=x"). Such a query is refused whole,
// before any handler reads it: Caddy's query matchers, which meter the rate limits, see no parameter at
// all in a query that does not parse, so a reader that skipped the bad pair would serve what they do not
// count (a record's phone number past its limit), or ignore what its sender meant (dryRun=true%).
func malformedQuery(raw string) []schema.FieldError {
	var errs []schema.FieldError
	for pair := range strings.SplitSeq(raw, "&") {
		if pair == "" {
			continue
		}
		rawName, rawValue, _ := strings.Cut(pair, "=")
		name, err1 := url.QueryUnescape(rawName)
		_, err2 := url.QueryUnescape(rawValue)
		field := name
		switch {
		case err1 != nil:
			field = rawName
		case name == "":
			field = schema.Pointer("query", "") // WithQueryFields leaves an empty name as it is
		}
		var msg string
		switch {
		case strings.Contains(pair, ";"):
			msg = fmt.Sprintf("«%s» lleva «;»: separe los parámetros con & y escriba ; como %%3B", schema.Clip(pair))
		case err1 != nil || err2 != nil:
			msg = fmt.Sprintf("«%s» no se puede leer: escriba %% como %%25 y cada carácter especial con su código %%XX", schema.Clip(pair))
		case name == "":
			msg = fmt.Sprintf("«%s» no tiene nombre: envíe nombre=valor", schema.Clip(pair))
		default:
			continue
		}
		errs = append(errs, backend.ParamError(field, msg))
	}
	return errs
}

// apiQuery reads r's query string, which ServeHTTP has checked (malformedQuery).
func apiQuery(r *http.Request) query {
	q := query{vals: url.Values{}}
	for pair := range strings.SplitSeq(r.URL.RawQuery, "&") {
		if pair == "" || strings.Contains(pair, ";") {
			continue
		}
		rawName, rawValue, hasValue := strings.Cut(pair, "=")
		name, err1 := url.QueryUnescape(rawName)
		value, err2 := url.QueryUnescape(rawValue)
		if err1 != nil || err2 != nil || name == "" {
			continue
		}
		q.names = append(q.names, name)
		switch {
		case !hasValue:
			q.bare = append(q.bare, name)
		case value != "":
			q.vals.Add(name, value)
		}
	}
	slices.Sort(q.names)
	q.names = slices.Compact(q.names)
	return q
}

// bareParam is the refusal of a parameter sent as a bare name.
func bareParam(name string) schema.FieldError {
	n := schema.Clip(name)
	return backend.ParamError(name, fmt.Sprintf("el parámetro «%s» llegó sin valor: envíe %s=<valor> (vacío, %s=, es como no enviarlo)", n, n, n))
}

// unknownParam is the refusal of parameter name, which the operation of where («las coincidencias de un
// registro») does not take: the ones it does, and the one meant when name is a known alias of it.
func unknownParam(name, where string, allowed []string) schema.FieldError {
	msg := fmt.Sprintf("el parámetro «%s» no existe en %s", schema.Clip(name), where)
	if a, ok := paramAliases[strings.ToLower(name)]; ok && slices.Contains(allowed, a) {
		msg += fmt.Sprintf(" (¿quiso decir «%s»?)", a)
	}
	return backend.ParamError(name, msg, allowed...)
}

// repeatedParam is the refusal of parameter name sent more than once.
func repeatedParam(name string) schema.FieldError {
	return backend.ParamError(name, fmt.Sprintf("el parámetro «%s» está repetido: envíelo una sola vez", schema.Clip(name)))
}
