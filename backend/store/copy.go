package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
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
// what was written since: what is in the target already, identical, is counted and left alone; what is
// there with other content is a conflict, left alone and reported, and Copy then returns an error naming
// the conflicts after copying the rest.
func Copy(ctx context.Context, from, to Store, o CopyOptions) error {
	if o.Batch <= 0 {
		o.Batch = 500
	}
	c := &copier{CopyOptions: o, from: from, to: to}
	return c.run(ctx)
}

type copier struct {
	CopyOptions
	from, to Store

	read, created, present int
	conflicts              []string
	reportConflicts        []string
	responseConflicts      []string
	bySlug, byStatus       map[string]int
}

func (c *copier) say(format string, args ...any) { fmt.Fprintf(c.Out, format+"\n", args...) }

func (c *copier) run(ctx context.Context) error {
	if err := c.checkTarget(ctx); err != nil {
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
		c.conflicts = append(c.conflicts, res.Conflicts...)
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
	c.say("read %d records from %s in %s: %d created, %d already there, %d conflicts",
		c.read, c.From.Name, time.Since(began).Round(time.Millisecond), c.created, c.present, len(c.conflicts))
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

// copyReports copies every community report, reviewed or not, in batches.
func (c *copier) copyReports(ctx context.Context) error {
	return copyAll(c, "community reports", "reports", func(fn func(Report) error) error { return c.from.ScanReports(ctx, fn) },
		func(b []Report) (ImportResult, error) { return c.to.ImportReports(ctx, b) }, &c.reportConflicts)
}

// copyDisownings copies every disowning of a phone number, in batches: without them, a number its owner
// said is not theirs would show again on the target's new publications.
func (c *copier) copyDisownings(ctx context.Context) error {
	var none []string // a disowning never conflicts
	return copyAll(c, "disowned phone numbers", "disowned phone numbers", func(fn func(Disowning) error) error { return c.from.ScanDisownings(ctx, fn) },
		func(b []Disowning) (ImportResult, error) { return c.to.ImportDisownings(ctx, b) }, &none)
}

// copyResponses copies every response, whatever its status, in batches.
func (c *copier) copyResponses(ctx context.Context) error {
	return copyAll(c, "responses", "responses", func(fn func(*Response) error) error { return c.from.ScanResponses(ctx, fn) },
		func(b []*Response) (ImportResult, error) { return c.to.ImportResponses(ctx, b) }, &c.responseConflicts)
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
