package backend_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/directaid/directaid/backend"
	"github.com/directaid/directaid/backend/badgerstore"
	"github.com/directaid/directaid/backend/httpapi"
	"github.com/directaid/directaid/backend/mcpserver"
	"github.com/directaid/directaid/backend/store"
	"github.com/directaid/directaid/internal/testserver"
	"github.com/directaid/directaid/schema"
)

// fakeClock is the clock of the service and the store in the expiry tests: it moves only when told.
type fakeClock struct {
	mu sync.Mutex
	at time.Time
}

func (c *fakeClock) now() time.Time  { c.mu.Lock(); defer c.mu.Unlock(); return c.at }
func (c *fakeClock) set(t time.Time) { c.mu.Lock(); defer c.mu.Unlock(); c.at = t }

// expiryServer is a service with the given lifetimes over a real Badger store, both on clk, and its
// handler served in process.
type expiryServer struct {
	t   *testing.T
	svc *backend.Service
	st  store.Store
	h   http.Handler
}

func newExpiryServer(t *testing.T, clk *fakeClock) *expiryServer {
	t.Helper()
	st, err := badgerstore.Open(badgerstore.Options{Dir: t.TempDir(), Now: clk.now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	svc := backend.NewService(st, backend.Config{Emergencies: []backend.Emergency{
		{Slug: "eje-cafetero", Title: "Terremoto en el Eje Cafetero", RequestTTL: 48 * time.Hour, OfferTTL: 96 * time.Hour},
		{Slug: "inundaciones-la-mojana", Title: "Inundaciones en La Mojana"}, // the defaults
	}, RateLimits: map[string]backend.Limit{backend.ZonePublish: {1000, time.Minute}, backend.ZoneDetail: {1000, time.Minute}}})
	svc.SetNow(clk.now)
	h, err := httpapi.NewHandler(svc, httpapi.Options{MCP: mcpserver.New(svc)})
	if err != nil {
		t.Fatal(err)
	}
	return &expiryServer{t: t, svc: svc, st: st, h: h}
}

// withMCP is svc with its MCP server, as NewHandler takes them.
func withMCP(svc *backend.Service) (*backend.Service, httpapi.Options) {
	return svc, httpapi.Options{MCP: mcpserver.New(svc)}
}

func (s *expiryServer) do(method, path string, body []byte, header ...string) (int, string) {
	return testserver.Record(s.h, method, path, body, header...)
}

// mcpPost posts one MCP message at protocol proto (2026-07-28 adds the headers it requires).
func (s *expiryServer) mcpPost(proto, body string) (int, string) {
	return s.do("POST", schema.MCPPath, []byte(body), testserver.MCPHeaders(proto, body)...)
}

// callTool calls an MCP tool through the handler and returns its result's text and structured content.
func (s *expiryServer) callTool(name, args string) (text string, structured json.RawMessage) {
	s.t.Helper()
	code, body := s.mcpPost("2025-06-18", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"`+name+`","arguments":`+args+`}}`)
	var out struct {
		Result struct {
			Content []struct {
				Type, Text string
			} `json:"content"`
			StructuredContent json.RawMessage `json:"structuredContent"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(body), &out); err != nil || code != http.StatusOK {
		s.t.Fatalf("%s: %d %s", name, code, body)
	}
	var b strings.Builder
	for _, c := range out.Result.Content {
		if c.Type == "text" {
			b.WriteString(c.Text)
		}
	}
	return b.String(), out.Result.StructuredContent
}

func (s *expiryServer) publish(pub map[string]any) schema.PublishResult {
	s.t.Helper()
	b, _ := json.Marshal(pub)
	code, body := s.do("POST", schema.HelpPath, b)
	var res schema.PublishResult
	if err := json.Unmarshal([]byte(body), &res); err != nil || code != http.StatusCreated {
		s.t.Fatalf("publish: %d %s", code, body)
	}
	return res
}

func (s *expiryServer) act(id, token, action string) (int, schema.ActionResult) {
	s.t.Helper()
	code, body := s.do("POST", schema.ActionsPath(id), []byte(`{"action":"`+action+`"}`), "Authorization", "Bearer "+token)
	var res schema.ActionResult
	if code == http.StatusOK {
		if err := json.Unmarshal([]byte(body), &res); err != nil {
			s.t.Fatal(err)
		}
	}
	return code, res
}

// list answers the ids and statuses of a list query's items.
func (s *expiryServer) list(query string) map[string]string {
	s.t.Helper()
	code, body := s.do("GET", schema.HelpPath+"?view=list&limit=100"+query, nil)
	var l schema.HelpList
	if err := json.Unmarshal([]byte(body), &l); err != nil || code != http.StatusOK {
		s.t.Fatalf("list %s: %d %s", query, code, body)
	}
	out := map[string]string{}
	for _, it := range l.Items {
		out[it.ID] = it.Status
	}
	return out
}

// views are every reader's view of record id: detail JSON, page, twin, MCP ver_ayuda, and the default
// list with its exports.
func (s *expiryServer) views(id string) map[string]string {
	s.t.Helper()
	out := map[string]string{}
	for name, path := range map[string]string{
		"detail": schema.HelpPath + "?view=detail&id=" + id, "page": schema.RecordPath(id), "twin": schema.RecordPath(id) + ".md",
		"list": schema.HelpPath + "?view=list", "csv": schema.HelpPath + "?view=list&format=csv",
		"geojson": schema.HelpPath + "?view=list&format=geojson", "since": schema.HelpPath + "?view=list&since=2000-01-01T00:00:00Z",
		"expired list": schema.HelpPath + "?view=list&status=expired",
	} {
		code, body := s.do("GET", path, nil)
		if code != http.StatusOK {
			s.t.Fatalf("%s: %d %s", name, code, body)
		}
		out[name] = body
	}
	text, structured := s.callTool(schema.ToolViewHelp, `{"id":"`+id+`"}`)
	out["mcp ver_ayuda"] = text + string(structured)
	return out
}

// phoneForms are the ways the samples' phone (+57 300 123 4567) is shown (a wa.me/?text= share link carries none).
var phoneForms = []string{"3001234567", "300 123 4567", "wa.me/57", "tel:+57"}

func showsPhone(v string) bool {
	return slices.ContainsFunc(phoneForms, func(p string) bool { return strings.Contains(v, p) })
}

func detailOf(t *testing.T, s *expiryServer, id string) schema.PublicHelpDetail {
	t.Helper()
	code, body := s.do("GET", schema.HelpPath+"?view=detail&id="+id, nil)
	var d schema.PublicHelpDetail
	if err := json.Unmarshal([]byte(body), &d); err != nil || code != http.StatusOK {
		t.Fatalf("detail: %d %s", code, body)
	}
	return d
}

// TestExpiry: lifetimes per emergency and type; an open record past its expiresAt reads as expired with no
// phone in any view at once, the sweep marks it through Store.Update (out of the default list, in
// status=expired, in the since feed, in the audit trail), and renew brings it back. The clock is a fake one.
func TestExpiry(t *testing.T) {
	t0 := time.Date(2026, 8, 12, 9, 0, 0, 0, time.UTC)
	clk := &fakeClock{at: t0}
	s := newExpiryServer(t, clk)
	reqPub, offerPub := fieldSamples()
	req, offer := s.publish(reqPub), s.publish(offerPub)
	reqPub["externalId"], reqPub["emergencySlug"] = "r-2", "inundaciones-la-mojana"
	other := s.publish(reqPub)

	// Lifetimes: the emergency's request_ttl and offer_ttl, or the defaults.
	for _, c := range []struct {
		name string
		res  schema.PublishResult
		ttl  time.Duration
	}{{"request", req, 48 * time.Hour}, {"offer", offer, 96 * time.Hour}, {"request with the defaults", other, backend.DefaultRequestTTL}} {
		if c.res.Status != store.StatusOpen || c.res.ExpiresAt == nil || !c.res.ExpiresAt.Equal(t0.Add(c.ttl)) {
			t.Errorf("%s: status %q, expiresAt %v; want open, %v", c.name, c.res.Status, c.res.ExpiresAt, t0.Add(c.ttl))
		}
	}
	// Renewing an open record extends it from now.
	clk.set(t0.Add(time.Hour))
	if code, r := s.act(req.ID, req.ManageToken, schema.ActionRenew); code != http.StatusOK || !r.Changed || r.Status != store.StatusOpen ||
		r.ExpiresAt == nil || !r.ExpiresAt.Equal(t0.Add(49*time.Hour)) {
		t.Fatalf("renew of an open record: %d %+v", code, r)
	}
	due := t0.Add(49 * time.Hour)

	before := s.views(req.ID)
	for name, v := range before {
		if !strings.Contains(name, "expired") && !strings.Contains(v, req.ID) {
			t.Errorf("before expiry: %s does not show the record", name)
		}
	}
	for _, name := range []string{"detail", "page", "twin", "mcp ver_ayuda"} {
		if !showsPhone(before[name]) {
			t.Errorf("before expiry: %s shows no phone: %s", name, before[name])
		}
	}

	// At expiresAt, before any sweep: expired for every reader, no phone anywhere.
	clk.set(due)
	if d := detailOf(t, s, req.ID); d.Status != store.StatusExpired || d.Contact.Available || d.Contact.Whatsapp != "" {
		t.Errorf("detail at expiresAt, not swept: %+v", d)
	}
	unswept := s.views(req.ID)
	for name, v := range unswept {
		if showsPhone(v) {
			t.Errorf("not swept yet: %s shows the phone: %s", name, v)
		}
	}
	for _, name := range []string{"page", "twin"} {
		if !strings.Contains(unswept[name], "no se muestra: la publicación venció") {
			t.Errorf("not swept yet: the %s does not say why there is no phone", name)
		}
	}
	if st := s.list(""); st[req.ID] != store.StatusExpired || st[offer.ID] != store.StatusOpen {
		t.Errorf("default list before the sweep: %v (the record must not read as open)", st)
	}
	if st, err := s.st.Get(context.Background(), req.ID); err != nil || st.Status != store.StatusOpen {
		t.Fatalf("stored record changed by a read: %+v %v", st, err)
	}

	// The sweep marks it (and only it) through Update; a second sweep finds nothing.
	sweptAt := due.Add(20 * time.Second)
	clk.set(sweptAt)
	if n, err := s.svc.ExpireDue(context.Background()); err != nil || n != 1 {
		t.Fatalf("ExpireDue = %d, %v; want 1", n, err)
	}
	if n, err := s.svc.ExpireDue(context.Background()); err != nil || n != 0 {
		t.Fatalf("second ExpireDue = %d, %v; want 0", n, err)
	}
	stored, err := s.st.Get(context.Background(), req.ID)
	if err != nil || stored.Status != store.StatusExpired || stored.UpdatedAt.Before(sweptAt) {
		t.Fatalf("stored after the sweep: %+v %v", stored, err)
	}
	swept := s.views(req.ID)
	for name, v := range swept {
		if showsPhone(v) {
			t.Errorf("expired: %s shows the phone: %s", name, v)
		}
	}
	for _, name := range []string{"list", "csv", "geojson"} {
		if strings.Contains(swept[name], req.ID) {
			t.Errorf("expired: still in the default %s", name)
		}
		if !strings.Contains(swept[name], offer.ID) {
			t.Errorf("the offer (not due) left the default %s", name)
		}
	}
	if !strings.Contains(swept["expired list"], req.ID) {
		t.Errorf("expired: not in status=expired")
	}
	if st := s.list("&status=expired"); st[req.ID] != store.StatusExpired || len(st) != 1 {
		t.Errorf("status=expired list: %v", st)
	}
	feed := s.list("&since=" + due.Add(-time.Second).Format(time.RFC3339Nano))
	if feed[req.ID] != store.StatusExpired || len(feed) != 1 {
		t.Errorf("since feed after the sweep: %v; want only the expired record", feed)
	}
	if d := detailOf(t, s, offer.ID); !d.Contact.Available || d.Contact.Whatsapp == "" {
		t.Errorf("the offer (not due) lost its phone: %+v", d.Contact)
	}
	trail, err := s.svc.AuditTrail(context.Background(), 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	var expires []store.AuditEntry
	for _, e := range trail {
		if e.Action == backend.ActionExpire {
			expires = append(expires, e)
		}
	}
	if len(expires) != 1 || expires[0].RecordID != req.ID || expires[0].Actor != store.ActorSystem ||
		expires[0].From != store.StatusOpen || expires[0].To != store.StatusExpired {
		t.Errorf("audit trail of the sweep: %+v", expires)
	}

	// Renew brings it back: open, a new expiresAt from now, the phone, the default list, the feed.
	renewAt := sweptAt.Add(3 * time.Hour)
	clk.set(renewAt)
	code, r := s.act(req.ID, req.ManageToken, schema.ActionRenew)
	if code != http.StatusOK || !r.Changed || r.Status != store.StatusOpen || r.ExpiresAt == nil || !r.ExpiresAt.Equal(renewAt.Add(48*time.Hour)) {
		t.Fatalf("renew of an expired record: %d %+v", code, r)
	}
	if d := detailOf(t, s, req.ID); d.Status != store.StatusOpen || !d.Contact.Available || !showsPhone(d.Contact.WhatsappURL) {
		t.Errorf("renewed: detail %+v", d)
	}
	if st := s.list(""); st[req.ID] != store.StatusOpen {
		t.Errorf("renewed: not back in the default list: %v", st)
	}
	if feed := s.list("&since=" + sweptAt.Format(time.RFC3339Nano)); feed[req.ID] != store.StatusOpen {
		t.Errorf("renewed: the feed after the sweep does not carry it: %v", feed)
	}

	// Reopen of a record past its expiresAt that no sweep marked: it counts as expired, so it reopens
	// with a new expiresAt (not "already open").
	clk.set(t0.Add(96 * time.Hour))
	code, r = s.act(offer.ID, offer.ManageToken, schema.ActionReopen)
	if code != http.StatusOK || !r.Changed || r.ExpiresAt == nil || !r.ExpiresAt.Equal(t0.Add(192*time.Hour)) {
		t.Errorf("reopen of a due, unswept record: %d %+v", code, r)
	}
	// An operator's restore of a record hidden past its expiresAt gives it a new lifetime, not an instant expiry.
	if _, err := s.svc.Moderate(context.Background(), req.ID, backend.ActionHide, ""); err != nil {
		t.Fatal(err)
	}
	restoreAt := renewAt.Add(30 * 24 * time.Hour)
	clk.set(restoreAt)
	if rec, err := s.svc.Moderate(context.Background(), req.ID, backend.ActionRestore, ""); err != nil || rec.Status != store.StatusOpen ||
		!rec.ExpiresAt.Equal(restoreAt.Add(48*time.Hour)) {
		t.Errorf("restore of a record hidden past its expiresAt: %+v %v", rec, err)
	}
	if d := detailOf(t, s, req.ID); d.Status != store.StatusOpen || !d.Contact.Available {
		t.Errorf("restored: detail %+v", d)
	}
	// What stays Forbidden: renewing a withdrawn record.
	if code, _ := s.act(other.ID, other.ManageToken, schema.ActionWithdraw); code != http.StatusOK {
		t.Fatalf("withdraw: %d", code)
	}
	if code, body := s.do("POST", schema.ActionsPath(other.ID), []byte(`{"action":"renew"}`), "Authorization", "Bearer "+other.ManageToken); code != http.StatusConflict ||
		!strings.Contains(body, schema.CodeInvalidTransition) {
		t.Errorf("renew of a withdrawn record: %d %s", code, body)
	}
}

// TestExpirySweepsRace: sweeps of several nodes (here several services over one store, all at once) mark
// each due record once, with one audit entry each, and leave alone what is not due or was renewed.
func TestExpirySweepsRace(t *testing.T) {
	t0 := time.Date(2026, 8, 12, 9, 0, 0, 0, time.UTC)
	clk := &fakeClock{at: t0}
	s := newExpiryServer(t, clk)
	reqPub, _ := fieldSamples()
	var due []string
	n := backend.ExpiryBatch + 37 // more than one batch
	for i := range n + 5 {
		reqPub["externalId"] = fmt.Sprintf("race-%d", i)
		if i >= n {
			clk.set(t0.Add(time.Hour)) // published later: not due at the sweep
		}
		res := s.publish(reqPub)
		if i < n {
			due = append(due, res.ID)
		}
	}
	clk.set(t0.Add(48*time.Hour + 30*time.Minute))
	others := []*backend.Service{s.svc, backend.NewService(s.st, s.svc.Config()), backend.NewService(s.st, s.svc.Config())}
	var wg sync.WaitGroup
	counts := make([]int, len(others))
	for i, svc := range others {
		svc.SetNow(clk.now)
		wg.Go(func() {
			c, err := svc.ExpireDue(context.Background())
			if err != nil {
				t.Error(err)
			}
			counts[i] = c
		})
	}
	wg.Wait()
	if total := counts[0] + counts[1] + counts[2]; total != n {
		t.Errorf("sweeps marked %v records in all, want %d", counts, n)
	}
	trail, err := s.svc.AuditTrail(context.Background(), 0, 10*n)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, e := range trail {
		if e.Action == backend.ActionExpire {
			seen[e.RecordID]++
		}
	}
	for _, id := range due {
		if seen[id] != 1 {
			t.Errorf("record %s: %d expire entries in the audit trail, want 1", id, seen[id])
		}
		if r, err := s.st.Get(context.Background(), id); err != nil || r.Status != store.StatusExpired {
			t.Errorf("record %s after the sweeps: %+v %v", id, r, err)
		}
	}
	if len(seen) != n {
		t.Errorf("%d records expired, want %d", len(seen), n)
	}
	if l := s.list(""); len(l) != 5 {
		t.Errorf("default list after the sweeps: %d records, want the 5 not due", len(l))
	}
}
