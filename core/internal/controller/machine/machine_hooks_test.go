package machine

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/testenv"
	"github.com/machina-io/machina/drivers/inmemory"
)

// A deletion held by Cluster API's lifecycle hooks: a pre-drain hook keeps
// the Node uncordoned and undrained until it is removed, and the time it
// held does not count as drain time (the drain timeout is shorter than the
// hold, yet the drain that follows is graceful); a pre-terminate hook keeps
// the VM after the drain until it is removed.
func testDeleteHeldByHooks(t *testing.T, env *testenv.Env) {
	w := newWorld(t, env, env, inmemory.Options{})
	w.class("small", nil)
	w.start()
	const drainTimeout = 2 * time.Second
	preDrain := v1alpha1.PreDrainDeleteHookAnnotationPrefix + "/etcd-member"
	preTerminate := v1alpha1.PreTerminateDeleteHookAnnotationPrefix + "/storage"
	w.machine("m1", "small", func(m *v1alpha1.Machine) {
		m.Spec.MachineConfiguration = &v1alpha1.MachineConfiguration{MachineDrainTimeout: &v1alpha1.Duration{Duration: drainTimeout}}
		m.Annotations = map[string]string{preDrain: "etcd-operator", preTerminate: "storage-operator"}
	})
	w.waitPhase("m1", v1alpha1.MachineRunning, waitLong)
	runningPod(t, w.ctx, env.Client, w.ns, "web-1", "m1", map[string]string{"app": "web"})
	pdb(t, w, env.Client, "web", map[string]string{"app": "web"})

	cordoned := func() bool {
		n := &corev1.Node{}
		require.NoError(t, env.Client.Get(w.ctx, client.ObjectKey{Name: "m1"}, n))
		return n.Spec.Unschedulable
	}

	w.delete("m1")
	m := w.eventually("m1", waitLong, "the deletion held by the pre-drain hook", func(m *v1alpha1.Machine) bool {
		c := meta.FindStatusCondition(m.Status.MachineConditions, v1alpha1.MachineConditionPreDrainDeleteHookSucceeded)
		return m.Status.DeletionStep == v1alpha1.DeletionStepPreDrainHook && c != nil && c.Status == metav1.ConditionFalse
	})
	c := meta.FindStatusCondition(m.Status.MachineConditions, v1alpha1.MachineConditionPreDrainDeleteHookSucceeded)
	assert.Equal(t, reasonWaitingExternalHook, c.Reason)
	assert.Contains(t, c.Message, "etcd-member")
	assert.Contains(t, m.Status.LastOperation.Description, "Waiting for pre-drain hooks to be removed: etcd-member")
	assert.Contains(t, w.waitEvent("m1", corev1.EventTypeNormal, reasonWaitingExternalHook), "etcd-member")

	// Held past the drain timeout: nothing is cordoned, drained or deleted.
	require.Never(t, func() bool {
		return cordoned() || w.mem.Calls(inmemory.MethodDeleteMachine) > 0 ||
			gone(t, w, env.Client, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: "web-1"}})
	}, drainTimeout+time.Second, 100*time.Millisecond, "the pre-drain hook did not hold the drain")

	// Removed: the drain starts, gracefully, and the budget holds it.
	w.annotateMachine("m1", preDrain, nil)
	m = w.eventually("m1", waitLong, "a graceful drain blocked by the budget", func(m *v1alpha1.Machine) bool {
		d := drainedCondition(m)
		return m.Status.DeletionStep == v1alpha1.DeletionStepDrain && d != nil && d.Reason == "Draining"
	})
	c = meta.FindStatusCondition(m.Status.MachineConditions, v1alpha1.MachineConditionPreDrainDeleteHookSucceeded)
	require.NotNil(t, c)
	assert.Equal(t, metav1.ConditionTrue, c.Status)
	assert.True(t, cordoned())
	for _, e := range w.events() {
		assert.False(t, strings.HasPrefix(e, "m1 Warning "+reasonForceDrain), "the hook's hold counted as drain time: %s", e)
	}

	// The drain ends; the pre-terminate hook keeps the VM and the Node.
	allowDisruptions(t, w, env.Client, "web", 1)
	m = w.eventually("m1", waitLong, "the deletion held by the pre-terminate hook", func(m *v1alpha1.Machine) bool {
		return m.Status.DeletionStep == v1alpha1.DeletionStepPreTerminateHook
	})
	assert.Contains(t, m.Status.LastOperation.Description, "Waiting for pre-terminate hooks to be removed: storage")
	require.Never(t, func() bool {
		return w.mem.Calls(inmemory.MethodDeleteMachine) > 0 || gone(t, w, env.Client, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "m1"}})
	}, time.Second, 100*time.Millisecond, "the pre-terminate hook did not hold the VM's deletion")

	w.annotateMachine("m1", preTerminate, nil)
	w.waitGone("m1", waitLong)
	w.rec.assertStepsFollow(t, "m1",
		[]string{"GetVMStatus", "PreDrainHook", "Drain", "PreTerminateHook", "DeleteVM", "DeleteNode", "RemoveFinalizer"},
		"PreDrainHook", "Drain", "PreTerminateHook")
	assert.Equal(t, 1, w.mem.Calls(inmemory.MethodDeleteMachine))
	assert.Empty(t, w.mem.VMs())
}

// A machine annotated exclude-node-draining (Cluster API's) is deleted
// without a drain: its Node is not cordoned and a pod a budget protects is
// not evicted; the Drained condition says why (seen while a pre-terminate
// hook holds the machine after the skipped drain).
func testDeleteExcludedFromDraining(t *testing.T, env *testenv.Env) {
	w := newWorld(t, env, env, inmemory.Options{})
	w.class("small", nil)
	w.start()
	preTerminate := v1alpha1.PreTerminateDeleteHookAnnotationPrefix + "/look"
	w.machine("m1", "small", func(m *v1alpha1.Machine) {
		m.Annotations = map[string]string{v1alpha1.ExcludeNodeDrainingAnnotation: "", preTerminate: "test"}
	})
	w.waitPhase("m1", v1alpha1.MachineRunning, waitLong)
	runningPod(t, w.ctx, env.Client, w.ns, "web-1", "m1", map[string]string{"app": "web"})
	pdb(t, w, env.Client, "web", map[string]string{"app": "web"})

	w.delete("m1")
	m := w.eventually("m1", waitLong, "the deletion past its skipped drain", func(m *v1alpha1.Machine) bool {
		return m.Status.DeletionStep == v1alpha1.DeletionStepPreTerminateHook
	})
	d := drainedCondition(m)
	require.NotNil(t, d)
	assert.Equal(t, "DrainExcluded", d.Reason)
	node := &corev1.Node{}
	require.NoError(t, env.Client.Get(w.ctx, client.ObjectKey{Name: "m1"}, node))
	assert.False(t, node.Spec.Unschedulable, "the node was cordoned although the drain was excluded")
	assert.Equal(t, "running", podPhase(t, w, env.Client, "web-1"))

	w.annotateMachine("m1", preTerminate, nil)
	w.waitGone("m1", waitLong)
	assert.Equal(t, 1, w.mem.Calls(inmemory.MethodDeleteMachine))
	// The pod went with the VM; play the pod garbage collector, which
	// envtest lacks: a pod left bound to node m1 would be drained by the
	// next scenario's machine m1, and its budget would block that drain.
	require.NoError(t, client.IgnoreNotFound(env.Client.Delete(w.ctx,
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: "web-1"}}, client.GracePeriodSeconds(0))))
}

// podPhase is "gone", "terminating" or "running".
func podPhase(t *testing.T, w *world, c client.Client, name string) string {
	t.Helper()
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: name}}
	if gone(t, w, c, p) {
		return "gone"
	}
	if p.DeletionTimestamp != nil {
		return "terminating"
	}
	return "running"
}
