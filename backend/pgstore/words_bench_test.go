package pgstore_test

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/directaid/directaid/backend/store"
	"github.com/directaid/directaid/internal/benchdata"
	"github.com/directaid/directaid/schema"
)

// BenchmarkTextTotals times q lists with their totals over BENCH_PG_TEXT records (default 100,000) of
// make bench's vocabulary, and logs each estimated total's error against a count of every row:
//
//	BENCH_PG_TEXT=200000 go test ./backend/pgstore -run '^$' -bench TextTotals -benchtime 50x
func BenchmarkTextTotals(b *testing.B) {
	db, s, n := benchStore(b, "BENCH_PG_TEXT")
	ctx := context.Background()
	start := time.Now().Add(-time.Duration(n) * time.Second)
	var batch []*store.Record
	for i := range n {
		r := rand.New(rand.NewPCG(uint64(i), 11))
		pick := func(s []string) string { return s[r.IntN(len(s))] }
		t := start.Add(time.Duration(i) * time.Second)
		rec := &store.Record{ID: store.NewID(t), CreatedAt: t.UTC().Truncate(time.Millisecond), Status: store.StatusOpen}
		p := &rec.Publication
		p.Type, p.Urgency = schema.TypeRequest, pick(schema.Urgencies)
		if r.IntN(4) == 0 {
			p.Type, p.Urgency = schema.TypeOffer, ""
		}
		p.Source, p.ExternalID, p.EmergencySlug, p.Category = "bench", "t-"+strconv.Itoa(i), "eje-cafetero", pick(benchdata.Categories)
		words := make([]string, 8+r.IntN(30))
		for j := range words {
			words[j] = pick(benchdata.Words)
		}
		p.Title, p.Description = pick(benchdata.Titles), strings.Join(words, " ")+"."
		p.ContactName, p.ContactWhatsapp, p.ContactE164, p.PublishContact = "Ana Gómez", "+57 300 1234567", "+573001234567", true
		if batch = append(batch, rec); len(batch) == 5000 || i == n-1 {
			if _, err := s.Import(ctx, batch); err != nil {
				b.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	if _, err := db.Pool.Exec(ctx, `ANALYZE`); err != nil {
		b.Fatal(err)
	}
	for _, spec := range []store.ListSpec{
		{Words: []string{"insul"}, Type: schema.TypeRequest},
		{Words: []string{"insulina"}, Category: "salud"},
		{Words: []string{"agua", "potable"}},
		{Words: []string{"leche", "urgente"}, EmergencySlug: "eje-cafetero"},
		{Words: []string{"la"}},
	} {
		spec.Limit = 20
		b.Run(fmt.Sprintf("%v/%s", spec.Words, cmp.Or(spec.Type, spec.Category, spec.EmergencySlug)), func(b *testing.B) {
			res, err := s.List(ctx, &spec)
			if err != nil {
				b.Fatal(err)
			}
			// The count every such total was before: every matching row.
			var exact int
			var conds []string
			args := []any{}
			for _, w := range spec.Words {
				args = append(args, "%"+w+"%")
				conds = append(conds, fmt.Sprintf("search_text LIKE $%d", len(args)))
			}
			for col, v := range map[string]string{"type": spec.Type, "category": spec.Category, "emergency_slug": spec.EmergencySlug} {
				if v != "" {
					args = append(args, v)
					conds = append(conds, fmt.Sprintf("%s = $%d", col, len(args)))
				}
			}
			slices.Sort(conds)
			count := func() {
				if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM directaid_records WHERE status = 'open' AND `+strings.Join(conds, " AND "), args...).Scan(&exact); err != nil {
					b.Fatal(err)
				}
			}
			t0 := time.Now()
			count()
			b.Logf("count(*) of the matches: %v", time.Since(t0))
			b.Logf("%d records: total %d (exact %v), counted %d: error %+.2f%%", n, res.Total, res.TotalExact, exact,
				100*(float64(res.Total)-float64(exact))/math.Max(1, float64(exact)))
			for b.Loop() {
				if _, err := s.List(ctx, &spec); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
