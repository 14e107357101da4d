package store

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"hash/fnv"
	"math"
	"time"
)

// ListSpec is a validated list query. Empty strings and a zero Since mean "any"; an empty Status means open.
//
// The order of a list is newest first (by id, which sorts by creation time); with Near, nearest first,
// then newest first. A page holds up to Limit records after After in that order; pages before the last
// are full unless the store bounds the records a q search reads (then Next goes on from where it stopped).
//
// With Since the list is the change feed: the records whose UpdatedAt is after Since, of every status
// unless Status is given, oldest change first (then by id). Words, Near and Municipio do not combine with Since.
// A record changed while a client pages moves to the end of the feed, so paging misses no change.
type ListSpec struct {
	EmergencySlug, Type, Category, Urgency, Status string
	// Municipio is a DIVIPOLA municipio code (5 digits): only records whose MunicipioCode it is.
	Municipio string
	// Words are the folded words of q; each must occur in SearchText of the record.
	Words []string
	// Near limits to RadiusKm around (Lat, Lon), nearest first.
	Near     bool
	Lat, Lon float64
	RadiusKm float64
	Since    time.Time
	Limit    int
	After    *Cursor
	// NoTotal: the caller wants only the page. A store may skip counting; Total is then at least the
	// records of this page, and TotalExact false unless this page is the whole list.
	NoTotal bool
	// Bulk: a page of a whole export, which reads the list page after page in key order (a store may
	// read ahead for it).
	Bulk bool
}

// Cursor is a position in a list: after the record ID (and, nearest first, after distance Dist; in a
// change feed, after the change at Updated, Unix ms, then ID).
type Cursor struct {
	ID      string
	Dist    float64
	HasDist bool
	Updated int64
	filters uint32
}

// ListResult is one page.
type ListResult struct {
	// Total counts every match of the spec (not only after After); an estimate when TotalExact is false.
	Total      int
	TotalExact bool
	Records    []*Record
	// Distances[i] is the distance of Records[i] in radius queries.
	Distances []float64
	// Next is the cursor of the next page; nil on the last.
	Next *Cursor
}

// Aggregate sums up the records of one emergency.
type Aggregate struct {
	// Counts is keyed by type, category and urgency ("" for offers), of the open records only.
	Counts map[[3]string]int
	// NeededPeople sums neededPeople of the open requests.
	NeededPeople int
	// Statuses counts every record by status (absent statuses have no key).
	Statuses map[string]int
	Newest   time.Time // creation of the newest record of any status; zero when there are none
}

// SinceMillis is the change time (UpdatedAt, Unix ms) a record must exceed; -1 when there is no lower bound.
func (s *ListSpec) SinceMillis() int64 {
	if s.Since.IsZero() || s.Since.Before(time.UnixMilli(0)) {
		return -1
	}
	return s.Since.UnixMilli() // truncates: updatedAt (whole ms) > since ⇔ updatedAt ms > this
}

// StatusOr is the status a list shows: Status, or open. In a change feed "" means every status.
func (s *ListSpec) StatusOr() string {
	if s.Status == "" && s.SinceMillis() < 0 {
		return StatusOpen
	}
	return s.Status
}

// fingerprint ties a cursor to the filters it was made for.
func (s *ListSpec) fingerprint() uint32 {
	h := fnv.New32a()
	f := []any{s.EmergencySlug, s.Type, s.Category, s.Urgency, s.Words, s.Near, s.Lat, s.Lon, s.RadiusKm, s.SinceMillis()}
	if st := s.StatusOr(); st != StatusOpen {
		f = append(f, st) // cursors of open lists stay what they were before statuses
	}
	if s.Municipio != "" {
		f = append(f, s.Municipio) // only then, so that the cursors of other lists stay valid
	}
	b, _ := json.Marshal(f)
	h.Write(b)
	return h.Sum32()
}

// EncodeCursor makes the opaque cursor string of c for spec.
func (s *ListSpec) EncodeCursor(c *Cursor) string {
	b := []byte{1, 't'}
	switch {
	case c.HasDist:
		b[1] = 'd'
	case s.SinceMillis() >= 0:
		b[1] = 'u'
	}
	b = binary.BigEndian.AppendUint32(b, s.fingerprint())
	b = append(b, c.ID...)
	switch b[1] {
	case 'd':
		b = binary.BigEndian.AppendUint64(b, math.Float64bits(c.Dist))
	case 'u':
		b = binary.BigEndian.AppendUint64(b, uint64(c.Updated))
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

// ErrSinceCombined is the error of a change feed asked with words, a radius or a municipio, which it does
// not support (the API refuses them first: «since» no se combina…).
var ErrSinceCombined = errors.New("since does not combine with words, near or municipio")

// The bounds of a change feed's total: each of its walks (store.FeedWalk) counts at most MaxFeedCount+1
// matching changes and reads at most MaxFeedRead change entries, matching or not, so that a feed filtered
// to a rare type, category or urgency does not read the whole change index.
const (
	MaxFeedCount = 2000
	MaxFeedRead  = 10000
)

// FeedWalk is what one walk of a change feed's total read, entry by entry, in change order (updatedAt,
// then id) or its reverse: Matches counts the entries that pass the feed's filters. A walk stops after the
// entry that makes Matches more than its bound (MaxFeedCount, or 0 for the newest match); before reading a
// (MaxFeedRead+1)-th entry; or at the end of its range, when it read every entry there and Done is set.
// Last is the change time (Unix ms) of the last entry it read.
type FeedWalk struct {
	Matches int
	Done    bool
	Last    int64
}

// FeedTotal decides the total of a change feed from its walks: after, from since on; before, from the
// oldest change up to since; newest, the Last of the walk from the newest change back to the first match
// (bound 0: the newest matching change, or an upper bound of its time past MaxFeedRead entries); and n,
// the matching records of every time (the counters). The stores walk only as far as they need: before
// when after is not Done, newest when neither is and after found a match (else the estimate is 0).
//
// Exact when a walk is Done: after's matches, or n less before's. Else it is estimated from the pace of
// the matching changes after since, extrapolated to the newest, and held between the bounds both walks
// prove: at least after's matches, at most n less before's; so the error is at most n − after.Matches −
// before.Matches, and nothing when matching changes come at a steady pace up to the newest change.
func FeedTotal(n int, after, before FeedWalk, since, newest int64) (total int, exact bool) {
	switch {
	case after.Done:
		return after.Matches, true
	case before.Done:
		return n - before.Matches, true
	}
	est := math.Round(float64(after.Matches) * float64(newest-since) / float64(max(after.Last-since, 1)))
	lo, hi := after.Matches, max(n-before.Matches, after.Matches)
	return int(min(max(est, float64(lo)), float64(hi))), false
}

// Cursor errors.
var (
	ErrBadCursor      = errors.New("malformed cursor")
	ErrCursorMismatch = errors.New("cursor made for other filters")
)

// DecodeCursor parses a cursor string made by EncodeCursor for the same filters.
func (s *ListSpec) DecodeCursor(str string) (*Cursor, error) {
	b, err := base64.RawURLEncoding.DecodeString(str)
	if err != nil || len(b) < 22 || b[0] != 1 || (b[1] != 't' && b[1] != 'd' && b[1] != 'u') {
		return nil, ErrBadCursor
	}
	c := &Cursor{HasDist: b[1] == 'd', filters: binary.BigEndian.Uint32(b[2:]), ID: string(b[6:22])}
	if !ValidID(c.ID) {
		return nil, ErrBadCursor
	}
	switch {
	case b[1] == 't' && len(b) == 22:
	case b[1] == 'd' && len(b) == 30:
		c.Dist = math.Float64frombits(binary.BigEndian.Uint64(b[22:]))
	case b[1] == 'u' && len(b) == 30:
		c.Updated = int64(binary.BigEndian.Uint64(b[22:]))
	default:
		return nil, ErrBadCursor
	}
	if c.filters != s.fingerprint() || c.HasDist != s.Near || (b[1] == 'u') != (s.SinceMillis() >= 0) {
		return nil, ErrCursorMismatch
	}
	return c, nil
}
