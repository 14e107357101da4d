package badgerstore

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"

	"github.com/directaid/directaid/backend/store"
	"github.com/directaid/directaid/backend/store/storetest"
	"github.com/directaid/directaid/schema"
)

// q through the word index against brute force (store.MatchText over every record, what q means): the
// same ids in the same order and the same exact total, page after page, for whole words, prefixes,
// infixes and suffixes, accents and capitals, punctuation inside a word, several words, words found in
// no record, words too common for the index (one letter), with every other filter, a status other than
// open (records moved there by Update) and the radius.
//
// Twice: records created 41 s apart, each in a bucket of the word blocks of its own (postings.go), and
// records created 3 ms apart, as a burst of publications creates them, so that a bucket holds blocks of
// many postings (several of them for a token, past maxBlockPostings) and updates rewrite them.
func TestWordsMatchBruteForce(t *testing.T) {
	t.Run("spread", func(t *testing.T) { wordsMatchBruteForce(t, 41*time.Second) })
	t.Run("dense", func(t *testing.T) { wordsMatchBruteForce(t, 3*time.Millisecond) })
}

func wordsMatchBruteForce(t *testing.T, spacing time.Duration) {
	// No text budget: the old path (words too common) must be exact too, so totals can be compared.
	s := open(t, Options{Dir: t.TempDir(), MaxTextChecks: 1 << 30, MaxTotalTextChecks: 1 << 30})
	defer s.Close()
	rng := rand.New(rand.NewPCG(16, 2))
	start := time.Date(2026, 8, 11, 10, 0, 0, 0, time.UTC)
	vocab := strings.Fields(`insulina Insulínas INSULINA insulinodependiente agua aguas Agua-potable
		potable niños NIÑOS niño médico medico médicos s/n s/n. Cra. 14#20-31 100% 3x2 señal sin-luz
		carpa carpas ayuda ayudar a la el de 0 1 12 123 año años acción Ácido del desde Para las con y`)
	const n = 1200
	recs := make([]*store.Record, n)
	for i := range recs {
		rec := storetest.SynthRecord(rng, start.Add(time.Duration(i)*spacing), i)
		words := make([]string, rng.IntN(9))
		for j := range words {
			words[j] = vocab[rng.IntN(len(vocab))]
		}
		seps := []string{" ", ", ", ". ", "\n", " - ", "/"}
		var sb strings.Builder
		for j, w := range words {
			if j > 0 {
				sb.WriteString(seps[rng.IntN(len(seps))])
			}
			sb.WriteString(w)
		}
		rec.Description = sb.String()
		if rng.IntN(3) == 0 {
			rec.Title = vocab[rng.IntN(len(vocab))] + " " + rec.Title
		}
		recs[i] = rec
	}
	for _, r := range createAll(t, s, recs, nil) {
		if r.err != nil {
			t.Error(r.err)
		}
	}
	if t.Failed() {
		return
	}
	// Updates, concurrent so that some share a batch, and two of one record among them: every fifth record
	// is resolved (its postings and counts move to that status's partition), every seventh gets another
	// word in its title (postings removed and added), every eleventh another urgency (the same postings
	// with another summary).
	updates := map[int][]func(*store.Record) error{}
	for i := 0; i < n; i += 5 {
		updates[i] = append(updates[i], func(r *store.Record) error { r.Status = store.StatusResolved; return nil })
	}
	for i := 0; i < n; i += 7 {
		w := vocab[rng.IntN(len(vocab))]
		updates[i] = append(updates[i], func(r *store.Record) error { r.Title = w + " " + strings.Fields(r.Title)[0]; return nil })
	}
	for i := 0; i < n; i += 11 {
		updates[i] = append(updates[i], func(r *store.Record) error {
			r.Urgency = map[string]string{"urgent": "normal"}[r.Urgency]
			if r.Urgency == "" {
				r.Urgency = "urgent"
			}
			return nil
		})
	}
	var wg sync.WaitGroup
	for i, fns := range updates {
		for _, fn := range fns {
			wg.Go(func() {
				if _, err := s.Update(context.Background(), recs[i].ID, fn); err != nil {
					t.Error(err)
				}
			})
		}
	}
	wg.Wait()
	for i := range updates {
		rec, err := s.Get(context.Background(), recs[i].ID)
		if err != nil {
			t.Fatal(err)
		}
		recs[i] = rec
	}
	if v, err := s.Verify(context.Background()); err != nil || len(v.Problems) > 0 {
		t.Fatalf("verify: %v %v", err, v)
	}
	queries := []string{"insulina", "INSULÍNA", "insul", "sulina", "nsulin", "linas", "insulinodependiente", "agua", "agua-potable",
		"gua-pot", "potable agua", "niños", "nino", "médico", "medic", "s/n", "s/n.", "/n", "cra.", "14#20", "#20-3", "100%",
		"%", "3x2", "senal", "sin-luz", "carpa", "carpas ayuda", "ayudar", "a", "e", "ia", "0", "12", "123", "ano", "accion",
		"acido", "medico niños agua", "zzz", "agua zzz", "-", ".", "mayores", "adultos mayores", "urgentes",
		// function words (no postings): alone, inside a longer word, with an indexed word, in a hyphenated one
		"de", "del", "desde", "esde", "la", "las", "par", "para", "agua de", "de agua", "y", "sin", "sin-luz agua", "con carpas"}
	checks := 0
	// Twice: through the word index, then the way a word too common for it goes (the time or radius walk
	// reading each record's text), with fewer filters.
	for pass, maxTokens := range []int{maxWordTokens, 0} {
		s.maxWordTokens = maxTokens
		for _, q := range queries {
			words := strings.Fields(store.FoldText(q))
			specs := []store.ListSpec{
				{Words: words},
				{Words: words, Type: schema.TypeRequest},
				{Words: words, Category: "salud", EmergencySlug: "eje-cafetero"},
				{Words: words, Urgency: "urgent"},
				{Words: words, Status: store.StatusResolved},
				{Words: words, Near: true, Lat: 4.53, Lon: -75.68, RadiusKm: 9},
				{Words: words, Near: true, Lat: 4.6, Lon: -75.6, RadiusKm: 3, Type: schema.TypeOffer},
			}
			if pass == 1 {
				specs = []store.ListSpec{specs[0], specs[4], specs[5]}
			}
			for _, spec := range specs {
				for _, limit := range []int{4, 40} {
					spec.Limit = limit
					if limit == 4 && len(storetest.Reference(recs, &spec)) > 40 {
						continue
					}
					checkExact(t, s, recs, spec, fmt.Sprintf("q=%q ", q), true)
					checks++
				}
			}
		}
	}
	t.Logf("%d lists compared", checks)
}

// TestWordsIndexed: the queries that should use the index do (a plan, and a word counter equal to the
// records having the word), so that the differential test above covers the new path, not only the old.
func TestWordsIndexed(t *testing.T) {
	s := open(t, Options{Dir: t.TempDir()})
	defer s.Close()
	recs := storetest.Seed(t, s, 300, time.Date(2026, 8, 11, 10, 0, 0, 0, time.UTC), time.Minute)
	agua := 0
	for _, r := range recs {
		for _, tok := range textTokens(store.SearchText(r)) {
			if tok == "agua" {
				agua++
			}
		}
	}
	err := s.db.View(func(txn *badger.Txn) error {
		cells, err := s.cells.viewAt(txn)
		if err != nil {
			return err
		}
		for _, c := range []struct {
			q       string
			indexed bool
		}{{"agua", true}, {"medic", true}, {"agua potable", true}, {"zzz", true},
			{"de", false}, {"esde", false}, {"para", false}, {"agua de", true}} {
			p, err := planWords(cells, &s.vocab, strings.Fields(store.FoldText(c.q)), newFilter(&store.ListSpec{}), maxWordTokens)
			if err != nil {
				return err
			}
			if (p != nil) != c.indexed {
				t.Errorf("q=%s: plan %+v, want indexed %v", c.q, p, c.indexed)
			}
		}
		if n, err := cells.wordCount(stTok(statusCode(store.StatusOpen), "con")); n != 0 || err != nil || countKeys(txn, wordPrefix(0, "con")) != 0 {
			t.Errorf("a function word has a counter (%d, %v) or postings", n, err)
		}
		n, err := cells.wordCount(stTok(statusCode(store.StatusOpen), "agua"))
		if n != int64(agua) || agua == 0 {
			t.Errorf("counter of agua: %d, want %d", n, agua)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.List(context.Background(), &store.ListSpec{Words: []string{"agua"}, Limit: 1})
	if err != nil || res.Total != agua || !res.TotalExact {
		t.Errorf("q=agua: total %d (exact %v), want %d: %v", res.Total, res.TotalExact, agua, err)
	}
}
