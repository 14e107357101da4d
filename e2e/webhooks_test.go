package e2e

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/directaid/directaid/backend/webhooks"
	"github.com/directaid/directaid/internal/pgtest"
	"github.com/directaid/directaid/internal/testserver"
	"github.com/directaid/directaid/schema"
)

const webhookSecret = "e2e-webhook-secret-0123456789"

// receiver is a webhook receiver on loopback. It checks each delivery's signature, records it, and answers
// as behave says for the n-th request it got (0 first): a status, after a delay.
type receiver struct {
	t      *testing.T
	addr   string
	behave func(n int) (status int, delay time.Duration)
	// onRequest, if set, runs after the n-th request was recorded (the restart of a receiver).
	onRequest func(n int)

	mu  sync.Mutex
	srv *http.Server
	got []delivery
}

// delivery is one request a receiver got.
type delivery struct {
	id, typ string
	event   webhooks.Event
	body    string
	sigErr  error
	status  int
	delay   time.Duration
}

func newReceiver(t *testing.T, behave func(n int) (int, time.Duration)) *receiver {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &receiver{t: t, addr: ln.Addr().String(), behave: behave}
	r.serve(ln)
	t.Cleanup(r.down)
	return r
}

func (r *receiver) url() string { return "http://" + r.addr + "/hook" }

func (r *receiver) serve(ln net.Listener) {
	srv := &http.Server{Handler: http.HandlerFunc(r.handle), ReadHeaderTimeout: 5 * time.Second}
	r.mu.Lock()
	r.srv = srv
	r.mu.Unlock()
	go func() { _ = srv.Serve(ln) }()
}

// down closes the listener and every connection: the receiver's host is gone.
func (r *receiver) down() {
	r.mu.Lock()
	srv := r.srv
	r.mu.Unlock()
	_ = srv.Close()
}

// up listens again on the same address.
func (r *receiver) up() {
	var ln net.Listener
	var err error
	for range 50 { // the port may take a moment to be free again
		if ln, err = net.Listen("tcp", r.addr); err == nil {
			r.serve(ln)
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	r.t.Errorf("the receiver could not listen again on %s: %v", r.addr, err)
}

func (r *receiver) handle(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	d := delivery{id: req.Header.Get(webhooks.HeaderEventID), typ: req.Header.Get(webhooks.HeaderEventType), body: string(body),
		sigErr: webhooks.Verify([]byte(webhookSecret), req.Header.Get(webhooks.HeaderSignature), req.Header.Get(webhooks.HeaderTimestamp), body, time.Now(), 5*time.Minute)}
	if err := json.Unmarshal(body, &d.event); err != nil {
		d.sigErr = errors.Join(d.sigErr, err)
	}
	if req.Method != http.MethodPost || req.Header.Get("Content-Type") != "application/json" || d.event.ID != d.id || d.event.Type != d.typ {
		d.sigErr = errors.Join(d.sigErr, fmt.Errorf("%s %s, id %q/%q, type %q/%q", req.Method, req.Header.Get("Content-Type"), d.id, d.event.ID, d.typ, d.event.Type))
	}
	r.mu.Lock()
	n := len(r.got)
	d.status, d.delay = r.behave(n)
	r.got = append(r.got, d)
	r.mu.Unlock()
	if r.onRequest != nil {
		r.onRequest(n)
	}
	time.Sleep(d.delay)
	w.WriteHeader(d.status)
}

// deliveries is every request so far.
func (r *receiver) deliveries() []delivery {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.got)
}

// accepted is the events the receiver answered 2xx in time (within timeout), each once, in the order of
// their first such answer.
func (r *receiver) accepted(timeout time.Duration) []delivery {
	var out []delivery
	for _, d := range r.deliveries() {
		if d.status/100 == 2 && d.delay < timeout && !slices.ContainsFunc(out, func(o delivery) bool { return o.id == d.id }) {
			out = append(out, d)
		}
	}
	return out
}

// firstSeen is the events in the order the receiver first got each (the order of their first attempts).
func (r *receiver) firstSeen() []delivery {
	var out []delivery
	for _, d := range r.deliveries() {
		if !slices.ContainsFunc(out, func(o delivery) bool { return o.id == d.id }) {
			out = append(out, d)
		}
	}
	return out
}

// webhookLog reads the delivery log of the admin endpoint.
func webhookLog(t *testing.T, s *testserver.Server) webhooks.Log {
	t.Helper()
	resp, err := http.Get(s.AdminURL + "/directaid/webhooks?limit=1000")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var log webhooks.Log
	if err := json.NewDecoder(resp.Body).Decode(&log); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /directaid/webhooks: %d %v", resp.StatusCode, err)
	}
	return log
}

// waitFor polls cond every 100 ms for up to limit and fails the test with what when it never holds.
func waitFor(t *testing.T, limit time.Duration, what func() string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(limit); !cond(); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("after %s: %s", limit, what())
		}
	}
}

// waitEnqueued waits until the delivery log holds n events of each record of ids.
func waitEnqueued(t *testing.T, s *testserver.Server, ids []string, n int) {
	t.Helper()
	var log webhooks.Log
	count := func(id string) int {
		k := 0
		for _, d := range log.Items {
			if d.RecordID == id {
				k++
			}
		}
		return k
	}
	waitFor(t, 30*time.Second, func() string { return fmt.Sprintf("want %d events of each of %v in the log: %+v", n, ids, log.Items) }, func() bool {
		log = webhookLog(t, s)
		return !slices.ContainsFunc(ids, func(id string) bool { return count(id) < n })
	})
}

// webhookEmergency is one emergency whose requests expire after ttl.
func webhookEmergency(ttl string) string {
	return `
		public_url http://ayuda.example.org
		emergency eje-cafetero {
			title "Terremoto en el Eje Cafetero"
			occurred 2026-08-11
			request_ttl ` + ttl + `
		}`
}

func webhookBlock(url, timeout string, sources ...string) string {
	return fmt.Sprintf(`
		webhook %s {
			secret %s
			sources %s
			timeout %s
		}`, url, webhookSecret, strings.Join(sources, " "), timeout)
}

// checkEvents checks what a receiver accepted for record id of source against the events of the scenario,
// in order: the kinds in want ("expiring", "match", "response:<count>", "status:<from>><to>").
func checkEvents(t *testing.T, name string, got []delivery, id, source, matchID string, want []string) {
	t.Helper()
	var kinds []string
	for _, d := range got {
		ev := d.event
		if ev.Record.ID != id || ev.Record.Source != source || ev.Record.URL != "http://ayuda.example.org"+schema.RecordPath(id) || ev.OccurredAt.IsZero() {
			t.Errorf("%s: event about another record or without its fields: %s", name, d.body)
		}
		k := ev.Type
		switch {
		case ev.Type == webhooks.TypeResponse && ev.Response != nil:
			k += fmt.Sprintf(":%d", ev.Response.Count)
		case ev.Type == webhooks.TypeStatus && ev.Status != nil:
			k += ":" + ev.Status.From + ">" + ev.Status.To
		case ev.Type == webhooks.TypeMatch && ev.Match != nil:
			if ev.Match.ID != matchID || ev.Match.URL != "http://ayuda.example.org"+schema.RecordPath(matchID) || ev.Match.DistanceKm == nil {
				t.Errorf("%s: match of another record or without its distance: %s", name, d.body)
			}
		case ev.Type == webhooks.TypeExpiring && ev.Expiring != nil:
			if left := time.Until(ev.Expiring.ExpiresAt); left < time.Hour || left > 2*time.Hour {
				t.Errorf("%s: expiring at %v, want in 2 h", name, ev.Expiring.ExpiresAt)
			}
		default:
			t.Errorf("%s: event without its part: %s", name, d.body)
		}
		kinds = append(kinds, k)
	}
	if !slices.Equal(kinds, want) {
		t.Errorf("%s: events %v, want %v in that order", name, kinds, want)
	}
}

// TestWebhooks: three apps publish a request each under their source, and each has a webhook: one that
// answers 500 four times first, one slower than its timeout twice, one whose host goes away after the
// first request and comes back. An offer that matches the three, two responses to each and its
// resolution: every event reaches every app, signed, in the order it happened, the first attempt of each
// in that order too; the delivery log and the metrics tell the retries; no body carries a phone or a
// responder's words. (The requests expire in 14 days: their expiring events wait in the outbox for
// their day, holding nothing back.)
func TestWebhooks(t *testing.T) {
	failing := newReceiver(t, func(n int) (int, time.Duration) {
		if n < 4 {
			return http.StatusInternalServerError, 0
		}
		return http.StatusNoContent, 0
	})
	slow := newReceiver(t, func(n int) (int, time.Duration) {
		if n < 2 {
			return http.StatusOK, 3 * time.Second // past the webhook's timeout of 1 s
		}
		return http.StatusOK, 0
	})
	restarting := newReceiver(t, func(int) (int, time.Duration) { return http.StatusOK, 0 })
	restarting.onRequest = func(n int) {
		if n == 0 {
			go func() {
				restarting.down()
				time.Sleep(3 * time.Second)
				restarting.up()
			}()
		}
	}
	s := testserver.Start(t, testserver.Options{Emergencies: webhookEmergency("14d") +
		webhookBlock(failing.url(), "1s", "bot-falla") + webhookBlock(slow.url(), "1s", "bot-lento", "otro-lento") +
		webhookBlock(restarting.url(), "1s", "bot-reinicia")})

	type app struct {
		name, source string
		r            *receiver
		id, token    string
	}
	apps := []*app{{name: "failing", source: "bot-falla", r: failing}, {name: "slow", source: "bot-lento", r: slow},
		{name: "restarting", source: "bot-reinicia", r: restarting}}
	var ids []string
	for _, a := range apps {
		resp, out := publish(t, s, testserver.With(validRequest(), "source", a.source))
		if resp.StatusCode != http.StatusCreated {
			t.Fatalf("publish %s: %d %v", a.source, resp.StatusCode, out)
		}
		a.id, a.token = out["id"].(string), out["manageToken"].(string)
		ids = append(ids, a.id)
	}
	waitEnqueued(t, s, ids, 1) // expiring, due in 13 days
	resp, out := publish(t, s, testserver.With(validOffer(), "category", "alimentos", "latitude", 4.54, "longitude", -75.67))
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("publish the offer: %d %v", resp.StatusCode, out)
	}
	offer := out["id"].(string)
	waitEnqueued(t, s, ids, 2) // match
	const responderPhone = "+57 311 222 3344"
	for i, msg := range []string{"Tengo arroz y agua", "Puedo llevarlo en moto"} {
		for _, a := range apps {
			path := schema.ResponsesPath(a.id)
			body := []byte(`{"message":"` + msg + `","contactWhatsapp":"` + responderPhone + `"}`)
			if resp, raw := s.Do("POST", path, body, "Content-Type", "application/json"); resp.StatusCode != http.StatusCreated {
				t.Fatalf("respond to %s: %d %s", a.source, resp.StatusCode, raw)
			}
		}
		waitEnqueued(t, s, ids, 3+i) // response
	}
	for _, a := range apps {
		if resp, _, raw := act(t, s, a.id, a.token, "resolve"); resp.StatusCode != http.StatusOK {
			t.Fatalf("resolve %s: %s", a.source, raw)
		}
	}
	waitEnqueued(t, s, ids, 5) // status

	want := []string{"match", "response:1", "response:2", "status:open>resolved"}
	for _, a := range apps {
		waitFor(t, 90*time.Second, func() string {
			return fmt.Sprintf("%s accepted %d events of 4; got %+v; log %+v", a.name, len(a.r.accepted(time.Second)), a.r.deliveries(), webhookLog(t, s).Items)
		}, func() bool { return len(a.r.accepted(time.Second)) == 4 })
		checkEvents(t, a.name+" (accepted)", a.r.accepted(time.Second), a.id, a.source, offer, want)
		checkEvents(t, a.name+" (first attempts)", a.r.firstSeen(), a.id, a.source, offer, want)
		for _, d := range a.r.deliveries() {
			if d.sigErr != nil {
				t.Errorf("%s: a delivery fails its check: %v\n%s", a.name, d.sigErr, d.body)
			}
			for _, p := range []string{"3001234567", "300 123 4567", "3112223344", "311 222 3344", "Ana Gómez", "arroz", "moto"} {
				if strings.Contains(d.body, p) {
					t.Errorf("%s: a body carries %q: %s", a.name, p, d.body)
				}
			}
		}
	}
	if n := len(failing.deliveries()); n < 4+4 {
		t.Errorf("the failing receiver got %d requests, want its 4 failures retried", n)
	}
	if d := slow.deliveries(); len(d) < 2+4 || d[0].id != d[1].id {
		t.Errorf("the slow receiver's first event was not attempted again after its timeout: %+v", d)
	}

	// The log: everything delivered but the expiring events, pending until their day; the first event of
	// the failing app after 5 attempts, the last one in 1. Metrics: the retries and the deliveries.
	var log webhooks.Log
	waitFor(t, 10*time.Second, func() string { return fmt.Sprintf("the log: %+v", log) }, func() bool {
		log = webhookLog(t, s)
		return log.Pending == 0 && !slices.ContainsFunc(log.Items, func(d webhooks.Delivery) bool {
			return d.State != "delivered" && (d.Type != "expiring" || d.State != "pending" || time.Until(d.DueAt) < 12*24*time.Hour)
		})
	})
	if len(log.Hooks) != 3 || log.Hooks[1].URL != slow.url() || !slices.Equal(log.Hooks[1].Sources, []string{"bot-lento", "otro-lento"}) ||
		strings.Contains(fmt.Sprint(log), webhookSecret) || len(log.Items) != 15 {
		t.Errorf("the log's hooks or items: %+v", log)
	}
	attempts := map[string]int{}
	for _, d := range log.Items {
		if d.Hook == failing.url() {
			attempts[d.Type] = max(attempts[d.Type], d.Attempts)
		}
	}
	if attempts["match"] != 5 || attempts["status"] != 1 {
		t.Errorf("attempts of the failing app's events: %v, want 5 for the first and 1 for the last", attempts)
	}
	_, fams := scrape(t, s)
	if v, _ := value(fams, "directaid_webhook_deliveries_total", map[string]string{"result": "delivered"}); v != 12 {
		t.Errorf("directaid_webhook_deliveries_total{result=delivered} = %v, want 12", v)
	}
	if v, _ := value(fams, "directaid_webhook_deliveries_total", map[string]string{"result": "retry"}); v < 4+2 {
		t.Errorf("directaid_webhook_deliveries_total{result=retry} = %v, want the failures and the timeouts at least", v)
	}
	if _, ok := value(fams, "directaid_webhook_pending", nil); !ok {
		t.Error("no directaid_webhook_pending gauge")
	}
}

// TestWebhooksAcrossRestart: events the receiver refused before the server stopped (the expiring event
// of a request that expires in 2 hours, due at once, and a response) are kept in the outbox and
// delivered, in order, by the restarted server, which then derives and delivers the resolution too.
func TestWebhooksAcrossRestart(t *testing.T) {
	var mu sync.Mutex
	status := http.StatusServiceUnavailable
	r := newReceiver(t, func(int) (int, time.Duration) {
		mu.Lock()
		defer mu.Unlock()
		return status, 0
	})
	s := testserver.Start(t, testserver.Options{Emergencies: webhookEmergency("2h") + webhookBlock(r.url(), "2s", "bot")})
	resp, out := publish(t, s, testserver.With(validRequest(), "source", "bot"))
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("publish: %d %v", resp.StatusCode, out)
	}
	id, token := out["id"].(string), out["manageToken"].(string)
	waitEnqueued(t, s, []string{id}, 1)
	if resp, raw := s.Do("POST", schema.ResponsesPath(id), []byte(`{"message":"Voy"}`), "Content-Type", "application/json"); resp.StatusCode != http.StatusCreated {
		t.Fatalf("respond: %s", raw)
	}
	waitEnqueued(t, s, []string{id}, 2)
	waitFor(t, 30*time.Second, func() string { return fmt.Sprintf("no refused attempt: %+v", r.deliveries()) }, func() bool { return len(r.deliveries()) >= 1 })
	s.Stop()
	mu.Lock()
	status = http.StatusOK
	mu.Unlock()
	s.Launch()
	waitFor(t, 60*time.Second, func() string { return fmt.Sprintf("accepted %+v", r.accepted(2*time.Second)) }, func() bool { return len(r.accepted(2*time.Second)) == 2 })
	if resp, _, raw := act(t, s, id, token, "resolve"); resp.StatusCode != http.StatusOK {
		t.Fatalf("resolve: %s", raw)
	}
	waitFor(t, 30*time.Second, func() string { return fmt.Sprintf("accepted %+v", r.accepted(2*time.Second)) }, func() bool { return len(r.accepted(2*time.Second)) == 3 })
	checkEvents(t, "after the restart", r.accepted(2*time.Second), id, "bot", "", []string{"expiring", "response:1", "status:open>resolved"})
	for _, d := range r.deliveries() {
		if d.sigErr != nil {
			t.Errorf("a delivery fails its check: %v", d.sigErr)
		}
	}
}

// TestPostgresWebhooksOnce: two nodes over one PostgreSQL database, both with the webhook, both deriving
// the events of every change: publications, responses and resolutions spread over the two nodes reach
// the receiver each exactly once, in order per record.
func TestPostgresWebhooksOnce(t *testing.T) {
	dsn := pgtest.Shared(t).NewDatabase(t)
	r := newReceiver(t, func(int) (int, time.Duration) { return http.StatusOK, 0 })
	opts := testserver.Options{Postgres: dsn, SharedStorage: true, Emergencies: webhookEmergency("2h") + webhookBlock(r.url(), "5s", "bot")}
	ns := []*testserver.Server{testserver.Start(t, opts), testserver.Start(t, opts)}
	const records = 6
	type rec struct{ id, token string }
	var recs []rec
	var ids []string
	for i := range records {
		resp, out := publish(t, ns[i%2], testserver.With(validRequest(), "source", "bot"))
		if resp.StatusCode != http.StatusCreated {
			t.Fatalf("publish: %d %v", resp.StatusCode, out)
		}
		recs = append(recs, rec{out["id"].(string), out["manageToken"].(string)})
		ids = append(ids, out["id"].(string))
	}
	waitEnqueued(t, ns[0], ids, 1)
	// The expiring events go before the records change (a resolved record's is not sent).
	waitFor(t, 30*time.Second, func() string { return fmt.Sprintf("got %+v", r.deliveries()) }, func() bool { return len(r.firstSeen()) >= records })
	for i, c := range recs {
		if resp, raw := ns[(i+1)%2].Do("POST", schema.ResponsesPath(c.id), []byte(`{"message":"Voy"}`), "Content-Type", "application/json"); resp.StatusCode != http.StatusCreated {
			t.Fatalf("respond: %s", raw)
		}
	}
	for i, c := range recs {
		if resp, _, raw := act(t, ns[i%2], c.id, c.token, "resolve"); resp.StatusCode != http.StatusOK {
			t.Fatalf("resolve: %s", raw)
		}
	}
	waitEnqueued(t, ns[1], ids, 3)
	waitFor(t, 60*time.Second, func() string {
		return fmt.Sprintf("got %d events, want %d: %+v", len(r.firstSeen()), 3*records, r.deliveries())
	},
		func() bool { return len(r.firstSeen()) >= 3*records })
	// Both nodes keep polling: any second delivery would come within their next claims.
	time.Sleep(2 * time.Second)
	seen := map[string]int{}
	for _, d := range r.deliveries() {
		seen[d.id]++
		if d.sigErr != nil {
			t.Errorf("a delivery fails its check: %v", d.sigErr)
		}
	}
	for id, n := range seen {
		if n != 1 {
			t.Errorf("event %s delivered %d times", id, n)
		}
	}
	if len(seen) != 3*records {
		t.Errorf("%d distinct events, want %d", len(seen), 3*records)
	}
	for _, c := range recs {
		var mine []delivery
		for _, d := range r.accepted(5 * time.Second) {
			if d.event.Record.ID == c.id {
				mine = append(mine, d)
			}
		}
		checkEvents(t, c.id, mine, c.id, "bot", "", []string{"expiring", "response:1", "status:open>resolved"})
	}
}
