package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	machinaio "github.com/machina-io/machina/core/api/machina/v1alpha1"
	"github.com/machina-io/machina/core/api/v1alpha1"
)

// testDrainRules: the MachineDrainRules that select a machine being deleted
// show in `why` (the pod the drain waits for, and which rule says so) and
// in `drain --dry-run` (the order, the pods waited for, the pods left); a
// rule with a selector that does not parse is named instead.
func (p *plugin) testDrainRules(t *testing.T) {
	const ns, node = "rules", "rules-node"
	p.namespace(t, ns)
	m := p.machine(t, ns, "web-1", nil, node, nil, nil)
	m.Labels["pool"] = "web"
	require.NoError(t, p.c.Update(t.Context(), m))
	p.node(t, node, corev1.ConditionTrue, m.CreationTimestamp.Time)
	for _, app := range []string{"web", "job", "db", "logs"} {
		require.NoError(t, p.c.Create(t.Context(), &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: app + "-1", Labels: map[string]string{"app": app}},
			Spec:       corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Image: "example.invalid/c"}}},
		}))
	}
	rule := func(name string, behavior machinaio.DrainBehavior, order *int32, app string, mutate ...func(*machinaio.MachineDrainRule)) {
		r := &machinaio.MachineDrainRule{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: machinaio.MachineDrainRuleSpec{
				Drain: machinaio.MachineDrainRuleDrain{Behavior: behavior, Order: order},
				Pods:  []machinaio.MachineDrainRulePodSelector{{Selector: &machinaio.LabelSelector{MatchLabels: map[string]string{"app": app}}}},
			},
		}
		for _, f := range mutate {
			f(r)
		}
		require.NoError(t, p.c.Create(t.Context(), r))
	}
	rule("wait-jobs", machinaio.DrainBehaviorWaitCompleted, nil, "job")
	rule("db-last", machinaio.DrainBehaviorDrain, ptr.To[int32](10), "db")
	rule("keep-logs", machinaio.DrainBehaviorSkip, nil, "logs")
	rule("keep-web-on-db", machinaio.DrainBehaviorSkip, nil, "web", func(r *machinaio.MachineDrainRule) {
		r.Spec.Machines = []machinaio.MachineDrainRuleMachineSelector{{Selector: machinaio.LabelSelector{MatchLabels: map[string]string{"pool": "db"}}}}
	})

	m.Finalizers = []string{v1alpha1.MachineFinalizer}
	require.NoError(t, p.c.Update(t.Context(), m))
	require.NoError(t, p.c.Delete(t.Context(), m))
	require.NoError(t, p.c.Get(t.Context(), client.ObjectKeyFromObject(m), m))
	deleted := m.DeletionTimestamp.Time
	m.Status.CurrentStatus = v1alpha1.CurrentStatus{Phase: v1alpha1.MachineTerminating, LastUpdateTime: metav1.NewTime(deleted)}
	m.Status.DeletionStep = v1alpha1.DeletionStepDrain
	require.NoError(t, p.c.Status().Update(t.Context(), m))
	t.Cleanup(func() {
		m.Finalizers = nil
		_ = p.c.Update(t.Context(), m)
	})

	out, err := p.run(t, deleted.Add(time.Minute), ns, "why", m.Name)
	require.NoError(t, err)
	require.Contains(t, out, "pod rules/job-1 to complete: MachineDrainRule wait-jobs says the drain waits for it and does not evict it (drain timeout in 1h59m, then forced)")

	out, err = p.run(t, deleted.Add(time.Minute), ns, "drain", "--dry-run", node)
	require.NoError(t, err)
	golden(t, "drain-rules", out)

	// A selector the schema lets through but that does not parse.
	rule("broken", machinaio.DrainBehaviorSkip, nil, "x", func(r *machinaio.MachineDrainRule) {
		r.Spec.Pods[0].Selector.MatchLabels = map[string]string{"app!": "x"}
	})
	out, err = p.run(t, deleted.Add(time.Minute), ns, "why", m.Name)
	require.NoError(t, err)
	require.Contains(t, out, "a fix of the MachineDrainRules: the drain of Node rules-node stops on MachineDrainRule broken: spec.pods[0].selector")
	_, err = p.run(t, deleted.Add(time.Minute), ns, "drain", "--dry-run", node)
	require.ErrorContains(t, err, "MachineDrainRule broken: spec.pods[0].selector")
}
