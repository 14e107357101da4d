package pgstore

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// Expiring implements store.Store through the partial index directaid_records_expiry (migration 0003).
func (s *Store) Expiring(ctx context.Context, at time.Time, limit int) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, s.Timeout)
	defer cancel()
	if err := s.ready(ctx); err != nil {
		return nil, fail(err)
	}
	rows, err := s.db.Pool.Query(ctx, `SELECT id FROM directaid_records
		WHERE status = 'open' AND expires_at IS NOT NULL AND expires_at <= $1 ORDER BY expires_at, id LIMIT $2`, at, limit)
	if err != nil {
		return nil, fail(err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	return ids, fail(err)
}
