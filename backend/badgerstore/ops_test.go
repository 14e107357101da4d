package badgerstore

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/dgraph-io/badger/v4"

	"github.com/directaid/directaid/backend/store"
)

// TestVerify: a database the store wrote is consistent; one with an index entry lost, an orphan entry
// and a stale aggregate, municipio aggregate and scoped cell counter is not, and the report names each kind without any record content.
func TestVerify(t *testing.T) {
	dir := t.TempDir()
	s := open(t, Options{Dir: dir})
	recs := records("verify", 20)
	for _, r := range recs {
		r.MunicipioCode = "63001" // its aggregates and scoped cell counters are checked too
		if _, _, err := s.Create(context.Background(), r); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Probe(context.Background()); err != nil {
		t.Fatal(err)
	}
	if v := closeVerify(t, s, dir); len(v.Problems) > 0 || v.Records["open"] != len(recs) || v.Checked < len(recs)*4 {
		t.Fatalf("a database the store wrote: %+v", v)
	}

	entries := indexEntries(recs[3])
	report := plantVerify(t, dir, func(txn *badger.Txn) error {
		for _, e := range entries {
			if strings.HasPrefix(string(e.k), string(prefixTime)) {
				if err := txn.Delete(e.k); err != nil { // a lost entry
					return err
				}
				break
			}
		}
		if err := txn.Set(append(append([]byte{}, prefixGeo...), "zzzzzz-orphan"...), []byte("x")); err != nil {
			return err
		}
		stale := (&aggregate{cells: map[uint16]int64{1: 1}}).encode()
		cell := geohash(*recs[0].Latitude, *recs[0].Longitude, geoPrecision)
		if err := txn.Set(muniKey(scopeOf(recs[0].EmergencySlug, "63001")), stale); err != nil {
			return err
		}
		if err := txn.Set(cellCountKey(scopeOf("", "63001"), cell), encodeCellCount(0, cellCount{{1, 1}})); err != nil {
			return err
		}
		return txn.Set(aggKey(recs[0].EmergencySlug), stale)
	})
	for _, want := range []string{"lacks its time index entry", "belong to no record", "aggregate of " + recs[0].EmergencySlug + " differs",
		"aggregate of a municipio differs", "counter of a geographic cell differs"} {
		if !strings.Contains(report, want) {
			t.Errorf("the report does not say %q:\n%s", want, report)
		}
	}
	if strings.Contains(report, recs[3].ContactWhatsapp) || strings.Contains(report, recs[3].ContactName) {
		t.Errorf("the report holds contact data:\n%s", report)
	}
}

// TestVerifyStrayCounters: counters left at zero by records that moved away are consistent; a municipio
// aggregate, a scoped cell counter or a word counter that counts records when no record is behind it is
// not, and the report says which.
func TestVerifyStrayCounters(t *testing.T) {
	dir := t.TempDir()
	s := open(t, Options{Dir: dir})
	recs := records("stray", 3)
	for i, r := range recs {
		r.MunicipioCode = "63001"
		if i == 2 { // alone in its municipio, cells and title words
			lat, lon := 4.81, -75.69
			r.MunicipioCode, r.Latitude, r.Longitude, r.Title = "66001", &lat, &lon, "Carpa"
		}
		if _, _, err := s.Create(context.Background(), r); err != nil {
			t.Fatal(err)
		}
	}
	// The last record moves to another municipio, place and title: its old counters are left at zero.
	_, err := s.Update(context.Background(), recs[2].ID, func(r *store.Record) error {
		lat, lon := 6.25, -75.56
		r.MunicipioCode, r.Latitude, r.Longitude, r.Title = "05001", &lat, &lon, "Cobijas"
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if v := closeVerify(t, s, dir); len(v.Problems) > 0 {
		t.Fatalf("a database the store wrote: %+v", v)
	}

	counting := (&aggregate{cells: map[uint16]int64{cellKey(statusCode(store.StatusOpen), 0, 1, 1): 2}}).encode()
	report := plantVerify(t, dir, func(txn *badger.Txn) error {
		// The premise: empty counters were left where the record was.
		k := muniKey(scopeOf("", "66001"))
		if _, err := txn.Get(k); err != nil {
			return fmt.Errorf("%q: %w", k, err)
		}
		if a, err := getAggregate(txn, k); err != nil || a.nonZero() {
			return fmt.Errorf("%q is %+v, not empty (%v)", k, a, err)
		}
		k = cellCountKey(scopeOf("", "66001"), geohash(4.81, -75.69, geoPrecision))
		item, err := txn.Get(k)
		if err != nil {
			return fmt.Errorf("%q: %w", k, err)
		}
		if err := item.Value(func(v []byte) error {
			if _, c, err := decodeCellCount(v); err != nil || len(c) > 0 {
				return fmt.Errorf("%q is %v, not empty (%v)", k, c, err)
			}
			return nil
		}); err != nil {
			return err
		}
		if err := txn.Set(muniKey(scopeOf("", "76001")), counting); err != nil {
			return err
		}
		if err := txn.Set(cellCountKey(scopeOf("otra-emergencia", ""), "d2g6"), encodeCellCount(0, cellCount{{cellKey(statusCode(store.StatusOpen), 0, 1, 1), 2}})); err != nil {
			return err
		}
		return txn.Set(vocabKey(stTok(statusCode(store.StatusOpen), "helicoptero")), encodeWordCount(0, 4))
	})
	for _, want := range []string{"1 stored with records counted, and no record behind them: aggregate of a municipio",
		"1 stored with records counted, and no record behind them: counter of a geographic cell",
		"1 word counters stored with records counted, and no record has the word"} {
		if !strings.Contains(report, want) {
			t.Errorf("the report does not say %q:\n%s", want, report)
		}
	}
}

// closeVerify closes s and verifies its database in dir.
func closeVerify(t *testing.T, s *Store, dir string) *store.Verification {
	t.Helper()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	v, err := Verify(dir)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// plantVerify changes the closed database in dir with plant, then returns what Verify reports.
func plantVerify(t *testing.T, dir string, plant func(*badger.Txn) error) string {
	t.Helper()
	db, err := badger.Open(badger.DefaultOptions(dir).WithLogger(nil))
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(plant); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	v, err := Verify(dir)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(v.Problems, "\n")
}
