package manager

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/internal/inplace"
	"github.com/machina-io/machina/core/testenv"
)

// stepPoll is how often a restart step's state is looked for: the later
// steps last only a few reconciles, which a 100ms poll would often miss.
const stepPoll = 5 * time.Millisecond

// restartStep is one step of a node's in-place sequence at which the
// manager is stopped and a new one started.
type restartStep struct {
	name string
	// holdAgent keeps the agent from answering until the step is reached,
	// so that the steps before its answer stay observable.
	holdAgent bool
	// reached tells whether the rollout is at the step (looked at every
	// stepPoll while the first manager runs).
	reached func(w *ipWorld) bool
	// agentWhileDown lets the agent answer while no manager runs, and waits
	// for its answer before the new manager starts; otherwise a held agent
	// is let go only once the new manager runs.
	agentWhileDown bool
	// whileDown, when set, changes the objects while no manager runs.
	whileDown func(w *ipWorld)
}

// TestInPlaceRestartAtEveryStep stops the manager at each step of the
// first node's in-place update (two machines, maxUnavailable 1) and starts
// a new one: the rollout completes as an uninterrupted one does, with no
// VM created or deleted, each node applied once, the machines' names kept
// and never more than one machine in place at once.
func TestInPlaceRestartAtEveryStep(t *testing.T) {
	logTo(t)
	env := testenv.Start(t)
	steps := []restartStep{
		{name: "candidate marked", holdAgent: true, reached: func(w *ipWorld) bool {
			return w.anyNode(inplace.IsCandidate)
		}},
		{name: "selected", holdAgent: true, reached: func(w *ipWorld) bool {
			return w.anyNode(inplace.IsSelected)
		}},
		{name: "ReadyForUpdate written, agent answers while down", holdAgent: true, agentWhileDown: true, reached: func(w *ipWorld) bool {
			return w.anyNodeReason(v1alpha1.ReadyForUpdate)
		}},
		{name: "ReadyForUpdate written, InPlaceUpdating not, agent answers while down", holdAgent: true, agentWhileDown: true, reached: func(w *ipWorld) bool {
			return w.anyMachinePhase(v1alpha1.MachineInPlaceUpdating)
		}, whileDown: func(w *ipWorld) {
			// As a manager stopped between the Node's write of the go
			// signal and the Machine's of its phase leaves them.
			for _, m := range w.machineList() {
				if m.Status.CurrentStatus.Phase == v1alpha1.MachineInPlaceUpdating {
					m.Status.CurrentStatus.Phase = v1alpha1.MachineRunning
					require.NoError(w.t, w.env.Client.Status().Update(w.ctx, &m))
				}
			}
		}},
		{name: "InPlaceUpdating, agent answers after the restart", holdAgent: true, reached: func(w *ipWorld) bool {
			return w.anyMachinePhase(v1alpha1.MachineInPlaceUpdating)
		}},
		{name: "agent reported successful", reached: func(w *ipWorld) bool {
			return w.anyMachinePhase(v1alpha1.MachineInPlaceUpdateSuccessful)
		}},
		{name: "moved to the new set", reached: func(w *ipWorld) bool {
			return w.movedToNewSet() > 0
		}},
		{name: "clean-up of labels and taints", reached: func(w *ipWorld) bool {
			return w.cleanedUp() > 0
		}},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) { testRestartAt(t, env, s) })
	}
}

func testRestartAt(t *testing.T, env *testenv.Env, s restartStep) {
	w := newIPWorld(t, env)
	d := w.deployment("web", 2, v1alpha1.OrchestrationTypeAuto, intstr.FromInt32(1))
	w.waitMachines(2, v1alpha1.MachineRunning)
	vms := w.vmIDs()
	var names []string
	for _, m := range w.machineList() {
		names = append(names, m.Name)
	}
	creates := w.mem.Calls("CreateMachine")

	w.setAgentPaused(s.holdAgent)
	w.changeTemplate(d, "class-v2")
	require.Eventually(t, func() bool { return s.reached(w) }, waitFor, stepPoll,
		"step %q never reached: %s", s.name, w.describe())
	w.stop()
	// The steps after the agent's answer last a few reconciles, and the
	// manager may have gone past one before it stopped: say where it
	// really stopped.
	if !s.reached(w) {
		t.Logf("the rollout went past %q before the manager stopped", s.name)
	}
	t.Logf("manager stopped at %q: %s", s.name, w.describe())
	if s.whileDown != nil {
		s.whileDown(w)
	}
	if s.agentWhileDown {
		w.setAgentPaused(false)
		require.Eventually(t, func() bool {
			return w.anyNode(func(n *corev1.Node) bool { return inplace.Result(n) == v1alpha1.LabelValueNodeUpdateSuccessful })
		}, waitFor, tick, "the agent did not answer while the manager was down")
	}
	w.startManager()
	w.setAgentPaused(false)
	newSet := w.waitRolledOut(d, 2*waitFor)

	assert.Equal(t, vms, w.vmIDs(), "no VM created or deleted")
	assert.Equal(t, creates, w.mem.Calls("CreateMachine"), "no CreateMachine call")
	assert.Zero(t, w.mem.Calls("DeleteMachine"))
	var after []string
	for _, m := range w.machineList() {
		after = append(after, m.Name)
	}
	assert.ElementsMatch(t, names, after, "the machines keep their names")
	for _, n := range w.nodes() {
		assert.Equal(t, newSet.Name, n.Annotations[v1alpha1.AnnotationKeyNodeCurrent], "node %s", n.Name)
		assert.Equal(t, v1alpha1.UpdateSuccessful, inplace.Reason(&n), "node %s", n.Name)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	assert.Len(t, w.selectedEver, 2, "every node was selected")
	assert.Len(t, w.applied, 2, "every node was applied")
	for node, n := range w.applied {
		assert.Equal(t, 1, n, "node %s applied %d times", node, n)
	}
	assert.LessOrEqual(t, w.maxUnavailable, 1, "more machines in place at once than maxUnavailable allows")
}

func (w *ipWorld) anyNode(f func(*corev1.Node) bool) bool {
	for _, n := range w.nodes() {
		if f(&n) {
			return true
		}
	}
	return false
}

func (w *ipWorld) anyNodeReason(reason string) bool {
	return w.anyNode(func(n *corev1.Node) bool { return inplace.Reason(n) == reason })
}

func (w *ipWorld) anyMachinePhase(phase v1alpha1.MachinePhase) bool {
	for _, m := range w.machineList() {
		if m.Status.CurrentStatus.Phase == phase {
			return true
		}
	}
	return false
}

// movedToNewSet counts the machines owned by the set of class-v2.
func (w *ipWorld) movedToNewSet() int {
	newSet := ""
	for _, ms := range w.setList() {
		if ms.Spec.Template.Spec.Class.Name == "class-v2" {
			newSet = ms.Name
		}
	}
	n := 0
	for _, m := range w.machineList() {
		if ref := metav1.GetControllerOf(&m); ref != nil && newSet != "" && ref.Name == newSet {
			n++
		}
	}
	return n
}

// cleanedUp counts the nodes whose update ended and whose rollout marks
// (labels, annotations, taint) are gone.
func (w *ipWorld) cleanedUp() int {
	n := 0
	for _, node := range w.nodes() {
		if inplace.Reason(&node) == v1alpha1.UpdateSuccessful && !inplace.HasRolloutMarks(&node) && !node.Spec.Unschedulable {
			n++
		}
	}
	return n
}
