package manager

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machina-io/machina/core/api/v1alpha1"
)

// stateMetrics exports the state of Machines, MachineSets and
// MachineDeployments under MCM's metric names (mcm_machine_*,
// mcm_machine_set_*, mcm_machine_deployment_*), so that dashboards and
// alerts written for MCM keep working. It reads the manager's cache at
// every scrape: no bookkeeping, and nothing stale after an object is gone.
type stateMetrics struct {
	reader client.Reader
	// scrapeTimeout bounds one scrape's reads of the cache, which block
	// until the cache has synced.
	scrapeTimeout time.Duration

	scrapeFailures *prometheus.CounterVec

	machineItems, machineInfo, machinePhase, machineCondition *prometheus.Desc

	setItems, setInfo, setCondition, setFailed *prometheus.Desc
	setGauges                                  []objectGauge[*v1alpha1.MachineSet]

	deploymentItems, deploymentInfo, deploymentCondition, deploymentFailed *prometheus.Desc
	deploymentGauges                                                       []objectGauge[*v1alpha1.MachineDeployment]
}

// objectGauge is one per-object gauge labelled name and namespace.
type objectGauge[T any] struct {
	desc  *prometheus.Desc
	value func(T) float64
}

func gauge[T any](name, help string, value func(T) float64) objectGauge[T] {
	return objectGauge[T]{desc: prometheus.NewDesc(name, help, []string{"name", "namespace"}, nil), value: value}
}

// Phase values of mcm_machine_current_status_phase, MCM's encoding.
// Available (the final phase without a target cluster) counts as Running;
// every other phase not in MCM's list counts as Pending.
var phaseValues = map[v1alpha1.MachinePhase]float64{
	v1alpha1.MachineTerminating:      -4,
	v1alpha1.MachineFailed:           -3,
	v1alpha1.MachineCrashLoopBackOff: -2,
	v1alpha1.MachineUnknown:          -1,
	v1alpha1.MachinePending:          0,
	v1alpha1.MachineRunning:          1,
	v1alpha1.MachineAvailable:        1,
}

func newStateMetrics(reader client.Reader) *stateMetrics {
	nn := []string{"name", "namespace"}
	// MCM's labels of a failed machine in a set's or deployment's
	// status.failedMachines.
	failed := []string{"name", "namespace", "failed_machine_name", "failed_machine_provider_id", "failed_machine_owner_ref",
		"failed_machine_last_operation_state", "failed_machine_last_operation_machine_operation_type"}
	cond := []string{"name", "namespace", "condition"}
	desc := func(name, help string, labels []string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, labels, nil)
	}
	type ms = *v1alpha1.MachineSet
	type md = *v1alpha1.MachineDeployment
	return &stateMetrics{
		reader:        reader,
		scrapeTimeout: 5 * time.Second,
		scrapeFailures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name:        "mcm_misc_scrape_failure_total",
			Help:        "Scrapes of machine object state that failed, by kind.",
			ConstLabels: prometheus.Labels{"binary": "machina-manager"},
		}, []string{"kind"}),

		machineItems: desc("mcm_machine_items_total", "Number of Machines.", nil),
		machineInfo: desc("mcm_machine_info", "Information about a Machine (value 1).",
			[]string{"name", "namespace", "createdAt", "spec_provider_id", "spec_class_api_group", "spec_class_kind", "spec_class_name", "node_name"}),
		machinePhase: desc("mcm_machine_current_status_phase",
			"Phase of a Machine: Terminating -4, Failed -3, CrashLoopBackOff -2, Unknown -1, Pending 0, Running (or Available) 1.", nn),
		machineCondition: desc("mcm_machine_status_condition",
			"Node conditions of a Machine: True 1, False 0, Unknown 2.", cond),

		setItems: desc("mcm_machine_set_items_total", "Number of MachineSets.", nil),
		setInfo: desc("mcm_machine_set_info", "Information about a MachineSet (value 1).",
			[]string{"name", "namespace", "createdAt", "spec_machine_class_api_group", "spec_machine_class_kind", "spec_machine_class_name"}),
		setCondition: desc("mcm_machine_set_status_condition", "Conditions of a MachineSet: True 1, False 0, Unknown 2.", cond),
		setFailed:    desc("mcm_machine_set_failed_machines", "A machine in status.failedMachines of a MachineSet (value 1).", failed),
		setGauges: []objectGauge[ms]{
			gauge("mcm_machine_set_info_spec_replicas", "spec.replicas of a MachineSet.",
				func(s ms) float64 { return float64(s.Spec.Replicas) }),
			gauge("mcm_machine_set_info_spec_min_ready_seconds", "spec.minReadySeconds of a MachineSet.",
				func(s ms) float64 { return float64(s.Spec.MinReadySeconds) }),
			gauge("mcm_machine_set_status_replicas", "status.replicas of a MachineSet.",
				func(s ms) float64 { return float64(s.Status.Replicas) }),
			gauge("mcm_machine_set_status_fully_labelled_replicas", "status.fullyLabeledReplicas of a MachineSet.",
				func(s ms) float64 { return float64(s.Status.FullyLabeledReplicas) }),
			gauge("mcm_machine_set_status_ready_replicas", "status.readyReplicas of a MachineSet.",
				func(s ms) float64 { return float64(s.Status.ReadyReplicas) }),
			gauge("mcm_machine_set_status_available_replicas", "status.availableReplicas of a MachineSet.",
				func(s ms) float64 { return float64(s.Status.AvailableReplicas) }),
		},

		deploymentItems: desc("mcm_machine_deployment_items_total", "Number of MachineDeployments.", nil),
		deploymentInfo: desc("mcm_machine_deployment_info", "Information about a MachineDeployment (value 1).",
			[]string{"name", "namespace", "createdAt", "spec_strategy_type"}),
		deploymentCondition: desc("mcm_machine_deployment_status_condition",
			"Conditions of a MachineDeployment: True 1, False 0, Unknown 2.", cond),
		deploymentFailed: desc("mcm_machine_deployment_failed_machines",
			"A machine in status.failedMachines of a MachineDeployment (value 1).", failed),
		deploymentGauges: []objectGauge[md]{
			gauge("mcm_machine_deployment_info_spec_replicas", "spec.replicas of a MachineDeployment.",
				func(d md) float64 { return float64(d.Spec.Replicas) }),
			gauge("mcm_machine_deployment_info_spec_paused", "spec.paused of a MachineDeployment (1 paused).",
				func(d md) float64 { return boolValue(d.Spec.Paused) }),
			gauge("mcm_machine_deployment_info_spec_min_ready_seconds", "spec.minReadySeconds of a MachineDeployment.",
				func(d md) float64 { return float64(d.Spec.MinReadySeconds) }),
			gauge("mcm_machine_deployment_info_spec_revision_history_limit", "spec.revisionHistoryLimit of a MachineDeployment (0 unset).",
				func(d md) float64 { return int32Value(d.Spec.RevisionHistoryLimit) }),
			gauge("mcm_machine_deployment_info_spec_progress_deadline_seconds", "spec.progressDeadlineSeconds of a MachineDeployment (0 unset).",
				func(d md) float64 { return int32Value(d.Spec.ProgressDeadlineSeconds) }),
			gauge("mcm_machine_deployment_info_spec_rolling_update_max_surge",
				"maxSurge of a RollingUpdate MachineDeployment in machines (a percentage resolved against spec.replicas, rounded up; 0 for other strategies).",
				func(d md) float64 { return rollingUpdateValue(d, true) }),
			gauge("mcm_machine_deployment_info_spec_rolling_update_max_unavailable",
				"maxUnavailable of a RollingUpdate MachineDeployment in machines (a percentage resolved against spec.replicas, rounded down; 0 for other strategies).",
				func(d md) float64 { return rollingUpdateValue(d, false) }),
			gauge("mcm_machine_deployment_info_spec_rollback_to_revision", "spec.rollbackTo.revision of a MachineDeployment (0 unset).",
				func(d md) float64 {
					if d.Spec.RollbackTo == nil {
						return 0
					}
					return float64(d.Spec.RollbackTo.Revision)
				}),
			gauge("mcm_machine_deployment_status_replicas", "status.replicas of a MachineDeployment.",
				func(d md) float64 { return float64(d.Status.Replicas) }),
			gauge("mcm_machine_deployment_status_updated_replicas", "status.updatedReplicas of a MachineDeployment.",
				func(d md) float64 { return float64(d.Status.UpdatedReplicas) }),
			gauge("mcm_machine_deployment_status_ready_replicas", "status.readyReplicas of a MachineDeployment.",
				func(d md) float64 { return float64(d.Status.ReadyReplicas) }),
			gauge("mcm_machine_deployment_status_available_replicas", "status.availableReplicas of a MachineDeployment.",
				func(d md) float64 { return float64(d.Status.AvailableReplicas) }),
			gauge("mcm_machine_deployment_status_unavailable_replicas", "status.unavailableReplicas of a MachineDeployment.",
				func(d md) float64 { return float64(d.Status.UnavailableReplicas) }),
			gauge("mcm_machine_deployment_status_collision_count", "status.collisionCount of a MachineDeployment (0 unset).",
				func(d md) float64 { return int32Value(d.Status.CollisionCount) }),
		},
	}
}

// register adds the collector to reg. A collector with the same metrics
// already there (an earlier Manager in the same process, as in tests) is
// replaced: it would read a cache that no longer runs.
func (s *stateMetrics) register(reg prometheus.Registerer) error {
	for _, c := range []prometheus.Collector{s, s.scrapeFailures} {
		err := reg.Register(c)
		var already prometheus.AlreadyRegisteredError
		if errors.As(err, &already) {
			reg.Unregister(already.ExistingCollector)
			err = reg.Register(c)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// Describe implements prometheus.Collector.
func (s *stateMetrics) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{
		s.machineItems, s.machineInfo, s.machinePhase, s.machineCondition,
		s.setItems, s.setInfo, s.setCondition, s.setFailed,
		s.deploymentItems, s.deploymentInfo, s.deploymentCondition, s.deploymentFailed,
	} {
		ch <- d
	}
	for _, g := range s.setGauges {
		ch <- g.desc
	}
	for _, g := range s.deploymentGauges {
		ch <- g.desc
	}
}

// Collect implements prometheus.Collector. A kind whose list fails is left
// out of the scrape and counted in mcm_misc_scrape_failure_total.
func (s *stateMetrics) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), s.scrapeTimeout)
	defer cancel()
	s.collectMachines(ctx, ch)
	s.collectSets(ctx, ch)
	s.collectDeployments(ctx, ch)
}

func (s *stateMetrics) collectMachines(ctx context.Context, ch chan<- prometheus.Metric) {
	list := &v1alpha1.MachineList{}
	if err := s.reader.List(ctx, list); err != nil {
		s.scrapeFailures.WithLabelValues("Machine").Inc()
		return
	}
	ch <- prometheus.MustNewConstMetric(s.machineItems, prometheus.GaugeValue, float64(len(list.Items)))
	for i := range list.Items {
		m := &list.Items[i]
		ch <- prometheus.MustNewConstMetric(s.machineInfo, prometheus.GaugeValue, 1,
			m.Name, m.Namespace, createdAt(m.CreationTimestamp), m.Spec.ProviderID,
			m.Spec.Class.APIGroup, m.Spec.Class.Kind, m.Spec.Class.Name, m.Labels[v1alpha1.NodeLabelKey])
		ch <- prometheus.MustNewConstMetric(s.machinePhase, prometheus.GaugeValue,
			phaseValues[m.Status.CurrentStatus.Phase], m.Name, m.Namespace)
		for _, c := range m.Status.Conditions {
			ch <- prometheus.MustNewConstMetric(s.machineCondition, prometheus.GaugeValue,
				conditionValue(string(c.Status)), m.Name, m.Namespace, string(c.Type))
		}
	}
}

func (s *stateMetrics) collectSets(ctx context.Context, ch chan<- prometheus.Metric) {
	list := &v1alpha1.MachineSetList{}
	if err := s.reader.List(ctx, list); err != nil {
		s.scrapeFailures.WithLabelValues("MachineSet").Inc()
		return
	}
	ch <- prometheus.MustNewConstMetric(s.setItems, prometheus.GaugeValue, float64(len(list.Items)))
	for i := range list.Items {
		ms := &list.Items[i]
		// The class machines are created from; spec.machineClass is kept
		// for MCM only and usually empty.
		class := ms.Spec.Template.Spec.Class
		if ms.Spec.MachineClass.Name != "" {
			class = ms.Spec.MachineClass
		}
		ch <- prometheus.MustNewConstMetric(s.setInfo, prometheus.GaugeValue, 1,
			ms.Name, ms.Namespace, createdAt(ms.CreationTimestamp), class.APIGroup, class.Kind, class.Name)
		for _, g := range s.setGauges {
			ch <- prometheus.MustNewConstMetric(g.desc, prometheus.GaugeValue, g.value(ms), ms.Name, ms.Namespace)
		}
		for _, c := range ms.Status.Conditions {
			ch <- prometheus.MustNewConstMetric(s.setCondition, prometheus.GaugeValue,
				conditionValue(string(c.Status)), ms.Name, ms.Namespace, string(c.Type))
		}
		if ms.Status.FailedMachines != nil {
			for _, f := range *ms.Status.FailedMachines {
				s.collectFailed(ch, s.setFailed, ms.Name, ms.Namespace, &f)
			}
		}
	}
}

func (s *stateMetrics) collectDeployments(ctx context.Context, ch chan<- prometheus.Metric) {
	list := &v1alpha1.MachineDeploymentList{}
	if err := s.reader.List(ctx, list); err != nil {
		s.scrapeFailures.WithLabelValues("MachineDeployment").Inc()
		return
	}
	ch <- prometheus.MustNewConstMetric(s.deploymentItems, prometheus.GaugeValue, float64(len(list.Items)))
	for i := range list.Items {
		md := &list.Items[i]
		ch <- prometheus.MustNewConstMetric(s.deploymentInfo, prometheus.GaugeValue, 1,
			md.Name, md.Namespace, createdAt(md.CreationTimestamp), string(md.Spec.Strategy.Type))
		for _, g := range s.deploymentGauges {
			ch <- prometheus.MustNewConstMetric(g.desc, prometheus.GaugeValue, g.value(md), md.Name, md.Namespace)
		}
		for _, c := range md.Status.Conditions {
			ch <- prometheus.MustNewConstMetric(s.deploymentCondition, prometheus.GaugeValue,
				conditionValue(string(c.Status)), md.Name, md.Namespace, string(c.Type))
		}
		for _, f := range md.Status.FailedMachines {
			if f != nil {
				s.collectFailed(ch, s.deploymentFailed, md.Name, md.Namespace, f)
			}
		}
	}
}

// collectFailed emits one failed machine of an object's status.failedMachines.
// A status could list a machine twice; the duplicate is left out, since a
// collector must not emit the same series twice in one scrape.
func (s *stateMetrics) collectFailed(ch chan<- prometheus.Metric, d *prometheus.Desc, name, namespace string, f *v1alpha1.MachineSummary) {
	m, err := prometheus.NewConstMetric(d, prometheus.GaugeValue, 1, name, namespace, f.Name, f.ProviderID, f.OwnerRef,
		string(f.LastOperation.State), string(f.LastOperation.Type))
	if err == nil {
		ch <- m
	}
}

// rollingUpdateValue is maxSurge (surge) or maxUnavailable of a RollingUpdate
// deployment in machines. MCM exports IntOrString.IntValue(), which is 0 for
// a percentage; machina resolves the percentage against spec.replicas as the
// rollout does, so the gauge says how many machines it means.
func rollingUpdateValue(d *v1alpha1.MachineDeployment, surge bool) float64 {
	ru := d.Spec.Strategy.RollingUpdate
	if d.Spec.Strategy.Type != v1alpha1.RollingUpdateMachineDeploymentStrategyType || ru == nil {
		return 0
	}
	v := ru.MaxUnavailable
	if surge {
		v = ru.MaxSurge
	}
	if v == nil {
		return 0
	}
	n, err := intstr.GetScaledValueFromIntOrPercent(v, int(d.Spec.Replicas), surge)
	if err != nil {
		return 0
	}
	return float64(n)
}

// createdAt renders a creation time as MCM does: Unix seconds.
func createdAt(t metav1.Time) string {
	return strconv.FormatInt(t.Unix(), 10)
}

// conditionValue is MCM's encoding of a condition status.
func conditionValue(status string) float64 {
	switch status {
	case "True":
		return 1
	case "False":
		return 0
	}
	return 2
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func int32Value(p *int32) float64 {
	if p == nil {
		return 0
	}
	return float64(*p)
}
