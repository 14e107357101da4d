package pgstore

import (
	"context"
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

// wordTotal is the total of a q list from the counters, when they give it exactly (as Badger's onlyToken):
// one word of letters and digits only, no other filter than the status, and no other token containing
// it, so that the records matching it are those having that token. ok is false otherwise.
func wordTotal(ctx context.Context, tx pgx.Tx, spec *store.ListSpec) (n int, ok bool, err error) {
	if len(spec.Words) != 1 || spec.Near || spec.EmergencySlug != "" || spec.Type != "" || spec.Category != "" ||
		spec.Urgency != "" || spec.Municipio != "" || spec.SinceMillis() >= 0 || spec.StatusOr() == "" {
		return 0, false, nil
	}
	w := spec.Words[0]
	if w == "" || strings.IndexFunc(w, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) >= 0 {
		return 0, false, nil
	}
	// Tokens of any status, as Badger's vocabulary: the first two that contain w tell whether w is alone.
	var toks []string
	if err := tx.QueryRow(ctx, `SELECT array(SELECT DISTINCT token FROM directaid_words WHERE token LIKE $1 LIMIT 2)`,
		"%"+likeEscape(w)+"%").Scan(&toks); err != nil {
		return 0, false, err
	}
	if len(toks) != 1 || toks[0] != w {
		return 0, false, nil
	}
	err = tx.QueryRow(ctx, `SELECT coalesce(sum(n), 0)::bigint FROM directaid_words WHERE status = $1 AND token = $2`,
		spec.StatusOr(), w).Scan(&n)
	return n, err == nil, err
}
