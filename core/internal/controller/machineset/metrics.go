package machineset

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// staleMachinesRemoved counts the Failed machines the MachineSet deleted to
// replace them, under MCM's name (machine-controller-manager
// pkg/metrics/metrics.go, incremented where its MachineSet controller
// deletes stale machines).
var staleMachinesRemoved = prometheus.NewCounter(prometheus.CounterOpts{
	Name: "mcm_machine_stale_machines_total",
	Help: "Failed (stale) machines a MachineSet deleted to replace them (MCM's name).",
})

func init() {
	if err := ctrlmetrics.Registry.Register(staleMachinesRemoved); err != nil {
		var are prometheus.AlreadyRegisteredError
		if !errors.As(err, &are) {
			panic(err)
		}
	}
}
