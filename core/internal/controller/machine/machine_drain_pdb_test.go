package machine

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/testenv"
	"github.com/machina-io/machina/drivers/inmemory"
)

// A drain that a PodDisruptionBudget blocks holds no worker: with a single
// worker, machine a's drain can never finish (a budget that allows no
// disruption), yet b and c, deleted after it, are drained and deleted
// while a stays at its drain step. A drain that waited inside its
// reconcile would keep the one worker and b and c would never go.
func testDrainBlockedByPDBLeavesWorkersFree(t *testing.T, env *testenv.Env) {
	w := newWorld(t, env, env, inmemory.Options{})
	w.opts.MaxConcurrentReconciles = 1
	w.opts.DrainTimeout = 10 * time.Minute // a's drain is never forced within the test
	w.class("small", nil)
	w.start()
	for _, name := range []string{"a", "b", "c"} {
		w.machine(name, "small")
	}
	for _, name := range []string{"a", "b", "c"} {
		w.waitPhase(name, v1alpha1.MachineRunning, waitLong)
	}
	c := env.Client
	runningPod(t, w.ctx, c, w.ns, "guarded", "a", map[string]string{"app": "guarded"})
	pdb(t, w, c, "guarded", map[string]string{"app": "guarded"})
	runningPod(t, w.ctx, c, w.ns, "web-b", "b", nil)
	runningPod(t, w.ctx, c, w.ns, "web-c", "c", nil)

	w.delete("a")
	w.eventually("a", waitLong, "a drain blocked by the budget", func(m *v1alpha1.Machine) bool {
		c := drainedCondition(m)
		return m.Status.DeletionStep == v1alpha1.DeletionStepDrain && c != nil && c.Status == metav1.ConditionFalse &&
			strings.Contains(c.Message, "1 blocked by a PodDisruptionBudget")
	})

	w.delete("b")
	w.delete("c")
	w.waitGone("b", waitLong)
	w.waitGone("c", waitLong)

	// a is where it was: at the drain, its guarded pod in place, its VM
	// kept; the VMs of b and c are deleted.
	m := w.get("a")
	require.NotNil(t, m, "a is not deleted while its drain is blocked")
	assert.Equal(t, v1alpha1.DeletionStepDrain, m.Status.DeletionStep)
	assert.Equal(t, metav1.ConditionFalse, drainedCondition(m).Status)
	assert.False(t, podTerminating(t, w, c, "guarded"), "the budget keeps the pod")
	assert.Equal(t, 2, w.mem.Calls(inmemory.MethodDeleteMachine), "the VMs of b and c, not a's")
	require.Len(t, w.mem.VMs(), 1)
	assert.Equal(t, "a", w.mem.VMs()[0].Name)
	for _, name := range []string{"b", "c"} {
		w.rec.assertStepsFollow(t, name, allSteps)
		assert.True(t, gone(t, w, c, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}), "node %s", name)
	}

	// Once the budget allows it, a goes too.
	allowDisruptions(t, w, c, "guarded", 1)
	w.waitGone("a", waitLong)
	w.rec.assertStepsFollow(t, "a", allSteps, "Drain")
}
