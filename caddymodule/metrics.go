package caddymodule

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/directaid/directaid/backend/metrics"
	"github.com/directaid/directaid/backend/store"
)

// series outlive every config, so that a reload does not reset the counters; each config's registry
// (served by Caddy's admin endpoint at /metrics, beside Caddy's own series) registers them again.
var series = metrics.NewMetrics()

// registerMetrics adds directaid's series to the registry of the config that a is part of.
func registerMetrics(reg *prometheus.Registry, a *App) error {
	if reg == nil {
		return nil
	}
	if err := series.Register(reg); err != nil {
		return err
	}
	for _, c := range webhookMetrics.Collectors() {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	if err := reg.Register(metrics.RecordsCollector(a.current.Load)); err != nil {
		return err
	}
	if err := reg.Register(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "directaid_instance_id_shared",
		Help: "1 while another running node over the same PostgreSQL database has this node's Caddy instance id: the shared rate limits are then counted on each node apart."},
		func() float64 {
			if instanceShared.Load() {
				return 1
			}
			return 0
		})); err != nil {
		return err
	}
	return reg.Register(metrics.DiskCollector(a.diskUser))
}

// diskUser holds the store in a.disk (an atomic.Value takes one concrete type).
type diskUser struct{ store.DiskUser }

// diskUser is the store once it is open, else nil.
func (a *App) diskUser() store.DiskUser {
	if du, ok := a.disk.Load().(diskUser); ok {
		return du.DiskUser
	}
	return nil
}
