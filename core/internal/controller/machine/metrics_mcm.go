package machine

import (
	"context"
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	v1alpha1 "github.com/machina-io/machina/core/api/v1alpha1"
)

// MCM's duration gauges and failed-join counter (machine-controller-manager
// pkg/util/provider/metrics/metrics.go): each gauge holds the last value
// seen for a MachineDeployment, instance type and zone, so a dashboard
// written for MCM shows the same panels. machina's own histograms
// (machina_machine_join_duration_seconds, ..._drain_duration_seconds) keep
// the distribution.
var (
	mcmLabels = []string{"namespace", "machine_deployment", "instance_type", "zone"}

	mcmCreateDuration = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "mcm_machine_create_duration_seconds",
		Help: "Seconds from a Machine's creation until the driver had created its VM (last machine, MCM's name).",
	}, mcmLabels)
	mcmInitializeDuration = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "mcm_machine_initialize_duration_seconds",
		Help: "Seconds from a Machine's creation until the driver had initialized its VM (last machine, MCM's name).",
	}, mcmLabels)
	mcmJoinDuration = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "mcm_machine_join_duration_seconds",
		Help: "Seconds from a Machine's creation until its Node joined and it became Running (last machine, MCM's name).",
	}, mcmLabels)
	mcmDeleteDuration = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "mcm_machine_delete_duration_seconds",
		Help: "Seconds from a Machine's deletion timestamp until the driver had deleted its VM (last machine, MCM's name).",
	}, mcmLabels)
	mcmDrainDuration = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "mcm_machine_drain_duration_seconds",
		Help: "Seconds the drain of a Machine's Node took (last machine, MCM's name).",
	}, []string{"namespace", "machine_deployment"})
	mcmFailedJoin = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mcm_machine_num_failed_join",
		Help: "Machines that did not join the cluster within their creation timeout (MCM's name).",
	}, mcmLabels)
)

// mcmLabelValues are the label values of the machine for MCM's gauges: its
// namespace, its MachineDeployment (label "name"), the instance type of its
// class's nodeTemplate and its zone (label topology.kubernetes.io/zone of
// its nodeTemplate). The class is the one a phase loaded, else read from
// the cache (without its secrets); a class that cannot be read leaves the
// instance type empty rather than losing the sample.
func (r *Reconciler) mcmLabelValues(ctx context.Context, s *scope) []string {
	m := s.machine
	class := s.class
	if class == nil && m.Spec.Class.Name != "" {
		c := &v1alpha1.MachineClass{}
		if err := r.Control.Get(ctx, client.ObjectKey{Namespace: m.Namespace, Name: m.Spec.Class.Name}, c); err == nil {
			class = c
		}
	}
	instanceType := ""
	if class != nil && class.NodeTemplate != nil {
		instanceType = class.NodeTemplate.InstanceType
	}
	return []string{m.Namespace, m.Labels[v1alpha1.MachineDeploymentNameLabel], instanceType,
		m.Spec.NodeTemplateSpec.Labels["topology.kubernetes.io/zone"]}
}

// seconds is d rounded to whole seconds, as MCM records it.
func seconds(d time.Duration) float64 { return d.Round(time.Second).Seconds() }

func (r *Reconciler) observeMCMCreate(ctx context.Context, s *scope) {
	mcmCreateDuration.WithLabelValues(r.mcmLabelValues(ctx, s)...).Set(seconds(s.now.Sub(s.machine.CreationTimestamp.Time)))
}

func (r *Reconciler) observeMCMInitialize(ctx context.Context, s *scope) {
	mcmInitializeDuration.WithLabelValues(r.mcmLabelValues(ctx, s)...).Set(seconds(s.now.Sub(s.machine.CreationTimestamp.Time)))
}

func (r *Reconciler) observeMCMJoin(ctx context.Context, s *scope) {
	mcmJoinDuration.WithLabelValues(r.mcmLabelValues(ctx, s)...).Set(seconds(s.now.Sub(s.machine.CreationTimestamp.Time)))
}

func (r *Reconciler) observeMCMDelete(ctx context.Context, s *scope) {
	mcmDeleteDuration.WithLabelValues(r.mcmLabelValues(ctx, s)...).Set(seconds(s.now.Sub(s.machine.DeletionTimestamp.Time)))
}

func observeMCMDrain(s *scope, d time.Duration) {
	m := s.machine
	mcmDrainDuration.WithLabelValues(m.Namespace, m.Labels[v1alpha1.MachineDeploymentNameLabel]).Set(seconds(d))
}

func (r *Reconciler) countMCMFailedJoin(ctx context.Context, s *scope) {
	mcmFailedJoin.WithLabelValues(r.mcmLabelValues(ctx, s)...).Inc()
}

func init() {
	for _, c := range []prometheus.Collector{mcmCreateDuration, mcmInitializeDuration, mcmJoinDuration, mcmDeleteDuration, mcmDrainDuration, mcmFailedJoin} {
		if err := ctrlmetrics.Registry.Register(c); err != nil {
			var are prometheus.AlreadyRegisteredError
			if !errors.As(err, &are) {
				panic(err)
			}
		}
	}
}
