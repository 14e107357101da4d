package pgstore

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"unicode"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/directaid/directaid/backend/store"
)

// The counters of q's tokens (migration 0007), kept like the Badger store's: per status and token. A
// write adds to the shard of its connection (directaid_shard(), 0–63); imports and the backfill add to
// bulkShard, so that they never wait for a publisher's word rows while holding count rows (see create).

const bulkShard = "64"

type wordKey struct{ status, token string }

// addWordDelta counts rec's tokens under its status in d (n = -1 takes them out).
func addWordDelta(d map[wordKey]int64, rec *store.Record, n int64) {
	for _, tok := range store.TextTokens(store.SearchText(rec)) {
		d[wordKey{rec.Status, tok}] += n
	}
}

type execer interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// addWords adds d to the counters on shard (SQL), in key order, so that two writers never wait for each
// other's rows crosswise.
func addWords(ctx context.Context, q execer, d map[wordKey]int64, shard string) error {
	keys := make([]wordKey, 0, len(d))
	for k, n := range d {
		if n != 0 {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return nil
	}
	slices.SortFunc(keys, func(a, b wordKey) int {
		return strings.Compare(a.status+"\x00"+a.token, b.status+"\x00"+b.token)
	})
	sts, toks, ns := make([]string, len(keys)), make([]string, len(keys)), make([]int64, len(keys))
	for i, k := range keys {
		sts[i], toks[i], ns[i] = k.status, k.token, d[k]
	}
	_, err := q.Exec(ctx, `INSERT INTO directaid_words AS c (status, token, shard, n)
		SELECT st, tok, `+shard+`, n FROM unnest($1::text[], $2::text[], $3::bigint[]) WITH ORDINALITY AS d(st, tok, n, i) ORDER BY i
		ON CONFLICT (status, token, shard) DO UPDATE SET n = c.n + EXCLUDED.n`, sts, toks, ns)
	return err
}

// backfillWords counts the tokens of the records stored before migration 0007, in its transaction.
func backfillWords(ctx context.Context, tx pgx.Tx) error {
	rows, err := tx.Query(ctx, `SELECT status, search_text FROM directaid_records`)
	if err != nil {
		return err
	}
	d := map[wordKey]int64{}
	var st, text string
	if _, err := pgx.ForEachRow(rows, []any{&st, &text}, func() error {
		for _, tok := range store.TextTokens(text) { // search_text is store.SearchText (NUL as a space)
			d[wordKey{st, tok}]++
		}
		return nil
	}); err != nil {
		return err
	}
	return addWords(ctx, tx, d, bulkShard)
}

// The bounds of a q total, the Badger store's (badgerstore's maxExactWordWalk, maxTotalTextChecks,
// maxWordTokens, maxNearCollect), so that both stores estimate in the same cases (storetest's
// TextTotalsPastTheBound), from the same newest candidates and by the same arithmetic (matches per
// posting of the driver's tokens, see sampleTotal).
const (
	// maxExactWordWalk: a q total whose candidates (the records having a token that contains the
	// driving run of letters and digits, from the word counters) are at most this many is counted.
	maxExactWordWalk = 20000
	// maxTotalTextChecks: past maxExactWordWalk, or when no word drives, the total is estimated from this
	// many newest candidates (exact when there are no more).
	maxTotalTextChecks = 2000
	// maxWordTokens: a run in more tokens than this (a letter, a syllable) does not drive.
	maxWordTokens = 64
	// maxNearCollect: a radius q whose candidates are more than this many is not driven by its words.
	maxNearCollect = 50000
)

// wordPlan is the run of letters and digits of a query word that drives a q total, as Badger plans its
// word index: the run whose tokens (at most maxWordTokens) count the fewest records of the status.
type wordPlan struct {
	run       string
	tokens    []string
	counts    int64 // the sum of the tokens' counters: at least the records having any of them
	checkText bool  // the candidates are not exactly the matches
}

// planWords returns the plan of spec's words; nil when none drives (every run in too many tokens). A run
// that no token contains gives an empty plan (counts 0): nothing matches.
func planWords(ctx context.Context, tx pgx.Tx, spec *store.ListSpec) (*wordPlan, error) {
	st := spec.StatusOr() // never "" (every status): that is a change feed's, which refuses q
	var best *wordPlan
	for _, w := range spec.Words {
		for _, run := range strings.FieldsFunc(w, notAlnum) {
			p := &wordPlan{run: run}
			// Tokens of any status, as Badger's vocabulary (zero counters included).
			err := tx.QueryRow(ctx, `WITH t AS (SELECT DISTINCT token FROM directaid_words WHERE token LIKE $1 LIMIT $3)
				SELECT array(SELECT token FROM t), (SELECT coalesce(sum(n), 0)::bigint FROM directaid_words WHERE status = $2 AND token IN (SELECT token FROM t))`,
				"%"+likeEscape(run)+"%", st, maxWordTokens+1).Scan(&p.tokens, &p.counts)
			if err != nil {
				return nil, err
			}
			if len(p.tokens) > maxWordTokens {
				continue
			}
			if p.counts == 0 {
				return p, nil
			}
			if best == nil || p.counts < best.counts {
				best = p
			}
		}
	}
	if best != nil {
		best.checkText = len(spec.Words) > 1 || strings.IndexFunc(spec.Words[0], notAlnum) >= 0
	}
	return best, nil
}

func notAlnum(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }

// onlyToken reports whether the records matching spec are exactly those having the plan's one token, so
// that its counter is the total: one word of letters and digits that lies in that token only (the word
// itself, or a stem of it: store.QueryWords).
func (p *wordPlan) onlyToken(spec *store.ListSpec) bool {
	return !p.checkText && len(p.tokens) == 1 && strings.Contains(p.tokens[0], spec.Words[0]) && !spec.Near && spec.EmergencySlug == "" &&
		spec.Type == "" && spec.Category == "" && spec.Urgency == "" && spec.Municipio == ""
}

// wordsTotal sets res.Total (and TotalExact) of a q list whose page is in res, counting no more than a
// bounded number of rows, as Badger's listWords: one page from the start is its own total; a one-word q
// inside one token only reads its counter; a radius q driven by its words, or one whose
// driving run's counters say at most maxExactWordWalk candidates, is counted; past that the total is
// estimated from the newest maxTotalTextChecks candidates (TotalExact false; see sampleTotal). With no driving word (a municipio, a run in every token, a radius q
// of too many candidates) the candidates are the records of the other filters (a circle's from its cell counters): counted when at most
// maxTotalTextChecks, else estimated from the newest of them.
func wordsTotal(ctx context.Context, tx pgx.Tx, spec *store.ListSpec, res *store.ListResult) error {
	res.TotalExact = true
	if spec.After == nil && res.Next == nil {
		res.Total = len(res.Records)
		return nil
	}
	var plan *wordPlan
	if spec.Municipio == "" {
		var err error
		if plan, err = planWords(ctx, tx, spec); err != nil {
			return err
		}
	}
	cond, args := where(spec)
	count := func() (n int, err error) {
		if spec.Near {
			return countNear(ctx, tx, spec, cond, args)
		}
		err = tx.QueryRow(ctx, `SELECT count(*) FROM directaid_records WHERE `+cond, args...).Scan(&n)
		return n, err
	}
	var err error
	if plan != nil && (!spec.Near || plan.counts <= maxNearCollect) {
		switch {
		case plan.counts == 0:
			res.Total = 0
		case plan.onlyToken(spec):
			err = tx.QueryRow(ctx, `SELECT coalesce(sum(n), 0)::bigint FROM directaid_words WHERE status = $1 AND token = $2`,
				spec.StatusOr(), plan.tokens[0]).Scan(&res.Total)
		case spec.Near || plan.counts <= maxExactWordWalk:
			res.Total, err = count()
		default:
			// The candidates: the records of the status having a token that contains the run, that is whose
			// text contains it (a run lies inside one token). When the run is the one word, its match is
			// the candidate's: not tested twice (~10% of the sample's CPU).
			scond, sargs := cond, args
			if !plan.checkText {
				other := *spec
				other.Words = nil
				scond, sargs = where(&other)
			}
			cargs := append(slices.Clone(sargs), spec.StatusOr(), "%"+likeEscape(plan.run)+"%")
			text := "''" // the tokens a candidate has are counted when there are several
			if len(plan.tokens) > 1 {
				text = "search_text"
			}
			err = sampleTotal(ctx, tx, res, fmt.Sprintf(`SELECT %s, %s FROM directaid_records WHERE status = $%d AND search_text LIKE $%d
				ORDER BY id DESC LIMIT %d`, scond, text, len(cargs)-1, len(cargs), maxTotalTextChecks+1), cargs, plan.tokens, func() (int, error) { return int(plan.counts), nil })
		}
		return err
	}
	other := *spec
	other.Words = nil
	ocond, oargs := where(&other)
	candidates := func() (n int, err error) {
		switch {
		case spec.Near:
			// From the cell counters, as Badger's (an estimate when the circle's edge is dense): counting
			// the circle would read every record in it.
			n, _, err = store.RadiusTotal(&other, &pgCells{ctx: ctx, tx: tx, spec: &other})
		default: // the other filters are kept by the counters (a change feed has no words)
			n, err = countersTotal(ctx, tx, &other, ocond, oargs)
		}
		return n, err
	}
	if spec.Near {
		// The circle's candidates are counted first (the sample below is not of the circle alone).
		n, err := candidates()
		if err != nil || n <= maxTotalTextChecks {
			if err == nil {
				res.Total, err = count()
			}
			return err
		}
		candidates = func() (int, error) { return n, nil }
	}
	sample := fmt.Sprintf(`SELECT %s, '' FROM directaid_records WHERE %s ORDER BY id DESC LIMIT %d`, cond, ocond, maxTotalTextChecks+1)
	if spec.Near {
		// The circle's newest candidates by id from the GiST index alone (it holds status, id, emergency and
		// municipio: 0014), then their texts by id: sorting the box's records read from the heap read
		// every one of them (~17,000 in 5 km at 1M density, 290 ms warm).
		sample = fmt.Sprintf(`SELECT %s, '' FROM directaid_records WHERE id IN (SELECT id FROM directaid_records WHERE %s ORDER BY id DESC LIMIT %d)`,
			cond, ocond, maxTotalTextChecks+1)
	}
	return sampleTotal(ctx, tx, res, sample, args, nil, candidates)
}

// sampleTotal runs query, which yields whether each of the newest candidates matches and its text (one
// more than maxTotalTextChecks at most): with no more than that the matches are the total. Else the total
// is estimated, at least the page: the candidates number candidates() ÷ m, where m is the mean number of
// tokens (of the driver's tokens; 1 without them) a candidate of the sample has, since a record having two
// of them is counted by both counters; the matches are their share of the sample times that.
func sampleTotal(ctx context.Context, tx pgx.Tx, res *store.ListResult, query string, args []any, tokens []string,
	candidates func() (int, error)) error {
	read, matched, weight := 0, 0, 0
	if len(tokens) <= 1 {
		// Each candidate weighs 1: counted in PostgreSQL, in the order the query yields them, rather than
		// sending its 2,001 rows to be counted here.
		err := tx.QueryRow(ctx, fmt.Sprintf(`SELECT count(*) FILTER (WHERE m AND i <= %d), count(*)
			FROM (SELECT m, row_number() OVER () AS i FROM (%s) q(m, t)) w`, maxTotalTextChecks, query), args...).Scan(&matched, &read)
		if err != nil {
			return err
		}
		weight = min(read, maxTotalTextChecks)
		return estimate(res, read, matched, weight, candidates)
	}
	rows, err := tx.Query(ctx, query, args...)
	if err != nil {
		return err
	}
	var m bool
	var text string
	if _, err := pgx.ForEachRow(rows, []any{&m, &text}, func() error {
		if read++; read > maxTotalTextChecks {
			return nil
		}
		if m {
			matched++
		}
		k := 1
		if len(tokens) > 1 {
			k = 0
			for _, tok := range store.TextTokens(text) {
				if slices.Contains(tokens, tok) {
					k++
				}
			}
		}
		weight += max(k, 1)
		return nil
	}); err != nil {
		return err
	}
	return estimate(res, read, matched, weight, candidates)
}

// estimate sets res.Total from a sample of read candidates (one more than maxTotalTextChecks at most) of
// which the newest maxTotalTextChecks weigh weight and hold matched matches (see sampleTotal).
func estimate(res *store.ListResult, read, matched, weight int, candidates func() (int, error)) error {
	res.Total = matched
	if read <= maxTotalTextChecks {
		return nil
	}
	n, err := candidates()
	if err != nil {
		return err
	}
	res.TotalExact = false
	est := int(math.Round(float64(matched) / float64(weight) * float64(n)))
	res.Total = max(matched, est, len(res.Records))
	return nil
}
