package backend

import (
	"bytes"
	"cmp"
	"container/heap"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/dgraph-io/badger/v4"
)

// ReadStore is the read side of a store: filtered, paginated lists and the aggregates of the panorama.
type ReadStore interface {
	List(ctx context.Context, spec *ListSpec) (*ListResult, error)
	Aggregates(ctx context.Context, slugs []string) (map[string]*Aggregate, error)
}

// A q search reads the folded text of the records in the range that the other filters narrow to, newest
// (or nearest) first. maxTextChecks bounds those reads for a page: past it, the page ends early with a
// cursor to go on from there. maxTotalTextChecks bounds them for the total: past it, the total is
// estimated from the share of matches among the records read (TotalExact false).
const (
	maxTextChecks      = 5000
	maxTotalTextChecks = 2000
)

// ListSpec is a validated list query. Empty strings and a zero Since mean "any".
type ListSpec struct {
	EmergencySlug, Type, Category, Urgency string
	// Words are the folded words of q; each must occur in the folded title or description.
	Words []string
	// Near limits to RadiusKm around (Lat, Lon), nearest first.
	Near     bool
	Lat, Lon float64
	RadiusKm float64
	Since    time.Time
	Limit    int
	After    *Cursor
	// Bounds of q searches; 0 means maxTextChecks and maxTotalTextChecks. Tests lower them.
	maxTextChecks, maxTotalChecks int
}

// Cursor is a position in a list: after the record ID (and, nearest first, after distance Dist).
type Cursor struct {
	ID      string
	Dist    float64
	HasDist bool
	filters uint32
}

// ListResult is one page.
type ListResult struct {
	Total      int
	TotalExact bool
	Records    []*Record
	// Distances[i] is the distance of Records[i] in radius queries.
	Distances []float64
	Next      *Cursor
}

// Aggregate sums up the records of one emergency.
type Aggregate struct {
	// Counts is keyed by type, category and urgency ("" for offers).
	Counts       map[[3]string]int
	NeededPeople int
	Newest       time.Time // zero when there are no records
}

// filter holds the codes of a spec's enumerated filters; -1 means any.
type filter struct{ typ, cat, urg int }

func (s *ListSpec) filter() *filter {
	f := &filter{-1, -1, -1}
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

func (f *filter) matchCodes(t, c, u uint8) bool {
	return (f.typ < 0 || int(t) == f.typ) && (f.cat < 0 || int(c) == f.cat) && (f.urg < 0 || int(u) == f.urg)
}

// sinceMs is the creation time (Unix ms) a record must exceed; -1 when there is no lower bound.
func (s *ListSpec) sinceMs() int64 {
	if s.Since.IsZero() || s.Since.Before(time.UnixMilli(0)) {
		return -1
	}
	return s.Since.UnixMilli() // truncates: createdAt (whole ms) > since ⇔ createdAt ms > this
}

// fingerprint ties a cursor to the filters it was made for.
func (s *ListSpec) fingerprint() uint32 {
	h := fnv.New32a()
	b, _ := json.Marshal([]any{s.EmergencySlug, s.Type, s.Category, s.Urgency, s.Words, s.Near, s.Lat, s.Lon, s.RadiusKm, s.sinceMs()})
	h.Write(b)
	return h.Sum32()
}

// EncodeCursor makes the opaque cursor string of c for spec.
func (s *ListSpec) EncodeCursor(c *Cursor) string {
	b := []byte{1, 't'}
	if c.HasDist {
		b[1] = 'd'
	}
	b = binary.BigEndian.AppendUint32(b, s.fingerprint())
	b = append(b, c.ID...)
	if c.HasDist {
		b = binary.BigEndian.AppendUint64(b, math.Float64bits(c.Dist))
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

// Cursor errors.
var (
	ErrBadCursor      = errors.New("malformed cursor")
	ErrCursorMismatch = errors.New("cursor made for other filters")
)

// DecodeCursor parses a cursor string made by EncodeCursor for the same filters.
func (s *ListSpec) DecodeCursor(str string) (*Cursor, error) {
	b, err := base64.RawURLEncoding.DecodeString(str)
	if err != nil || len(b) < 22 || b[0] != 1 || (b[1] != 't' && b[1] != 'd') {
		return nil, ErrBadCursor
	}
	c := &Cursor{HasDist: b[1] == 'd', filters: binary.BigEndian.Uint32(b[2:]), ID: string(b[6:22])}
	if !ValidID(c.ID) {
		return nil, ErrBadCursor
	}
	if c.HasDist {
		if len(b) != 30 {
			return nil, ErrBadCursor
		}
		c.Dist = math.Float64frombits(binary.BigEndian.Uint64(b[22:]))
	} else if len(b) != 22 {
		return nil, ErrBadCursor
	}
	if c.filters != s.fingerprint() || c.HasDist != s.Near {
		return nil, ErrCursorMismatch
	}
	return c, nil
}

// idMillis is the creation time (Unix ms) encoded in the first 48 bits of an id.
func idMillis(id string) int64 {
	var acc uint64
	for i := 0; i < 10 && i < len(id); i++ {
		acc = acc<<5 | uint64(strings.IndexByte(crockford, id[i]))
	}
	return int64(acc >> 2)
}

// firstIDAt is the smallest id NewID can make at Unix ms: every id of an earlier ms sorts below it.
func firstIDAt(ms int64) string {
	var b [10]byte
	binary.BigEndian.PutUint64(b[:8], uint64(ms)<<16)
	var sb strings.Builder
	var acc uint64
	bits := 0
	for _, c := range b {
		acc = acc<<8 | uint64(c)
		for bits += 8; bits >= 5; {
			bits -= 5
			sb.WriteByte(crockford[(acc>>bits)&31])
		}
	}
	return sb.String()
}

// after reports whether e comes after cursor c in the list order (newest first; nearest first, then
// newest, in radius queries).
func (c *Cursor) after(e *entry) bool {
	if c == nil {
		return true
	}
	if c.HasDist && e.dist != c.Dist {
		return e.dist > c.Dist
	}
	return e.id < c.ID
}

// List implements ReadStore. Everything is read from one snapshot, so total and items agree.
func (s *BadgerStore) List(_ context.Context, spec *ListSpec) (*ListResult, error) {
	res := &ListResult{TotalExact: true}
	err := s.db.View(func(txn *badger.Txn) error {
		f := spec.filter()
		var cands []entry
		var stream func(from *Cursor, yield func(*entry) bool) error
		if spec.Near {
			var err error
			if cands, err = radiusCandidates(txn, spec, f); err != nil {
				return err
			}
			stream = func(from *Cursor, yield func(*entry) bool) error {
				// A page needs the few nearest after the cursor, not all of them in order: a heap
				// yields them one by one (sorting some ten thousand candidates was a sixth of a query).
				h := nearestHeap{cands: cands}
				for i := range cands {
					if from.after(&cands[i]) {
						h.idx = append(h.idx, i)
					}
				}
				heap.Init(&h)
				for h.Len() > 0 {
					if !yield(&cands[heap.Pop(&h).(int)]) {
						return nil
					}
				}
				return nil
			}
		} else {
			stream = func(from *Cursor, yield func(*entry) bool) error { return scanTime(txn, spec, f, from, yield) }
		}
		// The page: limit+1 matches tell whether there is a next page.
		var hits []*entry
		var lastChecked *entry
		page := newTextChecker(txn, spec)
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
		case len(spec.Words) > 0 && spec.After == nil && !page.spent && res.Next == nil:
			res.Total = len(hits)
		case len(spec.Words) > 0:
			all := newTextChecker(txn, spec)
			all.budget = cmp.Or(spec.maxTotalChecks, maxTotalTextChecks)
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
				candidates := len(cands)
				if !spec.Near {
					candidates, err = countByAggregates(txn, spec, f)
				}
				est := int(math.Round(float64(res.Total) / float64(max(checked, 1)) * float64(candidates)))
				res.Total = max(res.Total, est, len(hits))
			}
		case spec.Near:
			res.Total = len(cands)
		default:
			res.Total, err = countByAggregates(txn, spec, f)
		}
		if err != nil {
			return err
		}
		res.Records = make([]*Record, 0, len(hits))
		for _, e := range hits {
			rec, err := getTxn(txn, e.id)
			if err != nil {
				return err
			}
			res.Records = append(res.Records, rec)
			res.Distances = append(res.Distances, e.dist)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

func cursorAt(e *entry, near bool) *Cursor {
	return &Cursor{ID: e.id, Dist: e.dist, HasDist: near}
}

// textChecker reads the folded text of records for q, at most maxTextChecks of them.
type textChecker struct {
	txn    *badger.Txn
	words  []string
	budget int
	spent  bool // the budget ran out
	err    error
}

func newTextChecker(txn *badger.Txn, spec *ListSpec) *textChecker {
	return &textChecker{txn: txn, words: spec.Words, budget: cmp.Or(spec.maxTextChecks, maxTextChecks)}
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
		err = item.Value(func(v []byte) error { match = matchText(string(v), c.words); return nil })
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
func scanTime(txn *badger.Txn, spec *ListSpec, f *filter, from *Cursor, yield func(*entry) bool) error {
	part := spec.EmergencySlug
	if part == "" {
		part = allPartition
	}
	var prefixes [][]byte
	if spec.Category != "" {
		for t := uint8(0); t < 2; t++ {
			if f.typ < 0 || int(t) == f.typ {
				prefixes = append(prefixes, kindPrefix(part, t, catCode(spec.Category)))
			}
		}
	} else {
		prefixes = [][]byte{partitionPrefix(prefixTime, part)}
	}
	since := spec.sinceMs()
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
		if since >= 0 && idMillis(id) <= since {
			return nil
		}
		e, err := decodeItem(item, id)
		if err != nil {
			return err
		}
		its[best].Next()
		if !f.matchCodes(e.typ, e.cat, e.urg) {
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

// invMillis is idMillis of an inverted id.
func invMillis(inv []byte) int64 {
	var acc uint64
	for i := 0; i < 10 && i < len(inv); i++ {
		acc = acc<<5 | uint64(strings.IndexByte(crockford, ^inv[i]))
	}
	return int64(acc >> 2)
}

// radiusCandidates reads the geographic index cells that cover the circle and keeps the entries that
// are within it and match the filters, in no particular order (nearestHeap orders them).
func radiusCandidates(txn *badger.Txn, spec *ListSpec, f *filter) ([]entry, error) {
	since := spec.sinceMs()
	it := txn.NewIterator(badger.IteratorOptions{Prefix: prefixGeo})
	defer it.Close()
	var out []entry
	for _, cell := range coverCells(spec.Lat, spec.Lon, spec.RadiusKm) {
		p := append(slices.Clone(prefixGeo), cell...)
		for it.Seek(p); it.ValidForPrefix(p); it.Next() {
			// The hot loop of radius queries: filter on the raw bytes, allocate only for a hit.
			item := it.Item()
			inv := item.Key()[len(prefixGeo)+geoPrecision:]
			if since >= 0 && invMillis(inv) <= since {
				continue
			}
			var e entry
			keep := false
			err := item.Value(func(v []byte) error {
				if len(v) < 22 || v[0] != 1 || v[4] != 1 || int(v[21]) != len(v)-22 {
					return fmt.Errorf("geographic index: bad entry")
				}
				if !f.matchCodes(v[1], v[2], v[3]) || (spec.EmergencySlug != "" && string(v[22:]) != spec.EmergencySlug) {
					return nil
				}
				lat := math.Float64frombits(binary.BigEndian.Uint64(v[5:]))
				lon := math.Float64frombits(binary.BigEndian.Uint64(v[13:]))
				if d := HaversineKm(spec.Lat, spec.Lon, lat, lon); d <= spec.RadiusKm {
					e, keep = entry{typ: v[1], cat: v[2], urg: v[3], hasLoc: true, lat: lat, lon: lon, dist: d}, true
				}
				return nil
			})
			if err != nil {
				return nil, err
			}
			if keep {
				e.id = idFromInv(inv)
				out = append(out, e)
			}
		}
	}
	return out, nil
}

// nearestHeap orders candidates (by index, so that pointers to them stay valid) nearest first, then
// newest first: the order of radius lists and their cursors.
type nearestHeap struct {
	cands []entry
	idx   []int
}

func (h *nearestHeap) Len() int { return len(h.idx) }
func (h *nearestHeap) Less(i, j int) bool {
	a, b := &h.cands[h.idx[i]], &h.cands[h.idx[j]]
	if a.dist != b.dist {
		return a.dist < b.dist
	}
	return a.id > b.id
}
func (h *nearestHeap) Swap(i, j int) { h.idx[i], h.idx[j] = h.idx[j], h.idx[i] }
func (h *nearestHeap) Push(x any)    { h.idx = append(h.idx, x.(int)) }
func (h *nearestHeap) Pop() any {
	n := len(h.idx) - 1
	x := h.idx[n]
	h.idx = h.idx[:n]
	return x
}

// countByAggregates counts the records matching emergency, type, category and urgency from the stored
// aggregates; with since, from the hourly aggregates after since's hour plus a scan of that one hour.
func countByAggregates(txn *badger.Txn, spec *ListSpec, f *filter) (int, error) {
	slugs := []string{spec.EmergencySlug}
	if spec.EmergencySlug == "" {
		var err error
		if slugs, err = aggregateSlugs(txn); err != nil {
			return 0, err
		}
	}
	since := spec.sinceMs()
	total := 0
	if since < 0 {
		for _, slug := range slugs {
			a, err := getAggregate(txn, aggKey(slug))
			if err != nil {
				return 0, err
			}
			total += a.count(f)
		}
		return total, nil
	}
	h := floorDiv(since, hourMs)
	for _, slug := range slugs {
		p := partitionPrefix(prefixHour, slug)
		it := txn.NewIterator(badger.IteratorOptions{Prefix: p})
		for it.Seek(hourKey(slug, h+1)); it.ValidForPrefix(p); it.Next() {
			err := it.Item().Value(func(v []byte) error {
				a, err := decodeAggregate(v)
				if err == nil {
					total += a.count(f)
				}
				return err
			})
			if err != nil {
				it.Close()
				return 0, err
			}
		}
		it.Close()
	}
	// The records of since's own hour that are after since.
	err := scanTime(txn, spec, f, &Cursor{ID: firstIDAt((h + 1) * hourMs)}, func(*entry) bool { total++; return true })
	return total, err
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

// Aggregates implements ReadStore.
func (s *BadgerStore) Aggregates(_ context.Context, slugs []string) (map[string]*Aggregate, error) {
	out := map[string]*Aggregate{}
	err := s.db.View(func(txn *badger.Txn) error {
		for _, slug := range slugs {
			a, err := getAggregate(txn, aggKey(slug))
			if err != nil {
				return err
			}
			ag := &Aggregate{Counts: map[[3]string]int{}, NeededPeople: int(a.people)}
			if a.newest > 0 {
				ag.Newest = time.UnixMilli(a.newest).UTC()
			}
			for k, n := range a.cells {
				t, c, u := cellParts(k)
				ag.Counts[[3]string{typeName(t), categoryName(c), urgencyName(u)}] += int(n)
			}
			out[slug] = ag
		}
		return nil
	})
	return out, err
}
