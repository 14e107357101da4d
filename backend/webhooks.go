package backend

import (
	"context"

	"github.com/directaid/directaid/schema"
)

// MatchesFor answers the matches of record id as GET help/{id}/matches does with its default radius and
// its largest limit, links under base: what the webhooks' match events are derived from.
func (s *Service) MatchesFor(ctx context.Context, base, id string) (*schema.HelpMatches, error) {
	return s.helpMatches(ctx, base, id, schema.MatchesQuery{Limit: schema.MaxMatchLimit})
}
