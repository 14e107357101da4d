package storetest

import (
	"cmp"
	"slices"
	"strings"
	"time"

	"github.com/directaid/directaid/backend/store"
)

// FeedTotal is the total every store gives change feed spec over recs (as stored): store.FeedTotal of the
// walks store.FeedWalk describes, made here over the records of spec's emergency in change order.
func FeedTotal(recs []*store.Record, spec *store.ListSpec) (total int, exact bool) {
	other := *spec
	other.EmergencySlug, other.Since = "", time.UnixMilli(0) // the feed's filters but since, of every emergency
	match := map[string]bool{}
	n := 0
	for _, m := range Reference(recs, &other) {
		match[m.ID] = true
	}
	var changes []*store.Record // of the emergency, oldest change first
	for _, r := range recs {
		if spec.EmergencySlug == "" || r.EmergencySlug == spec.EmergencySlug {
			changes = append(changes, r)
			if match[r.ID] {
				n++
			}
		}
	}
	slices.SortFunc(changes, func(a, b *store.Record) int {
		return cmp.Or(cmp.Compare(a.UpdatedAt.UnixMilli(), b.UpdatedAt.UnixMilli()), strings.Compare(a.ID, b.ID))
	})
	walk := func(changes []*store.Record, bound int) (w store.FeedWalk) {
		for i, r := range changes {
			if i == store.MaxFeedRead {
				return w
			}
			if w.Last = r.UpdatedAt.UnixMilli(); match[r.ID] {
				if w.Matches++; w.Matches > bound {
					return w
				}
			}
		}
		w.Done = true
		return w
	}
	since := spec.SinceMillis()
	k, _ := slices.BinarySearchFunc(changes, since+1, func(r *store.Record, ms int64) int { return cmp.Compare(r.UpdatedAt.UnixMilli(), ms) })
	newest := slices.Clone(changes)
	slices.Reverse(newest)
	return store.FeedTotal(n, walk(changes[k:], store.MaxFeedCount), walk(changes[:k], store.MaxFeedCount), since, walk(newest, 0).Last)
}
