// Package metrics keeps directaid's Prometheus series: the service's counts (it implements
// backend.Metrics), the store's (store.Observer), and collectors of the records and the disk read at
// each scrape.
package metrics

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/directaid/directaid/backend"
	"github.com/directaid/directaid/backend/store"
	"github.com/directaid/directaid/schema"
)

// Metrics are directaid's Prometheus series. They live as long as the process, so that counters do not
// restart at a config reload; each config's registry (Caddy's, served on the admin endpoint's /metrics)
// registers them again. Every label takes its values from a fixed set in this code or from the
// operator's configuration: never an id, a phone or anything a client wrote.
type Metrics struct {
	publications *prometheus.CounterVec
	mcpCalls     *prometheus.CounterVec
	reads        *prometheus.HistogramVec
	rateLimited  *prometheus.CounterVec
	reports      *prometheus.CounterVec
	moderations  *prometheus.CounterVec
	feedSubs     prometheus.Gauge
	feedEvents   *prometheus.CounterVec

	// Store-side series, fed by the store through StoreObserver.
	commitBatch    prometheus.Histogram
	commitDuration prometheus.Histogram
	gcRuns         *prometheus.CounterVec
	gcDuration     prometheus.Histogram
	writesRefused  prometheus.Counter

	minutes minuteRing
}

// NewMetrics makes the series; Register adds them to a registry. The usual label values start at zero,
// so that a series exists (and rate() works) before its first event.
func NewMetrics() *Metrics {
	m := newMetrics()
	for _, ch := range []string{backend.ChannelAPI, backend.ChannelMCP, backend.ChannelForm} {
		for _, o := range []string{backend.OutcomeCreated, backend.OutcomeDuplicate} {
			m.publications.WithLabelValues(ch, o, "")
		}
	}
	for _, z := range backend.RateLimitZones {
		m.rateLimited.WithLabelValues(z)
	}
	for _, r := range []string{"rewrote", "nothing", "error"} {
		m.gcRuns.WithLabelValues(r)
	}
	for _, a := range backend.ModerationActions {
		m.moderations.WithLabelValues(a)
	}
	for _, e := range backend.FeedEventNames {
		m.feedEvents.WithLabelValues(e)
	}
	for _, reason := range schema.ReportReasons {
		for _, o := range schema.ReportOutcomes {
			m.reports.WithLabelValues(reason, o)
		}
	}
	return m
}

func newMetrics() *Metrics {
	latency := []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5}
	return &Metrics{
		publications: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "directaid_publications_total",
			Help: "Publications by channel (api, mcp, form) and outcome (created, duplicate, refused); code is the error code of a refusal.",
		}, []string{"channel", "outcome", "code"}),
		mcpCalls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "directaid_mcp_tool_calls_total",
			Help: "MCP tool calls by tool and outcome (ok, error: a result with isError).",
		}, []string{"tool", "outcome"}),
		reads: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "directaid_read_duration_seconds",
			Help:    "Reads of the API (view=list|detail|panorama, and view matches: a record's matches) and of the MCP read tools (format mcp), by view and format.",
			Buckets: latency,
		}, []string{"view", "format"}),
		rateLimited: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "directaid_rate_limited_total",
			Help: "Answers 429 by rate_limit zone (" + strings.Join(backend.RateLimitZones, ", ") + ").",
		}, []string{"zone"}),
		reports: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "directaid_reports_total",
			Help: "Community reports by reason and outcome (hid_phone, hid_record, queued: held back by the abuse limits, counted).",
		}, []string{"reason", "outcome"}),
		moderations: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "directaid_moderation_actions_total",
			Help: "Operators' moderation actions by kind (hide, restore, erase, set_status).",
		}, []string{"action"}),
		feedSubs: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "directaid_feed_subscribers",
			Help: "Open streams of the live feed (GET /api/public/v1/help/events) on this node.",
		}),
		feedEvents: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "directaid_feed_events_total",
			Help: "Events the live feed delivered to its subscribers, by event (published, updated, removed, reconnect).",
		}, []string{"event"}),
		commitBatch: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "directaid_store_commit_batch_size",
			Help:    "Publications per group commit (one synced transaction).",
			Buckets: []float64{1, 2, 4, 8, 16, 32, 64, 128, 256, 512},
		}),
		commitDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "directaid_store_commit_duration_seconds",
			Help:    "Time to commit a group of publications to stable storage, the write and its fsync.",
			Buckets: latency,
		}),
		gcRuns: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "directaid_store_gc_runs_total",
			Help: "Garbage collections of the store by result (rewrote: space was reclaimed; nothing: nothing to reclaim; error).",
		}, []string{"result"}),
		gcDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "directaid_store_gc_duration_seconds",
			Help:    "Duration of a garbage collection of the store.",
			Buckets: []float64{.01, .1, .5, 1, 5, 10, 30, 60, 300},
		}),
		writesRefused: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "directaid_store_writes_refused_total",
			Help: "Writes (publications, updates, reports) the store refused because its disk was short of space (min_free_space); each answered 503 with Retry-After.",
		}),
	}
}

// Register adds the series to reg (Caddy's registry of the config being loaded).
func (m *Metrics) Register(reg prometheus.Registerer) error {
	for _, c := range []prometheus.Collector{m.publications, m.mcpCalls, m.reads, m.rateLimited, m.reports, m.moderations, m.feedSubs, m.feedEvents,
		m.commitBatch, m.commitDuration, m.gcRuns, m.gcDuration, m.writesRefused} {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}

var _ backend.Metrics = (*Metrics)(nil)

// Published counts one publication, and the per-minute figure of the operator's page.
func (m *Metrics) Published(channel, outcome, code string) {
	m.publications.WithLabelValues(channel, outcome, code).Inc()
	m.minutes.add(time.Now(), outcome)
}

// MCPCall counts one MCP tool call.
func (m *Metrics) MCPCall(tool, outcome string) { m.mcpCalls.WithLabelValues(tool, outcome).Inc() }

// Read times one read.
func (m *Metrics) Read(view, format string, d time.Duration) {
	m.reads.WithLabelValues(view, format).Observe(d.Seconds())
}

// RateLimited counts one 429 of zone.
func (m *Metrics) RateLimited(zone string) { m.rateLimited.WithLabelValues(zone).Inc() }

// Reported counts one community report.
func (m *Metrics) Reported(reason, outcome string) { m.reports.WithLabelValues(reason, outcome).Inc() }

// Moderated counts one moderation action.
func (m *Metrics) Moderated(action string) { m.moderations.WithLabelValues(action).Inc() }

// FeedSubscribers moves the gauge of open streams by delta.
func (m *Metrics) FeedSubscribers(delta int) { m.feedSubs.Add(float64(delta)) }

// FeedDelivered counts one event written to a subscriber.
func (m *Metrics) FeedDelivered(event string) { m.feedEvents.WithLabelValues(event).Inc() }

// ObserveCommit records one group commit: how many publications it held and how long the synced write took.
func (m *Metrics) ObserveCommit(batch int, d time.Duration) {
	if m == nil {
		return
	}
	m.commitBatch.Observe(float64(batch))
	m.commitDuration.Observe(d.Seconds())
}

// ObserveGC records one garbage collection of the store; result is rewrote, nothing or error.
func (m *Metrics) ObserveGC(result string, d time.Duration) {
	if m == nil {
		return
	}
	m.gcRuns.WithLabelValues(result).Inc()
	m.gcDuration.Observe(d.Seconds())
}

// ObserveWriteRefused counts one write the store refused for want of disk space.
func (m *Metrics) ObserveWriteRefused() {
	if m == nil {
		return
	}
	m.writesRefused.Inc()
}

// PublicationsPerMinute returns, oldest first, the publications of each of the last n minutes up to now
// (created, duplicate, refused), for the operator's page.
func (m *Metrics) PublicationsPerMinute(now time.Time, n int) []MinuteCount {
	return m.minutes.last(now, n)
}

// Publications returns the counts of the publications counter by channel, outcome and code.
func (m *Metrics) Publications() map[[3]string]float64 {
	out := map[[3]string]float64{}
	ch := make(chan prometheus.Metric, 64)
	go func() { m.publications.Collect(ch); close(ch) }()
	for mt := range ch {
		var pb dto.Metric
		if mt.Write(&pb) != nil {
			continue
		}
		var k [3]string
		for _, l := range pb.GetLabel() {
			switch l.GetName() {
			case "channel":
				k[0] = l.GetValue()
			case "outcome":
				k[1] = l.GetValue()
			case "code":
				k[2] = l.GetValue()
			}
		}
		out[k] += pb.GetCounter().GetValue()
	}
	return out
}

// MinuteCount is one minute of publications.
type MinuteCount struct {
	Start                       time.Time
	Created, Duplicate, Refused int
}

// minuteRing keeps the last hour of publications, minute by minute, in memory.
type minuteRing struct {
	mu  sync.Mutex
	min [60]int64 // Unix minute each slot holds
	cnt [60][3]int
}

func outcomeIndex(outcome string) int {
	switch outcome {
	case backend.OutcomeCreated:
		return 0
	case backend.OutcomeDuplicate:
		return 1
	}
	return 2
}

func (r *minuteRing) add(t time.Time, outcome string) {
	m := t.Unix() / 60
	i := int(m % 60)
	r.mu.Lock()
	if r.min[i] != m {
		r.min[i], r.cnt[i] = m, [3]int{}
	}
	r.cnt[i][outcomeIndex(outcome)]++
	r.mu.Unlock()
}

func (r *minuteRing) last(now time.Time, n int) []MinuteCount {
	n = min(n, 60)
	out := make([]MinuteCount, n)
	cur := now.Unix() / 60
	r.mu.Lock()
	defer r.mu.Unlock()
	for k := range n {
		m := cur - int64(n-1-k)
		out[k].Start = time.Unix(m*60, 0).UTC()
		if i := int(m % 60); r.min[i] == m {
			out[k].Created, out[k].Duplicate, out[k].Refused = r.cnt[i][0], r.cnt[i][1], r.cnt[i][2]
		}
	}
	return out
}

// RecordsCollector reports, at each scrape, from the store's per-emergency aggregates (a few keys per
// emergency, not a scan): directaid_records, the open records by emergency and type;
// directaid_records_by_status, the records of every status by emergency; and
// directaid_report_breaker_open, whether automatic hiding by reports is paused (abuse.go) by emergency
// and kind (phone, record). svc returns the service of the running config.
func RecordsCollector(svc func() *backend.Service) prometheus.Collector {
	return &recordsCollector{svc: svc}
}

var (
	recordsDesc = prometheus.NewDesc("directaid_records",
		"Open records in the store by emergency (the configured ones), type and status (open).", []string{"emergency", "type", "status"}, nil)
	statusDesc = prometheus.NewDesc("directaid_records_by_status",
		"Records in the store by emergency (the configured ones) and status (open, resolved, withdrawn, expired, hidden).", []string{"emergency", "status"}, nil)
	breakerDesc = prometheus.NewDesc("directaid_report_breaker_open",
		"1 while automatic hiding by community reports is paused in an emergency (too many recent automatic hides), by kind (phone, record).", []string{"emergency", "kind"}, nil)
	storeUpDesc = prometheus.NewDesc("directaid_store_up",
		"1 when this scrape read the store's figures, 0 when the store could not answer (PostgreSQL unreachable); the figures are then left out of the scrape, and every other series stays.", nil, nil)
)

type recordsCollector struct{ svc func() *backend.Service }

func (c *recordsCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- recordsDesc
	ch <- statusDesc
	ch <- breakerDesc
	ch <- storeUpDesc
}

func (c *recordsCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.svc()
	if s == nil {
		return
	}
	figs, err := s.EmergencyFigures(context.Background())
	if err != nil {
		// An invalid metric would fail the whole scrape (Caddy's handler answers 500): every series, the
		// refusals that say what the outage does included, would be lost while the database is down.
		ch <- prometheus.MustNewConstMetric(storeUpDesc, prometheus.GaugeValue, 0)
		return
	}
	ch <- prometheus.MustNewConstMetric(storeUpDesc, prometheus.GaugeValue, 1)
	gauge := func(b bool) float64 {
		if b {
			return 1
		}
		return 0
	}
	for _, f := range figs {
		for _, t := range []string{schema.TypeRequest, schema.TypeOffer} {
			ch <- prometheus.MustNewConstMetric(recordsDesc, prometheus.GaugeValue, float64(f.Open[t]), f.Emergency, t, store.StatusOpen)
		}
		for _, st := range store.Statuses {
			ch <- prometheus.MustNewConstMetric(statusDesc, prometheus.GaugeValue, float64(f.Statuses[st]), f.Emergency, st)
		}
		ch <- prometheus.MustNewConstMetric(breakerDesc, prometheus.GaugeValue, gauge(f.PhonesPaused), f.Emergency, "phone")
		ch <- prometheus.MustNewConstMetric(breakerDesc, prometheus.GaugeValue, gauge(f.RecordsPaused), f.Emergency, "record")
	}
}

// DiskCollector reports, at each scrape, the store's bytes on disk by part (directaid_store_size_bytes)
// and the free bytes of its disk (directaid_store_disk_free_bytes); du returns nil before the store opens
// or for a store without local files.
func DiskCollector(du func() store.DiskUser) prometheus.Collector { return &diskCollector{du: du} }

var (
	sizeDesc = prometheus.NewDesc("directaid_store_size_bytes", "Bytes the store's files take on disk, by part (lsm, vlog, wal, other).", []string{"part"}, nil)
	freeDesc = prometheus.NewDesc("directaid_store_disk_free_bytes", "Free bytes of the disk that holds the store (publications stop below min_free_space).", nil, nil)
)

type diskCollector struct{ du func() store.DiskUser }

func (c *diskCollector) Describe(ch chan<- *prometheus.Desc) { ch <- sizeDesc; ch <- freeDesc }

func (c *diskCollector) Collect(ch chan<- prometheus.Metric) {
	du := c.du()
	if du == nil {
		return
	}
	parts, free, err := du.DiskUsage()
	if err != nil {
		return // left out of the scrape, not failing it: directaid_store_up says the store cannot answer
	}
	for part, n := range parts {
		ch <- prometheus.MustNewConstMetric(sizeDesc, prometheus.GaugeValue, float64(n), part)
	}
	if free >= 0 { // a store on another machine (PostgreSQL) cannot see its disk's free space
		ch <- prometheus.MustNewConstMetric(freeDesc, prometheus.GaugeValue, float64(free))
	}
}
