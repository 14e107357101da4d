package badgerstore

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/dgraph-io/badger/v4"

	"github.com/directaid/directaid/backend/store"
	"github.com/directaid/directaid/backend/store/storetest"
	"github.com/directaid/directaid/schema"
)

// oddText is text that JSON writes escaped or that only some decoders get right.
var oddText = []string{"", "Ñandú «á» — ü", `comillas " y \ barra`, "<b>&amp;</b>", "línea\u2028sep\u2029", "\t=HYPERLINK(1)", "emoji 🚑 y \u00a0",
	"\x7f control", strings.Repeat("largo ", 100)}

// everyField is a record with every field of store.Record set, its strings drawn from oddText.
func everyField(rng *rand.Rand, i int) *store.Record {
	t := time.Date(2026, 8, 11, 10, 0, 0, 0, time.UTC).Add(time.Duration(i) * 1234567 * time.Microsecond)
	rec := storetest.SynthRecord(rng, t, i)
	p := &rec.Publication
	pick := func() string { return oddText[rng.IntN(len(oddText))] }
	p.Title, p.Description, p.Address, p.Neighborhood, p.ContactName = pick(), pick(), pick(), pick(), pick()
	p.PlaceCode, p.LocationPrecision, p.MunicipioCode, p.CollectionCenterStatus = "63001001", schema.PrecisionGPS, "63001", "needs_volunteers"
	lat, lon, n := -4.2+rng.Float64()*17, -79+rng.Float64()*12, rng.IntN(10001)
	p.Latitude, p.Longitude, p.NeededPeople = &lat, &lon, &n
	rec.Status = store.Statuses[rng.IntN(len(store.Statuses))]
	rec.UpdatedAt = t.Add(time.Duration(rng.IntN(1e6)) * time.Millisecond)
	rec.ExpiresAt = t.Add(14 * 24 * time.Hour)
	rec.ContactHidden = rng.IntN(2) == 0
	return rec
}

// TestDecodeRecordMatchesEncodingJSON: decodeRecord (go-json-experiment/json) reads what encoding/json
// wrote into the very record encoding/json reads back (then Normalize), for varied records, records with
// every field and odd text, and records stored before status and updatedAt existed.
func TestDecodeRecordMatchesEncodingJSON(t *testing.T) {
	for _, v := range storedRecords(t, 3000) {
		want, err := decodeV1(v)
		if err != nil {
			t.Fatal(err)
		}
		got, err := decodeRecord(v)
		if err != nil {
			t.Fatalf("%s: %v", v, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("decodeRecord differs from encoding/json:\n got %+v\nwant %+v\nfrom %s", got, want, v)
		}
	}
	if _, err := decodeRecord([]byte(`{"id":`)); err == nil {
		t.Error("a truncated record decoded without error")
	}
}

// storedRecords are n varied records as the store writes them (encoding/json): synthetic, the bench's,
// records with every field and odd text, and one stored before status and updatedAt existed.
func storedRecords(t testing.TB, n int) [][]byte {
	rng := rand.New(rand.NewPCG(5, 8))
	var recs []*store.Record
	for i := range n {
		switch i % 3 {
		case 0:
			recs = append(recs, storetest.SynthRecord(rng, time.UnixMilli(1786000000000+int64(i)*7919), i))
		case 1:
			recs = append(recs, uniformRecord(n, i, time.UnixMilli(1786000000000+int64(i)*104729)))
		default:
			recs = append(recs, everyField(rng, i))
		}
	}
	legacy := storetest.SynthRecord(rng, time.UnixMilli(1786000000000), 1)
	recs = append(recs, legacy) // no status, no updatedAt: Normalize fills them in
	out := make([][]byte, len(recs))
	for i, rec := range recs {
		v, err := json.Marshal(rec)
		if err != nil {
			t.Fatal(err)
		}
		out[i] = v
	}
	return out
}

// decodeV1 is the reference: what encoding/json reads from v, normalized as the store does.
func decodeV1(v []byte) (*store.Record, error) {
	rec := new(store.Record)
	if err := json.Unmarshal(v, rec); err != nil {
		return nil, err
	}
	rec.Normalize()
	return rec, nil
}

// TestFastRecordMatchesEncodingJSON: fastRecord decodes every stored record without an escape (so the
// fast path is taken: the bench's records, most synthetic ones) into what encoding/json reads, and of
// thousands of damaged or unusual variants (cut, a byte changed, whitespace, null, an unknown or
// differently cased member, numbers JSON does not allow) it accepts none that encoding/json would read
// otherwise or refuse.
func TestFastRecordMatchesEncodingJSON(t *testing.T) {
	recs := storedRecords(t, 1500)
	fast := 0
	for _, v := range recs {
		got, ok := fastRecord(v)
		if !ok {
			if !bytes.Contains(v, []byte(`\`)) {
				t.Fatalf("fastRecord refused a record without escapes: %s", v)
			}
			continue
		}
		fast++
		want, err := decodeV1(v)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("fastRecord differs from encoding/json:\n got %+v\nwant %+v\nfrom %s", got, want, v)
		}
	}
	if fast < len(recs)/2 {
		t.Fatalf("the fast path read %d of %d records", fast, len(recs))
	}
	rng := rand.New(rand.NewPCG(9, 2))
	edits := []func(v []byte) []byte{
		func(v []byte) []byte { return v[:rng.IntN(len(v))] },
		func(v []byte) []byte { return slices.Insert(slices.Clone(v), 1+rng.IntN(len(v)-1), ' ') },
		func(v []byte) []byte {
			w := slices.Clone(v)
			const odd = "\"09.eE+-,:{}tfnxA \\\t\x01"
			w[rng.IntN(len(w))] = odd[rng.IntN(len(odd))]
			return w
		},
		func(v []byte) []byte { return bytes.Replace(v, []byte(`"title"`), []byte(`"Title"`), 1) },
		func(v []byte) []byte { return bytes.Replace(v, []byte(`{`), []byte(`{"extra":1,`), 1) },
		func(v []byte) []byte {
			return bytes.Replace(v, []byte(`"latitude":`), []byte(`"latitude":null,"x":`), 1)
		},
		func(v []byte) []byte { return bytes.Replace(v, []byte(`"latitude":`), []byte(`"latitude":0`), 1) },
		func(v []byte) []byte {
			return bytes.Replace(v, []byte(`"neededPeople":`), []byte(`"neededPeople":+`), 1)
		},
		func(v []byte) []byte {
			return bytes.Replace(v, []byte(`"neededPeople":`), []byte(`"neededPeople":1.5e`), 1)
		},
		func(v []byte) []byte {
			return bytes.Replace(v, []byte(`"publishContact":true`), []byte(`"publishContact":tru`), 1)
		},
		func(v []byte) []byte { return bytes.Replace(v, []byte(`Z"`), []byte(`+02:00"`), 1) },
		func(v []byte) []byte { return bytes.Replace(v, []byte(`Z"`), []byte(`"`), 1) },
		func(v []byte) []byte { return append(slices.Clone(v), '}') },
		func(v []byte) []byte { return append(slices.Clone(v[:len(v)-1]), []byte(`,"id":"otro"}`)...) },
		func(v []byte) []byte { return bytes.Replace(v, []byte(`a`), []byte{0xff}, 1) },
	}
	accepted := 0
	for n := range 20000 {
		v := edits[n%len(edits)](recs[rng.IntN(len(recs))])
		got, ok := fastRecord(v)
		want, err := decodeV1(v)
		if !ok {
			continue
		}
		accepted++
		if err != nil {
			t.Fatalf("fastRecord read what encoding/json refuses (%v): %s", err, v)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("fastRecord differs from encoding/json:\n got %+v\nwant %+v\nfrom %s", got, want, v)
		}
	}
	if accepted == 0 {
		t.Fatal("no variant was read: the edits test nothing")
	}
	t.Logf("%d of %d records on the fast path; %d of 20000 variants read", fast, len(recs), accepted)
}

// TestPlainText: plainText's eight-bytes-at-once answer is the byte-by-byte one, for text of every
// alignment with a backslash, a control character, a high byte or broken UTF-8 anywhere.
func TestPlainText(t *testing.T) {
	naive := func(v []byte) bool {
		return utf8.Valid(v) && !slices.ContainsFunc(v, func(c byte) bool { return c < 0x20 || c == '\\' })
	}
	rng := rand.New(rand.NewPCG(4, 4))
	alphabet := []byte("abc {}\"\\\x00\x1f\x20\x7f\xc3\xb1\xe2\x80\x94\xff")
	seen := map[bool]int{}
	for range 50000 {
		v := make([]byte, rng.IntN(40))
		for i := range v {
			v[i] = 'a' + byte(rng.IntN(26))
			if rng.IntN(30) == 0 {
				v[i] = alphabet[rng.IntN(len(alphabet))]
			}
		}
		want := naive(v)
		seen[want]++
		if got := plainText(v); got != want {
			t.Fatalf("plainText(%q) = %v, want %v", v, got, want)
		}
	}
	if seen[true] == 0 || seen[false] == 0 {
		t.Fatalf("one-sided cases: %v", seen)
	}
}

// TestReadRecords: readRecords returns what getTxn returns, id by id, for newest-first runs with gaps
// of every size (stepping and seeking), for unordered ids and short lists (point reads), and says
// store.ErrNotFound for a missing id.
func TestReadRecords(t *testing.T) {
	s := open(t, Options{Dir: t.TempDir()})
	defer s.Close()
	recs := storetest.Seed(t, s, 600, time.Date(2026, 8, 11, 10, 0, 0, 0, time.UTC), 3*time.Second)
	ids := make([]string, len(recs))
	for i, r := range recs {
		ids[i] = r.ID
	}
	slices.Sort(ids)
	slices.Reverse(ids)
	rng := rand.New(rand.NewPCG(3, 4))
	check := func(name string, sel []string) {
		t.Helper()
		err := s.db.View(func(txn *badger.Txn) error {
			got, err := readRecords(txn, sel, nil)
			if err != nil {
				return err
			}
			if len(got) != len(sel) {
				t.Fatalf("%s: %d records for %d ids", name, len(got), len(sel))
			}
			for i, id := range sel {
				want, err := getTxn(txn, id)
				if err != nil {
					return err
				}
				if !reflect.DeepEqual(got[i], want) {
					t.Fatalf("%s: record %d is %s, want %s", name, i, got[i].ID, id)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	check("all", ids)
	for _, keep := range []int{1, 3, 9, 40} { // gaps below and above orderedReadSteps
		var sel []string
		for _, id := range ids {
			if rng.IntN(keep) == 0 {
				sel = append(sel, id)
			}
		}
		check(fmt.Sprintf("one in %d", keep), sel)
	}
	shuffled := slices.Clone(ids[:200])
	rng.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	check("unordered", shuffled)
	check("short", ids[100:110])

	missing := slices.Clone(ids[:100])
	missing[50] = missing[50][:len(missing[50])-1] + "~" // an id that no record has
	slices.SortFunc(missing, func(a, b string) int { return strings.Compare(b, a) })
	err := s.db.View(func(txn *badger.Txn) error { _, err := readRecords(txn, missing, nil); return err })
	if !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a missing id: %v, want store.ErrNotFound", err)
	}
}

// FuzzFastRecord: whatever bytes a stored record holds, fastRecord either refuses them (decodeRecord then
// asks the general decoder) or reads exactly what encoding/json reads. make test runs it for FUZZTIME.
func FuzzFastRecord(f *testing.F) {
	for _, v := range storedRecords(f, 30) {
		f.Add(v)
	}
	f.Fuzz(func(t *testing.T, v []byte) {
		got, ok := fastRecord(v)
		if !ok {
			return
		}
		want, err := decodeV1(v)
		if err != nil {
			t.Fatalf("fastRecord read what encoding/json refuses (%v): %s", err, v)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("fastRecord differs from encoding/json:\n got %+v\nwant %+v\nfrom %s", got, want, v)
		}
	})
}
