package backend

import (
	"context"
	"time"

	"github.com/directaid/directaid/backend/store"
)

// What the package's external tests reach inside a Service for.

// ExpiryBatch is expiryBatch, how many due records one read of the expiry index takes.
const ExpiryBatch = expiryBatch

// LegacyTokensBefore is legacyTokensBefore.
var LegacyTokensBefore = legacyTokensBefore

// SetNow sets the service's clock.
func (s *Service) SetNow(now func() time.Time) { s.now = now }

// SetIDs sets how the service makes a new record's id.
func (s *Service) SetIDs(ids store.IDSource) { s.ids = ids }

// StoreModeration is the store's moderation side, as the service uses it.
func (s *Service) StoreModeration() (store.Moderation, error) { return s.moderation() }

// ManageToken is the manage token of rec.
func (s *Service) ManageToken(ctx context.Context, rec *store.Record) (string, error) {
	return s.manageToken(ctx, rec)
}

// LegacyManageToken is the token of a record created before LegacyTokensBefore.
func (s *Service) LegacyManageToken(ctx context.Context, id string) (string, error) {
	return s.legacyManageToken(ctx, id)
}
