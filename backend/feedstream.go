package backend

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/directaid/directaid/schema"
)

// lastEventIDField names the Last-Event-ID header in an error's details.
var lastEventIDField = schema.Pointer("header", "Last-Event-ID")

// ServeFeed answers GET /api/public/v1/help/events, whose parameters (lq) the API has read and checked:
// a stream of Server-Sent Events (feed.go) from the position Last-Event-ID or since names.
func (s *Service) ServeFeed(w http.ResponseWriter, r *http.Request, lq schema.ListQuery) {
	since := strings.TrimSpace(lq.Since)
	lq.Since = "" // a position, read below; listSpec would refuse it beside municipio or a radius
	spec, errs := s.listSpec(&lq)
	if len(errs) > 0 {
		WriteProblem(w, WithQueryFields(InvalidParams(errs)))
		return
	}
	filter := &feedFilter{spec: *spec, status: lq.Status}
	var from feedPos
	field := ""
	switch last := strings.TrimSpace(r.Header.Get("Last-Event-ID")); {
	case last != "":
		field = lastEventIDField
		var err error
		if from, err = parseFeedPos(last); err != nil {
			WriteProblem(w, InvalidParams([]schema.FieldError{ParamError(field, fmt.Sprintf("«Last-Event-ID» %s no es el id de un evento de este flujo (p. ej. 2026-08-11T14:30:00.123Z~01k2x3y4z5a6b7c8) ni una fecha RFC 3339", schema.Quote(last)))}))
			return
		}
	case since != "":
		field = "since"
		var err error
		if from, err = parseFeedPos(since); err != nil {
			WriteProblem(w, WithQueryFields(InvalidParams([]schema.FieldError{ParamError(field, fmt.Sprintf("«since» %s no es el id de un evento (p. ej. 2026-08-11T14:30:00.123Z~01k2x3y4z5a6b7c8) ni una fecha RFC 3339", schema.Quote(since)))})))
			return
		}
		field = QueryField(field)
	}
	hub := s.feed
	if srv, ok := r.Context().Value(http.ServerContextKey).(*http.Server); ok {
		hub.watch(srv)
	}
	// Its client is its network (ClientNet): one IPv6 host has a whole /64, and must not hold 4 streams each.
	sub := &feedSub{addr: ClientNet(ClientIP(r)), ch: make(chan *feedBatch, feedBuffer), cut: make(chan struct{}), yield: make(chan struct{})}
	start, err := hub.join(r.Context(), sub)
	defer hub.leave(sub)
	if err != nil {
		WriteProblem(w, AsProblem(err))
		return
	}
	st := &feedStream{svc: s, filter: filter, base: s.BaseURL(r), last: start}
	var replay []*feedEvent
	if field != "" {
		if replay, err = hub.replay(r.Context(), filter, from, start, field); err != nil {
			WriteProblem(w, AsProblem(err))
			return
		}
	}
	hd := w.Header()
	hd.Set("Content-Type", "text/event-stream; charset=utf-8")
	// no-transform: Caddy's encode leaves the stream alone (it would compress it); proxies too.
	hd.Set("Cache-Control", "no-cache, no-transform")
	hd.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	if wrap := s.cfg.ExportWriter; wrap != nil {
		w = wrap(w, r) // its write deadline can pass the server's write timeout
	}
	st.w, st.rc = w, http.NewResponseController(w)
	// The request was read whole: the server's read timeout must not end the stream.
	_ = st.rc.SetReadDeadline(time.Time{})
	if field != "" {
		st.last = from
	}
	st.sent = st.last
	fmt.Fprintf(&st.buf, "retry: 3000\nid: %s\n\n", st.sent)
	st.events(replay)
	// The pages the hub hands on start after start; a cursor ahead of it (written on another node, whose
	// poller is further on) skips what the client had.
	if st.last.less(start) {
		st.last = start
	}
	if st.flush() != nil {
		return
	}
	heartbeat := time.NewTicker(feedHeartbeat)
	defer heartbeat.Stop()
	for {
		select {
		case b := <-sub.ch:
			st.events(b.events)
		case <-heartbeat.C:
			st.buf.WriteString(": ping\n")
			// p first, then the cut: a page dropped before p was read has closed cut by then.
			if p := hub.position(); !closed(sub.cut) && len(sub.ch) == 0 && st.sent.less(p) && st.last.less(p) {
				// Every change up to p was handed to this stream and written (or filtered out): resuming from
				// p misses nothing, and a quiet filter does not resume from far behind.
				st.sent, st.last = p, p
				fmt.Fprintf(&st.buf, "id: %s\n", p)
			}
			st.buf.WriteString("\n")
		case <-sub.cut:
			st.end(schema.CodeFeedBehind, "Este cliente no leyó los eventos a tiempo y el servidor cerró el flujo: reconéctese con Last-Event-ID (o since) igual a lastEventId para recibir lo que falta.")
			return
		case <-sub.yield:
			st.end(schema.CodeFeedShared, "Este servidor tiene abiertos todos los flujos que admite y esta dirección tenía más que otras: se cerró el más antiguo de los suyos. Reconéctese con Last-Event-ID (o since) igual a lastEventId en unos segundos, o consulte la lista con since.")
			return
		case <-hub.closing:
			st.end(schema.CodeFeedClosing, "El servidor se reinicia o se detiene: reconéctese con Last-Event-ID (o since) igual a lastEventId; no perderá ningún cambio.")
			return
		case <-r.Context().Done():
			return
		}
		if st.flush() != nil {
			return
		}
	}
}

// feedStream writes one subscriber's events.
type feedStream struct {
	svc    *Service
	filter *feedFilter
	base   string
	w      http.ResponseWriter
	rc     *http.ResponseController
	buf    bytes.Buffer
	last   feedPos // changes up to here were written or filtered out
	sent   feedPos // the last id the client received
}

// events writes the events of evs that pass the filter and come after last.
func (st *feedStream) events(evs []*feedEvent) {
	for _, ev := range evs {
		if !st.last.less(ev.pos) {
			continue
		}
		st.last = ev.pos
		kind, data := st.filter.match(st.svc, ev, st.base)
		if kind == "" {
			continue
		}
		st.sent = ev.pos
		fmt.Fprintf(&st.buf, "id: %s\nevent: %s\ndata: %s\n\n", ev.pos, kind, data)
		st.svc.cfg.Observe.FeedDelivered(kind)
	}
}

// flush writes what is buffered, with a fresh write deadline.
func (st *feedStream) flush() error {
	if st.buf.Len() == 0 {
		return nil
	}
	_ = st.rc.SetWriteDeadline(time.Now().Add(feedWriteWindow))
	_, err := st.w.Write(st.buf.Bytes())
	st.buf.Reset()
	if err == nil {
		err = st.rc.Flush()
	}
	return err
}

// end writes the reconnect event that closes the stream.
func (st *feedStream) end(code, msg string) {
	data, _ := json.Marshal(schema.FeedReconnect{Code: code, Error: msg, LastEventID: st.sent.String()})
	fmt.Fprintf(&st.buf, "event: %s\ndata: %s\n\n", schema.EventReconnect, data)
	st.svc.cfg.Observe.FeedDelivered(schema.EventReconnect)
	_ = st.flush()
}

// closed reports whether ch is closed (it is never sent on).
func closed(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
