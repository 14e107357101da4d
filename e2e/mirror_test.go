package e2e

import (
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/directaid/directaid/internal/testserver"
	"github.com/directaid/directaid/schema"
)

// TestMirrorReplaysSince: an app mirrors the network through view=list&since= pages (following
// nextCursor, 7 records a page) while records are published, resolved, reopened, withdrawn by their
// publishers and hidden by reports; another mirrors the open records only (status=open). Once the writes stop and it catches up from the newest updatedAt it
// saw, its open records are exactly the server's open list, its resolved ones the resolved list, and it
// holds no withdrawn or hidden record nor any of their names or addresses. A record never goes back to
// an older version in the mirror.
func TestMirrorReplaysSince(t *testing.T) {
	t.Parallel()
	s := testserver.Start(t, testserver.Options{Emergencies: testserver.TwoEmergencies + "\n\t\thide_after_reports 2"})
	type rec struct{ id, token, name, address string }
	var mu sync.Mutex
	var recs []rec
	publishOne := func(i int) {
		name, addr := fmt.Sprintf("Espejonombre%03d", i), fmt.Sprintf("Calle Espejo %03d", i)
		body := mustJSON(t, with(validRequest(), "contactName", name, "address", addr))
		resp, b := s.Do("POST", schema.HelpPath, body, "Content-Type", "application/json")
		var p map[string]any
		if resp.StatusCode != 201 || json.Unmarshal(b, &p) != nil {
			t.Errorf("publish %d: %d %s", i, resp.StatusCode, b)
			return
		}
		mu.Lock()
		recs = append(recs, rec{p["id"].(string), p["manageToken"].(string), name, addr})
		mu.Unlock()
	}
	for i := range 30 {
		publishOne(i)
	}

	// The writer: 120 changes of every kind, in a fixed pseudo-random order.
	done := make(chan struct{})
	go func() {
		defer close(done)
		rng := rand.New(rand.NewPCG(13, 1))
		for i := range 120 {
			mu.Lock()
			r := recs[rng.IntN(len(recs))]
			mu.Unlock()
			switch i % 6 {
			case 0:
				publishOne(1000 + i)
			case 1, 2:
				s.Do("POST", schema.ActionsPath(r.id), []byte(`{"action":"resolve"}`), "Content-Type", "application/json", "Authorization", "Bearer "+r.token)
			case 3:
				s.Do("POST", schema.ActionsPath(r.id), []byte(`{"action":"reopen"}`), "Content-Type", "application/json", "Authorization", "Bearer "+r.token)
			case 4:
				s.Do("POST", schema.ActionsPath(r.id), []byte(`{"action":"withdraw"}`), "Content-Type", "application/json", "Authorization", "Bearer "+r.token)
			case 5:
				for _, ip := range []string{"127.0.0.31", "127.0.0.32"} {
					req := s.NewRequest("POST", schema.ReportsPath(r.id), []byte(`{"reason":"spam"}`), "Content-Type", "application/json")
					if resp, err := fromAddr(ip).Do(req); err == nil {
						resp.Body.Close()
					}
				}
			}
		}
	}()

	type entry struct {
		ID        string    `json:"id"`
		Status    string    `json:"status"`
		UpdatedAt time.Time `json:"updatedAt"`
	}
	// Two mirrors: one of every status, one of the open records only (status=open), where a record that
	// left open comes as a tombstone of its new status.
	type mirrorCopy struct {
		status  string
		records map[string]json.RawMessage
		version map[string]time.Time
		seen    time.Time
	}
	newMirror := func(status string) *mirrorCopy {
		return &mirrorCopy{status: status, records: map[string]json.RawMessage{}, version: map[string]time.Time{},
			seen: time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)}
	}
	everything, openOnly := newMirror(""), newMirror("open")
	pages := 0
	replay := func(m *mirrorCopy) {
		q := url.Values{"view": {"list"}, "limit": {"7"}, "since": {m.seen.Format(time.RFC3339Nano)}}
		if m.status != "" {
			q.Set("status", m.status)
		}
		for range 10000 {
			resp, b := s.Do("GET", schema.HelpPath+"?"+q.Encode(), nil)
			if resp.StatusCode != 200 {
				t.Fatalf("feed page: %d %s", resp.StatusCode, b)
			}
			pages++
			var page struct {
				Items      []json.RawMessage `json:"items"`
				Removed    []entry           `json:"removed"`
				NextCursor string            `json:"nextCursor"`
			}
			if err := json.Unmarshal(b, &page); err != nil {
				t.Fatal(err)
			}
			for _, raw := range page.Items {
				var e entry
				if err := json.Unmarshal(raw, &e); err != nil {
					t.Fatal(err)
				}
				if v, ok := m.version[e.ID]; ok && e.UpdatedAt.Before(v) {
					t.Fatalf("%s went back from %v to %v", e.ID, v, e.UpdatedAt)
				}
				if m.status != "" && e.Status != m.status {
					t.Fatalf("status=%s: an item of status %s", m.status, e.Status)
				}
				m.records[e.ID], m.version[e.ID] = raw, e.UpdatedAt
				m.seen = maxTime(m.seen, e.UpdatedAt)
			}
			for _, e := range page.Removed {
				if e.Status != "withdrawn" && e.Status != "hidden" && (m.status == "" || e.Status == m.status) {
					t.Fatalf("status=%s: a tombstone with status %q", m.status, e.Status)
				}
				delete(m.records, e.ID)
				m.version[e.ID] = e.UpdatedAt
				m.seen = maxTime(m.seen, e.UpdatedAt)
			}
			if page.NextCursor == "" {
				return
			}
			q.Set("cursor", page.NextCursor)
		}
		t.Fatal("the feed did not end")
	}
	for running := true; running; {
		select {
		case <-done:
			running = false
		default:
		}
		replay(everything)
		replay(openOnly)
	}
	replay(everything) // catch up once the writes stopped
	replay(openOnly)
	mirror := everything.records

	// The server's lists, paged to the end, by status.
	serverList := func(status string) []string {
		var ids []string
		q := url.Values{"view": {"list"}, "limit": {"100"}, "status": {status}}
		for {
			_, l := call(t, s, "GET", schema.HelpPath+"?"+q.Encode(), nil)
			for _, it := range l["items"].([]any) {
				ids = append(ids, it.(map[string]any)["id"].(string))
			}
			c, _ := l["nextCursor"].(string)
			if c == "" {
				break
			}
			q.Set("cursor", c)
		}
		slices.Sort(ids)
		return ids
	}
	byStatus := map[string][]string{}
	for id, raw := range mirror {
		var e entry
		_ = json.Unmarshal(raw, &e)
		byStatus[e.Status] = append(byStatus[e.Status], id)
	}
	total := 0
	for _, st := range []string{"open", "resolved", "expired"} {
		slices.Sort(byStatus[st])
		want := serverList(st)
		total += len(want)
		if !slices.Equal(byStatus[st], want) {
			t.Errorf("status %s: the mirror holds %d records, the server lists %d\nmirror %v\nserver %v", st, len(byStatus[st]), len(want), byStatus[st], want)
		}
	}
	if len(mirror) != total {
		t.Errorf("the mirror holds %d records, the server lists %d", len(mirror), total)
	}
	openIDs := slices.Sorted(maps.Keys(openOnly.records))
	if want := serverList("open"); !slices.Equal(openIDs, want) {
		t.Errorf("the mirror of status=open holds %d records, the server lists %d open\nmirror %v\nserver %v", len(openIDs), len(want), openIDs, want)
	}

	// Every withdrawn or hidden record: gone from the mirror with its name and address.
	var all strings.Builder
	for _, raw := range mirror {
		all.Write(raw)
	}
	for _, raw := range openOnly.records {
		all.Write(raw)
	}
	gone := 0
	for _, r := range recs {
		if code, _ := detailStatus(t, s, r.id); code != 410 {
			continue
		}
		gone++
		if _, ok := mirror[r.id]; ok {
			t.Errorf("the mirror keeps %s, which the server no longer shows", r.id)
		}
		if _, ok := openOnly.records[r.id]; ok {
			t.Errorf("the mirror of status=open keeps %s, which the server no longer shows", r.id)
		}
		if strings.Contains(all.String(), r.name) || strings.Contains(all.String(), r.address) {
			t.Errorf("the mirror keeps the name or address of %s", r.id)
		}
	}
	if gone == 0 || len(byStatus["resolved"]) == 0 || len(byStatus["open"]) == 0 {
		t.Fatalf("the scenario should leave open, resolved and gone records: open %d, resolved %d, gone %d",
			len(byStatus["open"]), len(byStatus["resolved"]), gone)
	}
	// Go's zero time, where a mirror in Go starts, is the whole feed, as from 1970: not the open list.
	feedIDs := func(since string) string {
		_, l := call(t, s, "GET", schema.HelpPath+"?view=list&limit=100&since="+since, nil)
		var ids []string
		for _, key := range []string{"items", "removed"} {
			list, _ := l[key].([]any)
			for _, it := range list {
				ids = append(ids, key+":"+it.(map[string]any)["id"].(string))
			}
		}
		return strings.Join(ids, " ")
	}
	if zero, epoch := feedIDs("0001-01-01T00:00:00Z"), feedIDs("1970-01-01T00:00:00Z"); zero != epoch || !strings.Contains(zero, "removed:") {
		t.Errorf("since=0001-01-01T00:00:00Z: %s\nsince=1970-01-01T00:00:00Z: %s", zero, epoch)
	}
	t.Logf("%d records, %d open, %d resolved, %d withdrawn or hidden; %d feed pages read", len(recs), len(byStatus["open"]), len(byStatus["resolved"]), gone, pages)
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
