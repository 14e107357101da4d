package pgstore

import (
	"context"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/directaid/directaid/backend/store"
	"github.com/directaid/directaid/internal/pgtest"
)

// TestPersonalPartition: personalTable names the partition PostgreSQL routes each id to (migration 0020's
// SQL function against store.IDGroup), for record ids made near points and not, and for keys of every
// length up to 40 characters of 1 to 4 bytes.
func TestPersonalPartition(t *testing.T) {
	ctx := context.Background()
	s := tracedStore(t, pgtest.Shared(t).NewDatabase(t), nil, 0)
	if err := s.ready(ctx); err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 2))
	var ids []string
	for i := range 3000 {
		if i%2 == 0 {
			lat, lon := -4+r.Float64()*17, -79+r.Float64()*12
			if i%4 == 0 {
				ids = append(ids, store.NewID(time.Unix(0, r.Int64N(1<<62))))
			} else {
				ids = append(ids, store.NewIDNear(time.Unix(0, r.Int64N(1<<62)), &lat, &lon))
			}
			continue
		}
		var sb strings.Builder
		alphabet := []rune("abcxyz019-_ñáé€𝄞") // 1 to 4 bytes each
		for range i % 41 {
			sb.WriteRune(alphabet[r.IntN(len(alphabet))])
		}
		ids = append(ids, sb.String())
	}
	rows, err := s.db.Pool.Query(ctx, `INSERT INTO directaid_personal (id, doc) SELECT DISTINCT id, '\x00'::bytea FROM unnest($1::text[]) AS x(id)
		RETURNING id, tableoid::regclass::text`, ids)
	if err != nil {
		t.Fatal(err)
	}
	var id, part string
	n := 0
	if _, err := pgx.ForEachRow(rows, []any{&id, &part}, func() error {
		if n++; personalTable(id) != part {
			t.Errorf("%q: personalTable %s, PostgreSQL routes it to %s", id, personalTable(id), part)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if n < 2900 {
		t.Fatalf("%d ids checked", n)
	}
}

// parentReads keeps the statements that name directaid_personal, the partitioned parent.
type parentReads struct {
	roundTrips
	mu   sync.Mutex
	seen []string
}

func (p *parentReads) check(sql string) {
	if strings.Contains(sql, "directaid_personal ") {
		p.mu.Lock()
		p.seen = append(p.seen, sql)
		p.mu.Unlock()
	}
}

func (p *parentReads) TraceQueryStart(ctx context.Context, c *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	p.check(d.SQL)
	return p.roundTrips.TraceQueryStart(ctx, c, d)
}

func (p *parentReads) TraceBatchStart(ctx context.Context, c *pgx.Conn, d pgx.TraceBatchStartData) context.Context {
	for _, q := range d.Batch.QueuedQueries {
		p.check(q.SQL)
	}
	return p.roundTrips.TraceBatchStart(ctx, c, d)
}

// TestPersonalByPartition: a detail, an update, an erasure and the pages of every kind of list read and
// write the personal rows in their partitions, never through the parent (which locks all 64), and still
// give each record its personal text.
func TestPersonalByPartition(t *testing.T) {
	ctx := context.Background()
	tr := &parentReads{}
	s := tracedStore(t, pgtest.Shared(t).NewDatabase(t), tr, 0)
	recs := importDense(t, s, time.Now().Add(-time.Hour))
	tr.mu.Lock()
	tr.seen = nil // an import inserts through the parent, which routes each row
	tr.mu.Unlock()
	want := map[string]string{}
	for _, r := range recs {
		want[r.ID] = r.ContactName
	}
	check := func(what string, got ...*store.Record) {
		t.Helper()
		for _, r := range got {
			if r.ContactName != want[r.ID] {
				t.Errorf("%s: %s's contact %q, want %q", what, r.ID, r.ContactName, want[r.ID])
			}
		}
	}
	one := recs[17].ID
	rec, err := s.Get(ctx, one)
	if err != nil {
		t.Fatal(err)
	}
	check("get", rec)
	if _, err := s.Update(ctx, one, func(r *store.Record) error { r.ContactName = "Otra"; return nil }); err != nil {
		t.Fatal(err)
	}
	want[one] = "Otra"
	if rec, err = s.Get(ctx, one); err != nil {
		t.Fatal(err)
	}
	check("get after update", rec)
	erased := recs[18].ID
	if _, err := s.Update(ctx, erased, func(r *store.Record) error { r.ErasePersonal(); return nil }); err != nil {
		t.Fatal(err)
	}
	want[erased] = ""
	var n int
	if err := s.db.Pool.QueryRow(ctx, `SELECT count(*) FROM `+personalTable(erased)+` WHERE id = $1`, erased).Scan(&n); err != nil || n != 0 {
		t.Fatalf("erased record's personal row: %d, %v", n, err)
	}
	for _, spec := range []store.ListSpec{
		{Limit: 50},
		{Limit: 50, Words: []string{"agua"}},
		{Limit: 50, Near: true, Lat: 4.527, Lon: -75.673, RadiusKm: 3},
	} {
		res, err := s.List(ctx, &spec)
		if err != nil || len(res.Records) == 0 {
			t.Fatalf("%+v: %d records, %v", spec, len(res.Records), err)
		}
		check("list", res.Records...)
	}
	if len(tr.seen) > 0 {
		t.Errorf("statements through directaid_personal, the parent:\n%s", strings.Join(tr.seen, "\n"))
	}
}

// TestPersonalRoutingChecked: Ready's check passes with personalPart and refuses a computation that
// PostgreSQL does not share (one partition off).
func TestPersonalRoutingChecked(t *testing.T) {
	ctx := context.Background()
	s := tracedStore(t, pgtest.Shared(t).NewDatabase(t), nil, 0)
	if err := s.ready(ctx); err != nil {
		t.Fatal(err)
	}
	if err := checkPersonalRouting(ctx, s.db.Pool, personalPart); err != nil {
		t.Fatal(err)
	}
	off := func(id string) int { return (personalPart(id) + 1) % personalParts }
	if err := checkPersonalRouting(ctx, s.db.Pool, off); err == nil || !strings.Contains(err.Error(), "refusing to serve") {
		t.Fatalf("a partition PostgreSQL does not route to: %v, want a refusal", err)
	}
}
