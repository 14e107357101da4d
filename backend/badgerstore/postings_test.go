package badgerstore

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/directaid/directaid/backend/store"
	"github.com/directaid/directaid/backend/store/storetest"
)

// blockOf makes the postings of n records created 1 ms apart from t (one bucket when they fit in 256
// ms), of two emergencies, with and without a point, and the block key of their group.
func blockOf(n int, t time.Time) (key []byte, ps []posting) {
	for i := range n {
		rec := storetest.Record("app", "x")
		rec.ID, rec.EmergencySlug = store.NewID(t.Add(time.Duration(i)*time.Millisecond)), []string{"eje-cafetero", "mocoa"}[i%3/2]
		rec.Latitude, rec.Longitude = nil, nil
		if i%4 != 0 {
			lat, lon := 4.5+float64(i)/1000, -75.6
			rec.Latitude, rec.Longitude = &lat, &lon
		}
		ps = append(ps, posting{inv: invID(rec.ID), sum: summaryOf(rec)})
	}
	slices.SortFunc(ps, byInv)
	key = binary.BigEndian.AppendUint64(append(wordPrefix(0, "agua"), ps[0].inv[:bucketLen]...), 7)
	return key, ps
}

// TestBlockRoundTrip: a block's postings decode to what was encoded (ids whole again, summaries with
// their slug), the slug written once per emergency; every truncation of the value is an error, not a
// panic or a wrong posting.
func TestBlockRoundTrip(t *testing.T) {
	key, ps := blockOf(40, time.Date(2026, 8, 11, 10, 0, 0, 0, time.UTC).Truncate(256*time.Millisecond))
	v, err := encodeBlock(ps)
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(v, []byte("eje-cafetero")); n != 1 {
		t.Errorf("the slug is written %d times", n)
	}
	got, err := decodeBlock(nil, key, v)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(ps) {
		t.Fatalf("%d postings, want %d", len(got), len(ps))
	}
	for i := range ps {
		if !bytes.Equal(got[i].inv, ps[i].inv) || !bytes.Equal(got[i].sum, ps[i].sum) {
			t.Fatalf("posting %d: %x %x, want %x %x", i, got[i].inv, got[i].sum, ps[i].inv, ps[i].sum)
		}
		if _, err := decodeSummary(idFromInv(got[i].inv), got[i].sum); err != nil {
			t.Fatal(err)
		}
	}
	for n := range len(v) {
		got, err := decodeBlock(nil, key, v[:n])
		if err == nil && n > 0 && len(got) == len(ps) {
			t.Errorf("a value cut at %d of %d decodes whole", n, len(v))
		}
	}
	if _, err := encodeBlock([]posting{{inv: ps[0].inv, sum: []byte{1, 2}}}); err == nil {
		t.Error("a bad summary encoded")
	}
}

// FuzzDecodeBlock: any value decodes or fails without panicking, and what decodes encodes back to
// postings that decode alike.
func FuzzDecodeBlock(f *testing.F) {
	key, ps := blockOf(5, time.Date(2026, 8, 11, 10, 0, 0, 0, time.UTC))
	v, err := encodeBlock(ps)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(v)
	f.Add([]byte{})
	f.Add([]byte{1, 0})
	f.Fuzz(func(t *testing.T, v []byte) {
		ps, err := decodeBlock(nil, key, v)
		if err != nil {
			return
		}
		for _, p := range ps {
			if len(p.inv) != idLen || !bytes.HasPrefix(p.inv, key[len(key)-blockSeqLen-bucketLen:len(key)-blockSeqLen]) {
				t.Fatalf("posting id %x outside the block's bucket", p.inv)
			}
		}
		again, err := encodeBlock(ps)
		if err != nil {
			return // a summary that summaryOf cannot make
		}
		back, err := decodeBlock(nil, key, again)
		if err != nil || len(back) != len(ps) {
			t.Fatalf("re-encoded: %d postings, %v; want %d", len(back), err, len(ps))
		}
		for i := range ps {
			if !bytes.Equal(back[i].inv, ps[i].inv) || !bytes.Equal(back[i].sum, ps[i].sum) {
				t.Fatalf("posting %d changed in a round trip", i)
			}
		}
	})
}

// TestUpdatesKeepPostingsInTheirBlocks: on a fresh store (its first block's seq among them), each update
// moves a record's postings within the blocks of its seq: to another status, to another text (erased, as
// a withdrawal does), with another summary; Verify finds every posting where the record's text entry
// says, and no other.
func TestUpdatesKeepPostingsInTheirBlocks(t *testing.T) {
	s := open(t, Options{Dir: t.TempDir()})
	defer s.Close()
	var ids []string
	for i := range 3 * maxBlockPostings / 2 {
		rec, _, err := s.Create(context.Background(), storetest.Record("app", fmt.Sprint(i)))
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, rec.ID)
	}
	for i, id := range ids {
		_, err := s.Update(context.Background(), id, func(r *store.Record) error {
			switch i % 3 {
			case 0:
				r.Status = store.StatusResolved
			case 1:
				r.Status = store.StatusWithdrawn
				r.ErasePersonal()
			default:
				r.Urgency = "normal"
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if v, err := s.Verify(context.Background()); err != nil || len(v.Problems) > 0 {
			t.Fatalf("after updating record %d: %v %v", i, err, v.Problems)
		}
	}
}
