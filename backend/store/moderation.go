package store

import (
	"context"
	"time"
)

// The reasons of a community report (schema.ReportReasons is the same list, for the contract).
const (
	ReasonNotMyNumber = "not_my_number"
)

// Report is one community report of a record. Reporter is a keyed hash of the reporter's address
// (never the address itself): it tells reporters apart and nothing else.
type Report struct {
	RecordID string    `json:"recordId"`
	Reporter string    `json:"reporter"`
	Reason   string    `json:"reason"`
	Note     string    `json:"note,omitempty"`
	At       time.Time `json:"at"`
	// Reviewed is set when an operator restored, hid or erased the record: reviewed reports no longer
	// count towards hiding it, nor does a later report of the same reporter, which stays reviewed.
	Reviewed bool `json:"reviewed,omitempty"`
}

// Disowning is a phone number's owner saying it is not theirs to publish: a not_my_number report that hid
// it on RecordID. Key is a keyed hash of the number (E.164), never the number; Reporter the report's;
// Publisher the record's (Record.Publisher: the network that published it). While a disowning stands, a
// new publication with the number from that network does not show it; one with an empty Publisher
// holds against every network.
type Disowning struct {
	Key       string    `json:"key"`
	RecordID  string    `json:"recordId"`
	Reporter  string    `json:"reporter"`
	Publisher string    `json:"publisher,omitempty"`
	At        time.Time `json:"at"`
}

// The kinds of actor of an audit entry.
const (
	ActorPublisher = "publisher"
	ActorCommunity = "community"
	ActorOperator  = "operator"
	ActorSystem    = "system"
)

// AuditEntry is one moderation or publisher action. It holds no personal data: no contact, no address,
// no note, no reporter.
type AuditEntry struct {
	// Seq orders the trail (assigned by the store, from 1).
	Seq      int64     `json:"seq"`
	At       time.Time `json:"at"`
	Action   string    `json:"action"`
	RecordID string    `json:"recordId"`
	Actor    string    `json:"actor"`
	// From and To are the record's status before and after, when the action changed it.
	From string `json:"from,omitempty"`
	To   string `json:"to,omitempty"`
	// Reason is a report's reason.
	Reason string `json:"reason,omitempty"`
	// By is the name of the moderator who acted, as the server authenticated them (the site's
	// /moderacion behind Caddy's basic_auth); empty for the admin endpoint and every other actor.
	By string `json:"by,omitempty"`
}

// Moderation is what the community reports, the operator's queue and the audit trail need of a store.
// Both stores implement it.
type Moderation interface {
	// AddReport stores r, replacing an unreviewed report of the same reporter on the same record (a
	// reporter counts once), and returns how many distinct reporters have unreviewed reports of it.
	AddReport(ctx context.Context, r Report) (distinct int, err error)
	// Reports returns the reports of a record, oldest first.
	Reports(ctx context.Context, id string) ([]Report, error)
	// Reported returns the ids of the records with unreviewed reports.
	Reported(ctx context.Context) ([]string, error)
	// ReviewReports marks every report of id reviewed, or only reporter's when reporter is set; with
	// dropNotes their notes are erased too.
	ReviewReports(ctx context.Context, id, reporter string, dropNotes bool) error
	// AppendAudit adds e to the append-only trail (the store sets Seq, and At when zero).
	AppendAudit(ctx context.Context, e AuditEntry) error
	// Audit returns up to limit entries after seq, oldest first.
	Audit(ctx context.Context, after int64, limit int) ([]AuditEntry, error)
	// Disown stores d, replacing a disowning of the same key on the same record.
	Disown(ctx context.Context, d Disowning) error
	// Disowned says whether a disowning of key made after since stands against publisher: one whose
	// Publisher is publisher, or empty.
	Disowned(ctx context.Context, key, publisher string, since time.Time) (bool, error)
	// Reclaim removes the disownings that match every criterion given (key, record id, reporter; "" matches
	// any, and at least key or id is given): an operator showed the phone again.
	Reclaim(ctx context.Context, key, id, reporter string) error
	// Secret returns the server secret called name: 32 random bytes made on first use and kept in the
	// database, so that every node and every restart uses the same.
	Secret(ctx context.Context, name string) ([]byte, error)
}

// AuditFunc makes the audit entries of an Update from the record before and after fn changed it: none
// when it returns none. Seq is the store's to set, and At when zero.
type AuditFunc func(old, rec *Record) []AuditEntry

type auditKey struct{}

// WithAudit has an Update under ctx append audit's entries to the trail in the transaction that stores
// the change: a crash keeps both or neither (the trail is what an operator re-applies erasures from
// after restoring an older backup). Update does not call audit when fn fails.
func WithAudit(ctx context.Context, audit AuditFunc) context.Context {
	return context.WithValue(ctx, auditKey{}, audit)
}

// Entries are f's entries for the change from old to rec (as stored: its UpdatedAt set), each dated at
// the change unless f dated it, and without a Seq (the store's to set).
func (f AuditFunc) Entries(old, rec *Record) []AuditEntry {
	es := f(old, rec)
	for i := range es {
		if es[i].At.IsZero() {
			es[i].At = rec.UpdatedAt
		}
		es[i].Seq = 0
	}
	return es
}

// AuditOf is the AuditFunc WithAudit set on ctx, or nil.
func AuditOf(ctx context.Context) AuditFunc {
	f, _ := ctx.Value(auditKey{}).(AuditFunc)
	return f
}
