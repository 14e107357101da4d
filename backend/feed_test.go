package backend

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/directaid/directaid/internal/testserver"
	"github.com/directaid/directaid/schema"
)

func newFeedService(t *testing.T) *Service {
	t.Helper()
	st := testserver.Badger(t)
	svc := NewService(st, Config{Emergencies: []Emergency{{Slug: "eje-cafetero", Title: "Terremoto en el Eje Cafetero"}}})
	t.Cleanup(svc.CloseFeed)
	return svc
}

func feedPublish(t *testing.T, svc *Service) string {
	t.Helper()
	res, _, err := svc.Publish(context.Background(), "http://ayuda.test", testserver.MustJSON(t, testserver.ValidRequest()), "", "192.0.2.1")
	if err != nil {
		t.Fatal(err)
	}
	return res.ID
}

// TestFeedPositions: an event id reads back as the same position; positions order as the stores order
// changes (time, then id; a bare time after every change of its millisecond); malformed ones are refused.
func TestFeedPositions(t *testing.T) {
	p := feedPos{ms: 1786000000123, id: "06h0hp5rv361w8am"}
	if s := p.String(); s != "2026-08-06T07:06:40.123Z~06h0hp5rv361w8am" {
		t.Fatalf("String %q", s)
	}
	for _, s := range []string{p.String(), "2026-08-06T07:06:40.123Z", "2026-08-06T02:06:40.123-05:00"} {
		q, err := parseFeedPos(s)
		if err != nil || q.ms != p.ms {
			t.Errorf("%s: %+v %v", s, q, err)
		}
	}
	for _, s := range []string{"", "ayer", "2026-08-06T05:06:40Z~", "2026-08-06T05:06:40Z~06h0hp5rv361w8a", "06h0hp5rv361w8am"} {
		if _, err := parseFeedPos(s); err == nil {
			t.Errorf("%q: a position", s)
		}
	}
	order := []feedPos{{ms: 5, id: "06h0hp5rv361w8am"}, {ms: 5, id: "06h0hp5rv361w8an"}, {ms: 5}, {ms: 6, id: "06h0hp5rv361w8aa"}}
	for i := range order {
		for j := range order {
			if got := order[i].less(order[j]); got != (i < j) {
				t.Errorf("%v < %v: %v", order[i], order[j], got)
			}
		}
	}
}

// TestFeedCutsOffSlowSubscriber: a subscriber whose buffer is full is cut off (its cut channel closes
// and the hub forgets it) while another one goes on receiving every page.
func TestFeedCutsOffSlowSubscriber(t *testing.T) {
	svc := newFeedService(t)
	hub := svc.feed
	ctx := context.Background()
	slow := &feedSub{addr: "192.0.2.1", ch: make(chan *feedBatch, 1), cut: make(chan struct{})}
	fast := &feedSub{addr: "192.0.2.2", ch: make(chan *feedBatch, 16), cut: make(chan struct{})}
	for _, sub := range []*feedSub{slow, fast} {
		if _, err := hub.join(ctx, sub); err != nil {
			t.Fatal(err)
		}
		defer hub.leave(sub)
	}
	for i := range 3 {
		id := feedPublish(t, svc)
		select {
		case b := <-fast.ch:
			if len(b.events) != 1 || b.events[0].rec.ID != id || b.events[0].kind != schema.EventPublished {
				t.Fatalf("page %d: %+v", i, b.events)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("page %d not handed within 10 s", i)
		}
	}
	if !closed(slow.cut) || closed(fast.cut) {
		t.Fatalf("cut: slow %v, fast %v", closed(slow.cut), closed(fast.cut))
	}
	hub.mu.Lock()
	_, kept := hub.subs[slow]
	hub.mu.Unlock()
	if kept {
		t.Error("the hub still hands pages to the subscriber it cut off")
	}
}

// TestFeedReplayBound: a resume with more changes to replay than the bound is refused (410
// cursor_too_old, naming where the position came from); within the bound it replays them.
func TestFeedReplayBound(t *testing.T) {
	defer func(n int) { feedMaxReplay = n }(feedMaxReplay)
	feedMaxReplay = 2
	svc := newFeedService(t)
	hub := svc.feed
	var ids []string
	for range 3 {
		ids = append(ids, feedPublish(t, svc))
	}
	sub := &feedSub{addr: "192.0.2.1", ch: make(chan *feedBatch, 16), cut: make(chan struct{})}
	to, err := hub.join(context.Background(), sub)
	if err != nil {
		t.Fatal(err)
	}
	defer hub.leave(sub)
	f := &feedFilter{}
	_, err = hub.replay(context.Background(), f, feedPos{}, to, lastEventIDField)
	var p *Problem
	if !errors.As(err, &p) || p.Status != http.StatusGone || p.Body.Code != schema.CodeCursorTooOld || p.Body.Details[0].Field != lastEventIDField {
		t.Fatalf("replay of 3 with a bound of 2: %v", err)
	}
	rec, err := svc.store.Get(context.Background(), ids[0])
	if err != nil {
		t.Fatal(err)
	}
	evs, err := hub.replay(context.Background(), f, posOf(rec), to, "since")
	if err != nil || len(evs) != 2 || evs[0].rec.ID != ids[1] || evs[1].rec.ID != ids[2] {
		t.Fatalf("replay after the first: %v %v", evs, err)
	}
}

// TestFeedStreamsPerClientNetwork: the bound on one client's streams counts an IPv6 /64 as one client, as
// the rate limits and the reporters do: the addresses of one host's /64 share its streams.
func TestFeedStreamsPerClientNetwork(t *testing.T) {
	st := testserver.Badger(t)
	svc := NewService(st, Config{Emergencies: []Emergency{{Slug: "eje-cafetero", Title: "Terremoto en el Eje Cafetero"}}, FeedStreamsPerClient: 2})
	t.Cleanup(svc.CloseFeed)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	open := func(addr string) (int, chan struct{}) {
		r := httptest.NewRequest("GET", "http://ayuda.test"+schema.HelpPath+"/events", nil).WithContext(ctx)
		r.RemoteAddr = "[" + addr + "]:40000"
		w := httptest.NewRecorder()
		done := make(chan struct{})
		go func() { defer close(done); svc.ServeFeed(w, r, schema.ListQuery{}) }()
		// A stream that joined stays open; a refused one returns at once.
		select {
		case <-done:
			return w.Code, done
		case <-time.After(500 * time.Millisecond):
			return http.StatusOK, done
		}
	}
	var dones []chan struct{}
	for _, addr := range []string{"2001:db8:1:2::1", "2001:db8:1:2::2"} {
		code, done := open(addr)
		if code != http.StatusOK {
			t.Fatalf("stream from %s: %d", addr, code)
		}
		dones = append(dones, done)
	}
	if code, _ := open("2001:db8:1:2:ffff::3"); code != http.StatusTooManyRequests {
		t.Fatalf("a third stream from the same /64: %d, want 429", code)
	}
	code, done := open("2001:db8:9:9::1")
	if code != http.StatusOK {
		t.Fatalf("a stream from another /64: %d", code)
	}
	cancel()
	for _, d := range append(dones, done) {
		<-d
	}
}

// TestFeedFullNodeSharesItsStreams: a node whose streams are all open to a few clients ends the oldest
// stream of the client holding the most to let a new client in, with a reconnect event that says so,
// until no client holds two more than another; then the node answers 503.
func TestFeedFullNodeSharesItsStreams(t *testing.T) {
	st := testserver.Badger(t)
	svc := NewService(st, Config{Emergencies: []Emergency{{Slug: "eje-cafetero", Title: "Terremoto en el Eje Cafetero"}},
		FeedStreams: 4, FeedStreamsPerClient: 4})
	t.Cleanup(svc.CloseFeed)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type stream struct {
		w    *httptest.ResponseRecorder
		done chan struct{}
	}
	open := func(addr string) (int, stream) {
		r := httptest.NewRequest("GET", "http://ayuda.test"+schema.HelpPath+"/events", nil).WithContext(ctx)
		r.RemoteAddr = addr + ":40000"
		s := stream{httptest.NewRecorder(), make(chan struct{})}
		go func() { defer close(s.done); svc.ServeFeed(s.w, r, schema.ListQuery{}) }()
		select {
		case <-s.done:
			return s.w.Code, s
		case <-time.After(500 * time.Millisecond):
			return http.StatusOK, s
		}
	}
	ended := func(s stream) bool {
		select {
		case <-s.done:
			return true
		case <-time.After(2 * time.Second):
			return false
		}
	}
	var a []stream
	for range 4 {
		code, s := open("127.0.0.2")
		if code != http.StatusOK {
			t.Fatalf("stream %d of the first client: %d", len(a)+1, code)
		}
		a = append(a, s)
	}
	// The node is full: a second client gets a stream, and the first client's oldest ends.
	for i := range 2 {
		code, _ := open("127.0.0.3")
		if code != http.StatusOK {
			t.Fatalf("stream %d of the second client on a full node: %d, want 200", i+1, code)
		}
		if !ended(a[i]) {
			t.Fatalf("the first client's stream %d did not end to make room", i+1)
		}
		body := a[i].w.Body.String()
		if !strings.Contains(body, "event: reconnect") || !strings.Contains(body, `"code":"`+schema.CodeFeedShared+`"`) || !strings.Contains(body, `"lastEventId":"`) {
			t.Fatalf("the ended stream's last event:\n%s", body)
		}
	}
	// Two each: a third from the second client would leave it two above the first; refused.
	if code, _ := open("127.0.0.3"); code != http.StatusServiceUnavailable {
		t.Fatalf("a third stream of the second client: %d, want 503", code)
	}
	// A third client with none may take one from a client with two.
	if code, _ := open("127.0.0.4"); code != http.StatusOK {
		t.Fatalf("a third client's first stream: %d, want 200", code)
	}
	if ended(a[3]) {
		t.Fatal("the first client's newest stream ended; its oldest open one should have")
	}
	if !ended(a[2]) {
		t.Fatal("no stream of the client holding the most (the first, ties by address) ended")
	}
	if code, _ := open("127.0.0.5"); code != http.StatusOK {
		t.Fatalf("a fourth client's first stream: %d, want 200", code)
	}
	// One each now: nobody holds two more than a newcomer.
	if code, _ := open("127.0.0.6"); code != http.StatusServiceUnavailable {
		t.Fatalf("a fifth client on a node shared out one stream each: %d, want 503", code)
	}
	cancel()
}
