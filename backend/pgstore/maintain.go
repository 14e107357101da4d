package pgstore

import (
	"context"
	"time"

	"github.com/directaid/directaid/backend/store"
)

// Erasure on PostgreSQL. A delete or an update leaves the old row version in the
// table's file until a vacuum, and a plain VACUUM only marks its space free: the bytes stay in the page
// until something else is written over them (TestErasure saw them there). VACUUM FULL writes a table anew
// and drops the old file, so Maintain runs it, but only when a withdrawal or an operator's erase happened
// since the last one, and only on the tables that hold what erasure destroys: directaid_personal (the
// contact name, phone and address, migration 0010; an erasure deletes the record's row) and
// directaid_reports (an erase clears the reports' notes); of directaid_personal, only the partitions
// (one per place group, 1/64 each: migration 0020) of the records erased since the last rewrite, which the audit trail names. The records table
// holds no personal text and is never rewritten here. Reads still wait for each copy (planning a query of
// directaid_personal locks every partition), but a copy is of one partition's personal rows: at 100k
// records about 0.2 s against 7.6 s for the records table (BenchmarkMaintainStall). The audit trail tells every node both: erasures are audited, and
// so is each rewrite ("vacuum", actor system), so one node's rewrite serves all.
//
// The exact place (the point the radius index needs) stays in the records table: the old version of an
// erased record keeps its coordinates until PostgreSQL writes over that space.
//
// The WAL still holds the erased data until its segments are recycled and overwritten, and so do base
// backups and WAL archives (see the README, "Más de una máquina").

// ActionVacuum is the audit action of a maintenance rewrite.
const ActionVacuum = "vacuum"

// maintainLock keeps two nodes from rewriting at once (a session advisory lock).
const maintainLock = 0x64697261_6d6e7400 // "diramnt\0"

// erasureMargin covers the clocks of different nodes: an erasure stamped this close before a rewrite
// began counts as after it.
const erasureMargin = time.Minute

// erasure is the SQL condition of an audit entry (doc) that erased a record's personal fields.
const erasure = `(doc->>'action' IN ('withdraw', 'erase') OR doc->>'to' = 'withdrawn')`

// personalParts is the number of partitions of directaid_personal, one per place group (migration 0020).
const personalParts = store.IDGroups

// MaintainTimeout bounds one rewrite.
var MaintainTimeout = 30 * time.Minute

// Maintain runs one maintenance cycle now (see above). It returns at once when another node is at it.
func (s *Store) Maintain(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, MaintainTimeout)
	defer cancel()
	if err := s.ready(ctx); err != nil {
		return fail(err)
	}
	conn, err := s.db.Pool.Acquire(ctx)
	if err != nil {
		return fail(err)
	}
	defer conn.Release()
	var mine bool
	if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock($1)`, int64(maintainLock)).Scan(&mine); err != nil || !mine {
		return fail(err)
	}
	defer func() {
		_, _ = conn.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1)`, int64(maintainLock))
	}()
	var erased, rewritten *time.Time
	err = conn.QueryRow(ctx, `SELECT
			max((doc->>'at')::timestamptz) FILTER (WHERE `+erasure+`),
			max((doc->>'at')::timestamptz) FILTER (WHERE doc->>'action' = $1)
		FROM directaid_audit`, ActionVacuum).Scan(&erased, &rewritten)
	if err != nil {
		return fail(err)
	}
	if erased == nil || (rewritten != nil && erased.Before(rewritten.Add(-erasureMargin))) {
		return nil
	}
	// The partitions of directaid_personal that held a record erased since the last rewrite (all of them
	// before the first).
	from := time.Time{}
	if rewritten != nil {
		from = rewritten.Add(-erasureMargin)
	}
	var parts []int32
	err = conn.QueryRow(ctx, `SELECT array(SELECT DISTINCT directaid_personal_part(doc->>'recordId') FROM directaid_audit
			WHERE `+erasure+` AND (doc->>'at')::timestamptz >= $1 AND doc->>'recordId' IS NOT NULL)`, from).Scan(&parts)
	if err != nil {
		return fail(err)
	}
	tables := "directaid_reports, directaid_responses"
	for _, i := range parts {
		tables += ", " + personalPartition(int(i))
	}
	began := s.Now().UTC()
	if _, err := conn.Exec(ctx, `VACUUM (FULL, ANALYZE) `+tables); err != nil {
		return fail(err)
	}
	// Stamped when it began: an erasure committed after that may have left a version behind.
	return s.AppendAudit(ctx, store.AuditEntry{At: began, Action: ActionVacuum, Actor: store.ActorSystem})
}

// MaintainEvery runs Maintain every period until the store is closed, handing its errors to logErr.
func (s *Store) MaintainEvery(period time.Duration, logErr func(error)) {
	go func() {
		t := time.NewTicker(period)
		defer t.Stop()
		for range t.C {
			if s.closed.Load() {
				return
			}
			if err := s.Maintain(context.Background()); err != nil && logErr != nil {
				logErr(err)
			}
		}
	}()
}
