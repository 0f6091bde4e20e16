package machine

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	machinaio "github.com/machina-io/machina/core/api/machina/v1alpha1"
	"github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/testenv"
	"github.com/machina-io/machina/drivers/inmemory"
)

// drainRule creates a MachineDrainRule for the pods labelled app=<app> on
// the machines labelled pool=<pool> (any machine when pool is empty).
func (w *world) drainRule(name string, behavior machinaio.DrainBehavior, app, pool string, mutate ...func(*machinaio.MachineDrainRule)) {
	w.t.Helper()
	r := &machinaio.MachineDrainRule{
		ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: name},
		Spec: machinaio.MachineDrainRuleSpec{
			Drain: machinaio.MachineDrainRuleDrain{Behavior: behavior},
			Pods:  []machinaio.MachineDrainRulePodSelector{{Selector: &machinaio.LabelSelector{MatchLabels: map[string]string{"app": app}}}},
		},
	}
	if pool != "" {
		r.Spec.Machines = []machinaio.MachineDrainRuleMachineSelector{{Selector: machinaio.LabelSelector{MatchLabels: map[string]string{"pool": pool}}}}
	}
	for _, f := range mutate {
		f(r)
	}
	require.NoError(w.t, w.control.Client.Create(w.ctx, r))
}

// The deletion of a machine follows the MachineDrainRules of its
// namespace that select it: a WaitCompleted rule holds the drain, and says
// so in the Drained condition, until its pod has completed; a rule for
// other machines is ignored; a rule whose selector does not parse stops the
// drain of the machines it selects with an error that names it.
func testDeleteWithDrainRules(t *testing.T, env *testenv.Env) {
	w := newWorld(t, env, env, inmemory.Options{})
	w.class("small", nil)
	w.start()
	pool := func(p string) func(*v1alpha1.Machine) {
		return func(m *v1alpha1.Machine) { m.Labels = map[string]string{"pool": p} }
	}
	w.machine("m1", "small", pool("web"))
	w.machine("m2", "small", pool("db"))
	w.waitPhase("m1", v1alpha1.MachineRunning, waitLong)
	w.waitPhase("m2", v1alpha1.MachineRunning, waitLong)
	c := env.Client
	runningPod(t, w.ctx, c, w.ns, "web-1", "m1", map[string]string{"app": "web"})
	runningPod(t, w.ctx, c, w.ns, "job-1", "m1", map[string]string{"app": "job"})
	runningPod(t, w.ctx, c, w.ns, "logs-1", "m1", map[string]string{"app": "logs"})
	runningPod(t, w.ctx, c, w.ns, "db-1", "m2", map[string]string{"app": "db"})
	w.drainRule("wait-jobs", machinaio.DrainBehaviorWaitCompleted, "job", "")
	w.drainRule("keep-logs-on-db", machinaio.DrainBehaviorSkip, "logs", "db")
	w.drainRule("broken", machinaio.DrainBehaviorSkip, "db", "db", func(r *machinaio.MachineDrainRule) {
		// A key the schema does not check, and no label may have.
		r.Spec.Pods[0].Selector.MatchLabels = map[string]string{"app!": "db"}
	})
	pod := func(name string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: name}}
	}

	w.delete("m1")
	m := w.eventually("m1", waitLong, "a drain held by the WaitCompleted rule", func(m *v1alpha1.Machine) bool {
		d := drainedCondition(m)
		return m.Status.DeletionStep == v1alpha1.DeletionStepDrain && d != nil && d.Reason == "Draining" &&
			strings.Contains(d.Message, "1 pods remaining")
	})
	want := "waiting for pod " + w.ns + "/job-1 (MachineDrainRule wait-jobs) to complete, not evicted"
	assert.Contains(t, drainedCondition(m).Message, want)
	assert.Contains(t, m.Status.LastOperation.Description, want)
	assert.Contains(t, w.waitEvent("m1", corev1.EventTypeNormal, reasonDraining), "MachineDrainRule wait-jobs")
	assert.True(t, gone(t, w, c, pod("web-1")))
	assert.True(t, gone(t, w, c, pod("logs-1")), "the rule for pool=db does not apply to m1")
	require.Never(t, func() bool {
		p := pod("job-1")
		return gone(t, w, c, p) || p.DeletionTimestamp != nil || w.get("m1").Status.DeletionStep != v1alpha1.DeletionStepDrain
	}, time.Second, 50*time.Millisecond, "the drain went on, or evicted the pod, while job-1 ran")
	assert.Zero(t, w.mem.Calls(inmemory.MethodDeleteMachine))

	// The job completes: the drain is done and the deletion goes on.
	require.Eventually(t, func() bool {
		p := pod("job-1")
		if err := c.Get(w.ctx, client.ObjectKeyFromObject(p), p); err != nil {
			return false
		}
		p.Status.Phase = corev1.PodSucceeded
		return c.Status().Update(w.ctx, p) == nil
	}, waitLong, 50*time.Millisecond)
	w.waitGone("m1", waitLong)

	// m2 is selected by the broken rule: its drain stops with an error
	// naming the rule, and evicts nothing.
	w.delete("m2")
	m = w.eventually("m2", waitLong, "a drain failed on the broken rule", func(m *v1alpha1.Machine) bool {
		return m.Status.LastOperation.State == v1alpha1.MachineStateFailed &&
			strings.Contains(m.Status.LastOperation.Description, "MachineDrainRule broken: spec.pods[0].selector")
	})
	assert.Contains(t, w.waitEvent("m2", corev1.EventTypeWarning, reasonDrainFailed), "MachineDrainRule broken")
	assert.False(t, gone(t, w, c, pod("db-1")))
	assert.Nil(t, pod("db-1").DeletionTimestamp)
	assert.Equal(t, v1alpha1.DeletionStepDrain, m.Status.DeletionStep)

	// Fixed (removed), the drain goes on.
	require.NoError(t, c.Delete(w.ctx, &machinaio.MachineDrainRule{ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: "broken"}}))
	w.waitGone("m2", waitLong)
}
