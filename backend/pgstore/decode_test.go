package pgstore

import (
	"bytes"
	"context"
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/directaid/directaid/backend/store"
	"github.com/directaid/directaid/backend/store/recordjson"
	"github.com/directaid/directaid/backend/store/storetest"
)

// written are n records as a Create writes them (newCreateReq: doc, personal doc) with an updated_ms.
func written(t testing.TB, n int, record func(i int, t0 time.Time) *store.Record) (docs, pdocs [][]byte, ms []int64) {
	s := &Store{Now: time.Now}
	for i := range n {
		r, err := s.newCreateReq(context.Background(), record(i, time.UnixMilli(1786000000000+int64(i)*7919)))
		if err != nil {
			t.Fatal(err)
		}
		docs, pdocs, ms = append(docs, r.doc), append(pdocs, r.pdoc), append(ms, r.floor+int64(i%2))
	}
	return docs, pdocs, ms
}

// decodeV1 is the reference: the record that encoding/json reads from a doc and its personal doc, with
// updatedAt from its column, normalized.
func decodeV1(doc []byte, ms int64, pdoc []byte) (*store.Record, error) {
	rec := new(store.Record)
	if err := json.Unmarshal(doc, rec); err != nil {
		return nil, err
	}
	if pdoc != nil {
		var p personal
		if err := json.Unmarshal(pdoc, &p); err != nil {
			return nil, err
		}
		rec.ContactName, rec.ContactWhatsapp, rec.ContactE164, rec.Address = p.Name, p.Whatsapp, p.E164, p.Address
	}
	rec.UpdatedAt = time.UnixMilli(ms).UTC()
	rec.Normalize()
	return rec, nil
}

// TestDecodeMatchesEncodingJSON: decode reads the docs and personal docs that Create writes into the
// record encoding/json reads from them (recordjson's differential test covers the docs' shape at large).
func TestDecodeMatchesEncodingJSON(t *testing.T) {
	// Synthetic records, the bench's, and ones whose public and personal text JSON escapes.
	rng := rand.New(rand.NewPCG(15, 15))
	odd := []string{"", `comillas " y \ barra`, "línea\u2028sep", "\t<b>&amp;</b>", "Ñandú «á» 🚑"}
	docs, pdocs, ms := written(t, 600, func(i int, t0 time.Time) *store.Record {
		switch i % 3 {
		case 0:
			return storetest.SynthRecord(rng, t0, i)
		case 1:
			return storetest.UniformRecord(600, i, t0)
		}
		rec := storetest.SynthRecord(rng, t0, i)
		p := &rec.Publication
		p.Title, p.ContactName, p.Address = odd[i%len(odd)], odd[(i+1)%len(odd)], odd[(i+2)%len(odd)]
		p.ContactWhatsapp, p.ContactE164 = "", ""
		if i%6 == 2 {
			p.ContactName, p.Address = "", "" // no personal row
		}
		return rec
	})
	withPersonal := 0
	for i := range docs {
		want, err := decodeV1(docs[i], ms[i], pdocs[i])
		if err != nil {
			t.Fatal(err)
		}
		got, err := decode(docs[i], ms[i], pdocs[i])
		if err != nil {
			t.Fatalf("%s / %s: %v", docs[i], pdocs[i], err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("decode differs from encoding/json:\n got %+v\nwant %+v\nfrom %s / %s", got, want, docs[i], pdocs[i])
		}
		if pdocs[i] != nil {
			withPersonal++
		}
	}
	if withPersonal == 0 || withPersonal == len(docs) {
		t.Fatalf("%d of %d records with personal text: one case is missing", withPersonal, len(docs))
	}
	for _, bad := range [][2]string{{`{"id":`, ""}, {`{"id":"x"}`, `{"n":`}} {
		var pdoc []byte
		if bad[1] != "" {
			pdoc = []byte(bad[1])
		}
		if _, err := decode([]byte(bad[0]), 1, pdoc); err == nil {
			t.Errorf("%s / %s decoded without error", bad[0], bad[1])
		}
	}
}

// BenchmarkDecode: a record of the bench as PostgreSQL returns it (doc, updated_ms, personal doc) read
// into a store.Record, as a list does for each record of its page: by decode, and by encoding/json as
// decode did before (decodeV1).
//
//	go test ./backend/pgstore -run '^$' -bench 'Decode$' -benchmem
func BenchmarkDecode(b *testing.B) {
	docs, pdocs, ms := written(b, 1000, func(i int, t0 time.Time) *store.Record { return storetest.UniformRecord(1_000_000, i, t0) })
	for name, dec := range map[string]func([]byte, int64, []byte) (*store.Record, error){"decode": decode, "encoding-json": decodeV1} {
		b.Run(name, func(b *testing.B) {
			i := 0
			for b.Loop() {
				k := i % len(docs)
				if _, err := dec(docs[k], ms[k], pdocs[k]); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}

// personalV1 is the reference of putPersonal: what encoding/json reads from a personal doc.
func personalV1(doc []byte) (personal, error) {
	var p personal
	err := json.Unmarshal(doc, &p)
	return p, err
}

// samePersonal fails t unless putPersonal reads doc as encoding/json does: the same text, or an error.
func samePersonal(t *testing.T, doc []byte) (fast bool) {
	t.Helper()
	want, werr := personalV1(doc)
	var rec store.Record
	err := putPersonal(&rec, doc)
	got := personal{rec.ContactName, rec.ContactWhatsapp, rec.ContactE164, rec.Address}
	switch {
	case (err == nil) != (werr == nil):
		t.Fatalf("putPersonal(%q): error %v, encoding/json's %v", doc, err, werr)
	case err == nil && got != want:
		t.Fatalf("putPersonal(%q) = %+v, encoding/json reads %+v", doc, got, want)
	}
	return recordjson.Strings(doc, new(personal).set)
}

// TestPersonalMatchesEncodingJSON: putPersonal reads the personal docs that takePersonal writes, and
// thousands of damaged or unusual variants of them (cut, a byte changed, whitespace, null, a number, an
// unknown, repeated or differently cased member), as encoding/json does; the hand reader takes the
// written docs without escapes.
func TestPersonalMatchesEncodingJSON(t *testing.T) {
	_, pdocs, _ := written(t, 300, func(i int, t0 time.Time) *store.Record {
		rec := storetest.UniformRecord(300, i, t0)
		odd := []string{"", `comillas " y \ barra`, "línea\u2028sep", "\t<b>&amp;</b>", "Ñandú «á» 🚑", "Ana"}
		rec.ContactName, rec.ContactWhatsapp, rec.Address = odd[i%len(odd)], odd[(i/6)%len(odd)], odd[(i/36)%len(odd)]
		return rec
	})
	fast := 0
	var docs [][]byte
	for _, doc := range pdocs {
		if doc == nil {
			continue
		}
		docs = append(docs, doc)
		if samePersonal(t, doc) {
			fast++
		} else if !bytes.Contains(doc, []byte(`\`)) {
			t.Fatalf("the hand reader refused a doc without escapes: %s", doc)
		}
	}
	if fast < len(docs)/10 {
		t.Fatalf("the hand reader read %d of %d docs", fast, len(docs))
	}
	rng := rand.New(rand.NewPCG(7, 3))
	edits := []func(v []byte) []byte{
		func(v []byte) []byte { return v[:rng.IntN(len(v))] },
		func(v []byte) []byte { return slices.Insert(slices.Clone(v), 1+rng.IntN(len(v)-1), ' ') },
		func(v []byte) []byte {
			w := slices.Clone(v)
			const odd = "\"09,:{}nx \\\t\x01\xff"
			w[rng.IntN(len(w))] = odd[rng.IntN(len(odd))]
			return w
		},
		func(v []byte) []byte { return bytes.Replace(v, []byte(`"n":`), []byte(`"N":`), 1) },
		func(v []byte) []byte { return bytes.Replace(v, []byte(`{`), []byte(`{"x":"1",`), 1) },
		func(v []byte) []byte { return bytes.Replace(v, []byte(`{`), []byte(`{"a":"antes",`), 1) },
		func(v []byte) []byte { return bytes.Replace(v, []byte(`{`), []byte(`{"e":null,`), 1) },
		func(v []byte) []byte { return bytes.Replace(v, []byte(`{`), []byte(`{"w":7,`), 1) },
		func(v []byte) []byte { return append(slices.Clone(v), '}') },
		func(v []byte) []byte { return []byte(`{}`) },
	}
	read := 0
	for n := range 10000 {
		v := edits[n%len(edits)](docs[rng.IntN(len(docs))])
		if samePersonal(t, v) {
			read++
		}
	}
	if read == 0 {
		t.Fatal("no variant was read by hand: the edits test nothing")
	}
	t.Logf("%d of %d docs by hand; %d of 10000 variants", fast, len(docs), read)
}

// FuzzPersonal: whatever bytes a personal doc holds, putPersonal reads them as encoding/json does (the
// same text, or an error). make test runs it for FUZZTIME.
func FuzzPersonal(f *testing.F) {
	for _, doc := range []string{`{"n":"Ana Gómez","w":"+57 300 1234567","e":"+573001234567","a":"Calle 1 # 2-3"}`, `{"a":"x"}`, `{}`, `{"n":"\u00f1"}`} {
		f.Add([]byte(doc))
	}
	f.Fuzz(func(t *testing.T, doc []byte) { samePersonal(t, doc) })
}
