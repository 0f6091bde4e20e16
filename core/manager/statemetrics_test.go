package manager

import (
	"context"
	"errors"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/testenv"
)

func TestStateMetrics(t *testing.T) {
	env := testenv.Start(t)
	c := env.Client
	ctx := t.Context()

	m := &v1alpha1.Machine{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "m1", Labels: map[string]string{v1alpha1.NodeLabelKey: "node-1"}},
		Spec: v1alpha1.MachineSpec{
			Class:      v1alpha1.ClassSpec{APIGroup: "machine.sapcloud.io", Kind: "MachineClass", Name: "small"},
			ProviderID: "inmemory:///m1",
		},
	}
	require.NoError(t, c.Create(ctx, m))
	m.Status.CurrentStatus.Phase = v1alpha1.MachineUnknown
	m.Status.Conditions = []corev1.NodeCondition{
		{Type: corev1.NodeReady, Status: corev1.ConditionFalse},
		{Type: "DiskPressure", Status: corev1.ConditionUnknown},
	}
	require.NoError(t, c.Status().Update(ctx, m))

	three, limit := int32(3), int32(600)
	md := &v1alpha1.MachineDeployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "workers"},
		Spec: v1alpha1.MachineDeploymentSpec{
			Replicas:                4,
			Paused:                  true,
			RevisionHistoryLimit:    &three,
			ProgressDeadlineSeconds: &limit,
			Selector:                &metav1.LabelSelector{MatchLabels: map[string]string{"pool": "w"}},
			Strategy:                v1alpha1.MachineDeploymentStrategy{Type: v1alpha1.RecreateMachineDeploymentStrategyType},
			Template: v1alpha1.MachineTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"pool": "w"}},
				Spec:       v1alpha1.MachineSpec{Class: v1alpha1.ClassSpec{Name: "small"}},
			},
		},
	}
	require.NoError(t, c.Create(ctx, md))
	ms := &v1alpha1.MachineSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "workers-abc"},
		Spec: v1alpha1.MachineSetSpec{
			Replicas: 2,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"pool": "w"}},
			Template: md.Spec.Template,
		},
	}
	require.NoError(t, c.Create(ctx, ms))
	ms.Status.ReadyReplicas = 1
	ms.Status.Conditions = []v1alpha1.MachineSetCondition{{Type: v1alpha1.MachineSetFrozen, Status: "True"}}
	failed := v1alpha1.MachineSummary{Name: "workers-abc-x", ProviderID: "inmemory:///x", OwnerRef: "workers-abc",
		LastOperation: v1alpha1.LastOperation{State: v1alpha1.MachineStateFailed, Type: v1alpha1.MachineOperationCreate}}
	ms.Status.FailedMachines = &[]v1alpha1.MachineSummary{failed}
	require.NoError(t, c.Status().Update(ctx, ms))

	// A rolling deployment: its maxSurge and maxUnavailable, rollbackTo,
	// collisionCount and failed machines under MCM's names.
	surge, unavailable := intstr.FromString("50%"), intstr.FromInt32(1)
	rolling := &v1alpha1.MachineDeployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "rolling"},
		Spec: v1alpha1.MachineDeploymentSpec{
			Replicas:   3,
			RollbackTo: &v1alpha1.RollbackConfig{Revision: 7},
			Selector:   &metav1.LabelSelector{MatchLabels: map[string]string{"pool": "r"}},
			Strategy: v1alpha1.MachineDeploymentStrategy{
				Type: v1alpha1.RollingUpdateMachineDeploymentStrategyType,
				RollingUpdate: &v1alpha1.RollingUpdateMachineDeployment{UpdateConfiguration: v1alpha1.UpdateConfiguration{
					MaxSurge: &surge, MaxUnavailable: &unavailable,
				}},
			},
			Template: v1alpha1.MachineTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"pool": "r"}},
				Spec:       v1alpha1.MachineSpec{Class: v1alpha1.ClassSpec{Name: "small"}},
			},
		},
	}
	require.NoError(t, c.Create(ctx, rolling))
	collisions := int32(2)
	rolling.Status.CollisionCount = &collisions
	rolling.Status.FailedMachines = []*v1alpha1.MachineSummary{&failed}
	require.NoError(t, c.Status().Update(ctx, rolling))

	reg := prometheus.NewPedanticRegistry()
	sm := newStateMetrics(c)
	require.NoError(t, sm.register(reg))
	families, err := reg.Gather()
	require.NoError(t, err)

	value := func(name string, labels map[string]string) float64 {
		t.Helper()
		v, ok := find(families, name, labels)
		require.True(t, ok, "no %s%v", name, labels)
		return v
	}
	nn := func(name string) map[string]string { return map[string]string{"name": name, "namespace": "default"} }

	assert.Equal(t, 1.0, value("mcm_machine_items_total", nil))
	assert.Equal(t, -1.0, value("mcm_machine_current_status_phase", nn("m1")), "Unknown is -1")
	assert.Equal(t, 1.0, value("mcm_machine_info", map[string]string{
		"name": "m1", "spec_provider_id": "inmemory:///m1", "spec_class_name": "small", "node_name": "node-1",
		"spec_class_kind": "MachineClass", "spec_class_api_group": "machine.sapcloud.io",
	}))
	assert.Equal(t, 0.0, value("mcm_machine_status_condition", map[string]string{"name": "m1", "condition": "Ready"}))
	assert.Equal(t, 2.0, value("mcm_machine_status_condition", map[string]string{"name": "m1", "condition": "DiskPressure"}))

	assert.Equal(t, 1.0, value("mcm_machine_set_items_total", nil))
	assert.Equal(t, 2.0, value("mcm_machine_set_info_spec_replicas", nn("workers-abc")))
	assert.Equal(t, 1.0, value("mcm_machine_set_status_ready_replicas", nn("workers-abc")))
	assert.Equal(t, 1.0, value("mcm_machine_set_status_condition", map[string]string{"name": "workers-abc", "condition": "Frozen"}))
	assert.Equal(t, 1.0, value("mcm_machine_set_info", map[string]string{"name": "workers-abc", "spec_machine_class_name": "small"}))

	assert.Equal(t, 2.0, value("mcm_machine_deployment_items_total", nil))
	assert.Equal(t, 4.0, value("mcm_machine_deployment_info_spec_replicas", nn("workers")))
	assert.Equal(t, 1.0, value("mcm_machine_deployment_info_spec_paused", nn("workers")))
	assert.Equal(t, 3.0, value("mcm_machine_deployment_info_spec_revision_history_limit", nn("workers")))
	assert.Equal(t, 600.0, value("mcm_machine_deployment_info_spec_progress_deadline_seconds", nn("workers")))
	assert.Equal(t, 1.0, value("mcm_machine_deployment_info", map[string]string{"name": "workers", "spec_strategy_type": "Recreate"}))
	assert.Equal(t, 0.0, value("mcm_machine_deployment_info_spec_rolling_update_max_surge", nn("workers")), "Recreate has no surge")

	failedLabels := map[string]string{"failed_machine_name": "workers-abc-x", "failed_machine_provider_id": "inmemory:///x",
		"failed_machine_owner_ref": "workers-abc", "failed_machine_last_operation_state": "Failed",
		"failed_machine_last_operation_machine_operation_type": "Create"}
	assert.Equal(t, 1.0, value("mcm_machine_set_failed_machines", merge(nn("workers-abc"), failedLabels)))
	assert.Equal(t, 1.0, value("mcm_machine_deployment_failed_machines", merge(nn("rolling"), failedLabels)))
	assert.Equal(t, 2.0, value("mcm_machine_deployment_info_spec_rolling_update_max_surge", nn("rolling")), "50%% of 3, rounded up")
	assert.Equal(t, 1.0, value("mcm_machine_deployment_info_spec_rolling_update_max_unavailable", nn("rolling")))
	assert.Equal(t, 7.0, value("mcm_machine_deployment_info_spec_rollback_to_revision", nn("rolling")))
	assert.Equal(t, 0.0, value("mcm_machine_deployment_info_spec_rollback_to_revision", nn("workers")))
	assert.Equal(t, 2.0, value("mcm_machine_deployment_status_collision_count", nn("rolling")))

	// A failing read is counted, not fatal. The registry gathers the
	// counter and the state concurrently, so a failure shows in the count
	// from the next scrape on.
	broken := newStateMetrics(failingReader{})
	reg = prometheus.NewPedanticRegistry()
	require.NoError(t, broken.register(reg))
	_, err = reg.Gather()
	require.NoError(t, err)
	families, err = reg.Gather()
	require.NoError(t, err)
	for _, kind := range []string{"Machine", "MachineSet", "MachineDeployment"} {
		assert.GreaterOrEqual(t, value("mcm_misc_scrape_failure_total", map[string]string{"kind": kind}), 1.0)
	}
	_, ok := find(families, "mcm_machine_items_total", nil)
	assert.False(t, ok)

	// Registering again (a second Manager in one process) replaces the first.
	require.NoError(t, newStateMetrics(c).register(reg))
}

// merge returns the union of two label sets.
func merge(a, b map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}

// failingReader fails every read.
type failingReader struct{}

func (failingReader) Get(context.Context, client.ObjectKey, client.Object, ...client.GetOption) error {
	return errors.New("unreachable")
}

func (failingReader) List(context.Context, client.ObjectList, ...client.ListOption) error {
	return errors.New("unreachable")
}

// find returns the value of the first metric named name whose labels
// include labels.
func find(families []*dto.MetricFamily, name string, labels map[string]string) (float64, bool) {
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	metrics:
		for _, m := range f.GetMetric() {
			have := map[string]string{}
			for _, l := range m.GetLabel() {
				have[l.GetName()] = l.GetValue()
			}
			for k, v := range labels {
				if have[k] != v {
					continue metrics
				}
			}
			switch {
			case m.GetGauge() != nil:
				return m.GetGauge().GetValue(), true
			case m.GetCounter() != nil:
				return m.GetCounter().GetValue(), true
			}
		}
	}
	return 0, false
}
