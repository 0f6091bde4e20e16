package machine

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// joinDuration observes how long machines took from creation to joining
// the cluster. MCM records the same in an annotation on each Machine; a
// histogram serves the same question (how long do joins take) without a
// write per machine.
var joinDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
	Name:    "machina_machine_join_duration_seconds",
	Help:    "Time from a Machine's creation until its Node joined the cluster and the machine became Running, by namespace and MachineDeployment.",
	Buckets: prometheus.ExponentialBuckets(1, 2, 12), // 1s to about 34m
}, []string{"namespace", "machine_deployment"})

func init() {
	if err := ctrlmetrics.Registry.Register(joinDuration); err != nil {
		var are prometheus.AlreadyRegisteredError
		if !errors.As(err, &are) {
			panic(err)
		}
	}
}
