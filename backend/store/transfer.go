package store

import (
	"context"
	"strings"
	"time"
)

// ImportResult counts what an import did with a batch of records or reports.
type ImportResult struct {
	// Created were stored now; Present were already stored, the same (a run again after an interruption).
	Created, Present int
	// Conflicts were left alone: what identifies them is stored with other content (or, for a report,
	// its record is not there). Each is named by its record's id.
	Conflicts []string
}

// Transferer is a Store whose moderation state can be read whole and taken over by another store
// (`directaid migrate`): the server secrets (the manage tokens and the reporters' hashes are keyed by them),
// every community report, and the audit trail.
type Transferer interface {
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
	// ImportAudit appends, in order, each entry of entries that the trail does not hold yet (the same At,
	// Action, RecordID, Actor, From, To and Reason: Seq aside; counted as a multiset), and returns how many
	// it added. An added entry keeps its At, and its Seq when that is after the trail's last entry;
	// otherwise it gets the next Seq. The trail stays append-only: nothing already there moves.
	ImportAudit(ctx context.Context, entries []AuditEntry) (added int, err error)
}

// AuditKey is what tells two audit entries apart when Seq is left aside (ImportAudit).
func AuditKey(e AuditEntry) string {
	return strings.Join([]string{e.At.UTC().Format(time.RFC3339Nano), e.Action, e.RecordID, e.Actor, e.From, e.To, e.Reason}, "\x00")
}
