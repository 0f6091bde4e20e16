package mcmmetrics

import (
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	v1alpha1 "github.com/machina-io/machina/core/api/v1alpha1"
)

// labelNames are the labels of every series but the drain gauge's, in the
// order MCM gives them.
var labelNames = []string{"namespace", "machine_deployment", "instance_type", "zone"}

// The collectors, registered with controller-runtime's registry. Each gauge
// holds the last value seen for its labels. They are exported for the
// tests that read them; the controller records through the functions
// below.
var (
	CreateDuration = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "mcm_machine_create_duration_seconds",
		Help: "Seconds from a Machine's creation until the driver had created its VM (last machine, MCM's name).",
	}, labelNames)
	InitializeDuration = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "mcm_machine_initialize_duration_seconds",
		Help: "Seconds from a Machine's creation until the driver had initialized its VM (last machine, MCM's name).",
	}, labelNames)
	JoinDuration = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "mcm_machine_join_duration_seconds",
		Help: "Seconds from a Machine's creation until its Node joined and it became Running (last machine, MCM's name).",
	}, labelNames)
	DeleteDuration = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "mcm_machine_delete_duration_seconds",
		Help: "Seconds from a Machine's deletion timestamp until the driver had deleted its VM (last machine, MCM's name).",
	}, labelNames)
	DrainDuration = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "mcm_machine_drain_duration_seconds",
		Help: "Seconds the drain of a Machine's Node took (last machine, MCM's name).",
	}, []string{"namespace", "machine_deployment"})
	FailedJoin = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mcm_machine_num_failed_join",
		Help: "Machines that did not join the cluster within their creation timeout (MCM's name).",
	}, labelNames)
)

// Labels are a machine's label values for MCM's series.
type Labels struct {
	// Namespace is the machine's namespace.
	Namespace string
	// MachineDeployment is the machine's label "name" (empty without one).
	MachineDeployment string
	// InstanceType is the instance type of its class's nodeTemplate.
	InstanceType string
	// Zone is the label topology.kubernetes.io/zone of the machine's
	// nodeTemplate.
	Zone string
}

// LabelsOf are the label values of m, whose class is class (nil when it
// cannot be read: the instance type is then empty rather than the sample
// lost).
func LabelsOf(m *v1alpha1.Machine, class *v1alpha1.MachineClass) Labels {
	l := Labels{
		Namespace:         m.Namespace,
		MachineDeployment: m.Labels[v1alpha1.MachineDeploymentNameLabel],
		Zone:              m.Spec.NodeTemplateSpec.Labels["topology.kubernetes.io/zone"],
	}
	if class != nil && class.NodeTemplate != nil {
		l.InstanceType = class.NodeTemplate.InstanceType
	}
	return l
}

func (l Labels) values() []string {
	return []string{l.Namespace, l.MachineDeployment, l.InstanceType, l.Zone}
}

// seconds is d rounded to whole seconds, as MCM records it.
func seconds(d time.Duration) float64 { return d.Round(time.Second).Seconds() }

// ObserveCreate records d, from the machine's creation until the driver had
// created its VM.
func ObserveCreate(l Labels, d time.Duration) {
	CreateDuration.WithLabelValues(l.values()...).Set(seconds(d))
}

// ObserveInitialize records d, from the machine's creation until the driver
// had initialized its VM.
func ObserveInitialize(l Labels, d time.Duration) {
	InitializeDuration.WithLabelValues(l.values()...).Set(seconds(d))
}

// ObserveJoin records d, from the machine's creation until its Node joined
// and it became Running.
func ObserveJoin(l Labels, d time.Duration) {
	JoinDuration.WithLabelValues(l.values()...).Set(seconds(d))
}

// ObserveDelete records d, from the machine's deletion timestamp until the
// driver had deleted its VM.
func ObserveDelete(l Labels, d time.Duration) {
	DeleteDuration.WithLabelValues(l.values()...).Set(seconds(d))
}

// ObserveDrain records d, how long the drain of a machine's Node took, by
// the machine's namespace and MachineDeployment only, as MCM labels it.
func ObserveDrain(l Labels, d time.Duration) {
	DrainDuration.WithLabelValues(l.Namespace, l.MachineDeployment).Set(seconds(d))
}

// CountFailedJoin counts a machine that did not join within its creation
// timeout.
func CountFailedJoin(l Labels) {
	FailedJoin.WithLabelValues(l.values()...).Inc()
}

func init() {
	for _, c := range []prometheus.Collector{CreateDuration, InitializeDuration, JoinDuration, DeleteDuration, DrainDuration, FailedJoin} {
		if err := ctrlmetrics.Registry.Register(c); err != nil {
			var are prometheus.AlreadyRegisteredError
			if !errors.As(err, &are) {
				panic(err)
			}
		}
	}
}
