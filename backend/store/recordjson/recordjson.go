// Package recordjson reads a record as the stores keep it: the JSON encoding/json wrote of a
// store.Record (Badger's values; PostgreSQL's docs, the same without the personal fields and updatedAt).
// Every read decodes records, a page of 20, a whole export of a million: the usual shape is read by hand.
package recordjson

import (
	"bytes"
	"encoding/binary"
	"strconv"
	"time"
	"unicode/utf8"

	jsonv2 "github.com/go-json-experiment/json"

	"github.com/directaid/directaid/backend/store"
)

// Decode reads a stored record, normalized. fastRecord reads the usual shape, and go-json-experiment/json
// the rest into the same struct (TestDecodeMatchesEncodingJSON) in a fifth of encoding/json's time and
// allocations.
func Decode(v []byte) (*store.Record, error) {
	if rec, ok := fastRecord(v); ok {
		return rec, nil
	}
	rec := new(store.Record)
	if err := jsonv2.Unmarshal(v, rec); err != nil {
		return nil, err
	}
	rec.Normalize()
	return rec, nil
}

// recordBox holds a decoded record and what its pointers point to: one allocation for all of them.
type recordBox struct {
	rec      store.Record
	lat, lon float64
	people   int
}

// fastRecord decodes a record as encoding/json writes it (compact, the members of store.Record, strings
// without escapes) with two allocations: the record with its pointers, and one string that every string
// member is a slice of. Anything else — an escape, whitespace, an unknown member, null — is !ok, and
// Decode falls back to the general decoder: the answer is the same either way
// (TestFastRecordMatchesEncodingJSON), this is only the common case made cheap (a 5 km page decodes 20
// records, an export every record).
func fastRecord(v []byte) (*store.Record, bool) {
	if len(v) < 2 || v[0] != '{' || v[len(v)-1] != '}' || !plainText(v) {
		return nil, false
	}
	box := new(recordBox)
	r := &box.rec
	d := recordDecoder{v: v, text: string(v), i: 1}
	for {
		key := d.str()
		if !d.ok || !d.byte(':') {
			return nil, false
		}
		switch key {
		case "id":
			r.ID = d.str()
		case "createdAt":
			r.CreatedAt = d.time()
		case "type":
			r.Type = d.str()
		case "source":
			r.Source = d.str()
		case "externalId":
			r.ExternalID = d.str()
		case "emergencySlug":
			r.EmergencySlug = d.str()
		case "title":
			r.Title = d.str()
		case "description":
			r.Description = d.str()
		case "category":
			r.Category = d.str()
		case "contactName":
			r.ContactName = d.str()
		case "contactWhatsapp":
			r.ContactWhatsapp = d.str()
		case "publishContact":
			r.PublishContact = d.bool()
		case "address":
			r.Address = d.str()
		case "neighborhood":
			r.Neighborhood = d.str()
		case "latitude":
			box.lat, r.Latitude = d.float(), &box.lat
		case "longitude":
			box.lon, r.Longitude = d.float(), &box.lon
		case "placeCode":
			r.PlaceCode = d.str()
		case "locationPrecision":
			r.LocationPrecision = d.str()
		case "municipioCode":
			r.MunicipioCode = d.str()
		case "urgency":
			r.Urgency = d.str()
		case "neededPeople":
			box.people, r.NeededPeople = d.int(), &box.people
		case "collectionCenterStatus":
			r.CollectionCenterStatus = d.str()
		case "contactE164":
			r.ContactE164 = d.str()
		case "status":
			r.Status = d.str()
		case "updatedAt":
			r.UpdatedAt = d.time()
		case "expiresAt":
			r.ExpiresAt = d.time()
		case "contactHidden":
			r.ContactHidden = d.bool()
		case "revision":
			r.Revision = d.int()
		case "publisher":
			r.Publisher = d.str()
		default:
			return nil, false
		}
		if !d.ok {
			return nil, false
		}
		if d.byte('}') {
			if d.i != len(v) {
				return nil, false
			}
			r.Normalize()
			return r, true
		}
		if !d.byte(',') {
			return nil, false
		}
	}
}

// Strings reads a compact JSON object whose members are all strings without escapes (as encoding/json
// writes a struct of strings that need none), calling set for each member in order, with one allocation
// that every key and value is a slice of. Anything else, or a member set refuses, is false: the caller
// then asks a general decoder (set may have been called for the members before).
func Strings(v []byte, set func(key, val string) bool) bool {
	if len(v) < 2 || v[0] != '{' || v[len(v)-1] != '}' || !plainText(v) {
		return false
	}
	d := recordDecoder{v: v, text: string(v), i: 1}
	if d.byte('}') {
		return d.i == len(v)
	}
	for {
		key := d.str()
		if !d.ok || !d.byte(':') {
			return false
		}
		val := d.str()
		if !d.ok || !set(key, val) {
			return false
		}
		if d.byte('}') {
			return d.i == len(v)
		}
		if !d.byte(',') {
			return false
		}
	}
}

// recordDecoder reads values at i; the first one it cannot read clears ok, and the rest read nothing.
type recordDecoder struct {
	v    []byte
	text string // v, shared by the strings read
	i    int
	ok   bool
}

func (d *recordDecoder) byte(c byte) bool {
	if d.i < len(d.v) && d.v[d.i] == c {
		d.i++
		return true
	}
	return false
}

// str reads a string: the text up to the next quote, since plainText ruled escapes out.
func (d *recordDecoder) str() string {
	d.ok = false
	if !d.byte('"') {
		return ""
	}
	n := bytes.IndexByte(d.v[d.i:], '"')
	if n < 0 {
		return ""
	}
	s := d.text[d.i : d.i+n]
	d.i, d.ok = d.i+n+1, true
	return s
}

// number is the text of a JSON number at i (its grammar is checked by the parse that follows).
func (d *recordDecoder) number() string {
	j := d.i
	for j < len(d.v) && (d.v[j] >= '0' && d.v[j] <= '9' || d.v[j] == '-' || d.v[j] == '.' || d.v[j] == 'e' || d.v[j] == 'E' || d.v[j] == '+') {
		j++
	}
	s := d.text[d.i:j]
	d.i = j
	return s
}

func (d *recordDecoder) float() float64 {
	s := d.number()
	f, err := strconv.ParseFloat(s, 64)
	d.ok = err == nil && validNumber(s)
	return f
}

func (d *recordDecoder) int() int {
	s := d.number()
	n, err := strconv.Atoi(s)
	d.ok = err == nil && validNumber(s)
	return n
}

func (d *recordDecoder) bool() bool {
	switch {
	case len(d.v)-d.i >= 4 && string(d.v[d.i:d.i+4]) == "true":
		d.i, d.ok = d.i+4, true
		return true
	case len(d.v)-d.i >= 5 && string(d.v[d.i:d.i+5]) == "false":
		d.i, d.ok = d.i+5, true
	default:
		d.ok = false
	}
	return false
}

// time reads a time as encoding/json does: time.Time's own UnmarshalJSON of the quoted string.
func (d *recordDecoder) time() (t time.Time) {
	start := d.i
	if d.str(); d.ok {
		d.ok = t.UnmarshalJSON(d.v[start:d.i]) == nil
	}
	return t
}

// plainText reports whether v is valid UTF-8 without a backslash or a control character: JSON whose
// strings hold no escapes (encoding/json escapes control characters) and, compact, no whitespace. Eight
// ASCII bytes are checked at once.
func plainText(v []byte) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	i := 0
	for i < len(v) {
		if i+8 <= len(v) {
			x := binary.LittleEndian.Uint64(v[i:])
			if x&highs == 0 {
				b := x ^ (ones * '\\')
				// a byte of x below 0x20, or a zero byte of b (a backslash of x): the usual bit trick
				if (x-ones*0x20)&^x&highs != 0 || (b-ones)&^b&highs != 0 {
					return false
				}
				i += 8
				continue
			}
		}
		c := v[i]
		if c < utf8.RuneSelf {
			if c < 0x20 || c == '\\' {
				return false
			}
			i++
			continue
		}
		r, size := utf8.DecodeRune(v[i:])
		if r == utf8.RuneError && size == 1 {
			return false
		}
		i += size
	}
	return true
}

// validNumber: JSON's number grammar, which strconv.ParseFloat is looser than (leading zeros, "1.", ".5",
// "+1").
func validNumber(s string) bool {
	i := 0
	if i < len(s) && s[i] == '-' {
		i++
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case i < len(s) && s[i] >= '1' && s[i] <= '9':
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
	default:
		return false
	}
	if i < len(s) && s[i] == '.' {
		i++
		if i == len(s) || s[i] < '0' || s[i] > '9' {
			return false
		}
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if i == len(s) || s[i] < '0' || s[i] > '9' {
			return false
		}
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
	}
	return i == len(s)
}
