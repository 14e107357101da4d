package badgerstore

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/dgraph-io/badger/v4"

	"github.com/directaid/directaid/backend/store"
)

// A q search reads the folded text of the records in the range that the other filters narrow to, newest
// (or nearest) first. Options.MaxTextChecks bounds those reads for a page: past it, the page ends early
// with a cursor to go on from there. Options.MaxTotalTextChecks bounds them for the total: past it, the
// total is estimated from the share of matches among the records read (TotalExact false).
const (
	maxTextChecks      = 5000
	maxTotalTextChecks = 2000
)

// filter holds the codes of a spec's enumerated filters; -1 means any.
type filter struct{ typ, cat, urg, st int }

func newFilter(s *store.ListSpec) *filter {
	f := &filter{-1, -1, -1, -1}
	if st := s.StatusOr(); st != "" {
		f.st = int(statusCode(st))
	}
	if s.Type != "" {
		f.typ = int(typeCode(s.Type))
	}
	if s.Category != "" {
		f.cat = int(catCode(s.Category))
	}
	if s.Urgency != "" {
		f.urg = int(urgCode(s.Urgency))
	}
	return f
}

func (f *filter) matchStatus(st uint8) bool { return f.st < 0 || int(st) == f.st }

func (f *filter) matchCodes(t, c, u uint8) bool {
	return (f.typ < 0 || int(t) == f.typ) && (f.cat < 0 || int(c) == f.cat) && (f.urg < 0 || int(u) == f.urg)
}

// after reports whether e comes after cursor c in the list order (newest first; nearest first, then
// newest, in radius queries).
func after(c *store.Cursor, e *entry) bool {
	if c == nil {
		return true
	}
	if c.HasDist && e.dist != c.Dist {
		return e.dist > c.Dist
	}
	return e.id < c.ID
}

// List implements store.Store. Everything is read from one snapshot, so total and items agree.
func (s *Store) List(_ context.Context, spec *store.ListSpec) (*store.ListResult, error) {
	if spec.SinceMillis() >= 0 {
		if len(spec.Words) > 0 || spec.Near || spec.Municipio != "" {
			return nil, store.ErrSinceCombined
		}
		return s.changes(spec)
	}
	res := &store.ListResult{TotalExact: true}
	if spec.Bulk {
		s.adv.bulk() // a whole export's page (backend/export.go), read in key order
	}
	err := s.view(func(txn *badger.Txn) error {
		f := newFilter(spec)
		var cover *store.Cover // the circle's cells, for the walk and the total alike
		circle := func() *store.Cover {
			if cover == nil {
				cover = store.NewCover(spec.Lat, spec.Lon, spec.RadiusKm)
			}
			return cover
		}
		stream := func(from *store.Cursor, yield func(*entry) bool) error { return scanTime(txn, spec, f, from, yield) }
		var cells *cellView // the cell counters as the snapshot sees them
		if spec.Near {
			var err error
			if cells, err = s.cells.viewAt(txn); err != nil {
				return err
			}
			stream = func(from *store.Cursor, yield func(*entry) bool) error {
				return nearestWalk(txn, cells, spec, f, circle(), from, yield)
			}
		}
		if len(spec.Words) > 0 && spec.Municipio == "" { // a municipio's range is read whole, its words checked
			if cells == nil {
				var err error
				if cells, err = s.cells.viewAt(txn); err != nil {
					return err
				}
			}
			plan, err := planWords(cells, &s.vocab, spec.Words, f, s.maxWordTokens)
			if err != nil {
				return err
			}
			if plan != nil && (!spec.Near || plan.counts <= maxNearCollect) {
				return s.listWords(txn, cells, spec, f, plan, res)
			}
		}
		// The page: limit+1 matches tell whether there is a next page.
		var hits []*entry
		var lastChecked *entry
		page := newTextChecker(txn, spec, s.maxTextChecks)
		err := stream(spec.After, func(e *entry) bool {
			if len(spec.Words) > 0 {
				match, ok := page.check(e.id)
				if !ok {
					return false
				}
				if lastChecked = e; !match {
					return true
				}
			}
			hits = append(hits, e)
			return len(hits) <= spec.Limit
		})
		if err = cmp.Or(err, page.err); err != nil {
			return err
		}
		switch {
		case len(hits) > spec.Limit:
			hits = hits[:spec.Limit]
			res.Next = cursorAt(hits[len(hits)-1], spec.Near)
		case page.spent && lastChecked != nil:
			res.Next = cursorAt(lastChecked, spec.Near) // go on reading from where the bound stopped
		}
		// The total.
		switch {
		case spec.NoTotal:
			res.Total, res.TotalExact = len(hits), spec.After == nil && res.Next == nil
		case len(spec.Words) > 0 && spec.After == nil && !page.spent && res.Next == nil:
			res.Total = len(hits)
		case len(spec.Words) > 0:
			all := newTextChecker(txn, spec, s.maxTotalTextChecks)
			checked := 0
			err = stream(nil, func(e *entry) bool {
				match, ok := all.check(e.id)
				if ok {
					checked++
				}
				if match {
					res.Total++
				}
				return ok
			})
			if err = cmp.Or(err, all.err); err == nil && all.spent {
				res.TotalExact = false
				var candidates int
				if spec.Near {
					candidates, _, err = countRadius(cells, txn, spec, f, circle())
				} else {
					candidates, err = countByAggregates(txn, spec, f)
				}
				est := int(math.Round(float64(res.Total) / float64(max(checked, 1)) * float64(candidates)))
				res.Total = max(res.Total, est, len(hits))
			}
		case spec.Near && spec.After == nil && res.Next == nil:
			res.Total = len(hits) // the page is the whole list
		case spec.Near:
			res.Total, res.TotalExact, err = countRadius(cells, txn, spec, f, circle())
			res.Total = max(res.Total, len(hits))
		default:
			res.Total, err = countByAggregates(txn, spec, f)
		}
		if err != nil {
			return err
		}
		return fillRecords(txn, res, hits)
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

func fillRecords(txn *badger.Txn, res *store.ListResult, hits []*entry) error {
	ids := make([]string, len(hits))
	for i, e := range hits {
		ids[i] = e.id
		res.Distances = append(res.Distances, e.dist)
	}
	var err error
	res.Records, err = readRecords(txn, ids, make([]*store.Record, 0, len(hits)))
	return err
}

// listWords answers a q list from the word index: pages are exact (no budget), and so is the total, from
// the word's counter when nothing else narrows it, else by reading the candidates (an estimate from the
// first maxTotalTextChecks of them when there are more than maxExactWordWalk).
func (s *Store) listWords(txn *badger.Txn, cells *cellView, spec *store.ListSpec, f *filter, plan *wordPlan, res *store.ListResult) error {
	stream := plan.scan
	if spec.Near {
		stream = plan.nearest
	}
	var hits []*entry
	err := stream(txn, spec, f, spec.After, func(e *entry) bool {
		hits = append(hits, e)
		return len(hits) <= spec.Limit
	})
	if err != nil {
		return err
	}
	if len(hits) > spec.Limit {
		hits = hits[:spec.Limit]
		res.Next = cursorAt(hits[len(hits)-1], spec.Near)
	}
	switch {
	case spec.NoTotal:
		res.Total, res.TotalExact = len(hits), spec.After == nil && res.Next == nil
	case spec.After == nil && res.Next == nil:
		res.Total = len(hits)
	case plan.onlyToken(spec):
		n, err := cells.wordCount(stTok(plan.st, plan.tokens[0]))
		if err != nil {
			return err
		}
		res.Total = int(n)
	case spec.Near || plan.counts <= maxExactWordWalk:
		// A radius query collected every candidate already; read them again, the cost is the same order.
		res.Total = 0
		err = stream(txn, spec, f, nil, func(*entry) bool { res.Total++; return true })
	default:
		sample := &wordPlan{words: plan.words, st: plan.st, tokens: plan.tokens, checkText: plan.checkText, budget: s.maxTotalTextChecks}
		matched := 0
		if err = sample.scan(txn, spec, f, nil, func(*entry) bool { matched++; return true }); err == nil {
			res.Total = matched
			if sample.spent {
				res.TotalExact = false
				// counts sums the tokens' counters, so a record having two of them is in it twice: the
				// sample's matches per posting, not per record, scale it.
				est := int(math.Round(float64(matched) / float64(max(sample.postings, 1)) * float64(plan.counts)))
				res.Total = max(matched, est, len(hits))
			}
		}
	}
	if err != nil {
		return err
	}
	return fillRecords(txn, res, hits)
}

func cursorAt(e *entry, near bool) *store.Cursor {
	return &store.Cursor{ID: e.id, Dist: e.dist, HasDist: near}
}

// textChecker reads the folded text of records for q, at most budget of them.
type textChecker struct {
	txn    *badger.Txn
	words  []string
	budget int
	spent  bool // the budget ran out
	err    error
}

func newTextChecker(txn *badger.Txn, spec *store.ListSpec, budget int) *textChecker {
	return &textChecker{txn: txn, words: spec.Words, budget: budget}
}

// check reports whether record id matches; ok is false (stop) once the budget is spent or on error.
func (c *textChecker) check(id string) (match, ok bool) {
	if c.budget == 0 {
		c.spent = true
		return false, false
	}
	c.budget--
	item, err := c.txn.Get(append(slices.Clone(prefixText), id...))
	if err == nil {
		err = item.Value(func(v []byte) error { match = store.MatchText(string(textOf(v)), c.words); return nil })
	}
	if err != nil {
		c.err = err
		return false, false
	}
	return match, true
}

// scanTime walks the time-ordered index range that the filters narrow to (the kind index when a category
// is given, else the time index of the emergency or of all), newest first, from after `from`, stopping at
// the since bound. With no category but a type, the time index is read and the type filtered: half the
// entries match, so the page fills quickly.
func scanTime(txn *badger.Txn, spec *store.ListSpec, f *filter, from *store.Cursor, yield func(*entry) bool) error {
	part := spec.EmergencySlug
	if part == "" {
		part = allPartition
	}
	part = statusPart(uint8(f.st), part)
	var prefixes [][]byte
	if spec.Municipio != "" {
		// A municipio's records are few next to an emergency's: its own range, the rest filtered.
		prefixes = [][]byte{partitionPrefix(prefixTime, statusPart(uint8(f.st), municipioPartition(spec.Municipio)))}
	} else if spec.Category != "" {
		for t := uint8(0); t < 2; t++ {
			if f.typ < 0 || int(t) == f.typ {
				prefixes = append(prefixes, kindPrefix(part, t, catCode(spec.Category)))
			}
		}
	} else {
		prefixes = [][]byte{partitionPrefix(prefixTime, part)}
	}
	its := make([]*badger.Iterator, len(prefixes))
	for i, p := range prefixes {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: p})
		defer it.Close()
		seek := p
		if from != nil {
			seek = append(slices.Clone(p), invID(from.ID)...)
		}
		it.Seek(seek)
		if from != nil && it.Valid() && bytes.Equal(it.Item().Key(), seek) {
			it.Next()
		}
		its[i] = it
	}
	// Merge the ranges by inverted id (at most two: request and offer of one category).
	for {
		best := -1
		var bestInv []byte
		for i, it := range its {
			if !it.Valid() {
				continue
			}
			inv := it.Item().Key()[len(prefixes[i]):]
			if best < 0 || bytes.Compare(inv, bestInv) < 0 {
				best, bestInv = i, inv
			}
		}
		if best < 0 {
			return nil
		}
		item := its[best].Item()
		id := idFromInv(bestInv)
		e, err := decodeItem(item, id)
		if err != nil {
			return err
		}
		its[best].Next()
		if !f.matchCodes(e.typ, e.cat, e.urg) || (spec.Municipio != "" && spec.EmergencySlug != "" && e.slug != spec.EmergencySlug) {
			continue
		}
		if !yield(&e) {
			return nil
		}
	}
}

func decodeItem(item *badger.Item, id string) (e entry, err error) {
	err = item.Value(func(v []byte) error {
		e, err = decodeSummary(id, v)
		return err
	})
	return e, err
}

// geoItem is what the geographic index says of one record: its codes, place and distance to the centre;
// inv is its inverted id, valid during the call only.
type geoItem struct {
	inv           []byte
	typ, cat, urg uint8
	lat, lon      float64
	dist          float64
}

// scanCell reads the entries of one geohash cell (of any precision) and calls fn for those within the
// circle that match the filters. The hot loop of radius queries: it filters on the raw bytes and
// allocates once per cell; fn's item is valid during the call only.
func scanCell(it *badger.Iterator, cell string, spec *store.ListSpec, f *filter, fn func(*geoItem)) error {
	gp := geoPrefix(uint8(f.st))
	p := append(gp, cell...)
	var g geoItem // one per cell, not per entry: fn must not keep it
	for it.Seek(p); it.ValidForPrefix(p); it.Next() {
		item := it.Item()
		inv := item.Key()[len(gp)+geoPrecision:]
		err := item.Value(func(v []byte) error {
			if len(v) < 22 || v[0] != 1 || v[4] != 1 || int(v[21]) != len(v)-22 {
				return fmt.Errorf("geographic index: bad entry")
			}
			if !f.matchCodes(v[1], v[2], v[3]) || (spec.EmergencySlug != "" && string(v[22:]) != spec.EmergencySlug) {
				return nil
			}
			lat := math.Float64frombits(binary.BigEndian.Uint64(v[5:]))
			lon := math.Float64frombits(binary.BigEndian.Uint64(v[13:]))
			if d := store.HaversineKm(spec.Lat, spec.Lon, lat, lon); d <= spec.RadiusKm {
				g = geoItem{inv: inv, typ: v[1], cat: v[2], urg: v[3], lat: lat, lon: lon, dist: d}
				fn(&g)
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// nearestWalk yields the records within the circle that match the filters, nearest first, then newest
// first (the order of radius lists and their cursors), from after `from`. It walks the geohash cells
// best-first: one queue holds cells, keyed by a lower bound of their distance (minDistKm), and the cells
// read so far, each as a heap of its records in list order (a page takes few of a cell: no full sort),
// keyed by the distance of the first one not yet yielded. Popping the smallest either yields a record (nothing unread can be nearer) or
// reads a cell (a cell coarser than the index's is split into those of its 32 cells that hold entries).
// So a page reads the cells near the centre, not the whole circle; at an equal key a cell is read before
// a record is yielded, since it may hold a record of that distance that is newer. A record read costs no
// allocation of its own: its inverted id is copied into a shared buffer, and only the records yielded
// become entries.
func nearestWalk(txn *badger.Txn, cells *cellView, spec *store.ListSpec, f *filter, cover *store.Cover, from *store.Cursor, yield func(*entry) bool) error {
	gp := geoPrefix(uint8(f.st))
	it := txn.NewIterator(badger.IteratorOptions{Prefix: gp})
	defer it.Close()
	b := walkPool.Get().(*walkBuffers)
	defer b.release()
	q := &b.queue
	recs, invs := b.recs[:0], b.invs[:0] // the runs of the cells read, back to back, and their inverted ids
	defer func() { b.recs, b.invs = recs, invs }()
	push := func(cell string) {
		lat0, lat1, lon0, lon1 := geohashBox(cell)
		if d := minDistKm(spec.Lat, spec.Lon, lat0, lat1, lon0, lon1); d <= spec.RadiusKm {
			q.push(walkItem{key: d, cell: cell})
		}
	}
	for _, c := range cover.Cells {
		if c.MinKm <= spec.RadiusKm { // as push, from the distance the cover has
			q.push(walkItem{key: c.MinKm, cell: c.Cell})
		}
	}
	held := scopeHolds(cells, spec, f)
	// A municipio's counters are read for every cell (its entries cost a point read each); an emergency's
	// only once a cell held none of its records: a list of an emergency that fills the circle reads none.
	check := spec.Municipio != ""
	for q.len() > 0 {
		w := q.pop()
		whole := false // every entry of the cell is in spec's municipio
		if w.run == nil && check {
			ok, all, err := held(w.cell)
			if err != nil {
				return err
			} else if !ok {
				continue
			}
			whole = all
		}
		if w.run != nil {
			r := &w.run[0]
			e := &entry{id: idFromInv(r.inv), typ: r.typ, cat: r.cat, urg: r.urg, hasLoc: true, lat: r.lat, lon: r.lon, dist: r.dist}
			if !yield(e) {
				return nil
			}
			if w.run = popRun(w.run); len(w.run) > 0 {
				q.push(walkItem{key: w.run[0].dist, run: w.run})
			}
			continue
		}
		if len(w.cell) < geoPrecision {
			// Split into the cells that hold entries: one Seek per such cell, none for empty ones.
			p := append(slices.Clone(gp), w.cell...)
			for it.Seek(p); it.ValidForPrefix(p); {
				ch := it.Item().Key()[len(p)]
				push(w.cell + string(ch))
				it.Seek(append(p[:len(p):len(p)], ch+1))
			}
			continue
		}
		first := len(recs)
		err := scanCell(it, w.cell, spec, f, func(g *geoItem) {
			if !whole && !inMunicipio(txn, spec, f, g.inv) || !afterInv(from, g.dist, g.inv) {
				return
			}
			invs = append(invs, g.inv...)
			recs = append(recs, walkRec{inv: invs[len(invs)-len(g.inv) : len(invs) : len(invs)], typ: g.typ, cat: g.cat, urg: g.urg, lat: g.lat, lon: g.lon, dist: g.dist})
		})
		if err != nil {
			return err
		}
		if run := recs[first:len(recs):len(recs)]; len(run) > 0 {
			heapifyRun(run) // a page takes a few records of a cell: no need to sort them all
			q.push(walkItem{key: run[0].dist, run: run})
		} else if spec.EmergencySlug != "" {
			check = true
		}
	}
	return nil
}

// scopeHolds tells, for a cell of the walk, whether it may hold records of spec's emergency and municipio
// that match f (holds), and whether every record of the list's status in it is the municipio's (whole). A
// municipio is not in the geographic index (inMunicipio reads each entry's), so a walk in a circle where
// the municipio has none or few records read the whole circle, a point read per entry (at 1M records,
// municipio 66001 over 5 km: ~21 ms of CPU a list); an emergency is in the entries, but a walk for one
// with few records in a circle full of another's still read every entry of the circle. The scope's cell
// counters (precisions cellCountMin and up) rule out the cells where it has none, with one read per cell,
// and spare the point reads in the cells where the municipio has every record, with one more.
func scopeHolds(cells *cellView, spec *store.ListSpec, f *filter) func(cell string) (holds, whole bool, err error) {
	if spec.Municipio == "" && spec.EmergencySlug == "" {
		return func(string) (bool, bool, error) { return true, true, nil }
	}
	scope, status := scopeOf(spec.EmergencySlug, spec.Municipio), &filter{-1, -1, -1, f.st}
	count := func(scope, cell string, f *filter) (matching, all int, err error) {
		err = cells.read(func(get cellGetter) error {
			matching, all = countIn(get, scope, cell, f, status)
			return nil
		})
		return matching, all, err
	}
	return func(cell string) (bool, bool, error) {
		if len(cell) < cellCountMin {
			return true, false, nil
		}
		n, mine, err := count(scope, cell, f)
		if n == 0 || err != nil || spec.Municipio == "" {
			return n > 0, true, err // without a municipio, no point reads to spare
		}
		_, every, err := count("", cell, status)
		return true, mine == every, err
	}
}

// walkBuffers are nearestWalk's queue and runs, kept from one walk to the next: they were a third of
// a radius list's allocations. Nothing of them outlives a walk (the entries it yields are copies).
type walkBuffers struct {
	queue walkQueue
	recs  []walkRec
	invs  []byte
}

var walkPool = sync.Pool{New: func() any { return new(walkBuffers) }}

// maxPooledRecs bounds what a pooled walk keeps (a walk over a whole large circle reads far more).
const maxPooledRecs = 4096

func (b *walkBuffers) release() {
	clear(b.queue.items[:cap(b.queue.items)]) // the cells' names and the runs
	b.queue.items = b.queue.items[:0]
	if cap(b.recs) > maxPooledRecs {
		return // dropped: the pool's next walk starts afresh
	}
	clear(b.recs[:cap(b.recs)])
	walkPool.Put(b)
}

// afterInv is after for a record of the geographic index, known by its distance and inverted id.
func afterInv(c *store.Cursor, dist float64, inv []byte) bool {
	if c == nil {
		return true
	}
	if c.HasDist && dist != c.Dist {
		return dist > c.Dist
	}
	return idFromInv(inv) < c.ID
}

// walkRec is a record read by nearestWalk; inv is its inverted id.
type walkRec struct {
	inv           []byte
	typ, cat, urg uint8
	lat, lon      float64
	dist          float64
}

// runLess is the order of a radius list: nearest first, then newest first (the larger id has the
// smaller inverted id).
func runLess(a, b *walkRec) bool {
	if a.dist != b.dist {
		return a.dist < b.dist
	}
	return bytes.Compare(a.inv, b.inv) < 0
}

// heapifyRun makes the records of a cell a binary min-heap by runLess: run[0] is the next to yield.
func heapifyRun(run []walkRec) {
	for i := len(run)/2 - 1; i >= 0; i-- {
		siftRun(run, i)
	}
}

func siftRun(run []walkRec, i int) {
	for {
		m := 2*i + 1
		if m >= len(run) {
			return
		}
		if r := m + 1; r < len(run) && runLess(&run[r], &run[m]) {
			m = r
		}
		if !runLess(&run[m], &run[i]) {
			return
		}
		run[i], run[m] = run[m], run[i]
		i = m
	}
}

// popRun takes run[0] out of the heap.
func popRun(run []walkRec) []walkRec {
	n := len(run) - 1
	run[0] = run[n]
	run = run[:n]
	siftRun(run, 0)
	return run
}

// walkItem is a cell to read (run nil) or the records of a cell read and not yet yielded, in nearestWalk's
// queue.
type walkItem struct {
	key  float64
	cell string
	run  []walkRec
}

// walkQueue is a binary min-heap of walkItems: by key; at an equal key cells first, then records
// newest first.
type walkQueue struct{ items []walkItem }

func (q *walkQueue) len() int { return len(q.items) }

func (q *walkQueue) less(i, j int) bool {
	a, b := &q.items[i], &q.items[j]
	if a.key != b.key {
		return a.key < b.key
	}
	if (a.run == nil) != (b.run == nil) {
		return a.run == nil
	}
	return a.run != nil && bytes.Compare(a.run[0].inv, b.run[0].inv) < 0
}

func (q *walkQueue) push(w walkItem) {
	q.items = append(q.items, w)
	for i := len(q.items) - 1; i > 0; {
		p := (i - 1) / 2
		if !q.less(i, p) {
			break
		}
		q.items[i], q.items[p] = q.items[p], q.items[i]
		i = p
	}
}

func (q *walkQueue) pop() walkItem {
	top := q.items[0]
	n := len(q.items) - 1
	q.items[0] = q.items[n]
	q.items = q.items[:n]
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < n && q.less(l, m) {
			m = l
		}
		if r < n && q.less(r, m) {
			m = r
		}
		if m == i {
			break
		}
		q.items[i], q.items[m] = q.items[m], q.items[i]
		i = m
	}
	return top
}

// inMunicipio reports whether the record of inverted id inv is in spec's municipio (true without one):
// one point read of the municipio's time index, for radius queries, whose index lacks the municipio.
func inMunicipio(txn *badger.Txn, spec *store.ListSpec, f *filter, inv []byte) bool {
	if spec.Municipio == "" {
		return true
	}
	_, err := txn.Get(append(partitionPrefix(prefixTime, statusPart(uint8(f.st), municipioPartition(spec.Municipio))), inv...))
	return err == nil
}

// countByAggregates counts the records matching emergency, municipio, status, type, category and urgency
// from the stored aggregates.
func countByAggregates(txn *badger.Txn, spec *store.ListSpec, f *filter) (int, error) {
	if spec.Municipio != "" {
		a, err := getAggregate(txn, muniKey(scopeOf(spec.EmergencySlug, spec.Municipio)))
		if err != nil {
			return 0, err
		}
		return a.count(f), nil
	}
	slugs := []string{spec.EmergencySlug}
	if spec.EmergencySlug == "" {
		var err error
		if slugs, err = aggregateSlugs(txn); err != nil {
			return 0, err
		}
	}
	total := 0
	for _, slug := range slugs {
		a, err := getAggregate(txn, aggKey(slug))
		if err != nil {
			return 0, err
		}
		total += a.count(f)
	}
	return total, nil
}

func aggregateSlugs(txn *badger.Txn) ([]string, error) {
	var out []string
	it := txn.NewIterator(badger.IteratorOptions{Prefix: prefixAgg})
	defer it.Close()
	for it.Seek(prefixAgg); it.ValidForPrefix(prefixAgg); it.Next() {
		out = append(out, string(it.Item().Key()[len(prefixAgg):]))
	}
	return out, nil
}

// Aggregates implements store.Store.
func (s *Store) Aggregates(_ context.Context, slugs []string) (map[string]*store.Aggregate, error) {
	out := map[string]*store.Aggregate{}
	err := s.view(func(txn *badger.Txn) error {
		for _, slug := range slugs {
			a, err := getAggregate(txn, aggKey(slug))
			if err != nil {
				return err
			}
			ag := &store.Aggregate{Counts: map[[3]string]int{}, Statuses: map[string]int{}, NeededPeople: int(a.people)}
			if a.newest > 0 {
				ag.Newest = time.UnixMilli(a.newest).UTC()
			}
			for k, n := range a.cells {
				st, t, c, u := cellParts(k)
				if n <= 0 {
					continue
				}
				if int(st) < len(store.Statuses) {
					ag.Statuses[store.Statuses[st]] += int(n)
				}
				if st == statusCode(store.StatusOpen) {
					ag.Counts[[3]string{typeName(t), categoryName(c), urgencyName(u)}] += int(n)
				}
			}
			out[slug] = ag
		}
		return nil
	})
	return out, err
}
