package backend

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"net/http"
	"sync"
	"time"

	"github.com/directaid/directaid/backend/store"
	"github.com/directaid/directaid/schema"
)

// A whole export (view=list&format=csv|geojson&all=true) streams every record that matches, page by page
// from the store, flushing each page before reading the next: the handler holds one page, whatever the
// size of the result, and the client starts receiving at once (Transfer-Encoding: chunked).
const (
	// ExportPage is the records read from the store per page of a whole export.
	ExportPage = 200
	// ExportWriteWindow is how long the client has to take each page: the server's write timeout covers
	// a whole response, which a large export outlives, so it is moved on page by page.
	ExportWriteWindow = 30 * time.Second
	// WholeExports is how many whole exports a node runs at once. Each reads the store page after page
	// for as long as its client takes them; without a bound, 150 at once slowed a one-item list to more
	// than a second. Past it an export is 503 with a Retry-After of exportRetry seconds.
	WholeExports = 4
	// WholeExportsPerClient is how many of them one client network (ClientNet) runs at once: a client
	// reading slowly holds its place for as long as it likes, and four such from one address left every
	// other integrator a 503. Past it an export is 429 with the same Retry-After.
	WholeExportsPerClient = 1
	exportRetry           = 10
)

// exportPlaces are the places of the whole exports running: how many, and how many of each client's.
type exportPlaces struct {
	mu  sync.Mutex
	n   int
	per map[string]int
}

// take holds a place for client's export, or says why there is none.
func (e *exportPlaces) take(client string) *Problem {
	e.mu.Lock()
	defer e.mu.Unlock()
	switch {
	case e.per[client] >= WholeExportsPerClient:
		return &Problem{Status: http.StatusTooManyRequests, RetryAfter: exportRetry, Body: schema.ErrorBody{Code: schema.CodeRateLimited,
			Error: "Esta dirección ya está haciendo una exportación completa (all=true), el máximo: espere a que termine, o lea la lista por páginas con cursor."}}
	case e.n >= WholeExports:
		return &Problem{Status: http.StatusServiceUnavailable, RetryAfter: exportRetry, Body: schema.ErrorBody{Code: schema.CodeUnavailable,
			Error: fmt.Sprintf("Este servidor ya está haciendo %d exportaciones completas (all=true): reintente en %d segundos, o lea la lista por páginas con cursor.", WholeExports, exportRetry)}}
	}
	e.n++
	e.per[client]++
	return nil
}

// give frees a place that take held for client.
func (e *exportPlaces) give(client string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.n--
	if e.per[client]--; e.per[client] <= 0 {
		delete(e.per, client)
	}
}

// An ExportPager reads the pages of a whole export from the store, in list order (cursor paging, so every
// record is read exactly once even while new ones arrive). A goroutine reads page k+1 while the handler
// writes page k: on two cores reading (mostly decoding records) and writing overlap, and the handler
// still holds at most two pages.
type ExportPager struct {
	s      *Service
	base   string
	spec   *store.ListSpec
	done   bool
	pages  chan exportPageRead
	cancel context.CancelFunc
}

type exportPageRead struct {
	items []schema.PublicHelp
	last  bool
	err   error
}

// Export starts a whole export of q for client (its ClientNet); errors are *Problem for bad input or no
// place. q.Limit must be unset. The caller must stop it, which frees its place among the node's
// WholeExports and the client's WholeExportsPerClient.
func (s *Service) Export(ctx context.Context, client string, q schema.ListQuery, base string, page int) (*ExportPager, error) {
	spec, errs := s.listSpec(&q)
	if errs != nil {
		return nil, InvalidParams(errs)
	}
	spec.Limit, spec.NoTotal, spec.Bulk = page, true, true
	if p := s.exports.take(client); p != nil {
		return nil, p
	}
	p := &ExportPager{s: s, base: base, spec: spec, pages: make(chan exportPageRead)}
	var cancel context.CancelFunc
	ctx, cancel = context.WithCancel(ctx)
	var once sync.Once
	p.cancel = func() {
		cancel()
		once.Do(func() { s.exports.give(client) })
	}
	go p.read(ctx)
	return p, nil
}

// Stop ends the reading goroutine (at once, or after the page it is reading).
func (p *ExportPager) Stop() { p.cancel() }

func (p *ExportPager) read(ctx context.Context) {
	defer close(p.pages)
	for {
		items, last, err := p.readPage(ctx)
		select {
		case p.pages <- exportPageRead{items, last, err}:
		case <-ctx.Done():
			return
		}
		if last || err != nil {
			return
		}
	}
}

// Next returns the next page (empty once Done).
func (p *ExportPager) Next(ctx context.Context) ([]schema.PublicHelp, error) {
	if p.done {
		return nil, nil
	}
	select {
	case r, ok := <-p.pages:
		if !ok {
			return nil, cmp.Or(ctx.Err(), context.Canceled)
		}
		p.done = r.last || r.err != nil
		return r.items, r.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Done reports whether the last page was returned.
func (p *ExportPager) Done() bool { return p.done }

func (p *ExportPager) readPage(ctx context.Context) (items []schema.PublicHelp, last bool, err error) {
	res, err := p.s.store.List(ctx, p.spec)
	if err != nil {
		return nil, false, err
	}
	items = make([]schema.PublicHelp, 0, len(res.Records))
	now := p.s.now()
	counts, err := p.s.responseCounts(ctx, res.Records, now)
	if err != nil {
		return nil, false, err
	}
	for i, rec := range res.Records {
		rec = readAt(rec, now)
		if !listed(rec.Status) { // a change feed's tombstone: nothing to export
			continue
		}
		var dist *float64
		if p.spec.Near {
			d := math.Round(res.Distances[i]*1000) / 1000
			dist = &d
		}
		item := schema.PublicHelp(publicRecord(p.s, p.base, rec, dist, schema.PublicContact{Name: rec.ContactName, Available: contactShown(rec)}))
		item.Responses = counts[rec.ID]
		items = append(items, item)
	}
	if res.Next == nil {
		return items, true, nil
	}
	p.spec.After = res.Next
	return items, false, nil
}
