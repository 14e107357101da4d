package pgstore

import (
	"context"
	"errors"
	"maps"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/directaid/directaid/backend/store"
	"github.com/directaid/directaid/backend/store/storetest"
	"github.com/directaid/directaid/internal/pgtest"
)

// TestBatchAnswersEachCreate commits one batch by hand holding what concurrent Creates can bring
// together: a new pair twice, a pair stored before, a caller that has gone, and a record whose id is
// taken (stored under an id of its own, never over the other). Each gets the answer it would get alone.
func TestBatchAnswersEachCreate(t *testing.T) {
	ctx := context.Background()
	db, err := Open(pgtest.Shared(t).NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	s := NewStore(db)
	t.Cleanup(func() { _ = s.Close() })
	before, created, err := s.Create(ctx, storetest.Record("batch", "stored"))
	if err != nil || !created {
		t.Fatalf("create: %v %v", created, err)
	}

	gone, cancel := context.WithCancel(ctx)
	cancel()
	takenID := storetest.Record("batch", "taken-id")
	takenID.ID = before.ID
	type want struct {
		created bool
		id      string // "" : the request's own id; "fresh": another than the request's
		err     error
	}
	reqs := []struct {
		ctx  context.Context
		rec  *store.Record
		want want
	}{
		{ctx, storetest.Record("batch", "new"), want{created: true}},
		{ctx, storetest.Record("batch", "stored"), want{id: before.ID}},
		{gone, storetest.Record("batch", "gone"), want{err: context.Canceled}},
		{ctx, takenID, want{created: true, id: "fresh"}}, // never over another record: an id of its own
		{ctx, storetest.Record("batch", "other"), want{created: true}},
	}
	twin := storetest.Record("batch", "new") // the first one's pair again, another id
	reqs = append(reqs, struct {
		ctx  context.Context
		rec  *store.Record
		want want
	}{ctx, twin, want{}})
	var batch []*createReq
	for _, q := range reqs {
		r, err := s.newCreateReq(q.ctx, q.rec)
		if err != nil {
			t.Fatal(err)
		}
		batch = append(batch, r)
	}
	reqs[len(reqs)-1].want.id = reqs[0].rec.ID
	s.commit(batch)
	fresh := make(chan *store.Record, 1)
	for i, q := range reqs {
		got := <-batch[i].done
		switch {
		case q.want.err != nil:
			if got.err == nil || errors.Is(q.want.err, context.Canceled) && !errors.Is(got.err, context.Canceled) {
				t.Errorf("%s: want error %v, got %+v", q.rec.ExternalID, q.want.err, got)
			}
			continue
		case got.err != nil:
			t.Errorf("%s: %v", q.rec.ExternalID, got.err)
			continue
		}
		id := q.want.id
		switch id {
		case "":
			id = q.rec.ID
		case "fresh":
			fresh <- got.rec
			if id = got.rec.ID; id == q.rec.ID || !store.ValidID(id) {
				t.Errorf("%s: stored under %q, the id another holds", q.rec.ExternalID, id)
			}
		}
		if got.created != q.want.created || got.rec.ID != id || got.rec.ExternalID != q.rec.ExternalID || got.rec.UpdatedAt.IsZero() {
			t.Errorf("%s: got created %v id %s (%s), want created %v id %s", q.rec.ExternalID, got.created, got.rec.ID, got.rec.ExternalID, q.want.created, id)
		}
		stored, err := s.Get(ctx, id)
		if err != nil || !stored.UpdatedAt.Equal(got.rec.UpdatedAt) {
			t.Errorf("%s: stored %v %v, answered updatedAt %v", q.rec.ExternalID, stored, err, got.rec.UpdatedAt)
		}
	}
	var n int
	if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM directaid_records`).Scan(&n); err != nil || n != 4 {
		t.Fatalf("%d records stored (%v), want 4: stored, new, taken-id, other", n, err)
	}
	var counted int64
	if err := db.Pool.QueryRow(ctx, `SELECT sum(n)::bigint FROM directaid_counts WHERE municipio_code = ''`).Scan(&counted); err != nil || counted != 4 {
		t.Fatalf("counters say %d (%v), want 4", counted, err)
	}
	// The word counters: each token of the four records once, under its status.
	wantWords := map[string]int64{}
	for _, id := range []string{before.ID, reqs[0].rec.ID, (<-fresh).ID, reqs[4].rec.ID} {
		rec, err := s.Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		for _, tok := range store.TextTokens(store.SearchText(rec)) {
			wantWords[rec.Status+"/"+tok]++
		}
	}
	rows, err := db.Pool.Query(ctx, `SELECT status || '/' || token, sum(n)::bigint FROM directaid_words GROUP BY 1 HAVING sum(n) <> 0`)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{}
	var k string
	var c int64
	if _, err := pgx.ForEachRow(rows, []any{&k, &c}, func() error { got[k] = c; return nil }); err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(got, wantWords) {
		t.Fatalf("word counters %v, want %v", got, wantWords)
	}
}
