package backend

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/directaid/directaid/backend/store"
	"github.com/directaid/directaid/schema"
)

// A publisher's capability is a keyed MAC of the record's id and its (source, externalId) pair under a
// server secret kept in the database (store.Secret): nothing per record is stored, every node computes
// the same token, and no read can give it away because no read has it. It binds the pair too, so that a
// token acts only on the publication it was given for, even were two publications ever to share an id.
// It is compared in constant time.

// actionWords say a publisher's action in Spanish, after «no se puede».
var actionWords = map[string]string{schema.ActionResolve: "marcar como resuelta", schema.ActionReopen: "reabrir",
	schema.ActionRenew: "renovar", schema.ActionWithdraw: "retirar"}

// manageSecretName names the secret of the manage tokens in the store; publisherSecretName, that of
// Record.Publisher.
const (
	manageSecretName    = "manage-token"
	publisherSecretName = "publishers"
	// disownedSecretName names the secret of the disowned numbers' keys (disownedKey).
	disownedSecretName = "disowned-phones"
)

// Default lifetimes of an open record (a Caddyfile's request_ttl and offer_ttl change them per emergency).
const (
	DefaultRequestTTL = 14 * 24 * time.Hour
	DefaultOfferTTL   = 30 * 24 * time.Hour
)

// secrets caches the store's secret for the life of a Service (it never changes).
type secrets struct {
	mu                          sync.Mutex
	manage, publisher, disowned []byte
}

func (s *Service) manageKey(ctx context.Context) ([]byte, error) {
	return s.cachedSecret(ctx, manageSecretName, &s.secrets.manage)
}

// cachedSecret is the store's secret name, read once into slot.
func (s *Service) cachedSecret(ctx context.Context, name string, slot *[]byte) ([]byte, error) {
	s.secrets.mu.Lock()
	defer s.secrets.mu.Unlock()
	if *slot == nil {
		k, err := s.store.Secret(ctx, name)
		if err != nil {
			return nil, err
		}
		*slot = k
	}
	return *slot, nil
}

// manageToken is the manage token of rec: a MAC of its id and its pair (length-prefixed, as the stores
// key it, so that no two pairs read alike).
func (s *Service) manageToken(ctx context.Context, rec *store.Record) (string, error) {
	key, err := s.manageKey(ctx)
	if err != nil {
		return "", err
	}
	m := hmac.New(sha256.New, key)
	b := append([]byte("manage/2\x00"), rec.ID...)
	b = binary.AppendUvarint(append(b, 0), uint64(len(rec.Source)))
	m.Write(append(append(b, rec.Source...), rec.ExternalID...))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil)), nil
}

// publisherKey is Record.Publisher for a client at address addr: a keyed hash of its network (ClientNet),
// under a secret of its own, so that it says nothing but «the same network as».
func (s *Service) publisherKey(ctx context.Context, addr string) (string, error) {
	key, err := s.cachedSecret(ctx, publisherSecretName, &s.secrets.publisher)
	if err != nil {
		return "", err
	}
	return keyedHex(key, ClientNet(addr), 12), nil // outside the lock: every publication computes one
}

// keyedHex is the hex of the first n bytes of the HMAC-SHA256 of msg under key: the stores' pseudonyms
// (a publisher's or a reporter's network, a disowned number) say «the same as» and nothing else.
func keyedHex(key []byte, msg string, n int) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(msg))
	return hex.EncodeToString(m.Sum(nil)[:n])
}

// samePublisher reports whether a retry keyed want comes from the network of a record keyed stored. A
// record stored before records kept their publisher's network matches no retry.
func samePublisher(stored, want string) bool {
	return stored != "" && subtle.ConstantTimeCompare([]byte(stored), []byte(want)) == 1
}

// legacyTokensBefore: records created before it were given tokens that are a MAC of the id alone; their
// publishers keep them (legacyManageToken), while every record created since gets and takes only
// manageToken's.
var legacyTokensBefore = time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)

// legacyManageToken is the token of id as records created before legacyTokensBefore were given it.
func (s *Service) legacyManageToken(ctx context.Context, id string) (string, error) {
	key, err := s.manageKey(ctx)
	if err != nil {
		return "", err
	}
	m := hmac.New(sha256.New, key)
	m.Write([]byte("manage\x00" + id))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil)), nil
}

// checkManageToken reports whether token is the manage token of record id, in constant time; an unknown
// id is a wrong token.
func (s *Service) CheckManageToken(ctx context.Context, id, token string) (bool, error) {
	id = store.NormalizeID(id)
	rec, err := s.store.Get(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		rec = &store.Record{ID: id} // a MAC all the same: an unknown id costs what a known one does
	} else if err != nil {
		return false, err
	}
	want, err := s.manageToken(ctx, rec)
	if err != nil {
		return false, err
	}
	ok := subtle.ConstantTimeCompare([]byte(token), []byte(want)) == 1 && rec.Source != ""
	if !ok && rec.Source != "" && rec.CreatedAt.Before(legacyTokensBefore) {
		if want, err = s.legacyManageToken(ctx, id); err != nil {
			return false, err
		}
		ok = subtle.ConstantTimeCompare([]byte(token), []byte(want)) == 1
	}
	return ok && token != "", nil
}

// ttl is how long a new or renewed open record of typ in emergency slug stays open.
func (s *Service) ttl(slug, typ string) time.Duration {
	for _, e := range s.cfg.Emergencies {
		if e.Slug != slug {
			continue
		}
		if typ == schema.TypeOffer && e.OfferTTL > 0 {
			return e.OfferTTL
		}
		if typ == schema.TypeRequest && e.RequestTTL > 0 {
			return e.RequestTTL
		}
	}
	if typ == schema.TypeOffer {
		return DefaultOfferTTL
	}
	return DefaultRequestTTL
}

// Unauthorized is the answer to an actions request with no Bearer token at all (RFC 6750: 401 with the
// challenge), whether or not the id exists.
func Unauthorized() *Problem {
	return &Problem{Status: http.StatusUnauthorized, Challenge: schema.ManageTokenScheme, Body: schema.ErrorBody{Code: schema.CodeUnauthorized,
		Error:   "Falta el código para gestionar esta publicación: envíelo en la cabecera Authorization: Bearer <manageToken>, el que recibió al publicarla.",
		Details: []schema.FieldError{{Field: schema.Pointer("header", "Authorization"), Message: "falta «Authorization: Bearer <manageToken>»"}}}}
}

// Forbidden is the one answer to a wrong or other record's token, whether or not the id exists.
func Forbidden() *Problem {
	return &Problem{Status: http.StatusForbidden, Body: schema.ErrorBody{Code: schema.CodeForbidden,
		Error: "El código para gestionar esta publicación no es válido. Use el enlace o el código que recibió al publicarla."}}
}

// transitionError is an action the record's status does not allow.
type transitionError struct{ action, status string }

func (e *transitionError) Error() string { return e.action + " from " + e.status }

var StatusWords = map[string]string{
	store.StatusOpen: "abierta", store.StatusResolved: "resuelta", store.StatusWithdrawn: "retirada",
	store.StatusExpired: "vencida", store.StatusHidden: "oculta mientras se revisa",
}

// applyAction changes r as action asks, or says why not (errNoChange when r is already so).
func (s *Service) applyAction(r *store.Record, action string, now time.Time) error {
	st := readAt(r, now).Status // a record past its expiresAt is expired, swept or not
	switch action {
	case schema.ActionWithdraw:
		if st == store.StatusWithdrawn {
			return errNoChange
		}
		r.Status, r.HiddenFrom, r.HiddenBy = store.StatusWithdrawn, "", ""
		r.ErasePersonal()
		r.ExpiresAt = time.Time{}
	case schema.ActionResolve:
		switch st {
		case store.StatusResolved:
			return errNoChange
		case store.StatusOpen, store.StatusExpired:
			r.Status, r.ExpiresAt = store.StatusResolved, time.Time{}
		default:
			return &transitionError{action, st}
		}
	case schema.ActionReopen:
		switch st {
		case store.StatusOpen:
			return errNoChange
		case store.StatusResolved, store.StatusExpired:
			r.Status, r.ExpiresAt = store.StatusOpen, now.Add(s.ttl(r.EmergencySlug, r.Type))
		default:
			return &transitionError{action, st}
		}
	case schema.ActionRenew:
		switch st {
		case store.StatusOpen, store.StatusExpired:
			r.Status, r.ExpiresAt = store.StatusOpen, now.Add(s.ttl(r.EmergencySlug, r.Type))
		default:
			return &transitionError{action, st}
		}
	default:
		return fmt.Errorf("unknown action %q", action)
	}
	r.UpdatedAt = now
	return nil
}

// Act applies a publisher's action to record id, with its manage token. Errors are *Problem.
func (s *Service) Act(ctx context.Context, base, id, token, action string) (*schema.ActionResult, error) {
	id = store.NormalizeID(id)
	ok, err := s.CheckManageToken(ctx, id, token)
	if err != nil {
		return nil, err
	}
	if !ok || token == "" {
		return nil, Forbidden()
	}
	if !slices.Contains(schema.Actions, action) {
		msg := fmt.Sprintf("«action» debe ser una de: %s", strings.Join(schema.Actions, ", "))
		return nil, BadRequest(&schema.ErrorBody{Code: schema.CodeInvalidBody, Error: "Acción desconocida: " + msg + ".",
			Details: []schema.FieldError{{Field: "/action", Message: msg, Allowed: schema.Actions}}})
	}
	now := s.now().UTC().Truncate(time.Millisecond)
	changed := true
	// The trail holds publisher actions too, written with the change (a repeated one changes nothing).
	rec, err := s.update(auditStatus(ctx, action, store.ActorPublisher), id, func(r *store.Record) error { return s.applyAction(r, action, now) })
	if errors.Is(err, errNoChange) {
		changed = false
		rec, err = s.store.Get(ctx, id)
		if err == nil {
			rec = readAt(rec, now)
		}
	}
	var te *transitionError
	switch {
	case errors.As(err, &te):
		return nil, &Problem{Status: http.StatusConflict, Body: schema.ErrorBody{Code: schema.CodeInvalidTransition,
			Error: fmt.Sprintf("La publicación está %s: no se puede %s.", StatusWords[te.status], actionWords[te.action])}}
	case errors.Is(err, store.ErrNotFound):
		return nil, Forbidden() // a token of a record that is not there: cannot happen, but never say so
	case err != nil:
		return nil, err
	}
	// A record no longer open ends its responses; a withdrawal erases them with its own personal data.
	// Run on a repeated action too, so that a retry after a failure here finishes the job.
	if rec.Status == store.StatusResolved || rec.Status == store.StatusWithdrawn {
		if err := s.endResponses(ctx, id, rec.Status == store.StatusWithdrawn); err != nil {
			return nil, err
		}
	}
	if action == schema.ActionReopen && changed {
		s.perRecord.forget(id) // its ended responses no longer hold their networks' places
	}
	res := &schema.ActionResult{OK: true, ID: rec.ID, Action: action, Changed: changed, Status: rec.Status,
		UpdatedAt: rec.UpdatedAt.UTC(), PublicURL: base + schema.RecordPath(rec.ID)}
	if rec.Status == store.StatusOpen && !rec.ExpiresAt.IsZero() {
		e := rec.ExpiresAt.UTC()
		res.ExpiresAt = &e
	}
	return res, nil
}

// CheckAction validates the body of POST …/{id}/actions against its JSON Schema.
var CheckAction = schema.ArgsValidator(&schema.ActionRequest{})
