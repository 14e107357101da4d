package recordjson

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	jsonv2 "github.com/go-json-experiment/json"

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
	rec.Revision = rng.IntN(3)
	if rng.IntN(2) == 0 {
		rec.Publisher = "5f0c2e9a41b7d3861ca2f04e"
	}
	return rec
}

// TestDecodeMatchesEncodingJSON: Decode (by hand or go-json-experiment/json) reads what encoding/json
// wrote into the very record encoding/json reads back (then Normalize), for varied records, records with
// every field and odd text, records stored before status and updatedAt existed, and all of them as
// PostgreSQL's docs.
func TestDecodeMatchesEncodingJSON(t *testing.T) {
	for _, v := range storedRecords(t, 3000) {
		want, err := decodeV1(v)
		if err != nil {
			t.Fatal(err)
		}
		got, err := Decode(v)
		if err != nil {
			t.Fatalf("%s: %v", v, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("Decode differs from encoding/json:\n got %+v\nwant %+v\nfrom %s", got, want, v)
		}
	}
	if _, err := Decode([]byte(`{"id":`)); err == nil {
		t.Error("a truncated record decoded without error")
	}
}

// storedRecords are n varied records as the stores write them (encoding/json): synthetic, the bench's,
// records with every field and odd text, and one stored before status and updatedAt existed; each as
// Badger's value and as PostgreSQL's doc (pgDoc).
func storedRecords(t testing.TB, n int) [][]byte {
	rng := rand.New(rand.NewPCG(5, 8))
	var recs []*store.Record
	for i := range n {
		switch i % 3 {
		case 0:
			recs = append(recs, storetest.SynthRecord(rng, time.UnixMilli(1786000000000+int64(i)*7919), i))
		case 1:
			recs = append(recs, storetest.UniformRecord(n, i, time.UnixMilli(1786000000000+int64(i)*104729)))
		default:
			recs = append(recs, everyField(rng, i))
		}
	}
	legacy := storetest.SynthRecord(rng, time.UnixMilli(1786000000000), 1)
	recs = append(recs, legacy) // no status, no updatedAt: Normalize fills them in
	var out [][]byte
	for _, rec := range recs {
		for _, r := range []*store.Record{rec, pgDoc(rec)} {
			v, err := json.Marshal(r)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, v)
		}
	}
	return out
}

// pgDoc is rec as pgstore keeps it in its doc column: without the personal text (in directaid_personal)
// nor updatedAt (a column). TestDecodeMatchesEncodingJSON in pgstore holds pgstore's own writes to it.
func pgDoc(rec *store.Record) *store.Record {
	pub := *rec
	pub.ContactName, pub.ContactWhatsapp, pub.ContactE164, pub.Address = "", "", "", ""
	pub.UpdatedAt = time.Time{}
	return &pub
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
	recs := storedRecords(t, 750)
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

// FuzzFastRecord: whatever bytes a stored record holds, fastRecord either refuses them (Decode then
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

// BenchmarkDecode: decoding the bench's records as stored (encoding/json) by Badger and by PostgreSQL
// (pgDoc), by Decode and by the general decoder it falls back to.
//
//	go test ./backend/store/recordjson -run '^$' -bench Decode -benchmem
func BenchmarkDecode(b *testing.B) {
	for _, shape := range []struct {
		name string
		doc  func(*store.Record) *store.Record
	}{{"badger", func(r *store.Record) *store.Record { return r }}, {"postgres", pgDoc}} {
		vals := make([][]byte, 1000)
		for i := range vals {
			v, err := json.Marshal(shape.doc(storetest.UniformRecord(1_000_000, i, time.UnixMilli(1786000000000+int64(i)*104729))))
			if err != nil {
				b.Fatal(err)
			}
			vals[i] = v
		}
		for _, dec := range []struct {
			name   string
			decode func([]byte) (*store.Record, error)
		}{
			{"Decode", Decode},
			{"jsonv2", func(v []byte) (*store.Record, error) {
				rec := new(store.Record)
				err := jsonv2.Unmarshal(v, rec)
				return rec, err
			}},
			{"encoding-json", func(v []byte) (*store.Record, error) {
				rec := new(store.Record)
				err := json.Unmarshal(v, rec)
				return rec, err
			}},
		} {
			b.Run(shape.name+"/"+dec.name, func(b *testing.B) {
				i := 0
				for b.Loop() {
					if _, err := dec.decode(vals[i%len(vals)]); err != nil {
						b.Fatal(err)
					}
					i++
				}
			})
		}
	}
}

// TestEncodeMatchesEncodingJSON: Encode writes byte for byte what encoding/json writes, for varied
// records, records with every field and odd text (escapes, HTML, U+2028, invalid UTF-8), exponent-form
// and negative zero coordinates, and a record with every member of store.Record set (found by reflection, so a
// member added to the struct and not to Encode fails here).
func TestEncodeMatchesEncodingJSON(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 2))
	var recs []*store.Record
	for i := range 3000 {
		var rec *store.Record
		switch i % 3 {
		case 0:
			rec = storetest.SynthRecord(rng, time.UnixMilli(1786000000000+int64(i)*7919), i)
		case 1:
			rec = storetest.UniformRecord(3000, i, time.UnixMilli(1786000000000+int64(i)*104729))
		default:
			rec = everyField(rng, i)
		}
		recs = append(recs, rec, pgDoc(rec))
	}
	odd := everyField(rng, 1)
	odd.Title, odd.Description, odd.Address = "bad \xff\xfe utf-8 \xe2\x80", "\b\f\x01\x1f\u2028\u2029<>&\"\\", "\u00a0\ufeff🚑"
	odd.HiddenFrom, odd.HiddenBy = store.StatusOpen, store.ActorCommunity
	odd.CreatedAt = time.Date(2026, 8, 11, 10, 0, 0, 123456789, time.FixedZone("COT", -5*3600))
	recs = append(recs, odd)
	for _, f := range []float64{0, math.Copysign(0, -1), 1e-7, -1.5e-9, 1e21, 123456789012345678901234.0, 4.000001, -75.68123456789012} {
		r := *odd
		lat, lon := f, -f
		r.Latitude, r.Longitude = &lat, &lon
		recs = append(recs, &r)
	}
	// Every member set, by reflection.
	var set func(v reflect.Value)
	set = func(v reflect.Value) {
		for i := range v.NumField() {
			f, sf := v.Field(i), v.Type().Field(i)
			if sf.Anonymous {
				set(f)
				continue
			}
			switch f.Kind() {
			case reflect.String:
				f.SetString("x<é")
			case reflect.Bool:
				f.SetBool(true)
			case reflect.Int:
				f.SetInt(7)
			case reflect.Pointer:
				switch f.Type().Elem().Kind() {
				case reflect.Float64:
					x := 4.5
					f.Set(reflect.ValueOf(&x))
				case reflect.Int:
					x := 3
					f.Set(reflect.ValueOf(&x))
				default:
					t.Fatalf("member %s: a pointer Encode does not know", sf.Name)
				}
			case reflect.Struct:
				if f.Type() != reflect.TypeFor[time.Time]() {
					t.Fatalf("member %s: a struct Encode does not know", sf.Name)
				}
				f.Set(reflect.ValueOf(time.Date(2026, 8, 11, 10, 0, 0, 5, time.UTC)))
			default:
				t.Fatalf("member %s: a kind Encode does not know (%s)", sf.Name, f.Kind())
			}
		}
	}
	full := new(store.Record)
	set(reflect.ValueOf(full).Elem())
	recs = append(recs, full, new(store.Record))
	for _, rec := range recs {
		want, err := json.Marshal(rec)
		if err != nil {
			t.Fatal(err)
		}
		got, err := Encode(rec)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("Encode differs from encoding/json:\n got %s\nwant %s", got, want)
		}
	}
	far := *odd
	far.CreatedAt = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)
	if _, err := Encode(&far); err == nil {
		t.Error("a record created in the year 10000 was encoded: encoding/json refuses it")
	}
}

// FuzzEncode: whatever the strings and numbers of a record, Encode writes what encoding/json writes.
func FuzzEncode(f *testing.F) {
	f.Add("Agua potable", "Necesitamos agua <b>&", "Calle 1 # 2-3", -75.68, 4.53, 12, int64(0))
	f.Add("\xff\u2028", "\x00\b\f\"\\", "", 1e-7, -1e21, 0, int64(123456789))
	f.Fuzz(func(t *testing.T, title, desc, addr string, lat, lon float64, people int, nanos int64) {
		if math.IsNaN(lat) || math.IsInf(lat, 0) || math.IsNaN(lon) || math.IsInf(lon, 0) {
			return // encoding/json refuses them; validation bounds coordinates
		}
		rec := storetest.SynthRecord(rand.New(rand.NewPCG(1, 2)), time.Unix(1786000000, nanos%1e9), 1)
		rec.Title, rec.Description, rec.Address = title, desc, addr
		rec.Latitude, rec.Longitude, rec.NeededPeople = &lat, &lon, &people
		want, err := json.Marshal(rec)
		if err != nil {
			t.Skip(err)
		}
		got, err := Encode(rec)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("Encode differs from encoding/json:\n got %s\nwant %s", got, want)
		}
	})
}

// BenchmarkEncode: writing the bench's records, by Encode and by encoding/json.
//
//	go test ./backend/store/recordjson -run '^$' -bench Encode -benchmem
func BenchmarkEncode(b *testing.B) {
	recs := make([]*store.Record, 1000)
	for i := range recs {
		recs[i] = storetest.UniformRecord(1_000_000, i, time.UnixMilli(1786000000000+int64(i)*104729))
	}
	for _, enc := range []struct {
		name   string
		encode func(*store.Record) ([]byte, error)
	}{{"Encode", Encode}, {"encoding-json", func(r *store.Record) ([]byte, error) { return json.Marshal(r) }}} {
		b.Run(enc.name, func(b *testing.B) {
			for i := 0; b.Loop(); i++ {
				if _, err := enc.encode(recs[i%len(recs)]); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
