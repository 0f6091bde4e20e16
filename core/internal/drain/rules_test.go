package drain

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	machinaio "github.com/machina-io/machina/core/api/machina/v1alpha1"
	"github.com/machina-io/machina/core/drainorder"
)

// drainRule is a MachineDrainRule for the pods labelled app=<app>.
func drainRule(name string, behavior machinaio.DrainBehavior, order *int32, app string) machinaio.MachineDrainRule {
	return machinaio.MachineDrainRule{
		ObjectMeta: metav1.ObjectMeta{Namespace: "machines", Name: name},
		Spec: machinaio.MachineDrainRuleSpec{
			Drain: machinaio.MachineDrainRuleDrain{Behavior: behavior, Order: order},
			Pods:  []machinaio.MachineDrainRulePodSelector{{Selector: &machinaio.LabelSelector{MatchLabels: map[string]string{"app": app}}}},
		},
	}
}

func rulesFor(t *testing.T, machineLabels map[string]string, rules ...machinaio.MachineDrainRule) *drainorder.Rules {
	r, err := drainorder.ForMachine(rules, machineLabels)
	require.NoError(t, err)
	return r
}

// terminatingOf lists which of the pods are being deleted.
func (c *cluster) terminatingOf(ns string, names ...string) []string {
	var out []string
	for _, n := range names {
		if c.podState(ns, n) == "terminating" {
			out = append(out, n)
		}
	}
	return out
}

func (c *cluster) setPhase(ns, name string, phase corev1.PodPhase) {
	p, err := c.cs.CoreV1().Pods(ns).Get(c.ctx(), name, metav1.GetOptions{})
	require.NoError(c.t, err)
	p.Status.Phase = phase
	_, err = c.cs.CoreV1().Pods(ns).UpdateStatus(c.ctx(), p, metav1.UpdateOptions{})
	require.NoError(c.t, err)
}

func TestDrainRules(t *testing.T) {
	c := startCluster(t)
	d := New(c.cs)

	t.Run("Skip leaves the pods a rule or a drain label selects", func(t *testing.T) {
		c.t = t
		const ns, node = "rule-skip", "node-rule-skip"
		c.namespace(ns)
		c.node(node)
		c.pod(ns, "web-1", node, ownedBy("ReplicaSet", "web"), labelled("app", "web"))
		c.pod(ns, "logs-1", node, ownedBy("ReplicaSet", "logs"), labelled("app", "logs"))
		c.pod(ns, "agent-1", node, ownedBy("ReplicaSet", "agent"), labelled(machinaio.PodDrainLabel, "skip"))
		rules := rulesFor(t, nil, drainRule("keep-logs", machinaio.DrainBehaviorSkip, nil, "logs"))

		res, err := d.Pass(c.ctx(), node, Options{Rules: rules})
		require.NoError(t, err)
		assert.Equal(t, 1, res.Evicted, res.Summary())
		assert.Equal(t, map[string]string{ns + "/logs-1": "MachineDrainRule keep-logs"}, res.Skipped,
			"the labelled pod is left by kubectl's filters already, the rule's here")
		assert.Equal(t, []string{"web-1"}, c.terminatingOf(ns, "web-1", "logs-1", "agent-1"))

		c.finalizeTerminating(ns)
		res, err = d.Pass(c.ctx(), node, Options{Rules: rules})
		require.NoError(t, err)
		assert.True(t, res.Drained(), res.Summary())
		assert.Equal(t, "running", c.podState(ns, "logs-1"))
		assert.Equal(t, "running", c.podState(ns, "agent-1"))
	})

	t.Run("WaitCompleted holds the drain until the pod has completed", func(t *testing.T) {
		c.t = t
		const ns, node = "rule-wait", "node-rule-wait"
		c.namespace(ns)
		c.node(node)
		c.pod(ns, "web-1", node, ownedBy("ReplicaSet", "web"), labelled("app", "web"))
		c.pod(ns, "job-1", node, ownedBy("Job", "job"), labelled("app", "job"))
		c.pod(ns, "batch-1", node, ownedBy("Job", "batch"), labelled(machinaio.ClusterAPIPodDrainLabel, "wait-completed"))
		c.pod(ns, "db-1", node, ownedBy("StatefulSet", "db"), labelled("app", "db"))
		rules := rulesFor(t, nil,
			drainRule("wait-jobs", machinaio.DrainBehaviorWaitCompleted, nil, "job"),
			drainRule("db-last", machinaio.DrainBehaviorDrain, ptr.To[int32](1), "db"))

		res, err := d.Pass(c.ctx(), node, Options{Rules: rules})
		require.NoError(t, err)
		assert.Equal(t, []string{"web-1"}, c.terminatingOf(ns, "web-1", "job-1", "batch-1", "db-1"), res.Summary())
		assert.Equal(t, map[string]string{
			ns + "/job-1":   "MachineDrainRule wait-jobs",
			ns + "/batch-1": "label " + machinaio.ClusterAPIPodDrainLabel + "=wait-completed",
		}, res.WaitCompleted)
		assert.Contains(t, res.Summary(), "waiting for pod "+ns+"/batch-1 (label cluster.x-k8s.io/drain=wait-completed), pod "+ns+"/job-1 (MachineDrainRule wait-jobs) to complete, not evicted")
		assert.Equal(t, 1, res.HeldByOrder, "db-1 (order 1) waits for the waited-for pods of order 0")

		// web-1 is gone; the drain still waits, and evicts nothing more.
		c.finalizeTerminating(ns)
		res, err = d.Pass(c.ctx(), node, Options{Rules: rules})
		require.NoError(t, err)
		assert.False(t, res.Drained(), res.Summary())
		assert.Equal(t, 3, res.Remaining, res.Summary())
		assert.Zero(t, res.Evicted)
		assert.Empty(t, c.terminatingOf(ns, "job-1", "batch-1", "db-1"))

		// One job completes, the other is deleted by its owner: only then
		// the next order goes.
		c.setPhase(ns, "job-1", corev1.PodSucceeded)
		res, err = d.Pass(c.ctx(), node, Options{Rules: rules})
		require.NoError(t, err)
		assert.Equal(t, map[string]string{ns + "/batch-1": "label " + machinaio.ClusterAPIPodDrainLabel + "=wait-completed"}, res.WaitCompleted)
		assert.Empty(t, c.terminatingOf(ns, "db-1"), "the next order waits for batch-1")
		require.NoError(t, c.cs.CoreV1().Pods(ns).Delete(c.ctx(), "batch-1", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}))

		res, err = d.Pass(c.ctx(), node, Options{Rules: rules})
		require.NoError(t, err)
		assert.Empty(t, res.WaitCompleted)
		assert.Equal(t, []string{"db-1"}, c.terminatingOf(ns, "db-1"), res.Summary())
		c.finalizeTerminating(ns)
		res, err = d.Pass(c.ctx(), node, Options{Rules: rules})
		require.NoError(t, err)
		assert.True(t, res.Drained(), res.Summary())
		assert.Equal(t, "running", c.podState(ns, "job-1"), "a completed pod is never evicted")
	})

	t.Run("a drain label on the pod wins over the rules", func(t *testing.T) {
		c.t = t
		const ns, node = "rule-label", "node-rule-label"
		c.namespace(ns)
		c.node(node)
		c.pod(ns, "logs-1", node, ownedBy("ReplicaSet", "logs"), func(p *corev1.Pod) {
			p.Labels = map[string]string{"app": "logs", machinaio.PodDrainLabel: "WaitCompleted"}
		})
		rules := rulesFor(t, nil, drainRule("keep-logs", machinaio.DrainBehaviorSkip, nil, "logs"))
		res, err := d.Pass(c.ctx(), node, Options{Rules: rules})
		require.NoError(t, err)
		assert.Equal(t, map[string]string{ns + "/logs-1": "label " + machinaio.PodDrainLabel + "=WaitCompleted"}, res.WaitCompleted)
		assert.Empty(t, res.Skipped)
		assert.False(t, res.Drained())
	})

	t.Run("orders are evicted lowest first, critical pods last within an order", func(t *testing.T) {
		c.t = t
		const ns, node = "rule-order", "node-rule-order"
		c.namespace(ns)
		c.node(node)
		all := []string{"web-1", "cache-1", "db-1", "dns-1", "web-2"}
		c.pod(ns, "web-1", node, ownedBy("ReplicaSet", "web"), labelled("app", "web"))
		c.pod(ns, "web-2", node, ownedBy("ReplicaSet", "web"), labelled("app", "web"))
		c.pod(ns, "cache-1", node, ownedBy("ReplicaSet", "cache"), labelled("app", "cache"))
		c.pod(ns, "db-1", node, ownedBy("StatefulSet", "db"), labelled("app", "db"))
		c.pod(ns, "dns-1", node, ownedBy("ReplicaSet", "dns"), labelled("app", "dns"), priorityClass("system-cluster-critical"))
		rules := rulesFor(t, nil,
			// Two rules select db-1: the first by name decides.
			drainRule("zz-skip-db", machinaio.DrainBehaviorSkip, nil, "db"),
			drainRule("db-last", machinaio.DrainBehaviorDrain, ptr.To[int32](10), "db"),
			drainRule("cache-first", machinaio.DrainBehaviorDrain, ptr.To[int32](-5), "cache"))

		// Each pass evicts one stage; the next pass evicts nothing until
		// the stage's pods are gone.
		var evicted [][]string
		for range 6 {
			res, err := d.Pass(c.ctx(), node, Options{Rules: rules})
			require.NoError(t, err)
			if res.Drained() {
				break
			}
			stage := c.terminatingOf(ns, all...)
			again, err := d.Pass(c.ctx(), node, Options{Rules: rules})
			require.NoError(t, err)
			assert.Zero(t, again.Evicted, "nothing more is evicted while %v terminate", stage)
			evicted = append(evicted, stage)
			if len(evicted) == 1 {
				assert.Equal(t, 4, res.HeldByOrder, res.Summary())
				assert.Contains(t, res.Summary(), "4 pods of a higher drain order wait for the lower orders to go")
			}
			c.finalizeTerminating(ns)
		}
		assert.Equal(t, [][]string{{"cache-1"}, {"web-1", "web-2"}, {"dns-1"}, {"db-1"}}, evicted)
	})

	t.Run("a rule whose machine selector does not match is ignored", func(t *testing.T) {
		c.t = t
		const ns, node = "rule-machine", "node-rule-machine"
		c.namespace(ns)
		c.node(node)
		c.pod(ns, "web-1", node, ownedBy("ReplicaSet", "web"), labelled("app", "web"))
		other := drainRule("keep-web-on-db", machinaio.DrainBehaviorSkip, nil, "web")
		other.Spec.Machines = []machinaio.MachineDrainRuleMachineSelector{{Selector: machinaio.LabelSelector{MatchLabels: map[string]string{"pool": "db"}}}}
		mine := rulesFor(t, map[string]string{"pool": "web"}, other)
		assert.Empty(t, mine.Names())

		res, err := d.Pass(c.ctx(), node, Options{Rules: mine})
		require.NoError(t, err)
		assert.Equal(t, 1, res.Evicted, res.Summary())
		assert.Equal(t, "terminating", c.podState(ns, "web-1"))
		assert.Empty(t, res.Skipped)

		// The same rule on a machine it selects keeps the pod.
		assert.Equal(t, []string{"keep-web-on-db"}, rulesFor(t, map[string]string{"pool": "db"}, other).Names())
	})

	t.Run("namespaceSelector reads the labels of the pod's namespace", func(t *testing.T) {
		c.t = t
		const node = "node-rule-ns"
		c.node(node)
		for ns, team := range map[string]string{"rule-ns-a": "a", "rule-ns-b": "b"} {
			_, err := c.cs.CoreV1().Namespaces().Create(c.ctx(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{"team": team}}}, metav1.CreateOptions{})
			require.NoError(t, err)
			c.pod(ns, "web-1", node, ownedBy("ReplicaSet", "web"), labelled("app", "web"))
		}
		rule := drainRule("keep-team-a", machinaio.DrainBehaviorSkip, nil, "web")
		rule.Spec.Pods[0].NamespaceSelector = &machinaio.LabelSelector{MatchLabels: map[string]string{"team": "a"}}

		res, err := d.Pass(c.ctx(), node, Options{Rules: rulesFor(t, nil, rule)})
		require.NoError(t, err)
		assert.Equal(t, "running", c.podState("rule-ns-a", "web-1"))
		assert.Equal(t, "terminating", c.podState("rule-ns-b", "web-1"), res.Summary())
	})

	t.Run("a selector the API server let through is an error naming the rule", func(t *testing.T) {
		bad := drainRule("broken", machinaio.DrainBehaviorSkip, nil, "web")
		bad.Spec.Pods[0].Selector.MatchLabels = map[string]string{"not a key!": "x"}
		_, err := drainorder.ForMachine([]machinaio.MachineDrainRule{drainRule("fine", machinaio.DrainBehaviorSkip, nil, "db"), bad}, nil)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "MachineDrainRule broken: spec.pods[0].selector")

		bad = drainRule("broken-machines", machinaio.DrainBehaviorSkip, nil, "web")
		bad.Spec.Machines = []machinaio.MachineDrainRuleMachineSelector{{Selector: machinaio.LabelSelector{MatchExpressions: []machinaio.LabelSelectorRequirement{{Key: "pool", Operator: "In"}}}}}
		_, err = drainorder.ForMachine([]machinaio.MachineDrainRule{bad}, nil)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "MachineDrainRule broken-machines: spec.machines[0].selector")
	})

	t.Run("a forced pass deletes the waited-for pods and keeps the skipped ones", func(t *testing.T) {
		c.t = t
		const ns, node = "rule-force", "node-rule-force"
		c.namespace(ns)
		c.node(node)
		c.pod(ns, "job-1", node, ownedBy("Job", "job"), labelled("app", "job"))
		c.pod(ns, "logs-1", node, ownedBy("ReplicaSet", "logs"), labelled("app", "logs"))
		rules := rulesFor(t, nil,
			drainRule("wait-jobs", machinaio.DrainBehaviorWaitCompleted, nil, "job"),
			drainRule("keep-logs", machinaio.DrainBehaviorSkip, nil, "logs"))
		res, err := d.Pass(c.ctx(), node, Options{Rules: rules, Force: true})
		require.NoError(t, err)
		assert.Equal(t, 1, res.Evicted, res.Summary())
		assert.Equal(t, "gone", c.podState(ns, "job-1"))
		assert.Equal(t, "running", c.podState(ns, "logs-1"))
	})
}
