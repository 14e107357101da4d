package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/directaid/directaid/backend/badgerstore"
	"github.com/directaid/directaid/backend/store"
	"github.com/directaid/directaid/internal/testserver"
	"github.com/directaid/directaid/schema"
)

// soakOr is short within `make test` and long under `make soak` (DIRECTAID_SOAK=1).
func soakOr[T any](short, long T) T {
	if os.Getenv("DIRECTAID_SOAK") != "" {
		return long
	}
	return short
}

// newClient is a client of its own (its own connection pool) that gives up after 20 s.
func newClient(conns int) *http.Client {
	return &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: conns, DisableCompression: true}}
}

// postHelp publishes body with c and returns what came back; unlike publish it reports connection
// errors instead of failing the test, since killing the server is the point. header is name, value pairs.
func postHelp(c *http.Client, s *testserver.Server, body []byte, header ...string) (int, map[string]any, error) {
	req, err := http.NewRequest("POST", s.URL+"/api/public/v1/help", bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, nil, err
	}
	var out map[string]any
	if err := json.Unmarshal(raw, &out); err != nil {
		return resp.StatusCode, nil, fmt.Errorf("status %d, body not JSON: %q", resp.StatusCode, raw)
	}
	return resp.StatusCode, out, nil
}

// storedRecords opens a stopped server's database through the Store interface and returns every record
// (as its JSON) by id, paging through the newest-first list of all emergencies.
func storedRecords(t *testing.T, dir string) map[string]map[string]any {
	t.Helper()
	s, err := badgerstore.Open(badgerstore.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	out := map[string]map[string]any{}
	spec := &store.ListSpec{Limit: 1000}
	for {
		res, err := s.List(context.Background(), spec)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range res.Records {
			b, err := json.Marshal(r)
			if err != nil {
				t.Fatal(err)
			}
			var rec map[string]any
			if err := json.Unmarshal(b, &rec); err != nil {
				t.Fatal(err)
			}
			if out[r.ID] != nil {
				t.Fatalf("record %s listed twice", r.ID)
			}
			out[r.ID] = rec
		}
		if res.Next == nil {
			if res.Total != len(out) {
				t.Errorf("the list counts %d records and holds %d", res.Total, len(out))
			}
			return out
		}
		spec.After = res.Next
	}
}

// reporter fails the test with the first few of many similar errors, and counts the rest.
type reporter struct {
	t *testing.T
	n atomic.Int64
}

func (r *reporter) Errorf(format string, args ...any) {
	r.t.Helper()
	if n := r.n.Add(1); n <= 10 {
		r.t.Errorf(format, args...)
	}
}

func (r *reporter) Summary(what string) {
	if n := r.n.Load(); n > 10 {
		r.t.Errorf("… %d %s in all", n, what)
	}
}

type acked struct {
	body []byte
	id   string
}

// TestCrashSafety publishes with 32 concurrent clients, kills the binary with SIGKILL at a random
// moment, starts it again over the same data, and repeats; then every record that was acknowledged
// (200/201) must be there, intact, under the id it was given, exactly once.
func TestCrashSafety(t *testing.T) {
	s := testserver.Start(t, testserver.Options{})
	const clients = 32
	rounds := soakOr(3, 15)
	var (
		mu      sync.Mutex
		acks    []acked
		unknown [][]byte // sent (or about to be) when the server died: stored or not, but at most once
	)
	for round := range rounds {
		if round > 0 {
			s.Launch()
		}
		c := newClient(clients)
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for w := range clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var prev acked
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					body := mustJSON(t, with(validRequest(), "externalId", fmt.Sprintf("crash-%d-%d-%d", round, w, i),
						"title", fmt.Sprintf("Solicitud %d de %d", i, w), "neededPeople", i%10000))
					retry := prev.id != "" && i%5 == 0 // a client retrying after a timeout: same pair, same id
					if retry {
						body = prev.body
					}
					status, out, err := postHelp(c, s, body)
					mu.Lock()
					switch {
					case err != nil:
						if !retry {
							unknown = append(unknown, body)
						}
					case status == http.StatusCreated && !retry, status == http.StatusOK && retry && out["id"] == prev.id:
						prev = acked{body, out["id"].(string)}
						if !retry {
							acks = append(acks, prev)
						}
					default:
						t.Errorf("round %d: %d %v (retry %v of %s)", round, status, out, retry, prev.id)
					}
					mu.Unlock()
					if err != nil {
						return // the server is gone
					}
				}
			}()
		}
		time.Sleep(time.Duration(100+rand.IntN(1400)) * time.Millisecond)
		s.Kill()
		close(stop)
		wg.Wait()
		c.CloseIdleConnections()
		t.Logf("round %d: %d acknowledged so far, %d unknown", round, len(acks), len(unknown))
	}
	if len(acks) < rounds*clients {
		t.Fatalf("only %d publications acknowledged in %d rounds: the load did not run", len(acks), rounds)
	}

	s.Launch()
	// Every acknowledged record answers as the duplicate it is, with its id and its content; an unknown
	// one is either there (200) or not (201, now).
	c := newClient(clients)
	var next atomic.Int64
	var wg sync.WaitGroup
	bad := &reporter{t: t}
	all := append(append([]acked{}, acks...), func() []acked {
		out := make([]acked, len(unknown))
		for i, b := range unknown {
			out[i] = acked{body: b}
		}
		return out
	}()...)
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1)) - 1; i < len(all); i = int(next.Add(1)) - 1 {
				a := all[i]
				status, out, err := postHelp(c, s, a.body)
				switch {
				case err != nil:
					bad.Errorf("re-publish: %v", err)
				case a.id == "" && status == http.StatusCreated:
				case status != http.StatusOK || out["duplicate"] != true || out["contentMatches"] != true:
					bad.Errorf("after the crashes: %d %v for %s", status, out, a.body)
				case a.id != "" && out["id"] != a.id:
					bad.Errorf("acknowledged as %s, now %v", a.id, out["id"])
				}
			}
		}()
	}
	wg.Wait()
	s.Stop()
	// Exactly once: one record per pair sent, and each acknowledged id holds its own publication.
	recs := storedRecords(t, s.DataDir)
	if len(recs) != len(all) {
		t.Errorf("%d records stored for %d distinct publications", len(recs), len(all))
	}
	for _, a := range acks {
		var sent map[string]any
		_ = json.Unmarshal(a.body, &sent)
		r := recs[a.id]
		if r == nil || r["externalId"] != sent["externalId"] || r["title"] != sent["title"] || r["contactWhatsapp"] != sent["contactWhatsapp"] {
			bad.Errorf("record %s: stored %v, sent %v", a.id, r, sent)
		}
	}
	bad.Summary("wrong answers and records")
	t.Logf("%d rounds: %d acknowledged, %d in flight at a kill, %d stored", rounds, len(acks), len(unknown), len(recs))
}

// TestReloadUnderLoad reloads the configuration again and again (an emergency's summary changes) while
// clients publish and read: no request may fail — no 5xx, no error, no lost or doubled publication.
//
// Two things a reload does to connections, which clients must absorb as HTTP lets them:
//   - It shuts the old server down, closing its idle keep-alive connections; a request sent on one at
//     that instant never reaches a handler. Go's transport resends it on a new connection when it is
//     idempotent (RFC 9110 §9.2.2): GETs, and POSTs that carry Idempotency-Key — a publication is
//     idempotent by its (source, externalId).
//   - Caddy opens the new config's listener with SO_REUSEPORT and closes the old one; Linux resets the
//     connections still queued on the closed socket (https://lwn.net/Articles/542629/). A client that
//     connects at that instant gets a connection error before anything was read, and resends, as
//     integrators retrying over mobile networks already do.
//
// Half the clients keep connections alive, half open one per request; each resends a request after a
// connection error, at most 5 times, backing off.
func TestReloadUnderLoad(t *testing.T) {
	s := testserver.Start(t, testserver.Options{})
	cf, err := readFile(s.CaddyfilePath())
	if err != nil {
		t.Fatal(err)
	}
	const summary = `summary "Sismo con daños en Armenia y Pereira."`
	if !strings.Contains(cf, summary) {
		t.Fatalf("the test Caddyfile has no %s", summary)
	}
	const clients = 16
	pooled := newClient(clients)
	fresh := &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var published, reads, failures, resends atomic.Int64
	// once sends a publication (even w) or a discovery read (odd w) and reports the answer.
	once := func(c *http.Client, w int, body map[string]any) (int, map[string]any, error) {
		if w%2 == 0 {
			return postHelp(c, s, mustJSON(t, body), "Idempotency-Key", body["externalId"].(string))
		}
		resp, err := c.Get(s.URL + "/api/public/v1/help")
		if err != nil {
			return 0, nil, err
		}
		defer resp.Body.Close()
		_, err = io.Copy(io.Discard, resp.Body)
		return resp.StatusCode, nil, err
	}
	for w := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := pooled
			if w%4 >= 2 {
				c = fresh
			}
			for {
				select {
				case <-stop:
					return
				default:
				}
				body := validRequest()
				status, out, err := once(c, w, body)
				tries := 0
				for ; err != nil && tries < 5; tries++ {
					resends.Add(1)
					time.Sleep(time.Duration(tries+1) * 50 * time.Millisecond)
					status, out, err = once(c, w, body)
				}
				switch {
				case err != nil:
					failures.Add(1)
					t.Errorf("client %d during reloads, after 5 resends: %v", w, err)
				case w%2 == 1 && status == http.StatusOK:
					reads.Add(1)
				case w%2 == 0 && (status == http.StatusCreated || tries > 0 && status == http.StatusOK && out["contentMatches"] == true):
					published.Add(1) // 200 on a resend: the earlier send got through before its connection broke
				default:
					failures.Add(1)
					t.Errorf("client %d during reloads: %d %v", w, status, out)
				}
			}
		}()
	}
	reloads := soakOr(5, 40)
	var last string
	for i := range reloads {
		time.Sleep(150 * time.Millisecond)
		last = fmt.Sprintf("Sismo con daños en Armenia y Pereira (parte %d).", i+1)
		s.WriteCaddyfile(strings.Replace(cf, summary, fmt.Sprintf("summary %q", last), 1))
		s.Reload()
	}
	time.Sleep(150 * time.Millisecond)
	close(stop)
	wg.Wait()
	if failures.Load() > 0 || published.Load() == 0 || reads.Load() == 0 {
		t.Fatalf("%d reloads: %d published, %d reads, %d failed", reloads, published.Load(), reads.Load(), failures.Load())
	}
	_, disc := call(t, s, "GET", "/api/public/v1/help", nil)
	if e := disc["emergencies"].([]any)[0].(map[string]any); e["summary"] != last {
		t.Errorf("after the last reload the summary is %v, want %q", e["summary"], last)
	}
	s.Stop()
	if n := countRecords(t, s.DataDir); n != int(published.Load()) {
		t.Errorf("%d records stored, %d publications acknowledged", n, published.Load())
	}
	t.Logf("%d reloads under load: %d published, %d reads, none failed; %d resent after a connection error",
		reloads, published.Load(), reads.Load(), resends.Load())
}

// TestCrashKeepsTheAuditWithTheChange: publishers resolve their records from 16 clients, and the binary
// is killed with SIGKILL at a random moment; started again, every resolved record has its one «resolve»
// entry in the audit trail and every such entry names a resolved record — the change and its entry are
// one write, never one without the other (the trail is what an operator re-applies withdrawals and
// erasures from after restoring an older backup). The stored records and trail are read from the
// directory, every acknowledged resolve among them.
func TestCrashKeepsTheAuditWithTheChange(t *testing.T) {
	s := testserver.Start(t, testserver.Options{})
	type pub struct{ id, token string }
	var pubs []pub
	for i := range soakOr(2000, 6000) {
		_, out := publish(t, s, with(validRequest(), "externalId", fmt.Sprintf("audit-crash-%d", i)))
		pubs = append(pubs, pub{out["id"].(string), out["manageToken"].(string)})
	}
	const clients = 16
	c := newClient(clients)
	var next atomic.Int64
	var mu sync.Mutex
	acked := map[string]bool{}
	var wg sync.WaitGroup
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1)) - 1; i < len(pubs); i = int(next.Add(1)) - 1 {
				req, _ := http.NewRequest("POST", s.URL+schema.ActionsPath(pubs[i].id), strings.NewReader(`{"action":"resolve"}`))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Authorization", "Bearer "+pubs[i].token)
				resp, err := c.Do(req)
				if err != nil {
					return // the server is gone
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					mu.Lock()
					acked[pubs[i].id] = true
					mu.Unlock()
				}
			}
		}()
	}
	time.Sleep(time.Duration(50+rand.IntN(250)) * time.Millisecond)
	s.Kill()
	wg.Wait()
	c.CloseIdleConnections()
	if len(acked) == 0 || len(acked) == len(pubs) {
		t.Logf("the kill came with %d of %d resolves acknowledged: nothing was cut in flight", len(acked), len(pubs))
	}
	s.Launch()
	s.Stop()

	st, err := badgerstore.Open(badgerstore.Options{Dir: s.DataDir})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	resolved := map[string]bool{}
	if err := st.Scan(ctx, func(r *store.Record) error {
		if r.Status == store.StatusResolved {
			resolved[r.ID] = true
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	entries := map[string]int{}
	for after := int64(0); ; {
		page, err := st.Audit(ctx, after, 1000)
		if err != nil {
			t.Fatal(err)
		}
		if len(page) == 0 {
			break
		}
		for _, e := range page {
			if e.Action == "resolve" {
				entries[e.RecordID]++
			}
		}
		after = page[len(page)-1].Seq
	}
	for id := range acked {
		if !resolved[id] {
			t.Errorf("record %s: its resolve was acknowledged, and it is not resolved", id)
		}
	}
	for id := range resolved {
		if entries[id] != 1 {
			t.Errorf("resolved record %s has %d «resolve» entries in the trail", id, entries[id])
		}
	}
	for id, n := range entries {
		if !resolved[id] {
			t.Errorf("the trail has %d «resolve» entries for %s, which is not resolved", n, id)
		}
	}
	t.Logf("%d of %d resolves acknowledged before the kill; %d records resolved, each with its entry", len(acked), len(pubs), len(resolved))
}
