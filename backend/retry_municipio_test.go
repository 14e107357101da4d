package backend_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/directaid/directaid/backend/badgerstore"
	"github.com/directaid/directaid/backend/store"
	"github.com/directaid/directaid/internal/golden"
	"github.com/directaid/directaid/internal/testserver"
	"github.com/directaid/directaid/schema"
)

// completions counts the records a Create completed: the searches of the places for a point's municipio.
type completions struct {
	*badgerstore.Store
	n atomic.Int32
}

func (c *completions) CreateCompleting(ctx context.Context, rec *store.Record, complete func(*store.Record)) (*store.Record, bool, error) {
	return c.Store.CreateCompleting(ctx, rec, func(r *store.Record) {
		c.n.Add(1)
		complete(r)
	})
}

// onlyStore hides a store's optional interfaces: the service then searches before every Create.
type onlyStore struct{ store.Store }

// A publication located by coordinates alone gets the municipio of its point when it is stored; a retry
// of the same content is answered without searching the places, with the same answer: content matches
// for the same point, not for another point, and the same with a store that cannot defer the search.
func TestRetrySearchesNoPlace(t *testing.T) {
	bs := testserver.Badger(t)
	counted := &completions{Store: bs}
	for _, c := range []struct {
		name string
		st   store.Store
	}{{"completer", counted}, {"plain store", onlyStore{bs}}} {
		t.Run(c.name, func(t *testing.T) {
			s := newContractServerOver(t, c.st, twoEmergencies)
			body := strings.Replace(golden.Records[0], `"externalId":"req-1"`, `"externalId":"retry-`+strings.ReplaceAll(c.name, " ", "-")+`"`, 1)
			before := counted.n.Load()
			resp, first := s.publish(body)
			if resp.StatusCode != 201 {
				t.Fatalf("publish: %d %v", resp.StatusCode, first)
			}
			if c.st == store.Store(counted) && counted.n.Load() != before+1 {
				t.Errorf("a new record searched the places %d times, want once", counted.n.Load()-before)
			}
			stored, err := bs.Get(context.Background(), first["id"].(string))
			if err != nil || stored.MunicipioCode != "63001" {
				t.Fatalf("stored municipio %v (%v), want 63001", stored, err)
			}
			searched := counted.n.Load()
			for _, r := range []struct {
				name, body string
				matches    bool
			}{
				{"the same", body, true},
				{"another point", strings.Replace(body, `"latitude":4.5339`, `"latitude":4.8`, 1), false},
				{"another title", strings.Replace(body, `"title":"Agua potable`, `"title":"Agua`, 1), false},
			} {
				resp, again := s.publish(r.body)
				if resp.StatusCode != 200 || again["duplicate"] != true || again["contentMatches"] != r.matches || again["id"] != first["id"] {
					t.Errorf("retry with %s: %d %v, want contentMatches %v", r.name, resp.StatusCode, again, r.matches)
				}
				if _, has := again["manageToken"]; has != r.matches {
					t.Errorf("retry with %s: manageToken given %v", r.name, has)
				}
			}
			if n := counted.n.Load(); n != searched {
				t.Errorf("retries searched the places %d times", n-searched)
			}
			resp, _, dry := s.call("POST", schema.HelpPath+"?dryRun=true", []byte(body), "Content-Type", "application/json")
			if rec, _ := dry["record"].(map[string]any); resp.StatusCode != 200 || rec["municipioCode"] != "63001" {
				t.Errorf("dry run: %d %v, want the record with municipioCode 63001", resp.StatusCode, dry)
			}
		})
	}
}
