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

// apiQuery reads r's query string. Pairs that do not decode are dropped, as url.ParseQuery drops them.
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
