package e2e

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/directaid/directaid/backend"
	"github.com/directaid/directaid/internal/pgtest"
	"github.com/directaid/directaid/internal/testserver"
)

// metricsScenario drives a server through every kind of event the metrics count: publications created,
// duplicated and refused through the API, the form and MCP; MCP reads; every read view and format; and
// both rate_limit zones. It returns the ids and phones it published, which no label may carry.
func metricsScenario(t *testing.T, s *testserver.Server, publishEvents, detailEvents int) (secrets []string) {
	t.Helper()
	spent := 0 // the publish zone's budget, spent by POST help, the form and MCP publishing
	req := validRequest()
	for _, b := range []map[string]any{req, req, with(validRequest(), "publishContact", false), with(validOffer(), "latitude", 99.0)} {
		_, out := publish(t, s, b)
		if id, ok := out["id"].(string); ok {
			secrets = append(secrets, id)
		}
		spent++
	}
	secrets = append(secrets, "3001234567", "3109876543")
	call(t, s, "POST", "/api/public/v1/help", []byte("{"), "Content-Type", "text/plain")
	spent++
	form := url.Values{"emergencySlug": {"eje-cafetero"}, "title": {"Agua"}, "category": {"alimentos"}, "address": {"Cra 1"},
		"latitude": {"4.5"}, "longitude": {"-75.6"}, "contactName": {"Rosa"}, "contactWhatsapp": {"3001112233"}, "publishContact": {"true"}}
	s.Do("POST", "/pedir", []byte(form.Encode()), "Content-Type", "application/x-www-form-urlencoded")
	spent++
	_, out := mcpPublish(t, s, backend.ToolPublishOffer, mcpArgs(validOffer()))
	_, refused := mcpPublish(t, s, backend.ToolPublishOffer, mcpArgs(with(validOffer(), "publishContact", false)))
	spent += 2
	if out["result"] == nil || refused["result"] == nil {
		t.Fatalf("MCP publications: %v %v", out, refused)
	}
	mcpCall(t, s, backend.ToolSearchHelp, map[string]any{"limit": 1})
	mcpCall(t, s, backend.ToolPanorama, map[string]any{})
	for _, q := range []string{"view=list", "view=list&format=csv", "view=list&format=geojson", "view=panorama", "view=list&format=xml"} {
		s.Do("GET", "/api/public/v1/help?"+q, nil)
	}
	for i := 0; i <= detailEvents; i++ { // one more than the detail zone allows
		s.Do("GET", "/api/public/v1/help?view=detail&id="+secrets[0], nil)
	}
	for ; spent <= publishEvents; spent++ { // one more than the publish zone allows
		publish(t, s, validRequest())
	}
	return secrets
}

func mcpCall(t *testing.T, s *testserver.Server, tool string, args map[string]any) {
	t.Helper()
	msg := map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": map[string]any{"name": tool, "arguments": args}}
	resp, _ := call(t, s, "POST", "/mcp", mustJSON(t, msg), "Content-Type", "application/json",
		"Accept", "application/json, text/event-stream", "Mcp-Protocol-Version", "2025-11-25")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("MCP %s: %d", tool, resp.StatusCode)
	}
}

// scrape reads the admin endpoint's /metrics, as Prometheus would.
func scrape(t *testing.T, s *testserver.Server) (string, map[string]*dto.MetricFamily) {
	t.Helper()
	resp, err := http.Get(s.AdminURL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %d %v\n%.500s", resp.StatusCode, err, raw)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(string(raw)))
	if err != nil {
		t.Fatalf("/metrics is not the Prometheus text format: %v", err)
	}
	return string(raw), fams
}

// value is the sum of the samples of a family whose labels include want (counters, gauges; a histogram's count).
func value(fams map[string]*dto.MetricFamily, name string, want map[string]string) (float64, bool) {
	f, ok := fams[name]
	if !ok {
		return 0, false
	}
	var sum float64
	found := false
	for _, m := range f.GetMetric() {
		if !hasLabels(m, want) {
			continue
		}
		found = true
		switch {
		case m.Counter != nil:
			sum += m.GetCounter().GetValue()
		case m.Gauge != nil:
			sum += m.GetGauge().GetValue()
		case m.Histogram != nil:
			sum += float64(m.GetHistogram().GetSampleCount())
		}
	}
	return sum, found
}

func hasLabels(m *dto.Metric, want map[string]string) bool {
	for k, v := range want {
		ok := false
		for _, l := range m.GetLabel() {
			if l.GetName() == k && l.GetValue() == v {
				ok = true
			}
		}
		if !ok {
			return false
		}
	}
	return true
}

// TestMetrics runs the scenario and checks what each directaid series says of it, that the labels are
// bounded (nothing a client sent, no id or phone), and that Caddy's own series sit beside ours.
func TestMetrics(t *testing.T) {
	t.Parallel()
	const publishEvents, detailEvents = 12, 2
	s := testserver.Start(t, testserver.Options{PublishEvents: publishEvents, PublishWindow: "1m", DetailEvents: detailEvents,
		Global: "\tmetrics"})
	secrets := metricsScenario(t, s, publishEvents, detailEvents)
	raw, fams := scrape(t, s)

	for _, c := range []struct {
		name   string
		labels map[string]string
		min    float64
	}{
		{"directaid_publications_total", map[string]string{"channel": "api", "outcome": "created"}, 1},
		{"directaid_publications_total", map[string]string{"channel": "api", "outcome": "duplicate"}, 1},
		{"directaid_publications_total", map[string]string{"channel": "api", "outcome": "refused", "code": "consent_required"}, 1},
		{"directaid_publications_total", map[string]string{"channel": "api", "outcome": "refused", "code": "invalid_body"}, 1},
		{"directaid_publications_total", map[string]string{"channel": "api", "outcome": "refused", "code": "unsupported_media_type"}, 1},
		{"directaid_publications_total", map[string]string{"channel": "api", "outcome": "refused", "code": "rate_limited"}, 1},
		{"directaid_publications_total", map[string]string{"channel": "form", "outcome": "created"}, 1},
		{"directaid_publications_total", map[string]string{"channel": "mcp", "outcome": "created"}, 1},
		{"directaid_publications_total", map[string]string{"channel": "mcp", "outcome": "refused", "code": "consent_required"}, 1},
		{"directaid_mcp_tool_calls_total", map[string]string{"tool": backend.ToolPublishOffer, "outcome": "ok"}, 1},
		{"directaid_mcp_tool_calls_total", map[string]string{"tool": backend.ToolPublishOffer, "outcome": "error"}, 1},
		{"directaid_mcp_tool_calls_total", map[string]string{"tool": backend.ToolSearchHelp, "outcome": "ok"}, 1},
		{"directaid_read_duration_seconds", map[string]string{"view": "list", "format": "json"}, 1},
		{"directaid_read_duration_seconds", map[string]string{"view": "list", "format": "csv"}, 1},
		{"directaid_read_duration_seconds", map[string]string{"view": "list", "format": "geojson"}, 1},
		{"directaid_read_duration_seconds", map[string]string{"view": "panorama", "format": "json"}, 1},
		{"directaid_read_duration_seconds", map[string]string{"view": "detail", "format": "json"}, detailEvents},
		{"directaid_read_duration_seconds", map[string]string{"view": "list", "format": "mcp"}, 1},
		{"directaid_rate_limited_total", map[string]string{"zone": "publish"}, 1},
		{"directaid_rate_limited_total", map[string]string{"zone": "detail"}, 1},
		{"directaid_records", map[string]string{"emergency": "eje-cafetero", "type": "request", "status": "open"}, 2},
		{"directaid_records", map[string]string{"emergency": "eje-cafetero", "type": "offer", "status": "open"}, 1},
		{"directaid_records_by_status", map[string]string{"emergency": "eje-cafetero", "status": "open"}, 3},
		{"directaid_records_by_status", map[string]string{"emergency": "eje-cafetero", "status": "hidden"}, 0},
		{"directaid_report_breaker_open", map[string]string{"emergency": "eje-cafetero", "kind": "phone"}, 0},
		{"directaid_reports_total", map[string]string{"reason": "not_my_number", "outcome": "hid_phone"}, 0},
		{"directaid_moderation_actions_total", map[string]string{"action": "restore"}, 0},
		{"directaid_store_commit_batch_size", nil, 1},
		{"directaid_store_commit_duration_seconds", nil, 1},
		{"directaid_store_size_bytes", map[string]string{"part": "wal"}, 1},
		{"directaid_store_disk_free_bytes", nil, 1},
		{"directaid_store_writes_refused_total", nil, 0}, // present from the start (TestDiskFull counts refusals)
		{"caddy_http_requests_total", nil, 1},
	} {
		if v, ok := value(fams, c.name, c.labels); !ok || v < c.min {
			t.Errorf("%s%v = %v (present %v), want at least %v", c.name, c.labels, v, ok, c.min)
		}
	}
	// A refused format is not a label value.
	if _, ok := value(fams, "directaid_read_duration_seconds", map[string]string{"format": "xml"}); ok {
		t.Error("a read with format=xml made a series")
	}
	// directaid_records counts what the store holds: the API's total agrees.
	_, list := call(t, s, "GET", "/api/public/v1/help?view=list&emergencySlug=eje-cafetero&limit=1", nil)
	if v, _ := value(fams, "directaid_records", map[string]string{"emergency": "eje-cafetero"}); list["total"] != v {
		t.Errorf("directaid_records says %v records of eje-cafetero, the list %v", v, list["total"])
	}

	// Bounded labels: every value of every directaid label is a word of ours, never an id or a phone.
	word := regexp.MustCompile(`^[a-z][a-z0-9_-]*$|^$`)
	for name, f := range fams {
		if !strings.HasPrefix(name, "directaid_") {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() != "le" && !word.MatchString(l.GetValue()) {
					t.Errorf("%s has label %s=%q", name, l.GetName(), l.GetValue())
				}
			}
		}
	}
	for _, sec := range secrets {
		if strings.Contains(raw, sec) {
			t.Errorf("/metrics holds %q", sec)
		}
	}

	// Counters survive a reload (they belong to the process, not to one config).
	before, _ := value(fams, "directaid_publications_total", nil)
	s.Reload()
	_, fams = scrape(t, s)
	if after, _ := value(fams, "directaid_publications_total", nil); after < before {
		t.Errorf("publications went from %v to %v across a reload", before, after)
	}
	s.Stop()
}

// TestDashboardSeriesExist checks every series that the Grafana dashboard (dist/grafana/directaid.json)
// queries against a real /metrics answer after the scenario: each metric name, and each label that a
// query fixes to a value, must be there. A renamed metric or label fails here, not on an operator's screen.
func TestDashboardSeriesExist(t *testing.T) {
	t.Parallel()
	dashboardSeriesExist(t, testserver.Options{}, nil)
}

// TestDashboardSeriesExistOnPostgres: the same on a node over PostgreSQL, whose commits and sizes feed the
// same series as Badger's; only the free space of the database server's disk, which a node cannot see,
// is Badger's alone.
func TestDashboardSeriesExistOnPostgres(t *testing.T) {
	t.Parallel()
	o := testserver.Options{Postgres: pgtest.Shared(t).NewDatabase(t)}
	fams := dashboardSeriesExist(t, o, []string{"directaid_store_disk_free_bytes"})
	for _, c := range []struct {
		name   string
		labels map[string]string
	}{{"directaid_store_commit_batch_size", nil}, {"directaid_store_commit_duration_seconds", nil}, {"directaid_store_size_bytes", map[string]string{"part": "table"}}} {
		if v, _ := value(fams, c.name, c.labels); v <= 0 {
			t.Errorf("%s%v = %v on PostgreSQL: its panel would stay empty", c.name, c.labels, v)
		}
	}
}

// dashboardSeriesExist runs the metrics scenario on a server with o and checks every series the dashboard
// queries, but those named in badgerOnly; it returns what it scraped.
func dashboardSeriesExist(t *testing.T, o testserver.Options, badgerOnly []string) map[string]*dto.MetricFamily {
	_, file, _, _ := runtime.Caller(0)
	raw, err := os.ReadFile(filepath.Join(filepath.Dir(file), "..", "dist", "grafana", "directaid.json"))
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(raw, &dash); err != nil {
		t.Fatalf("the dashboard is not JSON: %v", err)
	}
	const publishEvents, detailEvents = 12, 2
	o.PublishEvents, o.PublishWindow, o.DetailEvents, o.Global = publishEvents, "1m", detailEvents, "\tmetrics"
	s := testserver.Start(t, o)
	metricsScenario(t, s, publishEvents, detailEvents)
	_, fams := scrape(t, s)
	s.Stop()

	// A selector: a metric name, then optional {label="value", ...}. PromQL functions and keywords are
	// followed by "(" or are label names inside by/without, so only names of families we expose qualify.
	selector := regexp.MustCompile(`([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?`)
	matcher := regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)\s*=\s*"([^"]*)"`)
	queried := 0
	for _, p := range dash.Panels {
		for _, tg := range p.Targets {
			queried++
			found := 0
			for _, m := range selector.FindAllStringSubmatch(tg.Expr, -1) {
				name := m[1]
				if !strings.HasPrefix(name, "directaid_") && !strings.HasPrefix(name, "caddy_") &&
					!strings.HasPrefix(name, "process_") && !strings.HasPrefix(name, "go_") {
					continue
				}
				found++
				family := name
				for _, suffix := range []string{"_bucket", "_count", "_sum"} {
					if base, ok := strings.CutSuffix(name, suffix); ok {
						if f, exists := fams[base]; exists && f.GetType() == dto.MetricType_HISTOGRAM {
							family = base
						}
					}
				}
				want := map[string]string{}
				for _, lm := range matcher.FindAllStringSubmatch(m[2], -1) {
					want[lm[1]] = lm[2]
				}
				if _, ok := value(fams, family, want); !ok && !slices.Contains(badgerOnly, family) {
					t.Errorf("panel %q queries %s%v, which /metrics does not have", p.Title, name, want)
				}
			}
			if found == 0 {
				t.Errorf("panel %q: no metric found in %q", p.Title, tg.Expr)
			}
		}
	}
	if queried < 10 {
		t.Fatalf("the dashboard has %d queries: the test reads it wrong", queried)
	}
	return fams
}
