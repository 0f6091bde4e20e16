package machine

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/testenv"
	"github.com/machina-io/machina/drivers/inmemory"
)

// TestMachinePreservation runs the machine controller's preservation
// scenarios against one API server. The MachineSet's part (replacement,
// automatic preservation) is tested with the whole manager in
// core/manager/preserve_test.go.
func TestMachinePreservation(t *testing.T) {
	env := testenv.Start(t)
	for _, s := range []struct {
		name string
		run  func(t *testing.T, env *testenv.Env)
	}{
		{"when-failed until expiry", testPreserveWhenFailedUntilExpiry},
		{"now on a running machine, node value wins", testPreserveNowNodeWins},
		{"recovery stops it", testPreserveRecovery},
		{"invalid value and removal", testPreserveInvalidAndRemoval},
	} {
		t.Run(s.name, func(t *testing.T) { s.run(t, env) })
	}
}

// annotateNode sets (value nil: removes) an annotation of a Node.
func (w *world) annotateNode(name, key string, value *string) {
	w.t.Helper()
	raw, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]any{key: value}}})
	require.NoError(w.t, err)
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
	require.NoError(w.t, w.target.Client.Patch(w.ctx, n, client.RawPatch("application/merge-patch+json", raw)))
}

// annotateMachine sets (value nil: removes) an annotation of a Machine.
func (w *world) annotateMachine(name, key string, value *string) {
	w.t.Helper()
	raw, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]any{key: value}}})
	require.NoError(w.t, err)
	m := &v1alpha1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: name}}
	require.NoError(w.t, w.control.Client.Patch(w.ctx, m, client.RawPatch("application/merge-patch+json", raw)))
}

func strp(s string) *string { return &s }

func hasTaint(n *corev1.Node, key string, effect corev1.TaintEffect) bool {
	for _, t := range n.Spec.Taints {
		if t.Key == key && t.Effect == effect {
			return true
		}
	}
	return false
}

// preservedOnNode reports the node's Preserved condition (zero when none).
func preservedOnNode(n *corev1.Node) corev1.NodeCondition {
	return findCond(n.Status.Conditions, v1alpha1.NodePreserved)
}

// notPreserved reports whether no trace of preservation is left on the
// machine and its node (a Preserved condition, if any, says stopped).
func (w *world) notPreserved(name string) bool {
	m := w.get(name)
	n := w.node(name)
	c := preservedOnNode(n)
	return m.Status.CurrentStatus.PreserveExpiryTime == nil &&
		(c.Type == "" || (c.Status == corev1.ConditionFalse && c.Message == v1alpha1.PreservationStoppedMessage)) &&
		!hasTaint(n, v1alpha1.PreservedTaintKey, corev1.TaintEffectNoSchedule) &&
		n.Annotations[v1alpha1.ClusterAutoscalerScaleDownDisabledAnnotation] == "" &&
		n.Annotations[v1alpha1.ClusterAutoscalerScaleDownDisabledByMCMAnnotation] == ""
}

// A Failed machine annotated when-failed is preserved until its expiry:
// expiry stamped from machinePreserveTimeout, the node tainted (not
// cordoned) and drained, the Preserved condition on node and machine, the
// autoscaler's annotations; at the expiry all of it goes, the annotation
// too, and the machine stays Failed (its MachineSet replaces it then).
func testPreserveWhenFailedUntilExpiry(t *testing.T, env *testenv.Env) {
	w := newWorld(t, env, env, inmemory.Options{})
	w.class("small", nil)
	w.start()
	const timeout = 6 * time.Second
	w.machine("m1", "small", func(m *v1alpha1.Machine) {
		m.Annotations = map[string]string{v1alpha1.PreserveAnnotation: v1alpha1.PreserveValueWhenFailed}
		m.Spec.MachineConfiguration = &v1alpha1.MachineConfiguration{
			MachineHealthTimeout:   &v1alpha1.Duration{Duration: time.Second},
			MachinePreserveTimeout: &v1alpha1.Duration{Duration: timeout},
		}
	})
	m := w.waitPhase("m1", v1alpha1.MachineRunning, waitLong)
	assert.Nil(t, m.Status.CurrentStatus.PreserveExpiryTime, "when-failed does nothing while the machine runs")
	runningPod(t, w.ctx, env.Client, w.ns, "web", "m1", nil)

	setNodeCondition(t, w.ctx, env.Client, "m1", corev1.NodeReady, corev1.ConditionFalse)
	m = w.eventually("m1", waitLong, "Failed and preserved", func(m *v1alpha1.Machine) bool {
		return m.Status.CurrentStatus.Phase == v1alpha1.MachineFailed && m.Status.CurrentStatus.PreserveExpiryTime != nil
	})
	failedAt := m.Status.CurrentStatus.LastUpdateTime.Time
	expiry := m.Status.CurrentStatus.PreserveExpiryTime.Time
	assert.InDelta(t, timeout.Seconds(), expiry.Sub(failedAt).Seconds(), 1.5, "expiry %s, failed at %s", expiry, failedAt)

	// The node: tainted, drained (the pod evicted and gone), not cordoned,
	// the autoscaler told, the condition True.
	require.Eventually(t, func() bool {
		c := preservedOnNode(w.node("m1"))
		return c.Status == corev1.ConditionTrue && strings.HasPrefix(c.Message, v1alpha1.PreservedNodeDrainSuccessfulMessage)
	}, waitLong, 20*time.Millisecond, "node condition: %+v", preservedOnNode(w.node("m1")))
	require.True(t, time.Now().Before(expiry), "the checks below must run before the expiry; raise the timeout")
	n := w.node("m1")
	assert.True(t, hasTaint(n, v1alpha1.PreservedTaintKey, corev1.TaintEffectNoSchedule), "taints: %v", n.Spec.Taints)
	assert.False(t, n.Spec.Unschedulable, "a taint, not a cordon")
	assert.Equal(t, "true", n.Annotations[v1alpha1.ClusterAutoscalerScaleDownDisabledAnnotation])
	assert.Equal(t, "true", n.Annotations[v1alpha1.ClusterAutoscalerScaleDownDisabledByMCMAnnotation])
	assert.Equal(t, v1alpha1.PreservedByUserMessage, preservedOnNode(n).Reason)
	pod := &corev1.Pod{}
	err := env.Client.Get(w.ctx, client.ObjectKey{Namespace: w.ns, Name: "web"}, pod)
	assert.True(t, err != nil || pod.DeletionTimestamp != nil, "the pod was evicted")
	m = w.eventually("m1", waitLong, "the condition mirrored", func(m *v1alpha1.Machine) bool {
		return findCond(m.Status.Conditions, v1alpha1.NodePreserved).Status == corev1.ConditionTrue
	})
	assert.Equal(t, v1alpha1.MachineFailed, m.Status.CurrentStatus.Phase)
	w.waitEvent("m1", corev1.EventTypeNormal, reasonPreserved)

	// The expiry: everything goes, the machine stays Failed.
	m = w.eventually("m1", waitLong, "preservation stopped", func(m *v1alpha1.Machine) bool {
		return w.notPreserved("m1") && m.Annotations[v1alpha1.PreserveAnnotation] == ""
	})
	assert.False(t, time.Now().Before(expiry), "stopped at the expiry, not before")
	assert.Equal(t, v1alpha1.MachineFailed, m.Status.CurrentStatus.Phase)
	assert.Equal(t, v1alpha1.PreservationStoppedMessage, preservedOnNode(w.node("m1")).Message)
	w.waitEvent("m1", corev1.EventTypeNormal, reasonPreservationStopped)
	// It does not start again.
	m = w.get("m1")
	assert.Nil(t, m.Status.CurrentStatus.PreserveExpiryTime)
}

// "now" preserves a Running machine at once: expiry from
// --machine-preserve-timeout, the autoscaler's annotation and the
// condition, no taint (it serves). The node's value wins over the
// machine's: "false" on the node stops it and the machine's value is
// dropped; "now" on the node starts it again; removing it stops it.
func testPreserveNowNodeWins(t *testing.T, env *testenv.Env) {
	w := newWorld(t, env, env, inmemory.Options{})
	w.opts.PreserveTimeout = 30 * time.Minute
	w.class("small", nil)
	w.start()
	w.machine("m1", "small")
	// Annotated once Running: the simulated kubelet reports Ready only on
	// a Node without conditions, and a Preserved condition written first
	// would keep it from ever doing so.
	w.waitPhase("m1", v1alpha1.MachineRunning, waitLong)
	w.annotateMachine("m1", v1alpha1.PreserveAnnotation, strp(v1alpha1.PreserveValueNow))
	preserved := func(what string) *v1alpha1.Machine {
		t.Helper()
		m := w.eventually("m1", waitLong, what, func(m *v1alpha1.Machine) bool {
			n := w.node("m1")
			return m.Status.CurrentStatus.PreserveExpiryTime != nil && preservedOnNode(n).Status == corev1.ConditionTrue &&
				n.Annotations[v1alpha1.ClusterAutoscalerScaleDownDisabledAnnotation] == "true"
		})
		left := time.Until(m.Status.CurrentStatus.PreserveExpiryTime.Time)
		assert.InDelta(t, (30 * time.Minute).Seconds(), left.Seconds(), 60, "expiry from --machine-preserve-timeout")
		n := w.node("m1")
		assert.False(t, hasTaint(n, v1alpha1.PreservedTaintKey, corev1.TaintEffectNoSchedule), "a running preserved machine takes pods")
		assert.Contains(t, preservedOnNode(n).Message, "Machine preserved until ")
		assert.Equal(t, v1alpha1.MachineRunning, m.Status.CurrentStatus.Phase)
		return m
	}
	preserved("preserved now")

	w.annotateNode("m1", v1alpha1.PreserveAnnotation, strp(v1alpha1.PreserveValueFalse))
	m := w.eventually("m1", waitLong, "stopped by the node's false", func(m *v1alpha1.Machine) bool {
		return w.notPreserved("m1") && m.Annotations[v1alpha1.LastAppliedNodePreserveValueAnnotation] == v1alpha1.PreserveValueFalse
	})
	assert.NotContains(t, m.Annotations, v1alpha1.PreserveAnnotation, "the machine's value is dropped while the node's is in force")

	// The node's value removed: nothing is in force any more.
	w.annotateNode("m1", v1alpha1.PreserveAnnotation, nil)
	w.eventually("m1", waitLong, "last-applied cleared", func(m *v1alpha1.Machine) bool {
		_, ok := m.Annotations[v1alpha1.LastAppliedNodePreserveValueAnnotation]
		return !ok
	})
	assert.True(t, w.notPreserved("m1"))

	// "now" on the node preserves; removing it stops.
	w.annotateNode("m1", v1alpha1.PreserveAnnotation, strp(v1alpha1.PreserveValueNow))
	preserved("preserved by the node's now")
	w.annotateNode("m1", v1alpha1.PreserveAnnotation, nil)
	w.eventually("m1", waitLong, "stopped by the removal on the node", func(*v1alpha1.Machine) bool { return w.notPreserved("m1") })
}

// A preserved Failed machine whose node is healthy again is Running, and a
// when-failed preservation stops: taint, condition, expiry go.
func testPreserveRecovery(t *testing.T, env *testenv.Env) {
	w := newWorld(t, env, env, inmemory.Options{})
	w.class("small", nil)
	w.start()
	w.machine("m1", "small", func(m *v1alpha1.Machine) {
		m.Annotations = map[string]string{v1alpha1.PreserveAnnotation: v1alpha1.PreserveValueWhenFailed}
		m.Spec.MachineConfiguration = &v1alpha1.MachineConfiguration{MachineHealthTimeout: &v1alpha1.Duration{Duration: time.Second}}
	})
	w.waitPhase("m1", v1alpha1.MachineRunning, waitLong)
	setNodeCondition(t, w.ctx, env.Client, "m1", corev1.NodeReady, corev1.ConditionFalse)
	w.eventually("m1", waitLong, "Failed and preserved", func(m *v1alpha1.Machine) bool {
		return m.Status.CurrentStatus.Phase == v1alpha1.MachineFailed && m.Status.CurrentStatus.PreserveExpiryTime != nil &&
			hasTaint(w.node("m1"), v1alpha1.PreservedTaintKey, corev1.TaintEffectNoSchedule)
	})

	setNodeCondition(t, w.ctx, env.Client, "m1", corev1.NodeReady, corev1.ConditionTrue)
	m := w.waitPhase("m1", v1alpha1.MachineRunning, waitLong)
	w.eventually("m1", waitLong, "preservation stopped", func(*v1alpha1.Machine) bool { return w.notPreserved("m1") })
	w.rec.assertPhases(t, "m1", []string{"", "Pending", "Running", "Unknown", "Failed", "Running"})
	assert.Nil(t, m.Status.UnhealthySince)
	m = w.get("m1")
	assert.Equal(t, v1alpha1.PreserveValueWhenFailed, m.Annotations[v1alpha1.PreserveAnnotation], "a user's when-failed stays for the next failure")
}

// An invalid value is reported and ignored; removing the machine's value
// stops a preservation.
func testPreserveInvalidAndRemoval(t *testing.T, env *testenv.Env) {
	w := newWorld(t, env, env, inmemory.Options{})
	w.class("small", nil)
	w.start()
	w.machine("m1", "small", func(m *v1alpha1.Machine) {
		m.Annotations = map[string]string{v1alpha1.PreserveAnnotation: "forever"}
	})
	w.waitPhase("m1", v1alpha1.MachineRunning, waitLong)
	note := w.waitEvent("m1", corev1.EventTypeWarning, reasonPreserveInvalid)
	assert.Contains(t, note, `"forever"`)
	assert.Nil(t, w.get("m1").Status.CurrentStatus.PreserveExpiryTime)

	w.annotateMachine("m1", v1alpha1.PreserveAnnotation, strp(v1alpha1.PreserveValueNow))
	w.eventually("m1", waitLong, "preserved", func(m *v1alpha1.Machine) bool {
		return m.Status.CurrentStatus.PreserveExpiryTime != nil && preservedOnNode(w.node("m1")).Status == corev1.ConditionTrue
	})
	w.annotateMachine("m1", v1alpha1.PreserveAnnotation, nil)
	w.eventually("m1", waitLong, "stopped by the removal", func(*v1alpha1.Machine) bool { return w.notPreserved("m1") })
	assert.Equal(t, v1alpha1.MachineRunning, w.get("m1").Status.CurrentStatus.Phase)
}
