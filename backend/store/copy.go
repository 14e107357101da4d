package store

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Named names one side of a Copy in its report.
type Named struct {
	// Name is the driver's ("badger"), Title its title ("Badger"), Where the database as Driver.Describe
	// names it (never a DSN, which may hold a password).
	Name, Title, Where string
}

// CopyOptions say how Copy goes and where it reports.
type CopyOptions struct {
	// From and To name the source and the target in the report.
	From, To Named
	// Merge copies into a target that holds records the source lacks (another installation's, it seems).
	Merge bool
	// KeepTargetSecrets keeps the target's server secrets when they differ from the source's and the
	// target holds records.
	KeepTargetSecrets bool
	// Batch is how many records, reports or responses go in one Import (0: 500).
	Batch int
	// Out receives the report, line by line.
	Out io.Writer
	// ProgressEvery is how often a line says how far the records are (0: after every batch).
	ProgressEvery time.Duration
}

// Copy copies everything from holds into to: every record with its id, createdAt, status and all its
// fields, so that links to records keep working; the server secrets, so that the publishers' manage links
// keep working and a reporter is still told apart from others; every community report, reviewed or not;
// every response; and the audit trail, in order. It is what `directaid migrate` does.
//
// A target that holds records and other secrets is refused (either secret breaks someone's manage links)
// unless KeepTargetSecrets; a target without records takes the source's secrets. A target that holds
// records the source lacks is refused unless Merge. Copy can be run again, after an interruption or to copy
// what was written since: what is in the target already, identical, is counted and left alone; a record
// or a response the source changed since an earlier run copied it (the same one: its id, its pair and its
// creation; the source's updatedAt later) is brought up to date there, so that what was resolved, hidden,
// withdrawn or erased meanwhile is so in the target too, and a record the source erased loses the
// responses the source deleted with it; a report an operator reviewed meanwhile is marked reviewed there.
// Only what the target has not changed itself since that run: each run leaves in the target the time up
// to which it copied (CopyWatermark), and a record or response changed there after it — or any, when no
// run left one — stays as the target has it, as does a record whose personal data the target erased.
// Anything else there with other content is a conflict, left alone and reported, and Copy then returns an
// error naming the conflicts after copying the rest.
func Copy(ctx context.Context, from, to Store, o CopyOptions) error {
	if o.Batch <= 0 {
		o.Batch = 500
	}
	c := &copier{CopyOptions: o, from: from, to: to}
	return c.run(ctx)
}

// CopyWatermark names the server secret where a Copy leaves, in the target, the time (Unix ms) up to which
// its records and responses are the source's: a later run brings up to date only what the target has not
// changed since. It is the target's own, never copied.
const CopyWatermark = "copy-watermark"

type copier struct {
	CopyOptions
	from, to Store
	// mark is the watermark an earlier run left in the target (marked: there is one); top is this run's.
	mark   time.Time
	marked bool
	top    time.Time
	// responsesUpdated counts the responses brought up to date (refreshResponses).
	responsesUpdated int

	read, created, present int
	// updated are the records brought up to date (refreshRecords), by id: their responses are reconciled.
	updated           []string
	conflicts         []string
	reportConflicts   []string
	responseConflicts []string
	bySlug, byStatus  map[string]int
}

func (c *copier) say(format string, args ...any) { fmt.Fprintf(c.Out, format+"\n", args...) }

func (c *copier) run(ctx context.Context) error {
	if err := c.checkTarget(ctx); err != nil {
		return err
	}
	if err := c.readWatermark(ctx); err != nil {
		return err
	}
	// Secrets first: a node started on the target meanwhile must already use the source's.
	if err := c.copySecrets(ctx); err != nil {
		return err
	}
	if err := c.copyRecords(ctx); err != nil {
		return err
	}
	if err := c.copyReports(ctx); err != nil {
		return err
	}
	if err := c.copyDisownings(ctx); err != nil {
		return err
	}
	if err := c.copyResponses(ctx); err != nil {
		return err
	}
	if _, err := c.to.PutSecret(ctx, CopyWatermark, []byte(strconv.FormatInt(c.top.UnixMilli(), 10)), true); err != nil {
		return err
	}
	if err := c.copyAudit(ctx); err != nil {
		return err
	}
	if err := c.to.FinishImport(ctx, func(line string) { c.say("%s", line) }); err != nil {
		return err
	}
	var errs []error
	if len(c.conflicts) > 0 {
		show := c.conflicts[:min(len(c.conflicts), 10)]
		errs = append(errs, fmt.Errorf("%d records were not copied: %s holds their id or (source, externalId) with other content (%s); they were left as they are there",
			len(c.conflicts), c.To.Title, strings.Join(show, ", ")))
	}
	if len(c.reportConflicts) > 0 {
		ids := slices.Compact(slices.Clone(c.reportConflicts))
		show := ids[:min(len(ids), 10)]
		errs = append(errs, fmt.Errorf("%d reports were not copied: %s holds another report of the same reporter, or not their record (records %s); they were left as they are there",
			len(c.reportConflicts), c.To.Title, strings.Join(show, ", ")))
	}
	if len(c.responseConflicts) > 0 {
		ids := slices.Compact(slices.Clone(c.responseConflicts))
		show := ids[:min(len(ids), 10)]
		errs = append(errs, fmt.Errorf("%d responses were not copied: %s holds another response of the same id, or not their record (records %s); they were left as they are there",
			len(c.responseConflicts), c.To.Title, strings.Join(show, ", ")))
	}
	return errors.Join(errs...)
}

// copyRecords copies every record in batches, saying how far it is every ProgressEvery.
func (c *copier) copyRecords(ctx context.Context) error {
	c.bySlug, c.byStatus = map[string]int{}, map[string]int{}
	began, last := time.Now(), time.Now()
	scan := func(yield func(*Record) error) error {
		return c.from.Scan(ctx, func(rec *Record) error {
			c.read++
			c.top = latest(c.top, rec.UpdatedAt)
			c.bySlug[rec.EmergencySlug]++
			c.byStatus[rec.Status]++
			return yield(rec)
		})
	}
	err := inBatches(c.Batch, scan, func(batch []*Record) error {
		res, err := c.to.Import(ctx, batch)
		if err != nil {
			return fmt.Errorf("after %d records: %w", c.read-len(batch), err)
		}
		c.created += res.Created
		c.present += res.Present
		left, err := c.refreshRecords(ctx, batch, res.Conflicts)
		if err != nil {
			return err
		}
		c.conflicts = append(c.conflicts, left...)
		if time.Since(last) >= c.ProgressEvery {
			last = time.Now()
			c.say("… %d records read: %d created, %d already there (%.0f records/s)",
				c.read, c.created, c.present, float64(c.read)/time.Since(began).Seconds())
		}
		return nil
	})
	if err != nil {
		return err
	}
	total, err := c.to.Count(ctx)
	if err != nil {
		return err
	}
	updated := ""
	if len(c.updated) > 0 {
		updated = fmt.Sprintf(", %d brought up to date", len(c.updated))
	}
	c.say("read %d records from %s in %s: %d created, %d already there%s, %d conflicts",
		c.read, c.From.Name, time.Since(began).Round(time.Millisecond), c.created, c.present, updated, len(c.conflicts))
	for _, slug := range slices.Sorted(maps.Keys(c.bySlug)) {
		c.say("  emergency %s: %d records", slug, c.bySlug[slug])
	}
	for _, status := range slices.Sorted(maps.Keys(c.byStatus)) {
		c.say("  status %s: %d records", status, c.byStatus[status])
	}
	c.say("%s now holds %d records", c.To.Title, total)
	return nil
}

// copySecrets gives the target the source's server secrets (see Copy for when it refuses).
func (c *copier) copySecrets(ctx context.Context) error {
	have, err := c.from.Secrets(ctx)
	if err != nil {
		return err
	}
	there, err := c.to.Secrets(ctx)
	if err != nil {
		return err
	}
	delete(have, CopyWatermark) // each store's own (a copy into the source left it there)
	delete(there, CopyWatermark)
	var differ []string
	for name, v := range have {
		if t, ok := there[name]; ok && !bytes.Equal(t, v) {
			differ = append(differ, name)
		}
	}
	slices.Sort(differ)
	replace := false
	if len(differ) > 0 {
		n, err := c.to.Count(ctx)
		if err != nil {
			return err
		}
		switch {
		case n == 0:
			replace = true
			c.say("%s holds no records: its secrets %s are replaced by the source's", c.To.Title, strings.Join(differ, ", "))
		case c.KeepTargetSecrets:
			c.say("keeping %s's secrets %s (--keep-target-secrets): the manage links the %s server gave out will get 403, and reporters are counted apart from their earlier reports",
				c.To.Title, strings.Join(differ, ", "), c.From.Title)
		default:
			return fmt.Errorf("%s already holds %d records and other server secrets (%s) than %s: the source's would break the manage links %s's nodes gave out, and %s's those of the %s server; nothing was copied. Pass --keep-target-secrets to keep %s's",
				c.To.Title, n, strings.Join(differ, ", "), c.From.Where, c.To.Title, c.To.Title, c.From.Title, c.To.Title)
		}
	}
	copied, same := 0, 0
	for _, name := range slices.Sorted(maps.Keys(have)) {
		if bytes.Equal(there[name], have[name]) {
			same++
			continue
		}
		if slices.Contains(differ, name) && !replace {
			continue
		}
		got, err := c.to.PutSecret(ctx, name, have[name], replace)
		if err != nil {
			return err
		}
		if !bytes.Equal(got, have[name]) {
			return fmt.Errorf("%s's secret %s was made meanwhile by a running node: stop the nodes on it and run migrate again", c.To.Title, name)
		}
		copied++
	}
	kept := len(differ)
	if replace {
		kept = 0
	}
	c.say("server secrets: %d copied, %d already the same, %d kept as %s has them", copied, same, kept, c.To.Title)
	return nil
}

// copyReports copies every community report, reviewed or not, in batches; one the source reviewed since
// an earlier run copied it is marked reviewed in the target (refreshReports).
func (c *copier) copyReports(ctx context.Context) error {
	return copyAll(c, "community reports", "reports", func(fn func(Report) error) error { return c.from.ScanReports(ctx, fn) },
		func(b []Report) (ImportResult, error) {
			res, err := c.to.ImportReports(ctx, b)
			if err != nil || len(res.Conflicts) == 0 {
				return res, err
			}
			res.Conflicts, err = c.refreshReports(ctx, b, res.Conflicts)
			return res, err
		}, &c.reportConflicts)
}

// copyDisownings copies every disowning of a phone number, in batches: without them, a number its owner
// said is not theirs would show again on the target's new publications.
func (c *copier) copyDisownings(ctx context.Context) error {
	var none []string // a disowning never conflicts
	return copyAll(c, "disowned phone numbers", "disowned phone numbers", func(fn func(Disowning) error) error { return c.from.ScanDisownings(ctx, fn) },
		func(b []Disowning) (ImportResult, error) { return c.to.ImportDisownings(ctx, b) }, &none)
}

// copyResponses copies every response, whatever its status, in batches: first, a record brought up to
// date that holds responses the source no longer has (deleted with the record's erasure) loses them all
// and takes the source's; a response the source changed since an earlier run copied it is brought up to
// date (refreshResponses).
func (c *copier) copyResponses(ctx context.Context) error {
	for _, id := range c.updated {
		if err := c.dropDeletedResponses(ctx, id); err != nil {
			return err
		}
	}
	scan := func(fn func(*Response) error) error {
		return c.from.ScanResponses(ctx, func(r *Response) error {
			c.top = latest(c.top, r.UpdatedAt) // a response keeps its updatedAt in the target
			return fn(r)
		})
	}
	err := copyAll(c, "responses", "responses", scan,
		func(b []*Response) (ImportResult, error) {
			res, err := c.to.ImportResponses(ctx, b)
			if err != nil || len(res.Conflicts) == 0 {
				return res, err
			}
			res.Conflicts, err = c.refreshResponses(ctx, res.Conflicts)
			return res, err
		}, &c.responseConflicts)
	if err == nil && c.responsesUpdated > 0 {
		c.say("responses: %d brought up to date", c.responsesUpdated)
	}
	return err
}

// copyAll imports what scan yields in batches, adding the conflicts to conflicts, and reports it as title.
func copyAll[T any](c *copier, title, what string, scan func(func(T) error) error, imp func([]T) (ImportResult, error), conflicts *[]string) error {
	var res ImportResult
	read := 0
	counted := func(yield func(T) error) error {
		return scan(func(v T) error {
			read++
			return yield(v)
		})
	}
	err := inBatches(c.Batch, counted, func(batch []T) error {
		r, err := imp(batch)
		if err != nil {
			return fmt.Errorf("%s, after %d: %w", what, read-len(batch), err)
		}
		res.Created += r.Created
		res.Present += r.Present
		*conflicts = append(*conflicts, r.Conflicts...)
		return nil
	})
	if err != nil {
		return err
	}
	c.say("%s: %d read, %d created, %d already there, %d conflicts", title, read, res.Created, res.Present, len(*conflicts))
	return nil
}

// copyAudit appends the source's audit trail to the target's, leaving out what is there (one Import: a
// trail holds one entry per moderation or publisher action, far fewer than records).
func (c *copier) copyAudit(ctx context.Context) error {
	var trail []AuditEntry
	for after := int64(0); ; {
		page, err := c.from.Audit(ctx, after, 1000)
		if err != nil {
			return err
		}
		if len(page) == 0 {
			break
		}
		trail = append(trail, page...)
		after = page[len(page)-1].Seq
	}
	added, err := c.to.ImportAudit(ctx, trail)
	if err != nil {
		return fmt.Errorf("audit trail: %w", err)
	}
	c.say("audit trail: %d entries read, %d appended, %d already there", len(trail), added, len(trail)-added)
	return nil
}

// checkTarget refuses a target that holds records the source has not (unless Merge): copying one
// installation into another's database by mistake would mix two networks.
func (c *copier) checkTarget(ctx context.Context) error {
	n, err := c.to.Count(ctx)
	if err != nil || n == 0 {
		return err
	}
	foreign, first := 0, ""
	err = c.to.Scan(ctx, func(rec *Record) error {
		_, err := c.from.Get(ctx, rec.ID)
		if errors.Is(err, ErrNotFound) {
			if foreign == 0 {
				first = rec.ID
			}
			foreign++
			return nil
		}
		return err
	})
	if err != nil {
		return err
	}
	switch {
	case foreign == 0:
		c.say("%s already holds %d records, all of them from this source (an earlier run): copying the rest", c.To.Title, n)
	case c.Merge:
		c.say("%s already holds %d records, %d of them not from this source: merging (--merge)", c.To.Title, n, foreign)
	default:
		return fmt.Errorf("%s already holds %d records, %d of them not in %s (the first: %s): it looks like another installation's database; pass --merge to copy into it anyway",
			c.To.Title, n, foreign, c.From.Where, first)
	}
	return nil
}

// inBatches passes what scan yields to flush n at a time, then the remainder; the slice is reused between
// calls, so flush must not keep it.
func inBatches[T any](n int, scan func(yield func(T) error) error, flush func(batch []T) error) error {
	var pending []T
	err := scan(func(v T) error {
		if pending = append(pending, v); len(pending) < n {
			return nil
		}
		err := flush(pending)
		pending = pending[:0]
		return err
	})
	if err == nil && len(pending) > 0 {
		err = flush(pending)
	}
	return err
}

// refreshRecords brings up to date, in the target, each of conflicts (ids of batch that Import did not
// copy) that is the same record as the source's (its id, pair, emergency, type and creation) and that the
// source changed since: its updatedAt is later. It returns the ids left as conflicts; one that differs from
// the source's in its updatedAt and revision alone (an earlier run brought it up to date: the target's
// Update set them) is counted present.
func (c *copier) refreshRecords(ctx context.Context, batch []*Record, conflicts []string) ([]string, error) {
	var left []string
	for _, id := range conflicts {
		i := slices.IndexFunc(batch, func(r *Record) bool { return r.ID == id })
		if i < 0 {
			left = append(left, id)
			continue
		}
		src := *batch[i]
		src.Normalize()
		dst, err := c.to.Get(ctx, id)
		switch {
		case errors.Is(err, ErrNotFound): // its pair holds another id there
			left = append(left, id)
			continue
		case err != nil:
			return nil, err
		}
		if !sameIdentity(&src, dst) {
			left = append(left, id)
			continue
		}
		switch same, err := sameApartFrom(&src, dst, func(r *Record) { r.UpdatedAt, r.Revision = time.Time{}, 0 }); {
		case err != nil:
			return nil, err
		case src.UpdatedAt.After(dst.UpdatedAt) && c.unchangedThere(dst.UpdatedAt) && !(dst.ContactName == "" && src.ContactName != ""):
			stored, err := c.to.Update(ctx, id, func(r *Record) error { *r = src; return nil })
			if err != nil {
				return nil, fmt.Errorf("record %s, brought up to date: %w", id, err)
			}
			c.top = latest(c.top, stored.UpdatedAt)
			c.updated = append(c.updated, id)
		case same:
			c.present++
		default:
			left = append(left, id)
		}
	}
	return left, nil
}

// sameApartFrom reports whether a and b are alike once clear has cleared, in copies of both, what may differ.
func sameApartFrom[T any](a, b *T, clear func(*T)) (bool, error) {
	ca, cb := *a, *b
	clear(&ca)
	clear(&cb)
	ja, err := json.Marshal(&ca)
	if err != nil {
		return false, err
	}
	jb, err := json.Marshal(&cb)
	return err == nil && bytes.Equal(ja, jb), err
}

// dropDeletedResponses deletes, in the target, the responses of record id when it holds one the source
// does not (the source deleted them with the record's erasure); copyResponses then copies the source's.
func (c *copier) dropDeletedResponses(ctx context.Context, id string) error {
	have, err := c.from.RecordResponses(ctx, id)
	if err != nil {
		return err
	}
	there, err := c.to.RecordResponses(ctx, id)
	if err != nil {
		return err
	}
	for _, r := range there {
		if !slices.ContainsFunc(have, func(h *Response) bool { return h.ID == r.ID }) {
			return c.to.DeleteResponses(ctx, id)
		}
	}
	return nil
}

// refreshResponses brings up to date, in the target, the responses of the records in conflicts (record
// ids, as ImportResponses names them) that the source changed since: the same response id, the source's
// updatedAt later. It returns the record ids left as conflicts (one per response still differing).
func (c *copier) refreshResponses(ctx context.Context, conflicts []string) ([]string, error) {
	var left []string
	for _, id := range slices.Compact(slices.Sorted(slices.Values(conflicts))) {
		have, err := c.from.RecordResponses(ctx, id)
		if err != nil {
			return nil, err
		}
		there, err := c.to.RecordResponses(ctx, id)
		if err != nil {
			return nil, err
		}
		for _, src := range have {
			i := slices.IndexFunc(there, func(r *Response) bool { return r.ID == src.ID })
			if i < 0 {
				left = append(left, id) // the target lacks it: ImportResponses refused it for another reason
				continue
			}
			same, err := sameApartFrom(src, there[i], func(*Response) {})
			switch {
			case err != nil:
				return nil, err
			case same:
			case src.UpdatedAt.After(there[i].UpdatedAt) && c.unchangedThere(there[i].UpdatedAt):
				r := *src
				if _, err := c.to.UpdateResponse(ctx, id, src.ID, func(x *Response) error { *x = r; return nil }); err != nil {
					return nil, fmt.Errorf("response %s of record %s, brought up to date: %w", src.ID, id, err)
				}
				c.responsesUpdated++
			default:
				left = append(left, id)
			}
		}
	}
	return left, nil
}

// refreshReports marks reviewed, in the target, each report of conflicts (record ids, as ImportReports
// names them) that the source reviewed since an earlier run copied it (the same record, reporter, reason
// and time; its note erased too when the source's is). It returns the record ids left as conflicts.
func (c *copier) refreshReports(ctx context.Context, batch []Report, conflicts []string) ([]string, error) {
	var left []string
	for _, id := range slices.Compact(slices.Sorted(slices.Values(conflicts))) {
		there, err := c.to.Reports(ctx, id)
		if err != nil {
			return nil, err
		}
		for _, src := range batch {
			if src.RecordID != id {
				continue
			}
			i := slices.IndexFunc(there, func(r Report) bool { return r.Reporter == src.Reporter })
			switch {
			case i < 0:
				left = append(left, id)
			case sameReport(there[i], src):
			case src.Reviewed && !there[i].Reviewed && src.Reason == there[i].Reason && src.At.Equal(there[i].At) && (src.Note == there[i].Note || src.Note == ""):
				if err := c.to.ReviewReports(ctx, id, src.Reporter, src.Note == "" && there[i].Note != ""); err != nil {
					return nil, fmt.Errorf("report of record %s, marked reviewed: %w", id, err)
				}
			default:
				left = append(left, id)
			}
		}
	}
	return left, nil
}

// sameReport reports whether a and b are the same report, reviewed alike.
func sameReport(a, b Report) bool {
	return a.RecordID == b.RecordID && a.Reporter == b.Reporter && a.Reason == b.Reason && a.Note == b.Note && a.At.Equal(b.At) && a.Reviewed == b.Reviewed
}

// readWatermark reads the watermark an earlier run left in the target (CopyWatermark).
func (c *copier) readWatermark(ctx context.Context) error {
	there, err := c.to.Secrets(ctx)
	if err != nil {
		return err
	}
	if v, ok := there[CopyWatermark]; ok {
		ms, err := strconv.ParseInt(string(v), 10, 64)
		if err != nil {
			return fmt.Errorf("%s's %s is not a time: %q", c.To.Title, CopyWatermark, v)
		}
		c.mark, c.marked = time.UnixMilli(ms).UTC(), true
	}
	return nil
}

// unchangedThere reports whether what the target stamped at is as an earlier run left it: not after that
// run's watermark. Without one, nothing tells, and nothing is brought up to date.
func (c *copier) unchangedThere(at time.Time) bool { return c.marked && !at.After(c.mark) }

func latest(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
