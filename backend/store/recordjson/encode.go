package recordjson

import (
	"encoding/json"
	"math"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/directaid/directaid/backend/store"
)

// Encode writes rec as the stores keep it: byte for byte what encoding/json.Marshal writes of a
// store.Record (TestEncodeMatchesEncodingJSON, FuzzEncode), by hand, because every publication and every
// update writes one (reflection was a twentieth of a publication's CPU). A time encoding/json refuses (a
// year outside 0–9999) is left to encoding/json, for its error.
func Encode(rec *store.Record) ([]byte, error) {
	for _, t := range [...]time.Time{rec.CreatedAt, rec.UpdatedAt, rec.ExpiresAt} {
		if y := t.Year(); y < 0 || y > 9999 {
			return json.Marshal(rec)
		}
	}
	p := &rec.Publication
	// The members' names, the times and the numbers take under 560 bytes; the strings their own (more
	// only when escaped): one allocation for the usual record.
	size := 560
	for _, s := range [...]string{rec.ID, p.Type, p.Source, p.ExternalID, p.EmergencySlug, p.Title, p.Description, p.Category, p.ContactName,
		p.ContactWhatsapp, p.Address, p.Neighborhood, p.PlaceCode, p.LocationPrecision, p.MunicipioCode, p.Urgency, p.CollectionCenterStatus,
		p.ContactE164, rec.Status, rec.Publisher, rec.HiddenFrom, rec.HiddenBy} {
		size += len(s)
	}
	e := encoder{b: make([]byte, 0, size)}
	e.b = append(e.b, '{')
	e.str("id", rec.ID)
	e.time("createdAt", rec.CreatedAt)
	e.str("type", p.Type)
	e.str("source", p.Source)
	e.str("externalId", p.ExternalID)
	e.optStr("emergencySlug", p.EmergencySlug)
	e.str("title", p.Title)
	e.optStr("description", p.Description)
	e.str("category", p.Category)
	e.str("contactName", p.ContactName)
	e.str("contactWhatsapp", p.ContactWhatsapp)
	e.bool("publishContact", p.PublishContact)
	e.optStr("address", p.Address)
	e.optStr("neighborhood", p.Neighborhood)
	if p.Latitude != nil {
		e.float("latitude", *p.Latitude)
	}
	if p.Longitude != nil {
		e.float("longitude", *p.Longitude)
	}
	e.optStr("placeCode", p.PlaceCode)
	e.optStr("locationPrecision", p.LocationPrecision)
	e.optStr("municipioCode", p.MunicipioCode)
	e.optStr("urgency", p.Urgency)
	if p.NeededPeople != nil {
		e.int("neededPeople", *p.NeededPeople)
	}
	e.optStr("collectionCenterStatus", p.CollectionCenterStatus)
	e.str("contactE164", p.ContactE164)
	e.optStr("status", rec.Status)
	if !rec.UpdatedAt.IsZero() {
		e.time("updatedAt", rec.UpdatedAt)
	}
	if !rec.ExpiresAt.IsZero() {
		e.time("expiresAt", rec.ExpiresAt)
	}
	if rec.ContactHidden {
		e.bool("contactHidden", true)
	}
	if rec.Revision != 0 {
		e.int("revision", rec.Revision)
	}
	e.optStr("publisher", rec.Publisher)
	e.optStr("hiddenFrom", rec.HiddenFrom)
	e.optStr("hiddenBy", rec.HiddenBy)
	e.b = append(e.b, '}')
	return e.b, nil
}

// encoder appends the members of one JSON object.
type encoder struct {
	b []byte
}

// key writes a member's name and colon, after a comma unless it is the first member.
func (e *encoder) key(k string) {
	if e.b[len(e.b)-1] != '{' {
		e.b = append(e.b, ',')
	}
	e.b = append(e.b, '"')
	e.b = append(e.b, k...)
	e.b = append(e.b, '"', ':')
}

func (e *encoder) str(k, v string) {
	e.key(k)
	e.b = appendString(e.b, v)
}

// optStr is a string member with omitempty.
func (e *encoder) optStr(k, v string) {
	if v != "" {
		e.str(k, v)
	}
}

func (e *encoder) bool(k string, v bool) {
	e.key(k)
	e.b = strconv.AppendBool(e.b, v)
}

func (e *encoder) int(k string, v int) {
	e.key(k)
	e.b = strconv.AppendInt(e.b, int64(v), 10)
}

// time writes t as time.Time.MarshalJSON does (RFC 3339 with the nanoseconds it has), its year already
// checked to be in 0–9999.
func (e *encoder) time(k string, t time.Time) {
	e.key(k)
	e.b = append(e.b, '"')
	e.b = t.AppendFormat(e.b, time.RFC3339Nano)
	e.b = append(e.b, '"')
}

// float writes f as encoding/json writes a float64: the shortest form that reads back the same, in
// exponent form only below 1e-6 or from 1e21, with a two-digit exponent shortened (1e-07 → 1e-7). A NaN or
// an infinity, which encoding/json refuses, cannot reach a record: validation bounds the coordinates.
func (e *encoder) float(k string, f float64) {
	e.key(k)
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	e.b = strconv.AppendFloat(e.b, f, format, -1, 64)
	if format == 'e' {
		// clean up e-09 to e-9
		n := len(e.b)
		if n >= 4 && e.b[n-4] == 'e' && e.b[n-3] == '-' && e.b[n-2] == '0' {
			e.b[n-2] = e.b[n-1]
			e.b = e.b[:n-1]
		}
	}
}

const hex = "0123456789abcdef"

// appendString appends s quoted as encoding/json quotes a string: HTML's <, > and & escaped, U+2028 and
// U+2029 escaped, control characters as \n, \r, \t, \b, \f or \u00XX, invalid UTF-8 as U+FFFD.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
