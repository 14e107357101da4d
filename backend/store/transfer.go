package store

import (
	"context"
	"slices"
	"strings"
	"time"
)

// ImportResult counts what an import did with a batch of records, reports or responses.
type ImportResult struct {
	// Created were stored now; Present were already stored, the same (a run again after an interruption).
	Created, Present int
	// Conflicts were left alone: what identifies them is stored with other content (or, for a report or a
	// response, its record is not there). Each is named by its record's id.
	Conflicts []string
}

// Transfer is what copying one store into another needs (Copy, `directaid migrate`): every record,
// whatever its status; the server secrets (the manage tokens and the reporters' hashes are keyed by them);
// every community report; the audit trail (read with Moderation.Audit); and every response. Each Import
// stores what it is given as given and can be run again: what is already stored identically is Present,
// what is stored with other content is a conflict, never overwritten.
type Transfer interface {
	// Scan calls fn with each record, in id order, from one snapshot; fn's error stops the scan and is returned.
	Scan(ctx context.Context, fn func(*Record) error) error
	// Count is the number of records stored.
	Count(ctx context.Context) (int, error)
	// Import stores records exactly as given (id, createdAt, updatedAt, status, revision and every field),
	// each whole with its index entries and counters; a store may commit a large call in parts, so an
	// interrupted call leaves whole records and a run again completes it. A record whose id or (source,
	// externalId) is stored with other content is a conflict. It is meant for a store no server writes to
	// meanwhile: the records keep their updatedAt, older than what a change feed may have read past.
	Import(ctx context.Context, recs []*Record) (ImportResult, error)
	// FinishImport is called once after a run of Imports: what the store does then so that it serves the
	// imported records as fast as written ones (PostgreSQL's VACUUM (ANALYZE)); say receives a line
	// before and after anything that takes long. A store with nothing to do returns nil at once.
	FinishImport(ctx context.Context, say func(line string)) error
	// Secrets returns every secret the store holds, by name (none is made).
	Secrets(ctx context.Context) (map[string][]byte, error)
	// PutSecret stores value as the secret name when there is none, or replacing the one there when
	// replace is set, and returns the secret stored under name afterwards.
	PutSecret(ctx context.Context, name string, value []byte, replace bool) ([]byte, error)
	// ScanReports calls fn with every report, reviewed or not, by record id then reporter.
	ScanReports(ctx context.Context, fn func(Report) error) error
	// ImportReports stores reports as given (time, reason, note and reviewed kept). A report of the same
	// record by the same reporter already stored is Present when identical and a conflict otherwise (never
	// overwritten); a report of a record the store lacks is a conflict.
	ImportReports(ctx context.Context, reps []Report) (ImportResult, error)
	// ScanDisownings calls fn with every disowning of a phone number (Disowning).
	ScanDisownings(ctx context.Context, fn func(Disowning) error) error
	// ImportDisownings stores disownings as given; one of the same key and record already stored is
	// Present (a disowning holds nothing that could conflict).
	ImportDisownings(ctx context.Context, ds []Disowning) (ImportResult, error)
	// ImportAudit appends, in order, each entry of entries that the trail does not hold yet (the same At,
	// Action, RecordID, Actor, From, To and Reason: Seq aside; counted as a multiset), and returns how many
	// it added. An added entry keeps its At, and its Seq when that is after the trail's last entry;
	// otherwise it gets the next Seq. The trail stays append-only: nothing already there moves.
	ImportAudit(ctx context.Context, entries []AuditEntry) (added int, err error)
	// ScanResponses calls fn with every response, whatever its status, by record id then response id.
	ScanResponses(ctx context.Context, fn func(*Response) error) error
	// ImportResponses stores responses as given (every field kept). A response of the same (record, id)
	// already stored is Present when identical and a conflict otherwise (never overwritten); a response of
	// a record the store lacks is a conflict.
	ImportResponses(ctx context.Context, rs []*Response) (ImportResult, error)
}

// AuditKey is what tells two audit entries apart when Seq is left aside (ImportAudit).
func AuditKey(e AuditEntry) string {
	return strings.Join([]string{e.At.UTC().Format(time.RFC3339Nano), e.Action, e.RecordID, e.Actor, e.From, e.To, e.Reason}, "\x00")
}

// SameResponse reports whether a and b hold the same response (the times compared as instants).
func SameResponse(a, b *Response) bool {
	return a.RecordID == b.RecordID && a.ID == b.ID && a.CreatedAt.Equal(b.CreatedAt) && a.UpdatedAt.Equal(b.UpdatedAt) &&
		a.ExpiresAt.Equal(b.ExpiresAt) && a.Status == b.Status && a.Message == b.Message && a.ContactName == b.ContactName &&
		a.ContactWhatsapp == b.ContactWhatsapp && a.ContactE164 == b.ContactE164 && slices.Equal(a.Reporters, b.Reporters) &&
		slices.Equal(a.Cleared, b.Cleared) && a.Uncounted == b.Uncounted
}
