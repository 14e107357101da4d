package storetest

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/directaid/directaid/backend/store"
	"github.com/directaid/directaid/schema"
)

// resolvedAt are the records stored resolved (the others are open), about at these ranks of change: a
// change feed of status resolved has 7 changes among 24,000, more than store.MaxFeedRead apart.
var resolvedAt = []int{100, 200, 300, 11500, 12500, 13000, 23000}

// textTotalRecords is more than the stores' bound on a counted q total (20,000 candidates): past it they
// estimate, and must say so alike.
const textTotalRecords = 24000

// maxTextEstimateError is the relative error allowed to an estimated q total here, where the records
// are in random order (the estimate reads the newest 2,000 candidates): the figures measured are logged.
const maxTextEstimateError = 0.10

// seedFast stores recs (as they are) through the store's batch Import, faster than by one Create each.
func seedFast(t *testing.T, s store.Store, recs []*store.Record) {
	t.Helper()
	for b := range slices.Chunk(recs, 2000) {
		if res, err := s.Import(ctx, b); err != nil || res.Created != len(b) {
			t.Fatalf("import: %+v, %v", res, err)
		}
	}
}

// testTextTotalsPastTheBound: q totals over more candidates than the stores count are estimated
// (TotalExact false) in the same cases on every store, within maxTextEstimateError of the truth; the
// others are exact; first pages are exact in every case.
func testTextTotalsPastTheBound(t *testing.T, s store.Store) {
	rng := rand.New(rand.NewPCG(15, 10))
	start := time.Date(2026, 9, 1, 0, 0, 0, 0, time.UTC)
	recs := make([]*store.Record, textTotalRecords)
	for i := range recs {
		r := SynthRecord(rng, start.Add(time.Duration(i)*time.Second), i)
		// 80% «insulina», 10% both «insulina» and «insulinas» (counted by both counters: an estimate that
		// scaled the sum of the counters by records instead of postings was 11% over), 10% neither; 30%
		// «urgente»; 5% «agua», 3% «frazadas»; every record one of 100 «loteNN» (so «lote» is in more
		// tokens than a word may drive: no word index).
		title := []string{"Insulina", "Insulina", "Insulina", "Insulina", "Insulina", "Insulina", "Insulina", "Insulina", "Insulina e insulinas", "Pañales"}[rng.IntN(10)]
		if rng.IntN(10) < 3 {
			title += " urgente"
		}
		switch k := rng.IntN(100); {
		case k < 5:
			title += " y agua"
		case k < 8:
			title += " y frazadas"
		}
		r.Title, r.Description = title, fmt.Sprintf("lote%02d", i%100)
		r.Status, r.UpdatedAt = store.StatusOpen, r.CreatedAt
		if slices.Contains(resolvedAt, i) {
			r.Status = store.StatusResolved // a feed's rare filter: few matches among many changes
		}
		recs[i] = r
	}
	seedFast(t, s, recs)
	// A store that creates one record at a time stamps it with the time it was stored (recs are updated
	// in place): a feed's since is the change time of the record of that rank.
	byChange := slices.SortedFunc(slices.Values(recs), func(a, b *store.Record) int { return a.UpdatedAt.Compare(b.UpdatedAt) })
	changedAt := func(rank int) time.Time { return byChange[rank].UpdatedAt }
	near := store.ListSpec{Near: true, Lat: 4.53, Lon: -75.68, RadiusKm: 5}
	for _, c := range []struct {
		spec  store.ListSpec
		exact bool
		why   string
	}{
		{store.ListSpec{Words: []string{"insul"}, Type: schema.TypeRequest}, false, "a prefix in two tokens counting 24,000 postings of 21,600 records"},
		{store.ListSpec{Words: []string{"insulina"}}, false, "a token contained in another: its run drives, 24,000 postings"},
		{store.ListSpec{Words: []string{"insulina", "lote"}}, false, "two words, insulina drives (lote is in 100 tokens)"},
		{store.ListSpec{Words: []string{"insulina", "urgente"}}, true, "urgente drives: 7,200 candidates, counted"},
		{store.ListSpec{Words: []string{"agua"}}, true, "one token alone: its counter"},
		{store.ListSpec{Words: []string{"agua"}, Category: "salud"}, true, "1,200 candidates, counted"},
		{store.ListSpec{Words: []string{"frazadas"}, Type: schema.TypeOffer}, true, "720 candidates, counted"},
		{store.ListSpec{Words: []string{"lote07"}}, true, "one token alone: its counter"},
		{store.ListSpec{Words: []string{"lote"}}, false, "no word drives: every open record is a candidate"},
		{store.ListSpec{Words: []string{"lote"}, Category: "salud"}, false, "no word drives: ~3,400 salud records"},
		{store.ListSpec{Words: []string{"lote"}, Category: "salud", Urgency: "urgent"}, true, "no word drives: ~570 candidates, counted"},
		{store.ListSpec{Words: []string{"insul"}, Municipio: "63001"}, false, "a municipio: its 9,600 records are the candidates"},
		{store.ListSpec{Words: []string{"urgente"}, Near: near.Near, Lat: near.Lat, Lon: near.Lon, RadiusKm: near.RadiusKm}, true, "a radius q driven by its words is counted"},
		{store.ListSpec{Words: []string{"lote"}, Near: true, Lat: near.Lat, Lon: near.Lon, RadiusKm: 20}, false, "no word drives a radius q: the circle's records (from the cell counters) are the candidates"},
		// Change feeds (every status; one change a second): counted up to store.MaxFeedCount changes after
		// since, else the counters less the changes before it, else estimated from the pace of the first;
		// each walk reads at most store.MaxFeedRead changes, matching or not.
		{store.ListSpec{Since: changedAt(22500)}, true, "a change feed of ~1,500 changes: counted"},
		{store.ListSpec{Since: changedAt(1000)}, true, "a change feed of ~23,000 changes, ~1,000 before since: the counters less those"},
		{store.ListSpec{Since: changedAt(12000)}, false, "a change feed of ~12,000 changes, as many before since: estimated"},
		{store.ListSpec{Since: changedAt(12000), Type: schema.TypeOffer, EmergencySlug: "eje-cafetero"}, false, "a filtered change feed (~3,000 each side), estimated"},
		{store.ListSpec{Since: changedAt(20000), Category: "salud", Urgency: "urgent"}, true, "a filtered change feed of ~4,000 changes: all read"},
		{store.ListSpec{Since: changedAt(12000), Category: "salud", Urgency: "urgent"}, false, "a rare filter, ~12,000 changes each side: 10,000 read each side, estimated"},
		{store.ListSpec{Since: changedAt(1000), Status: store.StatusResolved}, true, "4 of ~23,000 changes after since, 3 of ~1,000 before: the counters less those"},
		{store.ListSpec{Since: changedAt(12000), Status: store.StatusResolved}, false, "3 of ~12,000 changes after since, 4 of as many before: estimated, off by 2 at most"},
		{store.ListSpec{Since: changedAt(12000), Status: store.StatusResolved, EmergencySlug: "eje-cafetero"}, true, "the same in one emergency: its ~6,000 changes after since are all read"},
	} {
		spec := c.spec
		spec.Limit = 20
		t.Run(fmt.Sprintf("%+v", spec), func(t *testing.T) {
			want := Reference(recs, &spec)
			res, err := s.List(ctx, &spec)
			if err != nil {
				t.Fatal(err)
			}
			var got, wantIDs []string
			for _, r := range res.Records {
				got = append(got, r.ID)
			}
			for _, m := range want[:min(len(want), spec.Limit)] {
				wantIDs = append(wantIDs, m.ID)
			}
			if !slices.Equal(got, wantIDs) {
				t.Fatalf("first page:\n got %v\nwant %v", head(got), head(wantIDs))
			}
			if res.TotalExact != c.exact {
				t.Fatalf("totalExact %v, want %v (%s); total %d of %d", res.TotalExact, c.exact, c.why, res.Total, len(want))
			}
			errRel := math.Abs(float64(res.Total-len(want))) / float64(len(want))
			t.Logf("total %d, exact %v, true %d: error %.2f%%", res.Total, res.TotalExact, len(want), 100*errRel)
			if !spec.Since.IsZero() {
				// A feed's total is what store.FeedTotal makes of the walks over the records' changes; exact,
				// it is the truth.
				if total, exact := FeedTotal(recs, &spec); res.Total != total || res.TotalExact != exact || (exact && total != len(want)) {
					t.Fatalf("total %d (exact %v), want store.FeedTotal's %d (exact %v) from the records' changes; true %d", res.Total, res.TotalExact, total, exact, len(want))
				}
			} else if (c.exact && res.Total != len(want)) || errRel > maxTextEstimateError {
				t.Fatalf("total %d (exact %v), want %d", res.Total, res.TotalExact, len(want))
			}
			if spec.Near && slices.Equal(spec.Words, []string{"lote"}) {
				// Every record has «lote»: the estimate is the candidates, which come from the cell counters
				// (counting the circle instead would give the true count).
				other := spec
				other.Words = nil
				if n, _ := RadiusTotal(recs, &other); res.Total != n {
					t.Fatalf("total %d, want the cell counters' %d", res.Total, n)
				}
			}
			// The next page's total is said the same way.
			if res.Next == nil {
				return
			}
			spec.After = res.Next
			if next, err := s.List(ctx, &spec); err != nil || next.TotalExact != c.exact {
				t.Fatalf("second page: %+v, %v", next, err)
			}
		})
	}
}
