package pgstore

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
)

// ClaimInstance writes nonce, a random value of this process, as the last writer of the Caddy instance id
// instance, and returns the nonce written there before ("" for none). caddy-ratelimit's distributed mode
// names each node's counts by its instance id: a process that finds, at its second claim or later, another
// nonce than its own knows that another live process has its id and that the nodes' limits are counted
// apart (the caller says so; a dead process's nonce, found at the first claim, writes no more).
func (s *Store) ClaimInstance(ctx context.Context, instance, nonce string) (before string, err error) {
	err = s.call(ctx, func(ctx context.Context) error {
		return pgx.BeginFunc(ctx, s.db.Pool, func(tx pgx.Tx) error {
			err := tx.QueryRow(ctx, `SELECT nonce FROM directaid_nodes WHERE instance_id = $1 FOR UPDATE`, instance).Scan(&before)
			if err != nil && !errors.Is(err, pgx.ErrNoRows) {
				return err
			}
			_, err = tx.Exec(ctx, `INSERT INTO directaid_nodes (instance_id, nonce, seen_at) VALUES ($1, $2, now())
				ON CONFLICT (instance_id) DO UPDATE SET nonce = EXCLUDED.nonce, seen_at = EXCLUDED.seen_at`, instance, nonce)
			return err
		})
	})
	return before, err
}
