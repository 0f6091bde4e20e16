package machine

import (
	"context"
	"errors"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	v1alpha1 "github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/internal/mcmmetrics"
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

// drainBuckets are the drain histogram's upper bounds, in seconds.
var drainBuckets = prometheus.ExponentialBuckets(0.1, 2, 18)

// drainDuration observes how long the drain step of a machine's deletion
// took, from its start (status.deletionStepStartTime, so a restart does not
// reset it) until the Node was drained or the forced drain had deleted its
// pods: the time PodDisruptionBudgets, slow pods and volume detaches add to
// a deletion.
var drainDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
	Name: "machina_machine_drain_duration_seconds",
	Help: "Time the drain step of a Machine's deletion took, by namespace, MachineDeployment and result (drained, forced).",
	// 0.1s to about 3h38m: a Node with nothing to evict drains in well
	// under a second, a forced drain ends after the timeout (2h default).
	Buckets: drainBuckets,
}, []string{"namespace", "machine_deployment", "result"})

// observeDrain records the end of a drain step with the given result.
func observeDrain(s *scope, result string) {
	m := s.machine
	start := v1alpha1.DrainClockStart(m)
	if t := m.Status.DeletionStepStartTime; t != nil && m.Status.DeletionStep == v1alpha1.DeletionStepDrain {
		start = t.Time
	}
	drainDuration.WithLabelValues(m.Namespace, m.Labels[v1alpha1.MachineDeploymentNameLabel], result).Observe(s.now.Sub(start).Seconds())
	mcmmetrics.ObserveDrain(mcmmetrics.LabelsOf(m, nil), s.now.Sub(start))
}

// mcmLabels are the machine's label values for MCM's gauges and counter
// (mcmmetrics). Its class is the one a phase loaded, else read from the
// cache (without its secrets); a class that cannot be read leaves the
// instance type empty rather than losing the sample.
func (r *Reconciler) mcmLabels(ctx context.Context, s *scope) mcmmetrics.Labels {
	m := s.machine
	class := s.class
	if class == nil && m.Spec.Class.Name != "" {
		c := &v1alpha1.MachineClass{}
		if err := r.Control.Get(ctx, client.ObjectKey{Namespace: m.Namespace, Name: m.Spec.Class.Name}, c); err == nil {
			class = c
		}
	}
	return mcmmetrics.LabelsOf(m, class)
}

func init() {
	for _, c := range []prometheus.Collector{joinDuration, drainDuration} {
		if err := ctrlmetrics.Registry.Register(c); err != nil {
			var are prometheus.AlreadyRegisteredError
			if !errors.As(err, &are) {
				panic(err)
			}
		}
	}
}
