package apiserver

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// FrozenGauge returns mcm_machine_controller_frozen on reg, registering it
// when it is not there yet, for code that freezes the gate without a
// Checker (the manager, when it loses its lease).
func FrozenGauge(reg prometheus.Registerer) (prometheus.Gauge, error) {
	return newFrozenGauge(reg)
}

// newFrozenGauge registers mcm_machine_controller_frozen (MCM's name and
// meaning: 1 while the controllers are frozen), or returns the gauge
// already registered under that name.
func newFrozenGauge(reg prometheus.Registerer) (prometheus.Gauge, error) {
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "mcm_machine_controller_frozen",
		Help: "1 while the machine controllers are frozen because an API server is unreachable, else 0.",
	})
	if err := reg.Register(g); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if existing, ok := are.ExistingCollector.(prometheus.Gauge); ok {
				return existing, nil
			}
		}
		return nil, err
	}
	return g, nil
}
