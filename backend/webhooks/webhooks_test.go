package webhooks

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/directaid/directaid/backend/store"
	"github.com/directaid/directaid/backend/store/storetest"
	"github.com/directaid/directaid/internal/testserver"
	"github.com/directaid/directaid/schema"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// TestEventsOfOneRecord, over a real Badger store and a receiver on loopback: a record's expiring event,
// refused once, is skipped once a renewal makes it untrue, and the renewal's own goes out; then a
// response and the resolution follow, in order, each signed; a status first seen open makes no event. The
// response event counts every active response, one left out of the public count too.
func TestEventsOfOneRecord(t *testing.T) {
	st := testserver.Badger(t)
	const secret = "0123456789abcdef-test"
	var mu sync.Mutex
	var got []Event
	var n int
	documented := documentedEvent(t)
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if v, err := jsonschema.UnmarshalJSON(bytes.NewReader(body)); err != nil {
			t.Errorf("body: %v", err)
		} else if err := documented.Validate(v); err != nil {
			t.Errorf("a delivery is not the OpenAPI document's WebhookEvent: %v\n%s", err, body)
		}
		if err := Verify([]byte(secret), r.Header.Get(HeaderSignature), r.Header.Get(HeaderTimestamp), body, time.Now(), time.Minute); err != nil {
			t.Errorf("a delivery fails its signature: %v", err)
		}
		var ev Event
		if err := json.Unmarshal(body, &ev); err != nil {
			t.Errorf("body: %v", err)
		}
		mu.Lock()
		defer mu.Unlock()
		if n++; n == 1 {
			w.WriteHeader(http.StatusBadGateway)
			return
		}
		got = append(got, ev)
	}))
	t.Cleanup(rcv.Close)
	svc, stop := startService(t, st, Hook{URL: rcv.URL, Secret: secret, Sources: []string{"bot"}, Timeout: 2 * time.Second})
	t.Cleanup(stop)
	ctx := context.Background()

	rec := storetest.Record("bot", "conv-1")
	first := time.Now().Add(2 * time.Hour).UTC().Truncate(time.Millisecond)
	rec.ExpiresAt = first
	if _, _, err := st.Create(ctx, rec); err != nil {
		t.Fatal(err)
	}
	received := func() []Event {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(got)
	}
	wait := func(what string, cond func() bool) {
		t.Helper()
		for end := time.Now().Add(20 * time.Second); !cond(); time.Sleep(50 * time.Millisecond) {
			if time.Now().After(end) {
				log, _ := svc.Deliveries(ctx, 100)
				t.Fatalf("%s; received %+v; log %+v", what, received(), log)
			}
		}
	}
	wait("the first expiring event was not attempted", func() bool { mu.Lock(); defer mu.Unlock(); return n >= 1 })
	second := first.Add(time.Hour)
	if _, err := st.Update(ctx, rec.ID, func(r *store.Record) error { r.ExpiresAt = second; return nil }); err != nil {
		t.Fatal(err)
	}
	wait("the renewal's expiring event was not delivered", func() bool { return len(received()) >= 1 })
	resp := &store.Response{RecordID: rec.ID, ID: "0011223344556677", CreatedAt: time.Now(), UpdatedAt: time.Now(), ExpiresAt: time.Now().Add(time.Hour),
		Status: store.ResponseActive, Message: "Voy", Uncounted: true} // left out of the public count, yet waiting for the publisher
	if err := st.CreateResponse(ctx, resp); err != nil {
		t.Fatal(err)
	}
	svc.Responded(ctx, rec.ID, resp.ID)
	if _, err := st.Update(ctx, rec.ID, func(r *store.Record) error { r.Status = store.StatusResolved; return nil }); err != nil {
		t.Fatal(err)
	}
	wait("not every event was delivered", func() bool { return len(received()) >= 3 })
	var kinds []string
	for _, ev := range received() {
		k := ev.Type
		switch {
		case ev.Expiring != nil:
			k += " " + ev.Expiring.ExpiresAt.Format(time.RFC3339Nano)
		case ev.Response != nil:
			k += fmt.Sprintf(" %d", ev.Response.Count)
		case ev.Status != nil:
			k += " " + ev.Status.From + ">" + ev.Status.To
		}
		kinds = append(kinds, k)
		if ev.Record.ID != rec.ID || ev.Record.Source != "bot" || ev.Record.ExternalID != "conv-1" || ev.Record.URL != "https://ayuda.example.org/ayudas/"+rec.ID {
			t.Errorf("record of the event: %+v", ev.Record)
		}
	}
	want := []string{"expiring " + second.Format(time.RFC3339Nano), "response 1", "status open>resolved"}
	if !slices.Equal(kinds, want) {
		t.Errorf("events %v, want %v", kinds, want)
	}
	// The receiver sees a delivery before the dispatcher records its outcome: wait for the log to settle.
	var log *Log
	wait("the log kept a pending delivery", func() bool {
		var err error
		if log, err = svc.Deliveries(ctx, 100); err != nil {
			t.Fatal(err)
		}
		return log.Pending == 0 && !slices.ContainsFunc(log.Items, func(d Delivery) bool { return d.State == store.WebhookPending })
	})
	states := map[string]int{}
	for _, d := range log.Items {
		states[d.Type+" "+d.State]++
	}
	if states["expiring skipped"] != 1 || states["expiring delivered"] != 1 || len(log.Items) != 4 || log.Pending != 0 {
		t.Errorf("log: %v (%d items, %d pending), want the first expiring event skipped", states, len(log.Items), log.Pending)
	}
}

// startService runs the webhooks of hooks over st until stop is called.
func startService(t *testing.T, st store.Store, hooks ...Hook) (svc *Service, stop func()) {
	t.Helper()
	svc, err := New(Config{Hooks: hooks, Store: st, PublicURL: "https://ayuda.example.org",
		Matches: func(context.Context, string) (*schema.HelpMatches, error) { return &schema.HelpMatches{}, nil }})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); svc.Run(ctx) }()
	return svc, func() { cancel(); <-done }
}

// TestCheckHook: what a webhook's configuration must be.
func TestCheckHook(t *testing.T) {
	good := Hook{URL: "https://bot.example.org/h", Secret: "0123456789abcdef", Sources: []string{"bot"}}
	if err := CheckHook(good); err != nil {
		t.Fatal(err)
	}
	for name, h := range map[string]Hook{
		"relative":     {URL: "/h", Secret: good.Secret, Sources: good.Sources},
		"ftp":          {URL: "ftp://bot.example.org/h", Secret: good.Secret, Sources: good.Sources},
		"credentials":  {URL: "https://u:p@bot.example.org/h", Secret: good.Secret, Sources: good.Sources},
		"short secret": {URL: good.URL, Secret: "corto", Sources: good.Sources},
		"no source":    {URL: good.URL, Secret: good.Secret},
		"empty source": {URL: good.URL, Secret: good.Secret, Sources: []string{""}},
		"long timeout": {URL: good.URL, Secret: good.Secret, Sources: good.Sources, Timeout: time.Hour},
	} {
		if CheckHook(h) == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// documentedEvent is the schema of a delivery's body as the OpenAPI document gives it (its webhooks'
// helpEvent request body).
func documentedEvent(t *testing.T) *jsonschema.Schema {
	t.Helper()
	doc, err := schema.OpenAPI("https://ayuda.example.org")
	if err != nil {
		t.Fatal(err)
	}
	var parsed struct {
		Webhooks map[string]struct {
			Post struct {
				RequestBody struct {
					Content map[string]struct {
						Schema struct {
							Ref string `json:"$ref"`
						} `json:"schema"`
					} `json:"content"`
				} `json:"requestBody"`
			} `json:"post"`
		} `json:"webhooks"`
	}
	if err := json.Unmarshal(doc, &parsed); err != nil {
		t.Fatal(err)
	}
	ref := parsed.Webhooks["helpEvent"].Post.RequestBody.Content["application/json"].Schema.Ref
	if ref == "" {
		t.Fatalf("the OpenAPI document has no webhooks.helpEvent body")
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("openapi.json", v); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile("openapi.json" + ref)
	if err != nil {
		t.Fatal(err)
	}
	return sch
}

// TestResponseEventsRecoveredAtStart: a node that died between storing a response and enqueueing its
// event enqueues it at its next start. A response whose event is in the outbox is not sent again, and one
// older than the look-back is left alone.
func TestResponseEventsRecoveredAtStart(t *testing.T) {
	st := testserver.Badger(t)
	const secret = "0123456789abcdef-test"
	var mu sync.Mutex
	got := map[string]int{} // deliveries of response events, by event id
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get(HeaderEventType) == TypeResponse {
			mu.Lock()
			got[r.Header.Get(HeaderEventID)]++
			mu.Unlock()
		}
	}))
	t.Cleanup(rcv.Close)
	hook := Hook{URL: rcv.URL, Secret: secret, Sources: []string{"bot"}, Timeout: 2 * time.Second}
	delivered := func(id string) int { mu.Lock(); defer mu.Unlock(); return got[id] }
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		for end := time.Now().Add(20 * time.Second); !cond(); time.Sleep(50 * time.Millisecond) {
			if time.Now().After(end) {
				mu.Lock()
				defer mu.Unlock()
				t.Fatalf("%s; delivered %v", what, got)
			}
		}
	}
	ctx := context.Background()
	rec := storetest.Record("bot", "conv-2")
	if _, _, err := st.Create(ctx, rec); err != nil {
		t.Fatal(err)
	}
	respond := func(id string, at time.Time) string {
		t.Helper()
		r := &store.Response{RecordID: rec.ID, ID: id, CreatedAt: at, UpdatedAt: at, ExpiresAt: at.Add(48 * time.Hour),
			Status: store.ResponseActive, Message: "Voy"}
		if err := st.CreateResponse(ctx, r); err != nil {
			t.Fatal(err)
		}
		return eventID(hook.URL, TypeResponse, rec.ID, id)
	}

	// The normal path: stored, then enqueued, then delivered.
	first, stop := startService(t, st, hook)
	sent := respond("5555555555555555", time.Now())
	first.Responded(ctx, rec.ID, "5555555555555555")
	waitFor("the response event was not delivered", func() bool { return delivered(sent) == 1 })
	stop()

	// The node died between storing two responses and enqueueing their events; one is two days old.
	lost := respond("ffffffffffffffff", time.Now())
	old := respond("0000000000000000", time.Now().Add(-48*time.Hour))
	second, stop := startService(t, st, hook)
	defer stop()
	waitFor("the response event missing from the outbox was not delivered after the restart", func() bool { return delivered(lost) == 1 })
	log, err := second.Deliveries(ctx, 100)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, d := range log.Items {
		seen[d.ID]++
	}
	if seen[sent] != 1 || seen[lost] != 1 || seen[old] != 0 || delivered(sent) != 1 || delivered(old) != 0 {
		t.Errorf("outbox %v, deliveries %v: want the delivered event once, the lost one once, none for the old response", seen, got)
	}
}

// TestSlowReceiverDelaysOnlyItsOwn: a receiver that hangs holds at most its webhook's share of the node's
// attempts; another webhook's event goes out at once beside them.
func TestSlowReceiverDelaysOnlyItsOwn(t *testing.T) {
	st := testserver.Badger(t)
	release := make(chan struct{})
	var hanging atomic.Int32
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hanging.Add(1)
		defer hanging.Add(-1)
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(slow.Close)
	t.Cleanup(func() { close(release) })
	fastGot := make(chan time.Time, 1)
	fast := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case fastGot <- time.Now():
		default:
		}
	}))
	t.Cleanup(fast.Close)
	const secret = "0123456789abcdef-test"
	svc, stop := startService(t, st, Hook{URL: slow.URL, Secret: secret, Sources: []string{"slow"}, Timeout: 20 * time.Second},
		Hook{URL: fast.URL, Secret: secret, Sources: []string{"fast"}, Timeout: 2 * time.Second})
	t.Cleanup(stop)
	ctx := context.Background()

	respond := func(source, ext string) {
		rec := storetest.Record(source, ext)
		if _, _, err := st.Create(ctx, rec); err != nil {
			t.Fatal(err)
		}
		now := time.Now().UTC()
		r := &store.Response{RecordID: rec.ID, ID: "00112233445566" + fmt.Sprintf("%02x", len(ext)), CreatedAt: now, UpdatedAt: now,
			ExpiresAt: now.Add(time.Hour), Status: store.ResponseActive, Message: "Voy"}
		if err := st.CreateResponse(ctx, r); err != nil {
			t.Fatal(err)
		}
		svc.Responded(ctx, rec.ID, r.ID)
	}
	for i := range 2 * inFlight {
		respond("slow", fmt.Sprintf("slow-%d", i))
	}
	share := int32(hookShare(2))
	for end := time.Now().Add(10 * time.Second); hanging.Load() < share; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("only %d attempts reached the slow receiver", hanging.Load())
		}
	}
	time.Sleep(600 * time.Millisecond) // a dispatcher without shares would claim more by now
	if n := hanging.Load(); n > share {
		t.Errorf("the slow receiver holds %d attempts, more than its share %d", n, share)
	}
	sent := time.Now()
	respond("fast", "fast-1")
	select {
	case at := <-fastGot:
		if d := at.Sub(sent); d > 5*time.Second {
			t.Errorf("the other webhook's event took %v", d)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the other webhook's event waited behind the slow receiver's")
	}
}

// TestQuietFailures: a failure repeated every poll (the database down) is one line a minute, and its end
// one more, not a line a poll.
func TestQuietFailures(t *testing.T) {
	core, logs := observer.New(zap.DebugLevel)
	log := zap.New(core)
	var q quiet
	for range 120 {
		q.warn(log, "claiming events failed", errors.New("database unreachable"))
	}
	q.ok(log, "claiming events works again")
	q.ok(log, "claiming events works again") // nothing failed since: nothing to say
	if n := logs.Len(); n != 2 {
		t.Fatalf("%d lines for 120 failures and a recovery, want 2: %v", n, logs.All())
	}
	if f := logs.All()[1].ContextMap()["failures"]; f != int64(120) {
		t.Errorf("the recovery line counts %v failures, want 120", f)
	}
}

// TestMatchGoesToTheOlderRecord: when a new record's change is read after a newer one was published, the
// newer one, which its matches list, gets no event about the older: only the older record is told of a
// new publication (the newer one's own change tells it), so no match's occurredAt comes before its record.
func TestMatchGoesToTheOlderRecord(t *testing.T) {
	st := testserver.Badger(t)
	ctx := context.Background()
	x := storetest.Record("otra-app", "first")
	if _, _, err := st.Create(ctx, x); err != nil {
		t.Fatal(err)
	}
	newer := storetest.Record("bot", "second")
	newer.CreatedAt = x.CreatedAt.Add(time.Second)
	if _, _, err := st.Create(ctx, newer); err != nil {
		t.Fatal(err)
	}
	one := 1.0
	svc, err := New(Config{Hooks: []Hook{{URL: "https://bot.example.org/h", Secret: "0123456789abcdef", Sources: []string{"bot"}}}, Store: st,
		PublicURL: "https://ayuda.example.org", Matches: func(context.Context, string) (*schema.HelpMatches, error) {
			return &schema.HelpMatches{Items: []schema.PublicHelp{{ID: newer.ID, Location: &schema.PublicLocation{DistanceKm: &one}}}}, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	if evs, err := svc.matchEvents(ctx, x, time.Now()); err != nil || len(evs) != 0 {
		t.Fatalf("the newer record got %d match events about the older one (%v)", len(evs), err)
	}
}

// TestMatchBetweenPlacesSaysApproximate: a match between records placed by their village's point says its
// distance is approximate (0 km between two records of one village is no «at the door»); between exact
// points it does not.
func TestMatchBetweenPlacesSaysApproximate(t *testing.T) {
	st := testserver.Badger(t)
	ctx := context.Background()
	zero := 0.0
	for _, c := range []struct {
		precision string
		want      bool
	}{{schema.PrecisionPlace, true}, {schema.PrecisionExact, false}} {
		older := storetest.Record("bot", "older-"+c.precision)
		older.LocationPrecision = c.precision
		if _, _, err := st.Create(ctx, older); err != nil {
			t.Fatal(err)
		}
		svc, err := New(Config{Hooks: []Hook{{URL: "https://bot.example.org/h", Secret: "0123456789abcdef", Sources: []string{"bot"}}}, Store: st,
			PublicURL: "https://ayuda.example.org", Matches: func(context.Context, string) (*schema.HelpMatches, error) {
				return &schema.HelpMatches{Items: []schema.PublicHelp{{ID: older.ID, Location: &schema.PublicLocation{DistanceKm: &zero}}}}, nil
			}})
		if err != nil {
			t.Fatal(err)
		}
		x := storetest.Record("otra-app", "new-"+c.precision)
		x.ID, x.LocationPrecision = "06h23pp75en3mfss", c.precision
		evs, err := svc.matchEvents(ctx, x, time.Now())
		if err != nil || len(evs) != 1 {
			t.Fatalf("%s: %d events, %v", c.precision, len(evs), err)
		}
		var ev Event
		if err := json.Unmarshal(evs[0].Body, &ev); err != nil || ev.Match == nil || ev.Match.DistanceKm == nil {
			t.Fatalf("%s: %s %v", c.precision, evs[0].Body, err)
		}
		if ev.Match.Approximate != c.want {
			t.Errorf("%s points: approximate %v, want %v (%s)", c.precision, ev.Match.Approximate, c.want, evs[0].Body)
		}
	}
}
