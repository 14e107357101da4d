package backend

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/directaid/directaid/backend/store"
	"github.com/directaid/directaid/schema"
)

// Community reports, the operator's moderation and the audit trail.
//
// A reporter is told apart by HMAC-SHA256 of its address under the server secret "reporters" (kept in
// the database, store.Moderation.Secret): nobody can tell an address from the hash without the secret, and
// the address itself is never stored.

// defaultHideAfterReports is how many distinct reporters hide a record when the Caddyfile does not say.
const defaultHideAfterReports = 3

// The actions of the audit trail.
const (
	ActionReport    = "report"
	ActionHide      = "hide"
	ActionHidePhone = "hide_phone"
	ActionRestore   = "restore"
	ActionErase     = "erase"
	ActionSetStatus = "set_status"
)

var checkReport = schema.ArgsValidator(&schema.ReportInput{})

var errNoChange = errors.New("no change")

// moderation is the store: every store.Store keeps reports and the audit trail.
func (s *Service) moderation() (store.Moderation, error) { return s.store, nil }

// Audit appends an action on a record to the audit trail: what (action), which record, which kind of
// actor (store.ActorPublisher, ActorCommunity, ActorOperator, ActorSystem), the status before and after
// when it changed, and for a report its reason. Never personal data. Publisher actions call it too.
// An operator's action names the moderator that ctx carries (WithModerator), if any.
func (s *Service) Audit(ctx context.Context, action, id, actor, from, to, reason string) error {
	m, err := s.moderation()
	if err != nil {
		return err
	}
	e := store.AuditEntry{Action: action, RecordID: id, Actor: actor, From: from, To: to, Reason: reason}
	if actor == store.ActorOperator {
		e.By = Moderator(ctx)
	}
	return m.AppendAudit(ctx, e)
}

// auditStatus is the audit of an Update that is action by actor (store.WithAudit, in the change's own
// transaction): one entry, from the record's status before to its status after, naming the moderator of
// an operator's action.
func auditStatus(ctx context.Context, action, actor string) context.Context {
	by := ""
	if actor == store.ActorOperator {
		by = Moderator(ctx)
	}
	return store.WithAudit(ctx, func(old, rec *store.Record) []store.AuditEntry {
		return []store.AuditEntry{{Action: action, RecordID: rec.ID, Actor: actor, From: old.Status, To: rec.Status, By: by}}
	})
}

type moderatorKey struct{}

// WithModerator records the name of the moderator that the server authenticated for a request (Caddy's
// {http.auth.user.id}, set by basic_auth or any authentication handler): the site's /moderacion is
// served only to a request that has one, and the audit trail names them.
func WithModerator(ctx context.Context, name string) context.Context {
	return context.WithValue(ctx, moderatorKey{}, name)
}

// Moderator is the name WithModerator recorded, or "".
func Moderator(ctx context.Context) string {
	name, _ := ctx.Value(moderatorKey{}).(string)
	return name
}

// reporterKey is the keyed hash that tells reporters apart: of the client's reporting network
// (ReporterNet), so that one IPv6 home is one reporter however many of its addresses and /64s it uses.
func (s *Service) reporterKey(ctx context.Context, m store.Moderation, addr string) (string, error) {
	key, err := m.Secret(ctx, "reporters")
	if err != nil {
		return "", err
	}
	return keyedHex(key, ReporterNet(addr), 16), nil
}

// ReporterNet is what counts as one reporter of address addr: an IPv4 address itself, and an IPv6
// address's /56, the prefix an ISP commonly delegates to one home (its 256 /64s, one person's for the
// asking). Reports decide alone what is hidden (three reporters hide a record), so a reporter is the
// wider network; a client (ClientNet) stays the /64.
func ReporterNet(addr string) string {
	a, err := netip.ParseAddr(addr)
	if err != nil || a.Unmap().Is4() {
		return ClientNet(addr)
	}
	return netip.PrefixFrom(a.WithZone(""), 56).Masked().String()
}

// disownedKey is the key of phone number e164 among the disowned numbers (store.Disowning): a keyed hash,
// so that the store never holds the number there.
func (s *Service) disownedKey(ctx context.Context, e164 string) (string, error) {
	key, err := s.cachedSecret(ctx, disownedSecretName, &s.secrets.disowned)
	if err != nil {
		return "", err
	}
	return keyedHex(key, e164, 16), nil
}

// phoneDisowned says whether the owner of e164 said, with a not_my_number report that hid it on a record
// publisher (a network, Record.Publisher) published, that it is not theirs to publish, and no operator
// has shown it again since: publisher then does not publish it shown. Other networks do: a disowning
// against everyone would let anyone block a number for its owner (publish it, then report it).
func (s *Service) phoneDisowned(ctx context.Context, e164, publisher string) (bool, error) {
	if e164 == "" {
		return false, nil
	}
	key, err := s.disownedKey(ctx, e164)
	if err != nil {
		return false, err
	}
	return s.store.Disowned(ctx, key, publisher, s.now().Add(-DisownedFor))
}

// DisownedFor is how long a disowning holds by itself: the report that makes one is anonymous, and may be
// false (someone reporting the owner's own publication), so it blocks the network that published the
// reported record for a day, not for good; a harasser who publishes the number again after it is
// reported again. An operator's restore ends it at once.
const DisownedFor = 24 * time.Hour

// ClientNet is what counts as one client of address addr: an IPv4 address itself, and an IPv6 address's
// /64, the network a single host or home is given (any of its 2^64 addresses is the same client). An
// address that does not parse stays as it is.
func ClientNet(addr string) string {
	a, err := netip.ParseAddr(addr)
	if err != nil {
		return addr
	}
	if a = a.Unmap(); a.Is4() {
		return a.String()
	}
	return netip.PrefixFrom(a.WithZone(""), 64).Masked().String()
}

// DecodeReport validates a report's JSON body: 400 invalid_json or invalid_body with every violation.
func DecodeReport(body []byte) (*schema.ReportInput, *Problem) {
	var in schema.ReportInput
	if p := DecodeBody(body, checkReport, &in); p != nil {
		return nil, p
	}
	in.Note = schema.CleanText(in.Note)
	return &in, nil
}

// DecodeBody reads a JSON body that is not a publication (an action, a report) into v by the rules a
// publication's follows: schema.CheckJSON (no repeated member, …), then check, the JSON Schema of v
// (exact-case names, no unknown member, types and values: every violation at once, each named by its
// pointer). A refusal is 400 invalid_json or invalid_body.
func DecodeBody(body []byte, check func([]byte) []schema.FieldError, v any) *Problem {
	if eb := schema.CheckJSON(body); eb != nil {
		return BadRequest(eb)
	}
	if errs := check(body); len(errs) > 0 {
		msg := "Datos inválidos: revise details."
		if len(errs) == 1 {
			msg = "Datos inválidos: " + errs[0].Message + "."
		}
		return BadRequest(&schema.ErrorBody{Code: schema.CodeInvalidBody, Error: msg, Details: errs})
	}
	if err := json.Unmarshal(body, v); err != nil { // cannot fail on what the schema accepted
		return BadRequest(&schema.ErrorBody{Code: schema.CodeInvalidJSON, Error: "El cuerpo no es JSON válido."})
	}
	return nil
}

// checkReportTarget normalizes the id of a report and checks it and the reason: 400 for either.
func checkReportTarget(id string, in *schema.ReportInput) (string, *Problem) {
	typed := id
	if id = store.NormalizeID(id); !store.ValidID(id) {
		return "", InvalidParams([]schema.FieldError{ParamError("id", badIDMessage(typed))})
	}
	if !slices.Contains(schema.ReportReasons, in.Reason) {
		return "", &Problem{Status: http.StatusBadRequest, Body: schema.ErrorBody{Code: schema.CodeInvalidBody, Error: "Datos inválidos: motivo desconocido.",
			Details: []schema.FieldError{{Field: "/reason", Message: "«reason» no admite ese valor", Allowed: schema.ReportReasons}}}}
	}
	return id, nil
}

// report files a community report of record id from the client at addr. It hides the phone at once
// for not_my_number, and the record once HideAfterReports distinct reporters have reported it.
func (s *Service) Report(ctx context.Context, id string, in *schema.ReportInput, addr string) (*schema.ReportResult, error) {
	id, p := checkReportTarget(id, in)
	if p != nil {
		return nil, p
	}
	m, err := s.moderation()
	if err != nil {
		return nil, err
	}
	rec, err := s.store.Get(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, unknownRecord(id)
	}
	if err != nil {
		return nil, err
	}
	if rec.Status == store.StatusWithdrawn || rec.Status == store.StatusHidden {
		return nil, goneRecord(rec.Status)
	}
	who, err := s.reporterKey(ctx, m, addr)
	if err != nil {
		return nil, err
	}
	// Whether the report would hide the phone by itself and, only then, whether an operator already
	// reviewed a report of this reporter (read before this one replaces it).
	wantPhone := in.Reason == store.ReasonNotMyNumber && !rec.ContactHidden && rec.ContactE164 != ""
	reviewedBefore := false
	if wantPhone {
		if reviewedBefore, err = reportedBefore(ctx, m, id, who); err != nil {
			return nil, err
		}
	}
	n, err := m.AddReport(ctx, store.Report{RecordID: id, Reporter: who, Reason: in.Reason, Note: in.Note})
	if err != nil {
		return nil, err
	}
	if err := s.Audit(ctx, ActionReport, id, store.ActorCommunity, "", "", in.Reason); err != nil {
		return nil, err
	}
	hideAfter := s.cfg.HideAfterReports
	if hideAfter <= 0 {
		hideAfter = defaultHideAfterReports
	}
	// What this report would hide by itself, then what the bounds let it (abuse.go).
	wantRecord := n >= hideAfter && rec.Status != store.StatusHidden
	wouldHide := wantPhone || wantRecord
	wantPhone = wantPhone && !reviewedBefore // a phone an operator restored is not hidden again by the same reporter
	var okPhone, okRecord, reporterFull bool
	release := func(bool, bool) {}
	if wantPhone || wantRecord {
		total, err := s.emergencyRecords(ctx, rec.EmergencySlug)
		if err != nil {
			return nil, err
		}
		okPhone, okRecord, reporterFull, release = s.hides.reserve(s.now(), who, rec.ContactE164, rec.EmergencySlug, total, wantPhone, wantRecord)
	}
	var hid, hidPhone bool
	if okPhone || okRecord {
		// What the reports hid is in the trail with the change itself (store.WithAudit).
		hiding := store.WithAudit(ctx, func(old, rec *store.Record) []store.AuditEntry {
			var es []store.AuditEntry
			if rec.ContactHidden && !old.ContactHidden {
				es = append(es, store.AuditEntry{Action: ActionHidePhone, RecordID: id, Actor: store.ActorCommunity, Reason: in.Reason})
			}
			if rec.Status == store.StatusHidden && old.Status != store.StatusHidden {
				es = append(es, store.AuditEntry{Action: ActionHide, RecordID: id, Actor: store.ActorCommunity, From: old.Status, To: store.StatusHidden})
			}
			return es
		})
		_, err = s.update(hiding, id, func(r *store.Record) error {
			hid, hidPhone = false, false
			if okPhone && !r.ContactHidden && r.ContactE164 != "" {
				r.ContactHidden, hidPhone = true, true
			}
			if okRecord && r.Status != store.StatusHidden && r.Status != store.StatusWithdrawn {
				r.HiddenFrom, r.HiddenBy, r.Status, hid = r.Status, store.ActorCommunity, store.StatusHidden, true
			}
			if !hid && !hidPhone {
				return errNoChange
			}
			return nil
		})
		release(okPhone && !hidPhone, okRecord && !hid)
		if err != nil && !errors.Is(err, errNoChange) {
			return nil, err
		}
	}
	if hidPhone {
		// The number stays hidden on what the record's network publishes with it from now on, not only
		// on this record: else whoever published it would simply publish it again. Not when that network
		// reports it itself (nobody else's number to protect: it would only block the number for its
		// owner elsewhere), nor for a record that does not know its network.
		self, err := s.publisherKey(ctx, addr)
		if err != nil {
			return nil, err
		}
		if rec.Publisher != "" && rec.Publisher != self {
			key, err := s.disownedKey(ctx, rec.ContactE164)
			if err != nil {
				return nil, err
			}
			if err := m.Disown(ctx, store.Disowning{Key: key, RecordID: id, Reporter: who, Publisher: rec.Publisher, At: s.now().UTC()}); err != nil {
				return nil, err
			}
		}
	}
	res := &schema.ReportResult{OK: true, ID: id, Reason: in.Reason, Outcome: schema.ReportCounted,
		Message: "Gracias: el reporte quedó registrado y lo revisará quien opera el servicio."}
	switch {
	case hid:
		res.Outcome, res.Message = schema.ReportHidRecord, "Gracias: varias personas reportaron esta publicación y ya no se muestra mientras quien opera el servicio la revisa."
	case hidPhone:
		res.Outcome, res.Message = schema.ReportHidPhone, "Gracias: el teléfono de esta publicación ya no se muestra. Quien opera el servicio revisará el reporte."
	case wouldHide && reviewedBefore && !(wantRecord && !okRecord):
		// Not the breakers: an operator already kept what this reporter reported.
		res.Outcome, res.Message = schema.ReportQueued, "Gracias: el reporte quedó registrado. Quien opera el servicio ya revisó un reporte suyo de esta publicación y la dejó como está, así que no se oculta nada automáticamente: lo revisará de nuevo."
	case wouldHide && reporterFull && !(wantRecord && !okRecord):
		// Not the breakers: this reporter hid other numbers within the hour.
		res.Outcome, res.Message = schema.ReportQueued, "Gracias: el reporte quedó registrado. Desde su conexión ya se ocultaron otros números en la última hora, así que este no se oculta automáticamente: lo decidirá quien opera el servicio, en cuanto lo revise."
	case wouldHide:
		res.Outcome, res.Message = schema.ReportQueued, "Gracias: el reporte quedó registrado. Por ahora no se oculta nada automáticamente (hubo muchos reportes recientes): lo decidirá quien opera el servicio, en cuanto lo revise."
	}
	s.cfg.Observe.reported(in.Reason, res.Outcome)
	return res, nil
}

// reportedBefore says whether reporter has a reviewed report of record id: an operator looked at it and
// kept (or restored) the record as it is.
func reportedBefore(ctx context.Context, m store.Moderation, id, reporter string) (bool, error) {
	reps, err := m.Reports(ctx, id)
	if err != nil {
		return false, err
	}
	return slices.ContainsFunc(reps, func(r store.Report) bool { return r.Reporter == reporter && r.Reviewed }), nil
}

// emergencyRecords is how many open records emergency slug holds: what the breakers' shares are of. Only
// open ones, so that records published and then withdrawn (or resolved), which nobody sees, cannot raise
// what reports may hide.
func (s *Service) emergencyRecords(ctx context.Context, slug string) (int, error) {
	aggs, err := s.store.Aggregates(ctx, []string{slug})
	if err != nil {
		return 0, err
	}
	if a := aggs[slug]; a != nil {
		return a.Statuses[store.StatusOpen], nil
	}
	return 0, nil
}

// QueueItem is a record of the moderation queue with its reports (the operator sees the phone: it is
// the operator's own database).
type QueueItem struct {
	Record *store.Record `json:"record"`
	// Page is the record's public page: absolute with the configured public_url, else its path.
	Page    string         `json:"page"`
	Reports []store.Report `json:"reports"`
	// HiddenResponses are the record's responses that reports hid, with their reporters' hashes (the
	// operator sees what the responder wrote, to judge it).
	HiddenResponses []*store.Response `json:"hiddenResponses,omitempty"`
}

// ModerationQueue returns the records with unreviewed reports, the hidden ones and those with responses
// hidden by reports, with their reports and those responses.
func (s *Service) ModerationQueue(ctx context.Context) ([]QueueItem, error) {
	m, err := s.moderation()
	if err != nil {
		return nil, err
	}
	ids, err := m.Reported(ctx)
	if err != nil {
		return nil, err
	}
	spec := &store.ListSpec{Status: store.StatusHidden, Limit: schema.MaxListLimit, NoTotal: true}
	for {
		res, err := s.store.List(ctx, spec)
		if err != nil {
			return nil, err
		}
		for _, r := range res.Records {
			if !slices.Contains(ids, r.ID) {
				ids = append(ids, r.ID)
			}
		}
		if res.Next == nil {
			break
		}
		spec.After = res.Next
	}
	hidden, err := s.store.HiddenResponses(ctx)
	if err != nil {
		return nil, err
	}
	byRecord := map[string][]*store.Response{}
	for _, r := range hidden {
		if byRecord[r.RecordID] == nil && !slices.Contains(ids, r.RecordID) {
			ids = append(ids, r.RecordID)
		}
		byRecord[r.RecordID] = append(byRecord[r.RecordID], r)
	}
	items := []QueueItem{}
	for _, id := range ids {
		rec, err := s.store.Get(ctx, id)
		if err != nil {
			return nil, err
		}
		reps, err := m.Reports(ctx, id)
		if err != nil {
			return nil, err
		}
		if reps == nil {
			reps = []store.Report{} // [] on every store, not null on some
		}
		// Each report keeps its reporter: a keyed hash of the address (never the address), so that an
		// operator can single out one reporter's reports and undo them (RestoreByReporter).
		items = append(items, QueueItem{Record: rec, Page: s.cfg.PublicURL + schema.RecordPath(id), Reports: reps, HiddenResponses: byRecord[id]})
	}
	return items, nil
}

// RestoreByReporter restores (as Moderate's restore) every record in the moderation queue that is hidden,
// or whose phone is hidden, and that reporter (a hash of the queue) reported without review, and (as
// RestoreResponse) every response hidden with that reporter among its reporters: the way back from one
// address's campaign of reports. It returns the ids it restored, a response's as id/responses/responseId.
// reporter may be the start of a hash, as the site shows it, when no other reporter's begins alike; one
// that matches no reporter of the queue is ErrUnknownReporter, one that matches several
// ErrAmbiguousReporter.
func (s *Service) RestoreByReporter(ctx context.Context, reporter string) ([]string, error) {
	items, err := s.ModerationQueue(ctx)
	if err != nil {
		return nil, err
	}
	if reporter, err = queueReporter(items, reporter); err != nil {
		return nil, err
	}
	restored := []string{}
	for _, it := range items {
		if it.Record.Status != store.StatusHidden && !it.Record.ContactHidden {
			continue
		}
		if !slices.ContainsFunc(it.Reports, func(r store.Report) bool { return r.Reporter == reporter && !r.Reviewed }) {
			continue
		}
		// Only what that reporter did is undone: a phone is shown again only when its own «not my number»
		// hid it and nobody else's also says so (not one a moderator hid, nor one hidden at publication
		// because its number was disowned), and a record whose phone alone is hidden otherwise is left as it is.
		phoneByOthers := slices.ContainsFunc(it.Reports, func(r store.Report) bool {
			return r.Reporter != reporter && !r.Reviewed && r.Reason == store.ReasonNotMyNumber
		})
		phoneByIt := slices.ContainsFunc(it.Reports, func(r store.Report) bool {
			return r.Reporter == reporter && !r.Reviewed && r.Reason == store.ReasonNotMyNumber
		})
		keepPhone := phoneByOthers || !phoneByIt
		if keepPhone && it.Record.Status != store.StatusHidden {
			continue
		}
		// A record an operator hid stays hidden: the reporter's reports did not hide it.
		if it.Record.Status == store.StatusHidden && it.Record.HiddenBy == store.ActorOperator {
			continue
		}
		if _, err := s.moderate(ctx, it.Record.ID, ActionRestore, "", undo{reporter: reporter, keepPhoneHidden: keepPhone}); err != nil {
			return restored, err
		}
		restored = append(restored, it.Record.ID)
	}
	for _, it := range items {
		for _, r := range it.HiddenResponses {
			if !slices.Contains(r.Reporters, reporter) {
				continue
			}
			if err := s.RestoreResponse(ctx, r.RecordID, r.ID); err != nil && !errors.Is(err, store.ErrNotFound) {
				return restored, err
			}
			restored = append(restored, r.RecordID+schema.ResponsesSuffix+"/"+r.ID)
		}
	}
	return restored, nil
}

// ErrUnknownReporter and ErrAmbiguousReporter are RestoreByReporter's answers to a reporter that is not
// one of the queue's, and to the start of several reporters' hashes.
var (
	ErrUnknownReporter   = fmt.Errorf("no reporter of the moderation queue has this hash: %w", store.ErrNotFound)
	ErrAmbiguousReporter = errors.New("several reporters' hashes begin so: give more of the hash")
)

// minReporterStart is the shortest start of a reporter's hash that names it: what /moderacion shows.
const minReporterStart = 8

// queueReporter is the hash of the queue's reporter that reporter names: the whole hash, or its start of
// at least minReporterStart characters (any case) when only one reporter's hash begins so.
func queueReporter(items []QueueItem, reporter string) (string, error) {
	reporter = strings.ToLower(strings.TrimSpace(reporter))
	if len(reporter) < minReporterStart {
		// A typo or a cut paste must not undo whichever reporter it happens to begin.
		return "", fmt.Errorf("%w (give at least the %d characters /moderacion shows)", ErrUnknownReporter, minReporterStart)
	}
	var found []string
	add := func(h string) {
		if strings.HasPrefix(h, reporter) && !slices.Contains(found, h) {
			found = append(found, h)
		}
	}
	for _, it := range items {
		for _, r := range it.Reports {
			add(r.Reporter)
		}
		for _, r := range it.HiddenResponses {
			for _, h := range r.Reporters {
				add(h)
			}
		}
	}
	switch {
	case slices.Contains(found, reporter):
		return reporter, nil
	case len(found) == 1:
		return found[0], nil
	case len(found) == 0:
		return "", ErrUnknownReporter
	}
	return "", fmt.Errorf("%w (%d begin with %q)", ErrAmbiguousReporter, len(found), reporter)
}

// ActionRestoreResponse is the audit trail's action of an operator restoring a response hidden by reports.
const ActionRestoreResponse = "restore_response"

// RestoreResponse shows again response rid of record id, which reports hid: it reaches the publisher and
// counts as before, and its reporters' reports are reviewed (Cleared), so that they cannot hide it again.
// ErrNotFound when there is no such hidden response.
func (s *Service) RestoreResponse(ctx context.Context, id, rid string) error {
	id, rid = store.NormalizeID(id), strings.ToLower(rid)
	now := s.now().UTC().Truncate(time.Millisecond)
	_, err := s.store.UpdateResponse(ctx, id, rid, func(r *store.Response) error {
		if r.Status != schema.ResponseHidden {
			return store.ErrNotFound
		}
		r.Status, r.UpdatedAt = store.ResponseActive, now
		r.Cleared, r.Reporters = append(r.Cleared, r.Reporters...), nil
		return nil
	})
	if errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("no hidden response %s on record %s: %w", rid, id, err)
	}
	if err != nil {
		return err
	}
	if err := s.Audit(ctx, ActionRestoreResponse, id, store.ActorOperator, schema.ResponseHidden, store.ResponseActive, ""); err != nil {
		return err
	}
	s.cfg.Observe.moderated(ActionRestoreResponse)
	return nil
}

// ErrBadStatus is returned by Moderate for a status that does not exist.
var ErrBadStatus = errors.New("unknown status")

// ErrErased is returned by Moderate for an action that would show again a record whose personal data
// were erased (withdrawn by its publisher, or an operator's erase): it would be listed with no contact.
var ErrErased = errors.New("the record's personal data were erased: it cannot be shown again")

// Moderate applies an operator's action to record id: hide, hide_phone (the number on this record only,
// reports reviewed: a moderator cannot tell whether the reporter was the number's owner publishing it,
// so nothing is disowned), restore (open, phone shown again, reports reviewed), erase (every personal field removed, record kept as a withdrawn tombstone, report notes
// dropped) or set_status (to status; to withdrawn it erases). It returns the record as stored.
func (s *Service) Moderate(ctx context.Context, id, action, status string) (*store.Record, error) {
	return s.moderate(ctx, id, action, status, undo{})
}

// undo narrows a restore to what one reporter did (RestoreByReporter): only that reporter's reports are
// reviewed, and with keepPhoneHidden a hidden phone stays hidden.
type undo struct {
	reporter        string
	keepPhoneHidden bool
}

// moderate is Moderate, a restore narrowed by u.
func (s *Service) moderate(ctx context.Context, id, action, status string, u undo) (*store.Record, error) {
	m, err := s.moderation()
	if err != nil {
		return nil, err
	}
	if action == ActionSetStatus && !slices.Contains(store.Statuses, status) {
		return nil, fmt.Errorf("%w %q (known: %s)", ErrBadStatus, status, strings.Join(store.Statuses, ", "))
	}
	if action == ActionSetStatus && status == store.StatusWithdrawn {
		// A withdrawn record has no personal data: that is what a publisher's withdrawal does and what
		// the record's readers are told. A status that kept them would be a false «se borraron».
		action = ActionErase
	}
	now := s.now().UTC().Truncate(time.Millisecond)
	rec, err := s.update(auditStatus(ctx, action, store.ActorOperator), id, func(r *store.Record) error {
		before := r.Status
		defer func() {
			// An operator's open starts a new lifetime when the old one is over (expiry.go), or it would
			// expire again at once.
			if r.Status == store.StatusOpen && (r.ExpiresAt.IsZero() || !now.Before(r.ExpiresAt)) {
				r.ExpiresAt = now.Add(s.ttl(r.EmergencySlug, r.Type))
			}
		}()
		switch action {
		case ActionHide:
			if r.Status != store.StatusHidden {
				r.HiddenFrom = r.Status
			}
			r.Status, r.HiddenBy = store.StatusHidden, store.ActorOperator
		case ActionHidePhone:
			// The number only: the request or offer stays listed (a «not my number» the breakers held for
			// review, which a moderator upholds).
			if r.ContactE164 == "" {
				return fmt.Errorf("%w: the record has no number to hide", ErrErased)
			}
			r.ContactHidden = true
		case ActionRestore:
			// A hidden record goes back to the status it had when hidden, a shown one keeps its own: a
			// resolved or expired record is not reopened by a restore (nor by a moderator clearing its
			// reports). Open when that status is unknown.
			to := r.Status
			switch {
			case r.Status == store.StatusHidden && listed(r.HiddenFrom):
				to = r.HiddenFrom
			case !listed(r.Status):
				to = store.StatusOpen
			}
			r.Status, r.ContactHidden = to, r.ContactHidden && u.keepPhoneHidden
		case ActionErase:
			r.ErasePersonal()
			r.ContactHidden = false
			r.Status = store.StatusWithdrawn
		case ActionSetStatus:
			if status == store.StatusHidden && r.Status != store.StatusHidden {
				r.HiddenFrom, r.HiddenBy = r.Status, store.ActorOperator
			}
			r.Status = status
		default:
			return fmt.Errorf("unknown action %q", action)
		}
		if r.Status != store.StatusHidden {
			r.HiddenFrom, r.HiddenBy = "", ""
		}
		if r.ContactName == "" && (listed(r.Status) || r.Status == store.StatusHidden) && r.Status != before {
			// Erased: shown again it would have no contact; hidden it would read «under review», and no
			// restore could end that.
			return ErrErased
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if action != ActionHide {
		if err := m.ReviewReports(ctx, id, u.reporter, action == ActionErase); err != nil {
			return nil, err
		}
	}
	// A restore that shows the phone again judged it may be shown: an operator's restore frees the number
	// wherever it was disowned; undoing one reporter's campaign frees what that reporter disowned here.
	switch {
	case action != ActionRestore || rec.ContactHidden:
	case u.reporter != "":
		if err := m.Reclaim(ctx, "", id, u.reporter); err != nil {
			return nil, err
		}
	case rec.ContactE164 != "":
		key, err := s.disownedKey(ctx, rec.ContactE164)
		if err != nil {
			return nil, err
		}
		if err := m.Reclaim(ctx, key, "", ""); err != nil {
			return nil, err
		}
	}
	if action == ActionErase { // the responders' messages and numbers go with the record's personal data
		if err := s.endResponses(ctx, id, true); err != nil {
			return nil, err
		}
	}
	s.cfg.Observe.moderated(action)
	return rec, nil
}

// AuditTrail returns up to limit entries of the audit trail after seq.
func (s *Service) AuditTrail(ctx context.Context, after int64, limit int) ([]store.AuditEntry, error) {
	m, err := s.moderation()
	if err != nil {
		return nil, err
	}
	return m.Audit(ctx, after, limit)
}

// moderationFormSecret names the secret under which the site's /moderacion signs its forms (CSRF).
const moderationFormSecret = "moderation-form"

type clientIPKey struct{}

// WithClientIP records the client's address as the server resolved it (Caddy's {client_ip}, which
// honours trusted_proxies): the key of the rate limits and what tells reporters apart.
func WithClientIP(ctx context.Context, ip string) context.Context {
	return context.WithValue(ctx, clientIPKey{}, ip)
}

// ClientIP is the address WithClientIP recorded, or the connection's peer.
func ClientIP(r *http.Request) string {
	if ip, ok := r.Context().Value(clientIPKey{}).(string); ok && ip != "" {
		return ip
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// ModerationFormKey is the key of the moderation page's forms (their CSRF tokens), the same on every node.
func (s *Service) ModerationFormKey(ctx context.Context) ([]byte, error) {
	return s.store.Secret(ctx, moderationFormSecret)
}
