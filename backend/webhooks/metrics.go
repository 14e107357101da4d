package webhooks

import "github.com/prometheus/client_golang/prometheus"

// Metrics are the webhooks' series: deliveries by result and the pending events.
type Metrics struct {
	deliveries *prometheus.CounterVec
	pending    prometheus.Gauge
}

// The results of an attempt, the label of directaid_webhook_deliveries_total.
const (
	ResultDelivered = "delivered" // the receiver answered 2xx
	ResultRetry     = "retry"     // it did not; another attempt is scheduled
	ResultFailed    = "failed"    // it did not, and the event is given up (a day of attempts)
	ResultSkipped   = "skipped"   // the event was no longer true when due (an expiring record renewed)
)

// NewMetrics makes the series (register them with Collectors).
func NewMetrics() *Metrics {
	m := &Metrics{
		deliveries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "directaid_webhook_deliveries_total",
			Help: "Webhook delivery attempts by result (delivered, retry, failed: given up after a day, skipped: no longer true when due).",
		}, []string{"result"}),
		pending: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "directaid_webhook_pending",
			Help: "Webhook events not yet delivered nor given up (the outbox, shared by the nodes of one database), as this node last counted them.",
		}),
	}
	for _, r := range []string{ResultDelivered, ResultRetry, ResultFailed, ResultSkipped} {
		m.deliveries.WithLabelValues(r)
	}
	return m
}

// Collectors are the series to register.
func (m *Metrics) Collectors() []prometheus.Collector {
	return []prometheus.Collector{m.deliveries, m.pending}
}

func (m *Metrics) delivery(result string) {
	if m != nil {
		m.deliveries.WithLabelValues(result).Inc()
	}
}

func (m *Metrics) setPending(n int) {
	if m != nil {
		m.pending.Set(float64(n))
	}
}
