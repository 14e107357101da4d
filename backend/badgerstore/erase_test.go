package badgerstore

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/directaid/directaid/backend/store"
	"github.com/directaid/directaid/internal/erasescan"
)

// The erasure of a withdrawn record's phone: found in the files before the maintenance cycle (else this
// test could not fail), gone from every file after it, while the store stays open and keeps serving.
func TestErasureLeavesNoBytes(t *testing.T) {
	for _, flushed := range []bool{false, true} {
		t.Run(fmt.Sprintf("flushed=%v", flushed), func(t *testing.T) {
			dir := t.TempDir()
			s := open(t, Options{Dir: dir, GCInterval: time.Hour})
			defer s.Close()
			ctx := context.Background()
			others := records("other", 50)
			for _, r := range others {
				if _, _, err := s.Create(ctx, r); err != nil {
					t.Fatal(err)
				}
			}
			// A number no other record holds, in every form it is stored in.
			digits := fmt.Sprintf("31%08d", time.Now().UnixNano()%1e8)
			rec := records("victim", 1)[0]
			rec.ContactWhatsapp, rec.ContactE164 = digits[:3]+" "+digits[3:], "+57"+digits
			rec.ContactName, rec.Address = "Zoraida Quintero", "Carrera 7 # 12-34"
			needles := [][]byte{[]byte(rec.ContactE164), []byte(digits[3:]), []byte(rec.ContactWhatsapp), []byte("Zoraida Quintero"), []byte("Carrera 7 # 12-34")}
			if _, _, err := s.Create(ctx, rec); err != nil {
				t.Fatal(err)
			}
			if flushed {
				// The first version already in an SST (and compacted below level 0) before the erasure.
				if err := s.flushAll(); err != nil {
					t.Fatal(err)
				}
			}
			_, err := s.Update(ctx, rec.ID, func(r *store.Record) error {
				r.Status = store.StatusWithdrawn
				r.ErasePersonal()
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if found, err := erasescan.Find(dir, needles...); err != nil || len(found) == 0 {
				t.Fatalf("before the cycle the erased data should still be in the files (else this test proves nothing): %v %v", found, err)
			}
			if err := s.Maintain(ctx); err != nil {
				t.Fatal(err)
			}
			found, err := erasescan.Find(dir, needles...)
			if err != nil {
				t.Fatal(err)
			}
			if len(found) > 0 {
				t.Fatalf("erased data still in the files after the maintenance cycle:\n%s", strings.Join(found, "\n"))
			}
			// The store still serves: the tombstone and every other record, and new writes.
			got, err := s.Get(ctx, rec.ID)
			if err != nil || got.Status != store.StatusWithdrawn || got.ContactE164 != "" {
				t.Fatalf("tombstone: %+v %v", got, err)
			}
			for _, r := range others {
				if g, err := s.Get(ctx, r.ID); err != nil || g.ContactE164 != r.ContactE164 {
					t.Fatalf("record %s after the cycle: %v", r.ID, err)
				}
			}
			if _, created, err := s.Create(ctx, records("after", 1)[0]); err != nil || !created {
				t.Fatalf("create after the cycle: %v", err)
			}
			// Nothing was erased since: the next cycle does not rewrite.
			if s.erased.Load() {
				t.Fatal("erasure still pending after a successful cycle")
			}
		})
	}
}

// flushAll puts everything into SST tables below level 0 (a cycle without an erasure to drop).
func (s *Store) flushAll() error {
	s.noteErasure()
	return s.Maintain(context.Background())
}
