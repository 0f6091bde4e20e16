package machine

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/internal/inplace"
	"github.com/machina-io/machina/core/testenv"
	"github.com/machina-io/machina/drivers/inmemory"
)

// The Machine's side of an in-place update, against a real API server:
// the test plays the rollout (it labels the Node as a MachineDeployment
// would) and the node's agent (it sets update-result as an agent would).
func TestMachineInPlaceUpdate(t *testing.T) {
	env := testenv.Start(t)
	t.Run("successful update", func(t *testing.T) { testInPlaceSuccessful(t, env) })
	t.Run("failed then successful", func(t *testing.T) { testInPlaceFailed(t, env) })
	t.Run("timeout", func(t *testing.T) { testInPlaceTimeout(t, env) })
	t.Run("cancelled", func(t *testing.T) { testInPlaceCancelled(t, env) })
	t.Run("nothing to drain", func(t *testing.T) { testInPlaceNothingToDrain(t, env) })
}

// A selected node with no pod to drain gets the go signal in the write
// that records its selection: the Node's InPlaceUpdate condition goes from
// CandidateForUpdate straight to ReadyForUpdate, with no SelectedForUpdate
// in between (one status write and one Node event instead of two). Every
// revision of the Node is seen through a watch from the API server.
func testInPlaceNothingToDrain(t *testing.T, env *testenv.Env) {
	w := newWorld(t, env, env, inmemory.Options{})
	w.class("small", nil)
	w.start()
	w.machine("m1", "small")
	w.waitPhase("m1", v1alpha1.MachineRunning, waitLong)
	setNodeLabels(t, w, "m1", v1alpha1.LabelKeyNodeCandidateForUpdate, "true")
	w.waitNodeReason("m1", "m1", v1alpha1.CandidateForUpdate)

	wc, err := client.NewWithWatch(w.target.Config, client.Options{Scheme: w.target.Scheme})
	require.NoError(t, err)
	wi, err := wc.Watch(w.ctx, &corev1.NodeList{}, client.MatchingFields{"metadata.name": "m1"})
	require.NoError(t, err)
	defer wi.Stop()
	setNodeLabels(t, w, "m1", v1alpha1.LabelKeyNodeSelectedForUpdate, "true")

	var reasons []string
	deadline := time.After(waitLong)
	for len(reasons) == 0 || reasons[len(reasons)-1] != v1alpha1.ReadyForUpdate {
		select {
		case ev := <-wi.ResultChan():
			n, ok := ev.Object.(*corev1.Node)
			require.True(t, ok, "watch event %v", ev)
			if r := inplace.Reason(n); len(reasons) == 0 || reasons[len(reasons)-1] != r {
				reasons = append(reasons, r)
			}
		case <-deadline:
			require.Failf(t, "no go signal", "InPlaceUpdate reasons seen: %v", reasons)
		}
	}
	assert.Equal(t, []string{v1alpha1.CandidateForUpdate, v1alpha1.ReadyForUpdate}, reasons)
	w.waitPhase("m1", v1alpha1.MachineInPlaceUpdating, waitLong)
	// Selected and drained in one reconcile: one event says both (the
	// recorder sends a reconcile's events in order, so a selection event
	// would be there before the go signal's).
	ready := w.waitEvent("m1", corev1.EventTypeNormal, reasonInPlaceReady)
	assert.Contains(t, ready, "selected for an in-place update and drained")
	for _, e := range w.events() {
		assert.NotContains(t, e, reasonInPlaceSelected, "a selection drained at once has no event of its own")
	}
}

// setNodeLabels changes labels of a Node (value "" removes the label) with
// a merge patch, as a rollout or an agent would.
func setNodeLabels(t *testing.T, w *world, name string, kv ...string) {
	t.Helper()
	labels := map[string]any{}
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] == "" {
			labels[kv[i]] = nil
		} else {
			labels[kv[i]] = kv[i+1]
		}
	}
	patchNodeMeta(t, w, name, map[string]any{"labels": labels})
}

func patchNodeMeta(t *testing.T, w *world, name string, meta map[string]any) {
	t.Helper()
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
	raw, err := json.Marshal(map[string]any{"metadata": meta})
	require.NoError(t, err)
	require.NoError(t, w.target.Client.Patch(w.ctx, n, client.RawPatch("application/merge-patch+json", raw)))
}

func (w *world) node(name string) *corev1.Node {
	w.t.Helper()
	n := &corev1.Node{}
	require.NoError(w.t, w.target.Client.Get(w.ctx, client.ObjectKey{Name: name}, n))
	return n
}

// waitNodeReason waits for the Node's InPlaceUpdate reason and for the
// Machine to carry the same condition.
func (w *world) waitNodeReason(machine, node, reason string) {
	w.t.Helper()
	require.Eventually(w.t, func() bool { return inplace.Reason(w.node(node)) == reason }, waitLong, 20*time.Millisecond,
		"node %s never had InPlaceUpdate reason %s; conditions %+v", node, reason, w.node(node).Status.Conditions)
	w.eventually(machine, waitLong, "condition reason "+reason+" copied", func(m *v1alpha1.Machine) bool {
		for _, c := range m.Status.Conditions {
			if c.Type == v1alpha1.NodeInPlaceUpdate {
				return c.Reason == reason
			}
		}
		return false
	})
}

// inPlaceWorld starts a controller and one Running machine "m1" with a pod
// on its node, and makes the node a candidate and selects it: the machine
// drains it and enters InPlaceUpdating.
func inPlaceWorld(t *testing.T, env *testenv.Env, mutate ...func(*v1alpha1.Machine)) *world {
	w := newWorld(t, env, env, inmemory.Options{})
	w.class("small", nil)
	w.start()
	w.machine("m1", "small", mutate...)
	w.waitPhase("m1", v1alpha1.MachineRunning, waitLong)
	runningPod(t, w.ctx, env.Client, w.ns, "app", "m1", nil)

	setNodeLabels(t, w, "m1", v1alpha1.LabelKeyNodeCandidateForUpdate, "true")
	w.waitNodeReason("m1", "m1", v1alpha1.CandidateForUpdate)
	assert.Equal(t, v1alpha1.MachineRunning, w.get("m1").Status.CurrentStatus.Phase, "a candidate is not touched")
	assert.False(t, w.node("m1").Spec.Unschedulable)

	setNodeLabels(t, w, "m1", v1alpha1.LabelKeyNodeSelectedForUpdate, "true")
	m := w.waitPhase("m1", v1alpha1.MachineInPlaceUpdating, waitLong)
	w.waitNodeReason("m1", "m1", v1alpha1.ReadyForUpdate)
	assert.Equal(t, v1alpha1.MachineOperationInPlaceUpdate, m.Status.LastOperation.Type)
	assert.Equal(t, v1alpha1.MachineStateProcessing, m.Status.LastOperation.State)
	assert.True(t, w.node("m1").Spec.Unschedulable, "the drain cordoned the node")
	// The go signal comes only after the drain: the pod is gone.
	err := env.Client.Get(w.ctx, client.ObjectKey{Namespace: w.ns, Name: "app"}, &corev1.Pod{})
	assert.True(t, apierrors.IsNotFound(err), "pod still there after the drain: %v", err)
	// The kubelet's own conditions are untouched by the condition patch.
	ready := false
	for _, c := range w.node("m1").Status.Conditions {
		ready = ready || (c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue)
	}
	assert.True(t, ready, "the node's Ready condition was lost")
	// The pod took more than one drain pass: the selection has its event.
	w.waitEvent("m1", corev1.EventTypeNormal, reasonInPlaceSelected)
	w.waitEvent("m1", corev1.EventTypeNormal, reasonInPlaceReady)
	return w
}

func testInPlaceSuccessful(t *testing.T, env *testenv.Env) {
	// A health timeout of 1s: were it applied in InPlaceUpdating, the
	// node's reboot below would fail the machine.
	w := inPlaceWorld(t, env, func(m *v1alpha1.Machine) {
		m.Spec.MachineConfiguration = &v1alpha1.MachineConfiguration{MachineHealthTimeout: &v1alpha1.Duration{Duration: time.Second}}
	})
	since := w.get("m1").Status.CurrentStatus.LastUpdateTime

	// The agent reboots the node to apply the update.
	setNodeCondition(t, w.ctx, env.Client, "m1", corev1.NodeReady, corev1.ConditionFalse)
	w.eventually("m1", waitLong, "the NotReady node seen by the machine", func(m *v1alpha1.Machine) bool {
		for _, c := range m.Status.Conditions {
			if c.Type == corev1.NodeReady {
				return c.Status == corev1.ConditionFalse
			}
		}
		return false
	})
	m := w.get("m1")
	assert.Equal(t, v1alpha1.MachineInPlaceUpdating, m.Status.CurrentStatus.Phase, "no health check in InPlaceUpdating")
	assert.Equal(t, since, m.Status.CurrentStatus.LastUpdateTime)
	setNodeCondition(t, w.ctx, env.Client, "m1", corev1.NodeReady, corev1.ConditionTrue)

	setNodeLabels(t, w, "m1", v1alpha1.LabelKeyNodeUpdateResult, v1alpha1.LabelValueNodeUpdateSuccessful)
	m = w.waitPhase("m1", v1alpha1.MachineInPlaceUpdateSuccessful, waitLong)
	w.waitNodeReason("m1", "m1", v1alpha1.UpdateSuccessful)
	assert.Equal(t, v1alpha1.MachineStateSuccessful, m.Status.LastOperation.State)
	w.waitEvent("m1", corev1.EventTypeNormal, reasonInPlaceUpdated)

	// The rollout moves the machine and cleans the node up: Running.
	setNodeLabels(t, w, "m1", v1alpha1.LabelKeyNodeCandidateForUpdate, "", v1alpha1.LabelKeyNodeSelectedForUpdate, "", v1alpha1.LabelKeyNodeUpdateResult, "")
	m = w.waitPhase("m1", v1alpha1.MachineRunning, waitLong)
	assert.Equal(t, v1alpha1.MachineOperationHealthCheck, m.Status.LastOperation.Type)
	assert.Equal(t, v1alpha1.UpdateSuccessful, inplace.Reason(w.node("m1")), "the last update's condition stays")
	phases := w.rec.phasesOf("m1")
	assert.NotContains(t, phases, string(v1alpha1.MachineUnknown))
	assert.NotContains(t, phases, string(v1alpha1.MachineFailed))

	// A second rollout starts over from the stale UpdateSuccessful.
	setNodeLabels(t, w, "m1", v1alpha1.LabelKeyNodeCandidateForUpdate, "true")
	w.waitNodeReason("m1", "m1", v1alpha1.CandidateForUpdate)
}

func testInPlaceFailed(t *testing.T, env *testenv.Env) {
	w := inPlaceWorld(t, env)
	patchNodeMeta(t, w, "m1", map[string]any{
		"labels":      map[string]any{v1alpha1.LabelKeyNodeUpdateResult: v1alpha1.LabelValueNodeUpdateFailed},
		"annotations": map[string]any{v1alpha1.AnnotationKeyMachineUpdateFailedReason: "kubelet did not start"},
	})
	m := w.waitPhase("m1", v1alpha1.MachineInPlaceUpdateFailed, waitLong)
	w.waitNodeReason("m1", "m1", v1alpha1.UpdateFailed)
	assert.Contains(t, m.Status.LastOperation.Description, "kubelet did not start")
	assert.Equal(t, v1alpha1.MachineStateFailed, m.Status.LastOperation.State)
	assert.Contains(t, w.waitEvent("m1", corev1.EventTypeWarning, reasonInPlaceFailed), "kubelet did not start")

	// The agent retries and succeeds.
	setNodeLabels(t, w, "m1", v1alpha1.LabelKeyNodeUpdateResult, v1alpha1.LabelValueNodeUpdateSuccessful)
	w.waitPhase("m1", v1alpha1.MachineInPlaceUpdateSuccessful, waitLong)
}

func testInPlaceTimeout(t *testing.T, env *testenv.Env) {
	w := inPlaceWorld(t, env, func(m *v1alpha1.Machine) {
		m.Spec.MachineConfiguration = &v1alpha1.MachineConfiguration{MachineInPlaceUpdateTimeout: &v1alpha1.Duration{Duration: 2 * time.Second}}
	})
	entered := w.get("m1").Status.CurrentStatus.LastUpdateTime.Time
	m := w.waitPhase("m1", v1alpha1.MachineInPlaceUpdateFailed, waitLong)
	assert.Contains(t, m.Status.LastOperation.Description, "timed out after 2s")
	// Not before the timeout (lastUpdateTime has second precision).
	assert.False(t, m.Status.CurrentStatus.LastUpdateTime.Time.Before(entered.Add(time.Second)),
		"failed at %s, entered at %s", m.Status.CurrentStatus.LastUpdateTime, entered)
	// The node's condition stays ReadyForUpdate: a late agent may still
	// report, as in MCM.
	assert.Equal(t, v1alpha1.ReadyForUpdate, inplace.Reason(w.node("m1")))
	setNodeLabels(t, w, "m1", v1alpha1.LabelKeyNodeUpdateResult, v1alpha1.LabelValueNodeUpdateSuccessful)
	w.waitPhase("m1", v1alpha1.MachineInPlaceUpdateSuccessful, waitLong)
}

func testInPlaceCancelled(t *testing.T, env *testenv.Env) {
	w := inPlaceWorld(t, env)
	setNodeLabels(t, w, "m1", v1alpha1.LabelKeyNodeCandidateForUpdate, "", v1alpha1.LabelKeyNodeSelectedForUpdate, "")
	m := w.waitPhase("m1", v1alpha1.MachineRunning, waitLong)
	c := inplace.Condition(w.node("m1"))
	require.NotNil(t, c)
	assert.Equal(t, inplace.ReasonUpdateCancelled, c.Reason)
	assert.Equal(t, corev1.ConditionFalse, c.Status)
	assert.True(t, strings.Contains(m.Status.LastOperation.Description, "cancelled"), m.Status.LastOperation.Description)
}
