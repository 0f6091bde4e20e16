package machine

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/testenv"
	"github.com/machina-io/machina/drivers/inmemory"
)

// The Node's labels, annotations and taints follow spec.nodeTemplate by a
// three-way merge; what others put on the Node stays.
func testNodeTemplate(t *testing.T, env *testenv.Env) {
	w := newWorld(t, env, env, inmemory.Options{})
	w.class("small", nil)
	w.start()
	w.machine("m1", "small", func(m *v1alpha1.Machine) {
		m.Spec.NodeTemplateSpec.Labels = map[string]string{"pool": "a", "tier": "web"}
		m.Spec.NodeTemplateSpec.Annotations = map[string]string{"note": "hello"}
		m.Spec.NodeTemplateSpec.Spec.Taints = []corev1.Taint{{Key: "dedicated", Value: "web", Effect: corev1.TaintEffectNoSchedule}}
	})
	w.waitPhase("m1", v1alpha1.MachineRunning, waitLong)

	node := func() *corev1.Node {
		n := &corev1.Node{}
		require.NoError(t, env.Client.Get(w.ctx, client.ObjectKey{Name: "m1"}, n))
		return n
	}
	require.Eventually(t, func() bool {
		n := node()
		return n.Labels["pool"] == "a" && n.Labels["tier"] == "web" && n.Annotations["note"] == "hello" && taintValue(n, "dedicated") == "web"
	}, waitLong, 50*time.Millisecond)
	n := node()
	assert.Equal(t, "m1", n.Labels["kubernetes.io/hostname"], "the kubelet's label stays")
	assert.Contains(t, n.Annotations, v1alpha1.LastAppliedALTAnnotation)

	// Someone else labels the Node; the template drops "tier" and changes
	// the taint's value.
	n.Labels["theirs"] = "x"
	require.NoError(t, env.Client.Update(w.ctx, n))
	m := w.get("m1")
	delete(m.Spec.NodeTemplateSpec.Labels, "tier")
	m.Spec.NodeTemplateSpec.Spec.Taints[0].Value = "db"
	require.NoError(t, env.Client.Update(w.ctx, m))

	require.Eventually(t, func() bool {
		n := node()
		_, tier := n.Labels["tier"]
		return !tier && taintValue(n, "dedicated") == "db"
	}, waitLong, 50*time.Millisecond)
	n = node()
	assert.Equal(t, "x", n.Labels["theirs"])
	assert.Equal(t, "a", n.Labels["pool"])
	// The API server's own not-ready taint (TaintNodesByCondition) is not
	// the template's: it is left alone.
	assert.Equal(t, "", taintValue(n, "node.kubernetes.io/not-ready"))
	assert.Len(t, n.Spec.Taints, 2)
}

// taintValue returns the value of the node's taint with key, "<none>" when
// there is none.
func taintValue(n *corev1.Node, key string) string {
	for _, t := range n.Spec.Taints {
		if t.Key == key {
			return t.Value
		}
	}
	return "<none>"
}

// Running → Unknown when the node turns NotReady (unhealthySince
// recorded) → Running again when it recovers.
func testHealth(t *testing.T, env *testenv.Env) {
	w := newWorld(t, env, env, inmemory.Options{})
	w.class("small", nil)
	w.start()
	w.machine("m1", "small")
	w.waitPhase("m1", v1alpha1.MachineRunning, waitLong)

	setNodeCondition(t, w.ctx, env.Client, "m1", corev1.NodeReady, corev1.ConditionFalse)
	m := w.waitPhase("m1", v1alpha1.MachineUnknown, waitLong)
	require.NotNil(t, m.Status.UnhealthySince)
	assert.Contains(t, m.Status.LastOperation.Description, "Ready=False")
	assert.Equal(t, corev1.ConditionFalse, findCond(m.Status.Conditions, corev1.NodeReady).Status)
	w.waitEvent("m1", corev1.EventTypeWarning, reasonUnhealthy)

	setNodeCondition(t, w.ctx, env.Client, "m1", corev1.NodeReady, corev1.ConditionTrue)
	m = w.waitPhase("m1", v1alpha1.MachineRunning, waitLong)
	assert.Nil(t, m.Status.UnhealthySince)
	w.waitEvent("m1", corev1.EventTypeNormal, reasonHealthy)

	// One of --node-conditions True is unhealthy too.
	setNodeCondition(t, w.ctx, env.Client, "m1", corev1.NodeDiskPressure, corev1.ConditionTrue)
	m = w.waitPhase("m1", v1alpha1.MachineUnknown, waitLong)
	assert.Contains(t, m.Status.LastOperation.Description, "DiskPressure=True")
	w.rec.assertPhases(t, "m1", []string{"", "Pending", "Running", "Unknown", "Running", "Unknown"})
}

// Unknown longer than the machine's health timeout → Failed; with
// disableHealthTimeout the machine stays Unknown.
func testHealthTimeout(t *testing.T, env *testenv.Env) {
	w := newWorld(t, env, env, inmemory.Options{})
	w.class("small", nil)
	w.start()
	w.machine("m1", "small", func(m *v1alpha1.Machine) {
		m.Spec.MachineConfiguration = &v1alpha1.MachineConfiguration{MachineHealthTimeout: &v1alpha1.Duration{Duration: 2 * time.Second}}
	})
	w.machine("m2", "small", func(m *v1alpha1.Machine) {
		disabled := true
		m.Spec.MachineConfiguration = &v1alpha1.MachineConfiguration{
			MachineHealthTimeout: &v1alpha1.Duration{Duration: 2 * time.Second},
			DisableHealthTimeout: &disabled,
		}
	})
	w.waitPhase("m1", v1alpha1.MachineRunning, waitLong)
	w.waitPhase("m2", v1alpha1.MachineRunning, waitLong)

	setNodeCondition(t, w.ctx, env.Client, "m1", corev1.NodeReady, corev1.ConditionFalse)
	setNodeCondition(t, w.ctx, env.Client, "m2", corev1.NodeReady, corev1.ConditionFalse)
	m := w.waitPhase("m1", v1alpha1.MachineFailed, waitLong)
	assert.Equal(t, v1alpha1.MachineOperationHealthCheck, m.Status.LastOperation.Type)
	assert.Contains(t, m.Status.LastOperation.Description, "longer than the health timeout of 2s")
	require.NotNil(t, m.Status.UnhealthySince)
	assert.GreaterOrEqual(t, m.Status.CurrentStatus.LastUpdateTime.Sub(m.Status.UnhealthySince.Time), time.Second)
	w.rec.assertPhases(t, "m1", []string{"", "Pending", "Running", "Unknown", "Failed"})

	// m2 has been Unknown for longer than its (disabled) timeout: a
	// reconcile after that (made visible by a mirrored condition change)
	// leaves it Unknown.
	m2 := w.waitPhase("m2", v1alpha1.MachineUnknown, waitLong)
	require.NotNil(t, m2.Status.UnhealthySince)
	past := m2.Status.UnhealthySince.Add(3 * time.Second)
	require.Eventually(t, func() bool { return time.Now().After(past) }, waitLong, 50*time.Millisecond)
	setNodeCondition(t, w.ctx, env.Client, "m2", corev1.NodeDiskPressure, corev1.ConditionTrue)
	m2 = w.eventually("m2", waitLong, "DiskPressure mirrored", func(m *v1alpha1.Machine) bool {
		return m != nil && findCond(m.Status.Conditions, corev1.NodeDiskPressure).Status == corev1.ConditionTrue
	})
	assert.Equal(t, v1alpha1.MachineUnknown, m2.Status.CurrentStatus.Phase)
	assert.NotContains(t, w.rec.phasesOf("m2"), "Failed")
}
