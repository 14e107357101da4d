package backend

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/directaid/directaid/backend/store"
	"github.com/directaid/directaid/schema"
)

// The live feed (GET /api/public/v1/help/events): one poller per node reads the store's change feed
// (store.ListSpec.Since) after the last change it read, every feedPollInterval or as soon as this node
// writes, and hands each page to every subscriber, which applies its own filters. Nothing else is shared
// between nodes: a change another node wrote reaches this node's subscribers at the next poll.

const (
	// feedPollInterval is how often the poller reads the change feed when this node writes nothing.
	feedPollInterval = 250 * time.Millisecond
	// feedPollGap is the least time between two reads: a burst of local writes wakes one read, not many.
	feedPollGap = 50 * time.Millisecond
	// feedPage is the changes one read of the store asks for.
	feedPage = 500
	// feedCyclePages bounds the pages of one poll; the next poll goes on where it stopped.
	feedCyclePages = 20
	// feedLookBack is how far before its start a poller begins reading, so that a change stamped by a
	// node whose clock is behind is not skipped (nodes' clocks agree within it, as NTP keeps them).
	feedLookBack = 10 * time.Second
	// feedIdleStop ends a poller that has had no subscriber this long; the next subscriber starts one.
	feedIdleStop = time.Minute
	// feedBuffer is how many polls' pages a subscriber may have waiting; one that falls further behind
	// is cut off with a reconnect event (feed_behind).
	feedBuffer = 256
	// feedHeartbeat is how often an idle stream writes a comment, so that proxies keep it open.
	feedHeartbeat = 15 * time.Second
	// feedWriteWindow is how long one write to a subscriber may take before the stream is cut.
	feedWriteWindow = 30 * time.Second
	// feedJoinWait is how long a new stream waits for the node's poller to read the change feed a first
	// time before it answers 503 (the database does not answer), rather than hang.
	feedJoinWait = 5 * time.Second
	// feedReplaySlots bounds the resumed streams replaying at once (each holds its replay in memory).
	feedReplaySlots = 8
	// The default bounds on streams: per client address and per node (Config.FeedStreams…).
	defaultFeedStreamsPerClient = 4
	defaultFeedStreams          = 1000
)

// feedPos is a position in the change feed: after the change of record id at Unix ms ms, in the stores'
// order (updatedAt, then id); with id "" after every change of ms. Its text (String) is an event id, a
// valid Last-Event-ID and a valid since.
type feedPos struct {
	ms int64
	id string
}

// feedTimeLayout writes a change time as updatedAt is kept: whole milliseconds, UTC.
const feedTimeLayout = "2006-01-02T15:04:05.000Z07:00"

// String is the position as an event id: the change time, then "~" and the record id.
func (p feedPos) String() string {
	t := time.UnixMilli(p.ms).UTC().Format(feedTimeLayout)
	if p.id == "" {
		return t
	}
	return t + "~" + p.id
}

// less reports whether p comes before q.
func (p feedPos) less(q feedPos) bool {
	switch {
	case p.ms != q.ms:
		return p.ms < q.ms
	case p.id == q.id || p.id == "":
		return false
	case q.id == "":
		return true
	}
	return p.id < q.id
}

// posOf is the position of rec's last change.
func posOf(rec *store.Record) feedPos { return feedPos{ms: rec.UpdatedAt.UnixMilli(), id: rec.ID} }

var errFeedPos = errors.New("not a feed position")

// parseFeedPos reads an event id (time~id) or an RFC 3339 time (every change after it).
func parseFeedPos(s string) (feedPos, error) {
	t, id, hasID := strings.Cut(strings.TrimSpace(s), "~")
	tm, err := time.Parse(time.RFC3339Nano, t)
	if err != nil || (hasID && !store.ValidID(id)) {
		return feedPos{}, errFeedPos
	}
	p := feedPos{ms: tm.UnixMilli(), id: id}
	if p.ms < 1 { // before the first change there is: from the start
		p = feedPos{}
	}
	return p, nil
}

// spec is the store query of the changes after p with base's filters.
func (p feedPos) spec(base store.ListSpec) *store.ListSpec {
	s := base
	if p.id == "" {
		s.Since = time.UnixMilli(p.ms)
	} else {
		// Since one ms earlier, so that the changes of ms after id are there; After skips up to id.
		s.Since, s.After = time.UnixMilli(p.ms-1), &store.Cursor{ID: p.id, Updated: p.ms}
	}
	return &s
}

// feedEvent is one change as the poller read it: the record (as readAt reads it) and its encodings,
// made once for every subscriber.
type feedEvent struct {
	pos  feedPos
	rec  *store.Record
	kind string // published or updated when the record is listed; "" when it is not
	mu   sync.Mutex
	item []feedItem // the list item by base URL (publicUrl depends on it)
	gone []byte     // the FeedRemoved
}

type feedItem struct {
	base string
	data []byte
}

func (s *Service) newFeedEvent(rec *store.Record, now time.Time) *feedEvent {
	rec = readAt(rec, now)
	ev := &feedEvent{pos: posOf(rec), rec: rec}
	if listed(rec.Status) {
		ev.kind = schema.EventUpdated
		if rec.Revision == 0 {
			ev.kind = schema.EventPublished
		}
	}
	return ev
}

// itemData is the event's list item for base (encoded on first use).
func (ev *feedEvent) itemData(s *Service, base string) []byte {
	ev.mu.Lock()
	defer ev.mu.Unlock()
	for _, it := range ev.item {
		if it.base == base {
			return it.data
		}
	}
	rec := ev.rec
	b, _ := json.Marshal(schema.PublicHelp(publicRecord(s, base, rec, nil, schema.PublicContact{Name: rec.ContactName, Available: contactShown(rec)})))
	ev.item = append(ev.item, feedItem{base, b})
	return b
}

func (ev *feedEvent) goneData() []byte {
	ev.mu.Lock()
	defer ev.mu.Unlock()
	if ev.gone == nil {
		ev.gone, _ = json.Marshal(schema.FeedRemoved{ID: ev.rec.ID, Status: ev.rec.Status, UpdatedAt: ev.rec.UpdatedAt.UTC()})
	}
	return ev.gone
}

// feedFilter is a subscriber's filters (the list's, validated by listSpec).
type feedFilter struct {
	spec   store.ListSpec // EmergencySlug, Type, Category, Urgency, Municipio, Near
	status string         // "" every status
}

// storeSpec is what the stores filter in a change feed (a replay): the rest is applied in memory.
func (f *feedFilter) storeSpec() store.ListSpec {
	return store.ListSpec{EmergencySlug: f.spec.EmergencySlug, Type: f.spec.Type, Category: f.spec.Category, Urgency: f.spec.Urgency,
		Limit: feedPage, NoTotal: true}
}

// match says which event ev is for this subscriber ("" none) and its data.
func (f *feedFilter) match(s *Service, ev *feedEvent, base string) (string, []byte) {
	rec, sp := ev.rec, &f.spec
	if (sp.EmergencySlug != "" && rec.EmergencySlug != sp.EmergencySlug) || (sp.Type != "" && rec.Type != sp.Type) ||
		(sp.Category != "" && rec.Category != sp.Category) || (sp.Urgency != "" && rec.Urgency != sp.Urgency) ||
		(sp.Municipio != "" && rec.MunicipioCode != sp.Municipio) {
		return "", nil
	}
	if sp.Near {
		switch {
		case rec.Latitude != nil && rec.Longitude != nil:
			if store.HaversineKm(sp.Lat, sp.Lon, *rec.Latitude, *rec.Longitude) > sp.RadiusKm {
				return "", nil
			}
		case ev.kind != "":
			return "", nil // a listed record without a point is in no radius
		}
		// A withdrawn record's point is erased: its tombstone reaches every radius (it carries nothing).
	}
	if ev.kind == "" || (f.status != "" && rec.Status != f.status) {
		return schema.EventRemoved, ev.goneData()
	}
	return ev.kind, ev.itemData(s, base)
}

// feedBatch is one page of changes, in change order, and the position after it.
type feedBatch struct {
	events []*feedEvent
	end    feedPos
}

// feedSub is one open stream.
type feedSub struct {
	addr   string
	ch     chan *feedBatch
	cut    chan struct{} // closed when the hub cut it off for falling behind
	yield  chan struct{} // closed when the hub ended it to make room for another client (fairShare)
	seq    uint64        // the order in which the hub took it
	joined bool
}

// feedHub is a node's poller and its subscribers (one per Service, so per config: a reload makes a new one).
type feedHub struct {
	svc                  *Service
	maxStreams, maxPerIP int
	mu                   sync.Mutex
	subs                 map[*feedSub]struct{}
	perAddr              map[string]int
	pos                  feedPos
	running              bool
	ready                chan struct{} // closed once the running poller read its first changes
	wake                 chan struct{}
	closing              chan struct{}
	closed               bool
	servers              map[*http.Server]bool
	replays              chan struct{}
	lastSub              time.Time
	joins                uint64
}

func newFeedHub(s *Service) *feedHub {
	h := &feedHub{svc: s, maxStreams: s.cfg.FeedStreams, maxPerIP: s.cfg.FeedStreamsPerClient, subs: map[*feedSub]struct{}{},
		perAddr: map[string]int{}, wake: make(chan struct{}, 1), closing: make(chan struct{}), servers: map[*http.Server]bool{},
		replays: make(chan struct{}, feedReplaySlots)}
	if h.maxStreams <= 0 {
		h.maxStreams = defaultFeedStreams
	}
	if h.maxPerIP <= 0 {
		h.maxPerIP = defaultFeedStreamsPerClient
	}
	return h
}

// Wake asks the poller to read now (a local write).
func (h *feedHub) Wake() {
	select {
	case h.wake <- struct{}{}:
	default:
	}
}

// watch ends the hub's streams when srv shuts down (a reload or a stop), before Shutdown waits for them.
func (h *feedHub) watch(srv *http.Server) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if srv == nil || h.servers[srv] {
		return
	}
	h.servers[srv] = true
	srv.RegisterOnShutdown(h.close)
}

// close ends every stream (each writes its reconnect event) and the poller.
func (h *feedHub) close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.closed {
		h.closed = true
		close(h.closing)
	}
}

// feedProblem is a refusal of a stream.
func feedProblem(status, retry int, code, msg string) *Problem {
	return &Problem{Status: status, RetryAfter: retry, Body: schema.ErrorBody{Code: code, Error: msg}}
}

// join adds sub within the bounds on streams, starting the poller if needed, and returns the position
// from which the hub hands it every change (the poller's, once it has one).
func (h *feedHub) join(ctx context.Context, sub *feedSub) (feedPos, error) {
	h.mu.Lock()
	switch {
	case h.closed:
		h.mu.Unlock()
		return feedPos{}, feedProblem(http.StatusServiceUnavailable, 1, "unavailable", "El servidor se está reiniciando: vuelva a conectarse en un segundo.")
	case h.perAddr[sub.addr] >= h.maxPerIP:
		h.mu.Unlock()
		return feedPos{}, feedProblem(http.StatusTooManyRequests, 10, schema.CodeTooManyStreams,
			fmt.Sprintf("Esta dirección ya tiene %d flujos de eventos abiertos, el máximo: cierre uno antes de abrir otro.", h.maxPerIP))
	case len(h.subs) >= h.maxStreams && !h.fairShare(sub.addr):
		h.mu.Unlock()
		return feedPos{}, feedProblem(http.StatusServiceUnavailable, 30, "unavailable",
			"Este servidor tiene abiertos todos los flujos de eventos que admite: reintente en unos segundos o consulte la lista con since.")
	}
	h.subs[sub] = struct{}{}
	h.perAddr[sub.addr]++
	h.joins++
	sub.seq, sub.joined = h.joins, true
	h.svc.cfg.Observe.feedSubscribers(1)
	if !h.running {
		h.running, h.ready = true, make(chan struct{})
		go h.run(h.ready)
	}
	ready := h.ready
	h.mu.Unlock()
	wait := time.NewTimer(feedJoinWait)
	defer wait.Stop()
	select {
	case <-ready:
	case <-ctx.Done():
		return feedPos{}, ctx.Err()
	case <-h.closing:
		return feedPos{}, feedProblem(http.StatusServiceUnavailable, 1, "unavailable", "El servidor se está reiniciando: vuelva a conectarse en un segundo.")
	case <-wait.C:
		// The poller has not read the change feed yet: the database does not answer.
		return feedPos{}, feedProblem(http.StatusServiceUnavailable, 2, "unavailable",
			"El flujo no puede empezar porque la base de datos no responde: vuelva a conectarse en unos segundos; no perderá ningún cambio.")
	}
	return h.position(), nil
}

// fairShare makes room, on a full node, for a stream of the client addr: it ends the oldest stream of the
// client holding the most, when that client holds at least two more than addr would with this one. So
// no few clients keep the others out: a full node's streams end shared out, each client holding at most
// one more than any other that asked. It reports whether it made room. h.mu is held.
func (h *feedHub) fairShare(addr string) bool {
	held := make(map[string]int, len(h.perAddr))
	for sub := range h.subs {
		held[sub.addr]++
	}
	most, count := "", 0
	for a, n := range held {
		if n > count || (n == count && a < most) {
			most, count = a, n
		}
	}
	if count < held[addr]+2 {
		return false
	}
	var oldest *feedSub
	for sub := range h.subs {
		if sub.addr == most && (oldest == nil || sub.seq < oldest.seq) {
			oldest = sub
		}
	}
	delete(h.subs, oldest) // its stream says so and ends; leave then counts it out of perAddr
	close(oldest.yield)
	return true
}

// leave removes sub (once it is done writing).
func (h *feedHub) leave(sub *feedSub) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !sub.joined {
		return
	}
	sub.joined = false
	delete(h.subs, sub)
	if h.perAddr[sub.addr]--; h.perAddr[sub.addr] <= 0 {
		delete(h.perAddr, sub.addr)
	}
	h.lastSub = time.Now()
	h.svc.cfg.Observe.feedSubscribers(-1)
}

// position is the position after the last page handed to every subscriber.
func (h *feedHub) position() feedPos {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.pos
}

// run is the poller: it starts feedLookBack before now, reads, and then reads again at every wake or
// feedPollInterval, until the hub closes or has had no subscriber for feedIdleStop.
func (h *feedHub) run(ready chan struct{}) {
	s := h.svc
	h.mu.Lock()
	h.pos = feedPos{ms: s.now().Add(-feedLookBack).UnixMilli()}
	h.mu.Unlock()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-h.closing:
			cancel()
		case <-ctx.Done():
		}
	}()
	first := true
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-h.closing:
			return
		case <-h.wake:
		case <-timer.C:
		}
		err := h.poll(ctx)
		if first && err == nil {
			close(ready)
			first = false
		}
		h.mu.Lock()
		if len(h.subs) == 0 && time.Since(h.lastSub) > feedIdleStop {
			h.running = false
			if first { // nobody waits for it any more; the next subscriber starts another
				close(ready)
			}
			h.mu.Unlock()
			return
		}
		h.mu.Unlock()
		wait := feedPollInterval
		if err != nil {
			wait = time.Second // the store is unreachable: try again, less often
		}
		time.Sleep(feedPollGap)
		timer.Reset(wait - feedPollGap)
	}
}

// poll reads the changes after the hub's position, page by page, and hands each page to every subscriber.
func (h *feedHub) poll(ctx context.Context) error {
	s := h.svc
	for range feedCyclePages {
		pos := h.position()
		res, err := s.store.List(ctx, pos.spec(store.ListSpec{Limit: feedPage, NoTotal: true}))
		if err != nil {
			return err
		}
		if len(res.Records) == 0 {
			return nil
		}
		now := s.now()
		b := &feedBatch{events: make([]*feedEvent, len(res.Records))}
		for i, rec := range res.Records {
			b.events[i] = s.newFeedEvent(rec, now)
		}
		b.end = b.events[len(b.events)-1].pos
		h.mu.Lock()
		h.pos = b.end
		for sub := range h.subs {
			select {
			case sub.ch <- b:
			default: // it fell behind: cut it off (it says so and ends)
				delete(h.subs, sub)
				close(sub.cut)
			}
		}
		h.mu.Unlock()
		if res.Next == nil {
			return nil
		}
	}
	return nil
}

// feedMaxReplay is schema.FeedMaxReplay (a variable, for the tests).
var feedMaxReplay = schema.FeedMaxReplay

// errCursorTooOld is the answer to a resume too far behind.
func errCursorTooOld(field string) *Problem {
	p := feedProblem(http.StatusGone, 0, schema.CodeCursorTooOld, fmt.Sprintf("Hay más de %d cambios después de ese id: la reanudación no los repite. "+
		"Sincronice con GET %s?view=list&since=<el mismo id> (paginando con cursor) y vuelva a suscribirse con since=<updatedAt del último cambio que recibió>.", schema.FeedMaxReplay, schema.HelpPath))
	p.Body.Details = []schema.FieldError{{Field: field, Message: "demasiado antiguo para reanudar el flujo"}}
	return p
}

// replay reads the changes after from up to to (the hub's position when the subscriber joined), at most
// schema.FeedMaxReplay of them, with the filters the stores apply.
func (h *feedHub) replay(ctx context.Context, f *feedFilter, from, to feedPos, field string) ([]*feedEvent, error) {
	select {
	case h.replays <- struct{}{}:
		defer func() { <-h.replays }()
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	s := h.svc
	var out []*feedEvent
	for {
		res, err := s.store.List(ctx, from.spec(f.storeSpec()))
		if err != nil {
			return nil, err
		}
		now := s.now()
		for _, rec := range res.Records {
			p := posOf(rec)
			if to.less(p) {
				return out, nil
			}
			if len(out) == feedMaxReplay {
				return nil, errCursorTooOld(field)
			}
			out = append(out, s.newFeedEvent(rec, now))
			from = p
		}
		if res.Next == nil {
			return out, nil
		}
	}
}

// update is the store's Update that wakes this node's poller (as create does), so that its subscribers
// see the change at once rather than at the next poll.
func (s *Service) update(ctx context.Context, id string, fn func(*store.Record) error) (*store.Record, error) {
	rec, err := s.store.Update(ctx, id, fn)
	if err == nil {
		s.feed.Wake()
	}
	return rec, err
}
