package storetest

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/directaid/directaid/backend/store"
)

// testScan: a store hands over every record once, in id order, as Get reads it; an error of fn
// stops the scan and comes back.
func testScan(t *testing.T, s store.Store) {
	sc := s
	recs := Seed(t, s, 300, time.Now().Add(-time.Hour), time.Second)
	var ids []string
	err := sc.Scan(ctx, func(r *store.Record) error {
		want, err := s.Get(ctx, r.ID)
		if err != nil {
			return err
		}
		sameRecord(t, "scanned record "+r.ID, r, want)
		ids = append(ids, r.ID)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := make([]string, len(recs))
	for i, r := range recs {
		want[i] = r.ID
	}
	slices.Sort(want)
	if !slices.Equal(ids, want) {
		t.Fatalf("Scan gave %d ids %v…; want the %d records in id order %v…", len(ids), head(ids), len(want), head(want))
	}
	stop := errors.New("stop")
	n := 0
	if err := sc.Scan(ctx, func(*store.Record) error { n++; return stop }); !errors.Is(err, stop) || n != 1 {
		t.Fatalf("Scan after fn's error: %v after %d calls; want fn's error after 1", err, n)
	}
}
