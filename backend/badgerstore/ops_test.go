package badgerstore

import (
	"context"
	"strings"
	"testing"

	"github.com/dgraph-io/badger/v4"
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
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	v, err := Verify(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(v.Problems) > 0 || v.Records["open"] != len(recs) || v.Checked < len(recs)*4 {
		t.Fatalf("a database the store wrote: %+v", v)
	}

	db, err := badger.Open(badger.DefaultOptions(dir).WithLogger(nil))
	if err != nil {
		t.Fatal(err)
	}
	entries := indexEntries(recs[3])
	err = db.Update(func(txn *badger.Txn) error {
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
		if err := txn.Set(cellCountKey(scopeOf("", "63001"), cell), stale); err != nil {
			return err
		}
		return txn.Set(aggKey(recs[0].EmergencySlug), stale)
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	v, err = Verify(dir)
	if err != nil {
		t.Fatal(err)
	}
	report := strings.Join(v.Problems, "\n")
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
