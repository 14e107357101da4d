package metrics_test

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/directaid/directaid/backend"
	"github.com/directaid/directaid/backend/metrics"
)

// The service's counts reach the series and the operator's per-minute figures through backend.Observe.
func TestObserveCounts(t *testing.T) {
	m := metrics.NewMetrics()
	if err := m.Register(prometheus.NewRegistry()); err != nil {
		t.Fatal(err)
	}
	o := &backend.Observe{Metrics: m}
	o.RateLimited(backend.ZonePublish, backend.ChannelMCP)
	o.RateLimited("operators-own", "")
	m.Published(backend.ChannelAPI, backend.OutcomeCreated, "")
	got := m.Publications()
	if n := got[[3]string{backend.ChannelMCP, backend.OutcomeRefused, "rate_limited"}]; n != 1 {
		t.Errorf("refused by the rate limit: %v, want 1 (%v)", n, got)
	}
	if n := got[[3]string{backend.ChannelAPI, backend.OutcomeCreated, ""}]; n != 1 {
		t.Errorf("created: %v, want 1", n)
	}
	mins := m.PublicationsPerMinute(time.Now(), 2)
	last := mins[len(mins)-1]
	if last.Created != 1 || last.Refused != 1 || last.Duplicate != 0 {
		t.Errorf("this minute: %+v, want 1 created, 1 refused", last)
	}
}
