package machine

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/testenv"
	"github.com/machina-io/machina/drivers/inmemory"
)

// allSteps is the deletion of a machine with a node and a graceful drain.
var allSteps = []string{"GetVMStatus", "Drain", "DeleteVM", "DeleteNode", "RemoveFinalizer"}

// pdb creates a PodDisruptionBudget that allows no disruption: no
// disruption controller runs in envtest, so it refuses every eviction until
// allowDisruptions plays that controller.
func pdb(t *testing.T, w *world, c client.Client, name string, selector map[string]string) {
	t.Helper()
	require.NoError(t, c.Create(w.ctx, &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: name},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MaxUnavailable: ptr.To(intstr.FromInt32(0)),
			Selector:       &metav1.LabelSelector{MatchLabels: selector},
		},
	}))
}

func allowDisruptions(t *testing.T, w *world, c client.Client, name string, n int32) {
	t.Helper()
	p := &policyv1.PodDisruptionBudget{}
	require.NoError(t, c.Get(w.ctx, client.ObjectKey{Namespace: w.ns, Name: name}, p))
	p.Status = policyv1.PodDisruptionBudgetStatus{ObservedGeneration: p.Generation, DisruptionsAllowed: n, CurrentHealthy: n, ExpectedPods: n}
	require.NoError(t, c.Status().Update(w.ctx, p))
}

func drainedCondition(m *v1alpha1.Machine) *metav1.Condition {
	return meta.FindStatusCondition(m.Status.MachineConditions, v1alpha1.MachineConditionDrained)
}

func gone(t *testing.T, w *world, c client.Client, obj client.Object) bool {
	err := c.Get(w.ctx, client.ObjectKeyFromObject(obj), obj)
	if apierrors.IsNotFound(err) {
		return true
	}
	require.NoError(t, err)
	return false
}

// The whole deletion: a drain that a PodDisruptionBudget blocks (visible in
// the Drained condition) until the budget allows it, then the VM, the
// Node, the finalizer.
func testDeleteWithPDB(t *testing.T, env *testenv.Env) {
	w := newWorld(t, env, env, inmemory.Options{})
	w.class("small", nil)
	w.start()
	w.machine("m1", "small")
	w.waitPhase("m1", v1alpha1.MachineRunning, waitLong)

	runningPod(t, w.ctx, env.Client, w.ns, "web-1", "m1", map[string]string{"app": "web"})
	runningPod(t, w.ctx, env.Client, w.ns, "web-2", "m1", map[string]string{"app": "web"})
	runningPod(t, w.ctx, env.Client, w.ns, "batch", "m1", map[string]string{"app": "batch"})
	pdb(t, w, env.Client, "web", map[string]string{"app": "web"})

	w.delete("m1")
	m := w.eventually("m1", waitLong, "a drain blocked by the budget", func(m *v1alpha1.Machine) bool {
		c := drainedCondition(m)
		return m.Status.DeletionStep == v1alpha1.DeletionStepDrain && c != nil && c.Status == metav1.ConditionFalse &&
			strings.Contains(c.Message, "2 blocked by a PodDisruptionBudget") && strings.Contains(c.Message, "2 pods remaining")
	})
	assert.Equal(t, v1alpha1.MachineTerminating, m.Status.CurrentStatus.Phase)
	assert.Equal(t, "Draining", drainedCondition(m).Reason)
	assert.Equal(t, v1alpha1.MachineOperationDelete, m.Status.LastOperation.Type)
	node := &corev1.Node{}
	require.NoError(t, env.Client.Get(w.ctx, client.ObjectKey{Name: "m1"}, node))
	assert.True(t, node.Spec.Unschedulable, "cordoned")
	assert.True(t, gone(t, w, env.Client, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: "batch"}}), "the unprotected pod was evicted")
	assert.Zero(t, w.mem.Calls(inmemory.MethodDeleteMachine), "no VM deletion before the drain is done")
	w.waitEvent("m1", corev1.EventTypeNormal, reasonDraining)

	allowDisruptions(t, w, env.Client, "web", 2)
	w.waitGone("m1", waitLong)
	w.rec.assertStepsFollow(t, "m1", allSteps, "Drain")
	assert.Equal(t, 1, w.mem.Calls(inmemory.MethodDeleteMachine))
	assert.Empty(t, w.mem.VMs())
	assert.True(t, gone(t, w, env.Client, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "m1"}}))
	assert.True(t, gone(t, w, env.Client, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: "web-1"}}))
	assert.Equal(t, "Terminating", w.rec.phasesOf("m1")[len(w.rec.phasesOf("m1"))-1])
	// One Normal event for the deletion, plus Draining while the budget
	// held the drain; the steps are in lastOperation (issue 21: the events
	// Drained, VMDeleted, NodeDeleted and Released are gone).
	w.waitEvent("m1", corev1.EventTypeNormal, reasonDeleting)
	var deletion []string
	for _, e := range w.events() {
		for _, reason := range []string{"Deleting", "Draining", "Drained", "VolumeAttachmentsDeleted", "VMDeleted", "NodeDeleted", "Released"} {
			if strings.HasPrefix(e, "m1 Normal "+reason+":") && !slices.Contains(deletion, reason) {
				deletion = append(deletion, reason)
			}
		}
	}
	assert.ElementsMatch(t, []string{"Deleting", "Draining"}, deletion, "the deletion's Normal events: %v", w.events())
}

// A drain that the budget keeps blocking is forced once the machine's drain
// timeout has passed: pods deleted, VolumeAttachments deleted, then the VM.
// The label force-deletion=True forces it at once.
func testDeleteForcedByDrainTimeout(t *testing.T, env *testenv.Env) {
	w := newWorld(t, env, env, inmemory.Options{})
	w.class("small", nil)
	w.start()
	w.machine("m1", "small", func(m *v1alpha1.Machine) {
		m.Spec.MachineConfiguration = &v1alpha1.MachineConfiguration{MachineDrainTimeout: &v1alpha1.Duration{Duration: 3 * time.Second}}
	})
	w.machine("m2", "small", func(m *v1alpha1.Machine) {
		m.Labels = map[string]string{v1alpha1.ForceDeletionLabel: v1alpha1.ForceDeletionValue}
	})
	w.machine("m3", "small")
	w.waitPhase("m1", v1alpha1.MachineRunning, waitLong)
	w.waitPhase("m2", v1alpha1.MachineRunning, waitLong)
	w.waitPhase("m3", v1alpha1.MachineRunning, waitLong)

	// m3's node has been NotReady for ten minutes: its kubelet is gone.
	node3 := &corev1.Node{}
	require.NoError(t, env.Client.Get(w.ctx, client.ObjectKey{Name: "m3"}, node3))
	for i := range node3.Status.Conditions {
		if node3.Status.Conditions[i].Type == corev1.NodeReady {
			node3.Status.Conditions[i].Status = corev1.ConditionFalse
			node3.Status.Conditions[i].LastTransitionTime = metav1.NewTime(time.Now().Add(-10 * time.Minute))
		}
	}
	require.NoError(t, env.Client.Status().Update(w.ctx, node3))
	w.waitPhase("m3", v1alpha1.MachineUnknown, waitLong)

	for _, n := range []string{"m1", "m2", "m3"} {
		runningPod(t, w.ctx, env.Client, w.ns, "db-"+n, n, map[string]string{"app": "db"})
		require.NoError(t, env.Client.Create(w.ctx, &storagev1.VolumeAttachment{
			ObjectMeta: metav1.ObjectMeta{Name: "va-" + w.ns + "-" + n},
			Spec: storagev1.VolumeAttachmentSpec{
				Attacher: "inmemory.csi.machina.io", NodeName: n,
				Source: storagev1.VolumeAttachmentSource{PersistentVolumeName: ptr.To("pv-" + n)},
			},
		}))
	}
	pdb(t, w, env.Client, "db", map[string]string{"app": "db"})

	start := time.Now()
	w.delete("m1")
	w.delete("m2")
	w.delete("m3")
	w.waitGone("m2", waitLong)
	w.waitGone("m3", waitLong)
	w.waitGone("m1", waitLong)
	assert.GreaterOrEqual(t, time.Since(start), 2*time.Second, "m1 was drained gracefully until its timeout")

	forced := []string{"GetVMStatus", "Drain", "DeleteVolumeAttachments", "DeleteVM", "DeleteNode", "RemoveFinalizer"}
	w.rec.assertStepsFollow(t, "m1", forced, "Drain")
	w.rec.assertStepsFollow(t, "m2", forced)
	w.rec.assertStepsFollow(t, "m3", forced)
	for _, n := range []string{"m1", "m2", "m3"} {
		assert.True(t, gone(t, w, env.Client, &storagev1.VolumeAttachment{ObjectMeta: metav1.ObjectMeta{Name: "va-" + w.ns + "-" + n}}))
		assert.True(t, gone(t, w, env.Client, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: "db-" + n}}))
	}
	assert.Contains(t, w.waitEvent("m1", corev1.EventTypeWarning, reasonForceDrain), "the drain timeout of 3s has passed")
	assert.Contains(t, w.waitEvent("m2", corev1.EventTypeWarning, reasonForceDrain), "force-deletion=True")
	assert.Contains(t, w.waitEvent("m3", corev1.EventTypeWarning, reasonForceDrain), "node m3 has been Ready=False since")
}

// DeleteMachine fails: the machine stays at DeleteVM with the error code,
// retried after the period of the code, and completes when the driver
// recovers.
func testDeleteVMError(t *testing.T, env *testenv.Env) {
	w := newWorld(t, env, env, inmemory.Options{})
	w.class("small", nil)
	w.start()
	w.machine("m1", "small")
	w.machine("m2", "small")
	w.waitPhase("m1", v1alpha1.MachineRunning, waitLong)
	w.waitPhase("m2", v1alpha1.MachineRunning, waitLong)

	// Transient: short retries.
	w.mem.SetFault(inmemory.MethodDeleteMachine, inmemory.Fault{Code: codes.Unavailable, Count: 3})
	w.delete("m1")
	m := w.eventually("m1", waitLong, "a failed VM deletion", func(m *v1alpha1.Machine) bool {
		return m != nil && m.Status.LastOperation.ErrorCode == "Unavailable"
	})
	assert.Equal(t, v1alpha1.DeletionStepDeleteVM, m.Status.DeletionStep)
	assert.Equal(t, v1alpha1.MachineStateFailed, m.Status.LastOperation.State)
	assert.Equal(t, v1alpha1.MachineTerminating, m.Status.CurrentStatus.Phase)
	w.waitGone("m1", waitLong)
	assert.Equal(t, 4, w.mem.Calls(inmemory.MethodDeleteMachine))
	w.rec.assertStepsFollow(t, "m1", allSteps, "DeleteVM")
	w.waitEvent("m1", corev1.EventTypeWarning, reasonDeleteFailed)

	// Not transient: the long retry.
	w.mem.SetFault(inmemory.MethodDeleteMachine, inmemory.Fault{Code: codes.Internal, Count: 1})
	before := len(w.drv.callTimes(inmemory.MethodDeleteMachine))
	w.delete("m2")
	w.waitGone("m2", waitLong)
	times := w.drv.callTimes(inmemory.MethodDeleteMachine)[before:]
	require.Len(t, times, 2)
	assert.GreaterOrEqual(t, times[1].Sub(times[0]), w.opts.LongRetry)
	assert.Equal(t, []string{"Internal"}, w.rec.codesOf("m2"))
}

// A manager stopped in the middle of a deletion: a new manager resumes at
// the persisted step and does no earlier step again.
func testRestartMidDeletion(t *testing.T, env *testenv.Env) {
	w := newWorld(t, env, env, inmemory.Options{})
	w.class("small", nil)
	w.start()
	w.machine("m1", "small")
	w.machine("m2", "small")
	w.waitPhase("m1", v1alpha1.MachineRunning, waitLong)
	w.waitPhase("m2", v1alpha1.MachineRunning, waitLong)

	// m1 stops in its drain, m2 at its VM deletion.
	runningPod(t, w.ctx, env.Client, w.ns, "web-1", "m1", map[string]string{"app": "web"})
	pdb(t, w, env.Client, "web", map[string]string{"app": "web"})
	w.mem.SetFault(inmemory.MethodDeleteMachine, inmemory.Fault{Code: codes.Unavailable})
	w.delete("m1")
	w.delete("m2")
	w.eventually("m1", waitLong, "a blocked drain", func(m *v1alpha1.Machine) bool {
		c := drainedCondition(m)
		return c != nil && strings.Contains(c.Message, "blocked by a PodDisruptionBudget")
	})
	w.eventually("m2", waitLong, "a failing VM deletion", func(m *v1alpha1.Machine) bool {
		return m.Status.DeletionStep == v1alpha1.DeletionStepDeleteVM && m.Status.LastOperation.ErrorCode == "Unavailable"
	})
	w.stop()

	statusCalls := w.mem.Calls(inmemory.MethodGetMachineStatus)
	deleteCalls := w.mem.Calls(inmemory.MethodDeleteMachine)
	require.Positive(t, deleteCalls)
	// The recorder follows a watch, which may lag behind the reads above:
	// with the manager stopped, what it has seen once both steps are in
	// is all there is.
	require.Eventually(t, func() bool { return len(w.rec.stepsOf("m1")) > 0 && len(w.rec.stepsOf("m2")) > 0 },
		waitLong, 20*time.Millisecond, "the recorder's watch never showed both machines' steps")
	stepsBefore := map[string][]string{"m1": w.rec.stepsOf("m1"), "m2": w.rec.stepsOf("m2")}
	// The steps that finished at once were not stored: each machine shows
	// where it waited.
	assert.Equal(t, []string{"Drain"}, stepsBefore["m1"])
	assert.Equal(t, []string{"DeleteVM"}, stepsBefore["m2"])

	// While no manager runs, the budget allows the eviction and the driver
	// recovers.
	allowDisruptions(t, w, env.Client, "web", 1)
	w.mem.ClearFaults()
	w.start()
	w.waitGone("m1", waitLong)
	w.waitGone("m2", waitLong)

	w.rec.assertStepsFollow(t, "m1", allSteps, "Drain")
	w.rec.assertStepsFollow(t, "m2", allSteps, "DeleteVM")
	assert.Equal(t, "Drain", w.rec.stepsOf("m1")[0], "resumed in the drain")
	assert.Equal(t, "DeleteVM", w.rec.stepsOf("m2")[0], "resumed at the VM deletion")
	assert.Equal(t, deleteCalls+2, w.mem.Calls(inmemory.MethodDeleteMachine), "one more DeleteMachine per machine, none repeated")
	assert.Equal(t, statusCalls, w.mem.Calls(inmemory.MethodGetMachineStatus), "no lookup redone")
	assert.Empty(t, w.mem.VMs())
}
