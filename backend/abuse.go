package backend

import (
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/directaid/directaid/schema"
)

// What community reports may hide without a moderator. "Someone else's number" disappears at once for the
// real victim, and three reporters hide a record, but a few addresses must not blank the network: each
// reporter hides at most reporterHidesPerHour phones by itself, and each emergency is a circuit breaker —
// once more than a small share of its phones (or records) were hidden automatically within the last hour,
// automatic hiding pauses there and new reports wait in the moderation queue. Every report is recorded
// either way. The windows are this node's (a restart or another node starts its own; a reload keeps them,
// Config.Windows).
const (
	// reporterHidesPerHour is how many numbers one reporter (keyed hash of its address) hides by itself:
	// the same number on several records counts once, so a person whose number was spread over many
	// records can take it off them (up to recordsPerNumber).
	reporterHidesPerHour = 2
	// recordsPerNumber is on how many records reports hide one number by themselves within the window.
	recordsPerNumber = 10
	// breakerWindow is the period over which automatic hides are counted.
	breakerWindow = time.Hour
)

// breakerLimit is how many automatic hides of one kind an emergency of total open records takes in a window
// before its breaker opens: a share of its records, and at least floor.
func breakerLimit(total, per, floor int) int { return max(floor, total/per) }

// Phones: 2% of the emergency's records, at least 5. Records: 0.5%, at least 3 (three reporters hide one).
// Responses («yo puedo ayudar»): as many as records, counted apart.
func phoneBreakerLimit(total int) int    { return breakerLimit(total, 50, 5) }
func recordBreakerLimit(total int) int   { return breakerLimit(total, 200, 3) }
func responseBreakerLimit(total int) int { return recordBreakerLimit(total) }

// hideBudget keeps the automatic hides of the last window: per reporter (with the number each hid), and
// per emergency phones and records.
type hideBudget struct {
	mu        sync.Mutex
	reporter  map[string][]phoneHide
	phones    map[string][]time.Time
	numbers   map[string][]time.Time // by emergency and number: the records it was hidden on
	records   map[string][]time.Time
	responses map[string][]time.Time
}

func newHideBudget() *hideBudget {
	return &hideBudget{reporter: map[string][]phoneHide{}, phones: map[string][]time.Time{}, numbers: map[string][]time.Time{}, records: map[string][]time.Time{},
		responses: map[string][]time.Time{}}
}

// reserveResponse takes a response hide in emergency slug (of total records) when its breaker is closed;
// release gives it back when the report then did not hide the response.
func (b *hideBudget) reserveResponse(now time.Time, slug string, total int) (ok bool, release func()) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.prune(now)
	if recent(b.responses, slug, now) >= responseBreakerLimit(total) {
		return false, func() {}
	}
	b.responses[slug] = append(b.responses[slug], now)
	return true, func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		b.responses[slug] = dropOne(b.responses[slug], now)
	}
}

// recent drops the times of m[k] older than the breakers' window and returns how many are left.
func recent(m map[string][]time.Time, k string, now time.Time) int {
	return recentIn(m, k, now, breakerWindow)
}

// recentIn drops the times of m[k] older than window and returns how many are left.
func recentIn(m map[string][]time.Time, k string, now time.Time, window time.Duration) int {
	return len(within(m, k, now, window, func(t time.Time) time.Time { return t }))
}

// within drops the entries of m[k] (oldest first, at telling an entry's time) older than window, and
// returns the others; a key with none left leaves m.
func within[E any](m map[string][]E, k string, now time.Time, window time.Duration, at func(E) time.Time) []E {
	es := m[k]
	i := 0
	for i < len(es) && now.Sub(at(es[i])) >= window {
		i++
	}
	if i == len(es) {
		delete(m, k)
		return nil
	}
	m[k] = es[i:]
	return es[i:]
}

// phoneHide is one number a reporter hid, and when.
type phoneHide struct {
	at    time.Time
	phone string
}

// reserve takes what a report may hide now: phone (a hide of number, by reporter, in slug) and record (a
// record hide in slug), each only when asked for and within its budget. A reporter hides at most
// reporterHidesPerHour numbers, and a number is hidden automatically on at most recordsPerNumber records
// (whoever reports it): a person takes their number off the records it was spread over, but a few
// addresses cannot take an organization's line off all its records. The emergency's breaker counts
// numbers, not records: the same number on another record does not spend it, so neither a person nor
// one address can pause it with one number. total is the emergency's open records. reporterFull says
// that the phone was refused by the reporter's own budget, not by the emergency's bounds. release gives
// back what the report then did not hide.
func (b *hideBudget) reserve(now time.Time, reporter, number, slug string, total int, phone, record bool) (gotPhone, gotRecord, reporterFull bool, release func(phone, record bool)) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.prune(now)
	numberKey := slug + "\x00" + number
	var breaker bool // whether this reservation spent one of the emergency's phone hides
	if phone {
		hid := within(b.reporter, reporter, now, breakerWindow, func(h phoneHide) time.Time { return h.at })
		mine := slices.ContainsFunc(hid, func(h phoneHide) bool { return h.phone == number })
		var distinct []string // the numbers this reporter hid
		for _, h := range hid {
			if !slices.Contains(distinct, h.phone) {
				distinct = append(distinct, h.phone)
			}
		}
		onRecords := recent(b.numbers, numberKey, now)
		switch {
		case !mine && len(distinct) >= reporterHidesPerHour:
			reporterFull = true
		case onRecords >= recordsPerNumber:
		case onRecords > 0:
			gotPhone = true // the number is counted for the breaker already
		case recent(b.phones, slug, now) < phoneBreakerLimit(total):
			b.phones[slug] = append(b.phones[slug], now)
			gotPhone, breaker = true, true
		}
		if gotPhone {
			b.reporter[reporter] = append(b.reporter[reporter], phoneHide{at: now, phone: number})
			b.numbers[numberKey] = append(b.numbers[numberKey], now)
		}
	}
	if record && recent(b.records, slug, now) < recordBreakerLimit(total) {
		b.records[slug] = append(b.records[slug], now)
		gotRecord = true
	}
	return gotPhone, gotRecord, reporterFull, func(phone, record bool) {
		b.mu.Lock()
		defer b.mu.Unlock()
		if phone {
			hs := b.reporter[reporter]
			if i := slices.IndexFunc(hs, func(h phoneHide) bool { return h.at.Equal(now) && h.phone == number }); i >= 0 {
				b.reporter[reporter] = slices.Delete(hs, i, i+1)
			}
			b.numbers[numberKey] = dropOne(b.numbers[numberKey], now)
			if breaker {
				b.phones[slug] = dropOne(b.phones[slug], now)
			}
		}
		if record {
			b.records[slug] = dropOne(b.records[slug], now)
		}
	}
}

// pruneAt is how many reporters the budget keeps before it drops those whose window has passed: a
// reporter that hid a phone once and never came back would otherwise stay for the life of the process.
const pruneAt = 1024

// prune drops every key whose times have all left the window, once the reporters are many.
func (b *hideBudget) prune(now time.Time) {
	if len(b.reporter) < pruneAt {
		return
	}
	for k := range b.reporter {
		within(b.reporter, k, now, breakerWindow, func(h phoneHide) time.Time { return h.at })
	}
	for _, m := range []map[string][]time.Time{b.phones, b.numbers, b.records, b.responses} {
		for k := range m {
			recent(m, k, now)
		}
	}
}

// dropOne removes one occurrence of t from ts.
func dropOne(ts []time.Time, t time.Time) []time.Time {
	for i := len(ts) - 1; i >= 0; i-- {
		if ts[i].Equal(t) {
			return append(ts[:i:i], ts[i+1:]...)
		}
	}
	return ts
}

// Breakers says, per emergency slug, whether automatic hiding of phones and of records is paused now
// (for the status page and the metrics); total gives an emergency's record count.
func (b *hideBudget) open(now time.Time, slug string, total int) (phones, records bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return recent(b.phones, slug, now) >= phoneBreakerLimit(total), recent(b.records, slug, now) >= recordBreakerLimit(total)
}

// What one client adds to the public count of responses. A response counts («N personas dicen que están
// ayudando», attended=true) for schema.ResponseTTL; the responses of one network (ClientNet) made or renewed
// within that long count up to responderCounted, so that a few addresses cannot make the requests of an
// emergency look attended and drop them from the attended=false lists that volunteers read. Past it a
// response is still stored and reaches its publisher (store.Response.Uncounted): a shared address (a
// carrier's NAT, a bot relaying many volunteers) loses a number on a page, never a connection between two
// people. Like the breakers, the window is this node's, and a reload keeps it.
const responderCounted = 20

// What one network may respond to one record. A record holds at most store.MaxResponsesPerRecord
// responses, so that its reads stay fast; without a share per network one address could fill them in a
// quarter of an hour (pacing itself by the rate limit), and the record would refuse every real helper and
// look attended. A network's distinct responses to one record within schema.ResponseTTL are at most
// responderPerRecord (the retries of one response, which share its id, are one); past it a response is
// refused with 429. Like the other windows, it is this node's and a reload keeps it.
const responderPerRecord = 3

// recordShare keeps, per network and record, the responses (their retry id) made within the window.
type recordShare struct {
	mu    sync.Mutex
	m     map[string][]shareEntry
	calls int
}

type shareEntry struct {
	at time.Time
	id string
}

func (e shareEntry) when() time.Time { return e.at }

func newRecordShare() *recordShare { return &recordShare{m: map[string][]shareEntry{}} }

// forget drops record's shares: a reopened record's responses ended with its resolution, and the
// helpers who sent them may answer it again.
func (b *recordShare) forget(record string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for k := range b.m {
		if strings.HasSuffix(k, " "+record) {
			delete(b.m, k)
		}
	}
}

// take admits response id of network to record at now: a retry of one admitted (repeat), or a new one
// within the share. Refused, wait is until the share frees a slot; release gives a new one back when it
// was then not stored.
func (b *recordShare) take(now time.Time, network, record, id string) (ok, repeat bool, wait time.Duration, release func()) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.calls++; b.calls%pruneAt == 0 {
		for k := range b.m {
			within(b.m, k, now, schema.ResponseTTL, shareEntry.when)
		}
	}
	key := network + " " + record
	es := within(b.m, key, now, schema.ResponseTTL, shareEntry.when)
	if slices.ContainsFunc(es, func(e shareEntry) bool { return e.id == id }) {
		return true, true, 0, func() {}
	}
	if len(es) >= responderPerRecord {
		return false, false, es[0].at.Add(schema.ResponseTTL).Sub(now), func() {}
	}
	b.m[key] = append(es, shareEntry{now, id})
	return true, false, 0, func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		b.m[key] = slices.DeleteFunc(b.m[key], func(e shareEntry) bool { return e.id == id && e.at.Equal(now) })
		if len(b.m[key]) == 0 {
			delete(b.m, key)
		}
	}
}

// countBudget keeps, per network, when its counted responses were made or renewed within the window.
type countBudget struct {
	mu    sync.Mutex
	nets  map[string][]time.Time
	calls int
}

func newCountBudget() *countBudget { return &countBudget{nets: map[string][]time.Time{}} }

// take counts one more response of network at now when its share allows; release gives it back when the
// response was then not stored (or not renewed).
func (b *countBudget) take(now time.Time, network string) (ok bool, release func()) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.calls++; b.calls%pruneAt == 0 { // networks that stopped responding leave with their window
		for k := range b.nets {
			recentIn(b.nets, k, now, schema.ResponseTTL)
		}
	}
	if recentIn(b.nets, network, now, schema.ResponseTTL) >= responderCounted {
		return false, func() {}
	}
	b.nets[network] = append(b.nets[network], now)
	return true, func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		b.nets[network] = dropOne(b.nets[network], now)
	}
}
