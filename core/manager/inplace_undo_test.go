package manager

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/internal/inplace"
	"github.com/machina-io/machina/core/testenv"
)

// An undo of an in-place rollout whose agents cannot apply the old
// template (issue 32): the deployment says at once that the rollout
// failed and on which machines, the node says why it is cordoned, and the
// rollout ends with every failed machine replaced (Auto) or, in Manual,
// left cordoned with the reason until the user deletes it.
func TestInPlaceUndoAgentsFail(t *testing.T) {
	logTo(t)
	env := testenv.Start(t)
	t.Run("Auto: failed machines are replaced at once", func(t *testing.T) { testInPlaceUndoFailsAuto(t, env) })
	t.Run("Manual: the failed node stays cordoned and says why", func(t *testing.T) { testInPlaceUndoFailsManual(t, env) })
}

// undoWithFailingAgents rolls d from class-v1 to class-v2 in place, then
// makes every agent fail any target but the class-v2 set and undoes the
// rollout. It returns the machines as they were before the undo.
func (w *ipWorld) undoWithFailingAgents(d *v1alpha1.MachineDeployment) []v1alpha1.Machine {
	w.t.Helper()
	w.changeTemplate(d, "class-v2")
	v2 := w.waitRolledOut(d, 2*waitFor)
	before := w.machineList()
	w.setAnswer(func(name string) string {
		n := &corev1.Node{}
		if w.env.Client.Get(w.ctx, client.ObjectKey{Name: name}, n) != nil {
			return ""
		}
		if n.Annotations[v1alpha1.AnnotationKeyNodeDesired] == v2.Name {
			return v1alpha1.LabelValueNodeUpdateSuccessful
		}
		return v1alpha1.LabelValueNodeUpdateFailed
	})
	w.rollBack(d)
	return before
}

// progressing returns the deployment's Progressing condition, never nil.
func (w *ipWorld) progressing(d *v1alpha1.MachineDeployment) v1alpha1.MachineDeploymentCondition {
	if c := mdCondition(w.getDeployment(d), v1alpha1.MachineDeploymentProgressing); c != nil {
		return *c
	}
	return v1alpha1.MachineDeploymentCondition{}
}

func testInPlaceUndoFailsAuto(t *testing.T, env *testenv.Env) {
	w := newIPWorld(t, env)
	d := w.deployment("web", 2, v1alpha1.OrchestrationTypeAuto, intstr.FromInt32(1))
	w.waitMachines(2, v1alpha1.MachineRunning)
	before := w.undoWithFailingAgents(d)

	// The deployment says the rollout failed, naming a machine and the
	// agent's reason, instead of "successfully progressed".
	w.eventually(func() bool {
		c := w.progressing(d)
		if c.Status != v1alpha1.ConditionFalse || c.Reason != "InPlaceUpdateFailed" || !strings.Contains(c.Message, "simulated failure") {
			return false
		}
		for _, m := range before {
			if strings.Contains(c.Message, "machine "+m.Name) {
				return true
			}
		}
		return false
	}, waitFor, "Progressing never said InPlaceUpdateFailed with the machine and the reason")

	// The rollout ends: every machine of class-v1, Running, on an
	// uncordoned node without marks (waitRolledOut checks those); the
	// machines whose update failed were replaced by fresh ones.
	w.waitRolledOut(d, 3*waitFor)
	after := map[string]bool{}
	for _, m := range w.machineList() {
		after[m.Name] = true
	}
	for _, m := range before {
		assert.False(t, after[m.Name], "machine %s failed its update and was not replaced", m.Name)
	}
	assert.Equal(t, 2, w.mem.Calls("DeleteMachine"), "the VMs of both failed machines deleted")
	c := w.progressing(d)
	assert.Equal(t, v1alpha1.ConditionTrue, c.Status, "complete: %+v", c)
	assert.Equal(t, "NewMachineSetAvailable", c.Reason)

	events := &corev1.EventList{}
	require.NoError(t, env.Client.List(w.ctx, events, client.InNamespace(w.ns)))
	replaced := 0
	for _, e := range events.Items {
		if e.Reason == "ReplacingFailedInPlaceUpdate" && strings.Contains(e.Message, "simulated failure") {
			replaced++
		}
	}
	assert.GreaterOrEqual(t, replaced, 2, "a ReplacingFailedInPlaceUpdate event per failed machine")
}

func testInPlaceUndoFailsManual(t *testing.T, env *testenv.Env) {
	w := newIPWorld(t, env)
	d := w.deployment("web", 1, v1alpha1.OrchestrationTypeManual, intstr.FromInt32(1))
	w.waitMachines(1, v1alpha1.MachineRunning)
	node := w.machineList()[0].Labels[v1alpha1.NodeLabelKey]
	// Manual: the user selects the node for the rollout and for the undo.
	w.changeTemplate(d, "class-v2")
	require.Eventually(t, func() bool { return len(w.nodes()) == 1 && inplace.IsCandidate(&w.nodes()[0]) }, waitFor, tick)
	setNodeLabel(t, w, node, v1alpha1.LabelKeyNodeSelectedForUpdate, "true")
	before := w.undoWithFailingAgents(d)
	require.Len(t, before, 1)
	require.Eventually(t, func() bool {
		n := w.nodes()
		return len(n) == 1 && inplace.IsCandidate(&n[0]) && n[0].Annotations[v1alpha1.AnnotationKeyNodeDesired] != ""
	}, waitFor, tick)
	setNodeLabel(t, w, node, v1alpha1.LabelKeyNodeSelectedForUpdate, "true")

	// The node is cordoned and its condition says why; the deployment names
	// the machine and what the user can do.
	w.eventually(func() bool {
		n := w.nodes()
		if len(n) != 1 || !n[0].Spec.Unschedulable {
			return false
		}
		c := inplace.Condition(&n[0])
		return c != nil && c.Reason == v1alpha1.UpdateFailed && strings.Contains(c.Message, "simulated failure") &&
			strings.Contains(c.Message, "stays cordoned")
	}, waitFor, "the cordoned node's condition never said why")
	w.eventually(func() bool {
		c := w.progressing(d)
		return c.Status == v1alpha1.ConditionFalse && c.Reason == "InPlaceUpdateFailed" &&
			strings.Contains(c.Message, "machine "+before[0].Name) && strings.Contains(c.Message, "left for the user")
	}, waitFor, "Progressing never said the machine is left for the user")

	// The user deletes the machine: a fresh one of the template takes its
	// place and the rollout completes.
	require.NoError(t, env.Client.Delete(w.ctx, &before[0]))
	w.waitRolledOut(d, 3*waitFor)
	for _, m := range w.machineList() {
		assert.NotEqual(t, before[0].Name, m.Name)
	}
}
