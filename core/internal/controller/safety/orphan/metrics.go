package orphan

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics of the collector.
type metrics struct {
	deleted *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	deleted, err := register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "machina_orphan_vms_deleted_total",
		Help: "Orphan VMs deleted by the orphan VM collector, by MachineClass (namespace/name).",
	}, []string{"class"}))
	if err != nil {
		return nil, err
	}
	return &metrics{deleted: deleted}, nil
}

// register registers c, or returns the collector already registered under
// its name, so that two collectors on one registry (a restarted manager in
// one process) share the series.
func register[C prometheus.Collector](reg prometheus.Registerer, c C) (C, error) {
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if existing, ok := are.ExistingCollector.(C); ok {
				return existing, nil
			}
		}
		var zero C
		return zero, err
	}
	return c, nil
}
