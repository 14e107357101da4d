package backend

import (
	"cmp"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/directaid/directaid/backend/store"
	"github.com/directaid/directaid/schema"
)

// Responses ("yo puedo ayudar"): anyone may tell the publisher of an open record, request or offer, that
// they can help (or, to an offer, that they are interested). The public sees only how many responses are
// active; the publisher reads them with the manage token; the author renews or withdraws one with the
// responseToken given once at its creation. A responseToken is, like a manage token, a MAC under the
// store's secret (of the record id and the response id): nothing of it is stored.

// responseToken is the token of response rid of record id.
func (s *Service) responseToken(ctx context.Context, id, rid string) (string, error) {
	key, err := s.manageKey(ctx)
	if err != nil {
		return "", err
	}
	m := hmac.New(sha256.New, key)
	m.Write([]byte("response/1\x00" + id + "\x00" + rid))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil)), nil
}

// checkResponseToken reports, in constant time, whether token is that of response rid of record id.
func (s *Service) CheckResponseToken(ctx context.Context, id, rid, token string) (bool, error) {
	id, rid = store.NormalizeID(id), strings.ToLower(rid)
	want, err := s.responseToken(ctx, id, rid)
	if err != nil {
		return false, err
	}
	return token != "" && subtle.ConstantTimeCompare([]byte(token), []byte(want)) == 1, nil
}

// ForbiddenResponse is the one answer to a wrong responseToken, whether or not the response exists.
func ForbiddenResponse() *Problem {
	return &Problem{Status: http.StatusForbidden, Body: schema.ErrorBody{Code: schema.CodeForbidden,
		Error: "El código de esta respuesta no es válido. Use el responseToken que recibió al responder."}}
}

// UnauthorizedResponse is the answer to a response action without a Bearer token.
func UnauthorizedResponse() *Problem {
	return &Problem{Status: http.StatusUnauthorized, Challenge: schema.ManageTokenScheme, Body: schema.ErrorBody{Code: schema.CodeUnauthorized,
		Error:   "Falta el código de la respuesta: envíelo en la cabecera Authorization: Bearer <responseToken>, el que recibió al responder.",
		Details: []schema.FieldError{{Field: schema.Pointer("header", "Authorization"), Message: "falta «Authorization: Bearer <responseToken>»"}}}}
}

// newResponseID is 16 random lowercase hex characters.
func newResponseID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// ValidResponseID reports whether rid has the shape newResponseID gives.
func ValidResponseID(rid string) bool {
	if len(rid) != 16 {
		return false
	}
	_, err := hex.DecodeString(rid)
	return err == nil && strings.ToLower(rid) == rid
}

var (
	checkResponseInput  = schema.ArgsValidator(&schema.ResponseInput{})
	CheckResponseAction = schema.ArgsValidator(&schema.ResponseActionRequest{})
)

// DecodeResponse validates a response's body: the JSON Schema, then the phone as publishing parses it.
func DecodeResponse(body []byte) (*schema.ResponseInput, string, *Problem) {
	var in schema.ResponseInput
	if p := DecodeBody(body, checkResponseInput, &in); p != nil {
		return nil, "", p
	}
	return NormalizeResponse(&in)
}

// NormalizeResponse cleans in (schema.CleanText) and parses its phone (the same rules as a publication's).
func NormalizeResponse(in *schema.ResponseInput) (*schema.ResponseInput, string, *Problem) {
	in.Message, in.ContactName, in.ContactWhatsapp = schema.CleanText(in.Message), schema.CleanText(in.ContactName), schema.CleanText(in.ContactWhatsapp)
	var errs []schema.FieldError
	if in.Message == "" {
		errs = append(errs, schema.FieldError{Field: "/message", Message: "«message» no puede estar vacío: diga qué puede hacer"})
	}
	e164 := ""
	if in.ContactWhatsapp != "" {
		var fe *schema.FieldError
		if e164, fe = schema.NormalizePhone(in.ContactWhatsapp); fe != nil {
			errs = append(errs, *fe)
		}
	}
	if len(errs) > 0 {
		msg := "Datos inválidos: revise details."
		if len(errs) == 1 {
			msg = "Datos inválidos: " + errs[0].Message + "."
		}
		return nil, "", BadRequest(&schema.ErrorBody{Code: schema.CodeInvalidBody, Error: msg, Details: errs})
	}
	return in, e164, nil
}

// openRecord reads record id for a response: 400 for a malformed id, 404 unknown, 410 for a record that
// takes no response (hidden, withdrawn, resolved or expired).
func (s *Service) openRecord(ctx context.Context, id string, now time.Time) (*store.Record, error) {
	typed := id
	if id = store.NormalizeID(id); !store.ValidID(id) {
		return nil, InvalidParams([]schema.FieldError{ParamError("id", badIDMessage(typed))})
	}
	rec, err := s.store.Get(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, unknownRecord(id)
	}
	if err != nil {
		return nil, err
	}
	rec = readAt(rec, now)
	if rec.Status != store.StatusOpen {
		if !listed(rec.Status) {
			return nil, goneRecord(rec.Status)
		}
		return nil, &Problem{Status: http.StatusGone, Body: schema.ErrorBody{Code: schema.CodeGone,
			Error: fmt.Sprintf("La publicación está %s: ya no recibe respuestas.", StatusWords[rec.Status])}}
	}
	return rec, nil
}

// retryWindow is how long the same response from the same network to the same record is a retry: an
// app or an agent that lost the answer (a timeout) sends it again and gets the stored one back.
const retryWindow = 10 * time.Minute

// Respond stores a new response to record id from the client at addr (ClientIP), which its network's share
// of the public count (countBudget) may leave uncounted. The same response (message, name and number) from
// the same network within retryWindow is a retry: its id is a keyed hash of all that, so the store finds
// it taken however many retries race, and the answer is the stored response (Duplicate). Errors are
// *Problem.
func (s *Service) Respond(ctx context.Context, id string, in *schema.ResponseInput, e164, addr string) (*schema.ResponseCreated, error) {
	now := s.now().UTC().Truncate(time.Millisecond)
	rec, err := s.openRecord(ctx, id, now)
	if err != nil {
		return nil, err
	}
	retryID, prevID, err := s.retryResponseIDs(ctx, rec.ID, in, e164, addr, now)
	if err != nil {
		return nil, err
	}
	// A retry, of this window or (sent just after its turn) of the window before, of the words' first
	// response or of one sent again after it was withdrawn: one read finds any.
	if stored, err := s.storedRetry(ctx, rec.ID, now, slices.Concat(retryChain(retryID), retryChain(prevID))...); err != nil || stored != nil {
		if err != nil {
			return nil, err
		}
		return s.responseCreated(ctx, stored, true, false)
	}
	ok, repeat, wait, releaseShare := s.perRecord.take(now, ClientNet(addr), rec.ID, retryID)
	if !ok {
		return nil, shareSpent(wait)
	}
	// One helper is one person helping: a number that already counts on this record (the same helper
	// answering again in other words, after a dropped connection) reaches the publisher uncounted.
	sameHelper, err := s.countedFrom(ctx, rec.ID, e164, now)
	if err != nil {
		releaseShare()
		return nil, err
	}
	counted, releaseCount := false, func() {}
	if !sameHelper {
		counted, releaseCount = s.counted.take(now, ClientNet(addr))
	}
	release := func() { releaseCount(); releaseShare() }
	r := &store.Response{RecordID: rec.ID, CreatedAt: now, UpdatedAt: now, ExpiresAt: now.Add(schema.ResponseTTL),
		Status: store.ResponseActive, Message: in.Message, ContactName: in.ContactName, ContactWhatsapp: in.ContactWhatsapp, ContactE164: e164,
		Uncounted: !counted}
	// The ids this response may take: the words' own, then (the words sent again after a withdrawal)
	// the next ones of their chain, which a retry of it finds too; past the chain, random ones.
	chain := retryChain(retryID)
	next := chain[1]
	for try := 0; ; try++ {
		r.ID = retryID
		if try > 0 {
			r.ID, next = next, newResponseID()
			if try+1 < len(chain) {
				next = chain[try+1]
			}
		}
		err = s.store.CreateResponse(ctx, r)
		if try+1 < len(chain) && errors.Is(err, store.ErrResponseExists) {
			if stored, err := s.storedRetry(ctx, rec.ID, now, chain[:try+1]...); err != nil || stored != nil { // a racing retry stored it
				release()
				if err != nil {
					return nil, err
				}
				return s.responseCreated(ctx, stored, true, false)
			}
			// The earlier one was withdrawn or ended: this is a new response, and it takes a place of its own
			// in the share when the earlier one holds the place of its words (a withdrawal and the same words
			// again must not make a new response for free); the next id of the chain may hold one already
			// (sent again before), and then the one after it needs its own.
			if repeat {
				ok, again, wait, releaseNew := s.perRecord.take(now, ClientNet(addr), rec.ID, next)
				if !ok {
					release()
					return nil, shareSpent(wait)
				}
				prev := release
				release, repeat = func() { prev(); releaseNew() }, again
			}
			continue
		}
		if !errors.Is(err, store.ErrResponseExists) || try == len(chain)+2 {
			break
		}
	}
	if err != nil {
		release()
	}
	if errors.Is(err, store.ErrNotFound) {
		return nil, unknownRecord(id)
	}
	if errors.Is(err, store.ErrTooManyResponses) {
		return nil, &Problem{Status: http.StatusConflict, Body: schema.ErrorBody{Code: schema.CodeTooManyResponses, Error: fmt.Sprintf(
			"Esta publicación ya recibió %d respuestas, las que guarda como máximo: quien la publicó ya tiene muchas para revisar. "+
				"Busque otra parecida que nadie haya respondido todavía (attended=false en la lista).", store.MaxResponsesPerRecord)}}
	}
	if err != nil {
		return nil, err
	}
	if s.cfg.Responded != nil {
		s.cfg.Responded(ctx, rec.ID, r.ID)
	}
	return s.responseCreated(ctx, r, false, sameHelper)
}

// shareSpent is the 429 of a network that gave a record its responderPerRecord responses (abuse.go); the
// share frees a place after wait.
func shareSpent(wait time.Duration) *Problem {
	return &Problem{Status: http.StatusTooManyRequests, RetryAfter: max(int(math.Ceil(wait.Seconds())), 1), Zone: ZoneRespond, Body: schema.ErrorBody{Code: schema.CodeNetworkShareSpent, Error: fmt.Sprintf(
		"Desde su conexión ya se enviaron %d respuestas a esta publicación en las últimas 48 horas, las que admite de una misma red: "+
			"quien la publicó ya las tiene. Si alguien más quiere ayudar, que responda desde su propio teléfono (sus datos móviles).", responderPerRecord)}}
}

// retryResponseIDs are the ids a response's retries share, of the retryWindow (counted from the epoch) it
// is sent in and of the window before: a keyed hash of the record, the client's network, what it says and
// the window.
func (s *Service) retryResponseIDs(ctx context.Context, id string, in *schema.ResponseInput, e164, addr string, now time.Time) (this, before string, err error) {
	key, err := s.manageKey(ctx)
	if err != nil {
		return "", "", err
	}
	of := func(window int64) string {
		m := hmac.New(sha256.New, key)
		fmt.Fprintf(m, "response-retry/1\x00%s\x00%s\x00%s\x00%s\x00%s\x00%d", id, ClientNet(addr), in.Message, in.ContactName, e164, window)
		return hex.EncodeToString(m.Sum(nil)[:8])
	}
	w := now.UnixNano() / int64(retryWindow)
	return of(w), of(w - 1), nil
}

// retryChain are the ids the same words from the same network take in turn (rid, a retryResponseIDs
// id, first): a response sent again after it was withdrawn takes the next, and so its retries find it.
func retryChain(rid string) []string {
	out := []string{rid}
	for g := 1; g < 4; g++ {
		sum := sha256.Sum256(fmt.Appendf(nil, "response-retry-again/1\x00%s\x00%d", rid, g))
		out = append(out, hex.EncodeToString(sum[:8]))
	}
	return out
}

// storedRetry is the stored response of record id, among rids, that a retry sent at now should answer
// with: nil when there is none, it was sent retryWindow or more before now, or it is no longer active
// (withdrawn by its author, or ended with its record: sending it again is a new response); a 410 when
// reports hid it.
func (s *Service) storedRetry(ctx context.Context, id string, now time.Time, rids ...string) (*store.Response, error) {
	rs, err := s.store.RecordResponses(ctx, id)
	if err != nil {
		return nil, err
	}
	for _, r := range rs {
		switch {
		case !slices.Contains(rids, r.ID) || now.Sub(r.CreatedAt) >= retryWindow:
		case r.Status == store.ResponseActive:
			return r, nil
		case r.Status == schema.ResponseHidden:
			return nil, &Problem{Status: http.StatusGone, Body: schema.ErrorBody{Code: schema.CodeGone, Error: "Esa respuesta ya se envió y varias personas la reportaron: ya no se muestra."}}
		}
	}
	return nil, nil
}

// responseCreated is the answer to a new response, or to a retry of one (duplicate); sameHelper says that
// a new one was left uncounted because its number already counts on the record.
func (s *Service) responseCreated(ctx context.Context, r *store.Response, duplicate, sameHelper bool) (*schema.ResponseCreated, error) {
	tok, err := s.responseToken(ctx, r.RecordID, r.ID)
	if err != nil {
		return nil, err
	}
	counted := !r.Uncounted
	why := uncountedWords
	if sameHelper {
		why = sameHelperWords
	}
	with := map[bool]string{true: " y su WhatsApp", false: ""}[r.ContactE164 != ""]
	msg := "Gracias: quien publicó verá su mensaje" + with + ". La respuesta cuenta 48 horas; renuévela o retírela con el responseToken."
	switch {
	case duplicate:
		msg = "Esta respuesta ya se había enviado: no se creó otra. Quien publicó verá su mensaje" + with +
			"; este es el mismo responseToken para renovarla o retirarla."
	case !counted:
		msg = "Gracias: quien publicó verá su mensaje" + with + ". " + why +
			" La respuesta dura 48 horas; renuévela o retírela con el responseToken."
	}
	return &schema.ResponseCreated{OK: true, ID: r.RecordID, ResponseID: r.ID, ResponseToken: tok, Status: r.Status, ExpiresAt: r.ExpiresAt,
		Counted: counted, Duplicate: duplicate, Message: msg}, nil
}

// uncountedWords tell a responder why their response does not add to the public count.
var uncountedWords = fmt.Sprintf("Desde su conexión ya se sumaron %d respuestas al número público de personas que ayudan en las últimas 48 horas: "+
	"esta no se suma a ese número.", responderCounted)

// sameHelperWords tell a responder that their number already counts on the record.
const sameHelperWords = "Su número ya respondió a esta publicación: quien publicó ve los dos mensajes, y la página cuenta una sola persona."

// countedFrom reports whether a response of record id from the number e164 counts at now: the same helper
// answering again.
func (s *Service) countedFrom(ctx context.Context, id, e164 string, now time.Time) (bool, error) {
	if e164 == "" {
		return false, nil
	}
	rs, err := s.store.RecordResponses(ctx, id)
	if err != nil {
		return false, err
	}
	return slices.ContainsFunc(rs, func(r *store.Response) bool {
		return r.ContactE164 == e164 && r.CountsAt(now)
	}), nil
}

// responseStatus is how r reads at now: expired once past its ExpiresAt while active.
func responseStatus(r *store.Response, now time.Time) string {
	if r.Status == store.ResponseActive && !now.Before(r.ExpiresAt) {
		return schema.ResponseStatusExpired
	}
	return r.Status
}

// publisherResponses is what the publisher of record id sees of its responses (the caller checked the
// manage token): every response but those hidden by reports, newest first.
func (s *Service) Responses(ctx context.Context, id string) (*schema.ResponseList, error) {
	id = store.NormalizeID(id)
	now := s.now()
	rec, err := s.store.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	rs, err := s.store.RecordResponses(ctx, id)
	if err != nil {
		return nil, err
	}
	out := &schema.ResponseList{ID: id, Items: []schema.ResponseView{}}
	open := readAt(rec, now).Status == store.StatusOpen
	for _, r := range rs {
		if r.Status == schema.ResponseHidden {
			continue
		}
		v := schema.ResponseView{ResponseID: r.ID, CreatedAt: r.CreatedAt.UTC(), ExpiresAt: r.ExpiresAt.UTC(), Status: responseStatus(r, now),
			Message: r.Message, ContactName: r.ContactName, ContactWhatsapp: r.ContactWhatsapp}
		if v.Status == schema.ResponseActive && !open {
			// Its record expired (or closed) since: it no longer counts, and reads as ended, as a
			// resolution's end stores it.
			v.Status = schema.ResponseEnded
		}
		if r.ContactE164 != "" {
			v.WhatsappURL = schema.WhatsappURL(r.ContactE164)
		}
		if v.Status == schema.ResponseActive {
			out.Active++
		}
		out.Items = append(out.Items, v)
	}
	return out, nil
}

// ResponsesFor is Responses for the holder of record id's manage token: the same Forbidden for a wrong
// token and an unknown id, as the site's /gestionar and the MCP tool ver_respuestas ask.
func (s *Service) ResponsesFor(ctx context.Context, id, token string) (*schema.ResponseList, error) {
	if ok, err := s.CheckManageToken(ctx, id, token); err != nil || !ok || token == "" {
		return nil, cmp.Or(err, error(Forbidden()))
	}
	return s.Responses(ctx, id)
}

// ActOnResponseWith is ActOnResponse for the holder of response rid's token: the same ForbiddenResponse
// for a wrong token and an unknown response, as the site's buttons and the MCP tool actualizar_respuesta ask.
func (s *Service) ActOnResponseWith(ctx context.Context, id, rid, token, action, addr string) (*schema.ResponseActionResult, error) {
	if ok, err := s.CheckResponseToken(ctx, id, rid, token); err != nil || !ok || token == "" {
		return nil, cmp.Or(err, error(ForbiddenResponse()))
	}
	return s.ActOnResponse(ctx, id, rid, action, addr)
}

// ActOnResponse applies the author's action to response rid of record id (the caller checked the token),
// from the client at addr: a renewal counts again within its network's share (countBudget).
func (s *Service) ActOnResponse(ctx context.Context, id, rid, action, addr string) (*schema.ResponseActionResult, error) {
	id, rid = store.NormalizeID(id), strings.ToLower(rid)
	if !slices.Contains(schema.ResponseActions, action) {
		msg := "«action» debe ser una de: " + strings.Join(schema.ResponseActions, ", ")
		return nil, BadRequest(&schema.ErrorBody{Code: schema.CodeInvalidBody, Error: "Acción desconocida: " + msg + ".",
			Details: []schema.FieldError{{Field: "/action", Message: msg, Allowed: schema.ResponseActions}}})
	}
	now := s.now().UTC().Truncate(time.Millisecond)
	var recordOpen bool
	if action == schema.ResponseActionRenew {
		rec, err := s.store.Get(ctx, id)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return nil, err
		}
		recordOpen = err == nil && readAt(rec, now).Status == store.StatusOpen
	}
	counted, release := false, func() {}
	if action == schema.ResponseActionRenew && recordOpen {
		counted, release = s.counted.take(now, ClientNet(addr))
	}
	changed := true
	r, err := s.store.UpdateResponse(ctx, id, rid, func(r *store.Response) error {
		st := responseStatus(r, now)
		switch action {
		case schema.ResponseActionWithdraw:
			if st == schema.ResponseWithdrawn {
				return errNoChange
			}
			r.Status, r.ExpiresAt = schema.ResponseWithdrawn, now
			r.ErasePersonal()
		case schema.ResponseActionRenew:
			if (st != store.ResponseActive && st != schema.ResponseStatusExpired) || !recordOpen {
				return &transitionError{action, st}
			}
			r.Status, r.ExpiresAt, r.Uncounted = store.ResponseActive, now.Add(schema.ResponseTTL), !counted
		}
		r.UpdatedAt = now
		return nil
	})
	if err != nil {
		release()
	}
	if errors.Is(err, errNoChange) {
		changed = false
		var rs []*store.Response
		if rs, err = s.store.RecordResponses(ctx, id); err == nil {
			r = nil
			for _, x := range rs {
				if x.ID == rid {
					r = x
				}
			}
			if r == nil {
				err = store.ErrNotFound
			}
		}
	}
	var te *transitionError
	switch {
	case errors.As(err, &te):
		msg := "La respuesta ya no está activa: no se puede renovar."
		if !recordOpen {
			msg = "La publicación ya no está abierta: la respuesta no se puede renovar."
		}
		return nil, &Problem{Status: http.StatusConflict, Body: schema.ErrorBody{Code: schema.CodeInvalidTransition, Error: msg}}
	case errors.Is(err, store.ErrNotFound):
		return nil, ForbiddenResponse() // a valid token of a response that is gone (erased with its record)
	case err != nil:
		return nil, err
	}
	res := &schema.ResponseActionResult{OK: true, ID: id, ResponseID: rid, Action: action, Changed: changed, Status: responseStatus(r, now),
		Counted: r.CountsAt(now)}
	if r.ActiveAt(now) {
		e := r.ExpiresAt.UTC()
		res.ExpiresAt = &e
	}
	return res, nil
}

// endResponses ends the responses of record id once it is no longer open (resolved, withdrawn by its
// publisher): with erase (a withdrawal, an operator's erase) they are deleted with what they said.
func (s *Service) endResponses(ctx context.Context, id string, erase bool) error {
	if erase {
		return s.store.DeleteResponses(ctx, id)
	}
	rs, err := s.store.RecordResponses(ctx, id)
	if err != nil {
		return err
	}
	now := s.now().UTC().Truncate(time.Millisecond)
	for _, r := range rs {
		if r.Status != store.ResponseActive {
			continue
		}
		_, err := s.store.UpdateResponse(ctx, id, r.ID, func(r *store.Response) error {
			if r.Status != store.ResponseActive {
				return errNoChange
			}
			r.Status, r.UpdatedAt = schema.ResponseEnded, now
			return nil
		})
		if err != nil && !errors.Is(err, errNoChange) && !errors.Is(err, store.ErrNotFound) {
			return err
		}
	}
	return nil
}

// reportResponse files a community report of response rid of record id: a reporter counts once, and
// HideAfterReports distinct reporters hide the response from the publisher (and from the count), within
// the emergency's breaker (abuse.go): past it, a report is counted and hides nothing, so that a few
// addresses cannot hide every response of an emergency.
func (s *Service) ReportResponse(ctx context.Context, id, rid string, in *schema.ReportInput, addr string) (*schema.ReportResult, error) {
	id, p := checkReportTarget(id, in)
	if p != nil {
		return nil, p
	}
	rid = strings.ToLower(rid)
	m, err := s.moderation()
	if err != nil {
		return nil, err
	}
	who, err := s.reporterKey(ctx, m, addr)
	if err != nil {
		return nil, err
	}
	hideAfter := s.cfg.HideAfterReports
	if hideAfter <= 0 {
		hideAfter = defaultHideAfterReports
	}
	// Whether this report would hide the response, then whether the emergency's breaker lets it.
	wouldHide, mayHide, release := false, false, func() {}
	if rs, err := s.store.RecordResponses(ctx, id); err != nil {
		return nil, err
	} else if i := slices.IndexFunc(rs, func(r *store.Response) bool { return r.ID == rid }); i >= 0 {
		r := rs[i]
		n := len(r.Reporters)
		if !slices.Contains(r.Reporters, who) && !slices.Contains(r.Cleared, who) {
			n++
		}
		if wouldHide = n >= hideAfter && r.Status == schema.ResponseActive; wouldHide {
			rec, err := s.store.Get(ctx, id)
			if err != nil && !errors.Is(err, store.ErrNotFound) {
				return nil, err
			}
			if rec != nil {
				total, err := s.emergencyRecords(ctx, rec.EmergencySlug)
				if err != nil {
					return nil, err
				}
				mayHide, release = s.hides.reserveResponse(s.now(), rec.EmergencySlug, total)
			}
		}
	}
	hid := false
	_, err = s.store.UpdateResponse(ctx, id, rid, func(r *store.Response) error {
		hid = false
		if r.Status == schema.ResponseHidden || r.Status == schema.ResponseWithdrawn {
			return errGoneResponse
		}
		if !slices.Contains(r.Reporters, who) && !slices.Contains(r.Cleared, who) { // an operator reviewed a cleared reporter's report
			// A change, as the operator's restore is: a later copy (directaid migrate) carries it over.
			r.Reporters, r.UpdatedAt = append(r.Reporters, who), s.now().UTC().Truncate(time.Millisecond)
		}
		if len(r.Reporters) >= hideAfter && mayHide {
			r.Status, hid = schema.ResponseHidden, true
		}
		return nil
	})
	if !hid {
		release()
	}
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil, &Problem{Status: http.StatusNotFound, Body: schema.ErrorBody{Code: "not_found", Error: "No existe esa respuesta."}}
	case errors.Is(err, errGoneResponse):
		return nil, &Problem{Status: http.StatusGone, Body: schema.ErrorBody{Code: schema.CodeGone, Error: "Esa respuesta fue retirada o ya está oculta."}}
	case err != nil:
		return nil, err
	}
	if err := s.Audit(ctx, ActionReport, id, store.ActorCommunity, "", "", in.Reason); err != nil {
		return nil, err
	}
	res := &schema.ReportResult{OK: true, ID: id, Reason: in.Reason, Outcome: schema.ReportCounted,
		Message: "Gracias: el reporte de la respuesta quedó registrado."}
	switch {
	case hid:
		res.Outcome, res.Message = schema.ReportHidRecord, "Gracias: varias personas reportaron esta respuesta y ya no se muestra a quien publicó."
	case wouldHide:
		res.Outcome, res.Message = schema.ReportQueued, "Gracias: el reporte quedó registrado. Por ahora no se oculta nada automáticamente en esta emergencia (hubo muchos reportes recientes)."
	}
	s.cfg.Observe.reported(in.Reason, res.Outcome)
	return res, nil
}

var errGoneResponse = errors.New("response withdrawn or hidden")

// responseCounts are the active responses of the open records among recs, by id.
func (s *Service) responseCounts(ctx context.Context, recs []*store.Record, now time.Time) (map[string]int, error) {
	ids := make([]string, 0, len(recs))
	for _, r := range recs {
		if readAt(r, now).Status == store.StatusOpen {
			ids = append(ids, r.ID)
		}
	}
	if len(ids) == 0 {
		return map[string]int{}, nil
	}
	return s.store.ResponseCounts(ctx, ids, now)
}

// maxAttendedPages bounds the store pages one attended page reads: past it the page is returned short,
// with a cursor to go on from.
const maxAttendedPages = 20

// listCounted answers spec with the active responses of each record. With attended ("true" or "false")
// only the records with (or without) an active response are kept: the store's pages are read, each asking
// for what the page still lacks, until it is full, the list ends or maxAttendedPages were read, so the
// cursor of the last store page read is where the next page goes on (no record is skipped or repeated).
// Total is then the store's total, an upper bound.
func (s *Service) listCounted(ctx context.Context, spec *store.ListSpec, attended string, now time.Time) (*store.ListResult, map[string]int, error) {
	if attended == "" {
		res, err := s.store.List(ctx, spec)
		if err != nil {
			return nil, nil, err
		}
		counts, err := s.responseCounts(ctx, res.Records, now)
		return res, counts, err
	}
	want := attended == "true"
	page := *spec
	out := &store.ListResult{}
	all := map[string]int{}
	for n := 0; n < maxAttendedPages; n++ {
		page.Limit = spec.Limit - len(out.Records)
		res, err := s.store.List(ctx, &page)
		if err != nil {
			return nil, nil, err
		}
		counts, err := s.responseCounts(ctx, res.Records, now)
		if err != nil {
			return nil, nil, err
		}
		if n == 0 {
			out.Total = res.Total
		}
		for i, rec := range res.Records {
			if (counts[rec.ID] > 0) != want || !listed(readAt(rec, now).Status) {
				continue
			}
			out.Records = append(out.Records, rec)
			if res.Distances != nil {
				out.Distances = append(out.Distances, res.Distances[i])
			}
			all[rec.ID] = counts[rec.ID]
		}
		out.Next = res.Next
		if res.Next == nil || len(out.Records) >= spec.Limit {
			break
		}
		page.After = res.Next
	}
	if out.Next == nil && spec.After == nil {
		out.Total, out.TotalExact = len(out.Records), true
	}
	return out, all, nil
}
