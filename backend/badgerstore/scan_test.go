package badgerstore

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

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
	rng := rand.New(rand.NewPCG(5, 8))
	var recs []*store.Record
	for i := range 3000 {
		switch i % 3 {
		case 0:
			recs = append(recs, storetest.SynthRecord(rng, time.UnixMilli(1786000000000+int64(i)*7919), i))
		case 1:
			recs = append(recs, uniformRecord(3000, i, time.UnixMilli(1786000000000+int64(i)*104729)))
		default:
			recs = append(recs, everyField(rng, i))
		}
	}
	legacy := storetest.SynthRecord(rng, time.UnixMilli(1786000000000), 1)
	recs = append(recs, legacy) // no status, no updatedAt: Normalize fills them in
	for _, rec := range recs {
		v, err := json.Marshal(rec)
		if err != nil {
			t.Fatal(err)
		}
		want := new(store.Record)
		if err := json.Unmarshal(v, want); err != nil {
			t.Fatal(err)
		}
		want.Normalize()
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
