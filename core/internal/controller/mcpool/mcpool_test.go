package mcpool_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mcv1 "github.com/machina-io/machina/core/api/machineconfiguration/v1"
	"github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/internal/controller/controllertest"
	"github.com/machina-io/machina/core/testenv"
)

// TestPoolRollout runs the pool and drain controllers against a real API
// server. The node agents are played by the test (agentUpdate), step by
// step, so that each test decides when a node finishes; the real agent is
// tested in cmd/machina-node-agent and with the controllers in the e2e
// test of cmd/machina-manager.
func TestPoolRollout(t *testing.T) {
	env := testenv.Start(t)
	c := env.Client
	startControllers(t, env)

	t.Run("maxUnavailable 1 on a pool of 10: one node at a time", func(t *testing.T) {
		createRendered(t, c, "rendered-one-a")
		createRendered(t, c, "rendered-one-b")
		names := createNodes(t, c, "one", 10, map[string]string{"pool": "one"}, "rendered-one-a")
		createPool(t, c, "one", "rendered-one-a", nil)
		controllertest.WaitObject(t, c, client.ObjectKey{Name: "one"}, "updated on a", func(p *mcv1.MachineConfigPool) bool {
			return conditionIs(p, mcv1.PoolUpdated, metav1.ConditionTrue) && p.Status.MachineCount == 10
		})

		peak := watchInFlight(t, c, names, "rendered-one-b")
		updatePool(t, c, "one", func(p *mcv1.MachineConfigPool) { p.Spec.Configuration.Name = "rendered-one-b" })
		pool := controllertest.WaitObject(t, c, client.ObjectKey{Name: "one"}, "updating", func(p *mcv1.MachineConfigPool) bool {
			return conditionIs(p, mcv1.PoolUpdating, metav1.ConditionTrue)
		})
		assert.Equal(t, "rendered-one-a", pool.Status.Configuration.Name, "status.configuration stays the current one while updating")

		rounds := rollOut(t, c, names, "rendered-one-b", 1)
		assert.Equal(t, []int{1, 1, 1, 1, 1, 1, 1, 1, 1, 1}, rounds)
		pool = controllertest.WaitObject(t, c, client.ObjectKey{Name: "one"}, "updated on b", func(p *mcv1.MachineConfigPool) bool {
			return conditionIs(p, mcv1.PoolUpdated, metav1.ConditionTrue) && p.Status.Configuration.Name == "rendered-one-b"
		})
		assert.Equal(t, int32(10), pool.Status.UpdatedMachineCount)
		assert.Equal(t, int32(10), pool.Status.ReadyMachineCount)
		assert.Equal(t, int32(0), pool.Status.UnavailableMachineCount)
		assert.True(t, conditionIs(pool, mcv1.PoolUpdating, metav1.ConditionFalse))
		assert.True(t, conditionIs(pool, mcv1.PoolDegraded, metav1.ConditionFalse))
		assert.LessOrEqual(t, peak.peak(), 1, "never more than one node in flight")
	})

	t.Run("maxUnavailable 30% on a pool of 10: three at a time", func(t *testing.T) {
		createRendered(t, c, "rendered-pct-a")
		createRendered(t, c, "rendered-pct-b")
		names := createNodes(t, c, "pct", 10, map[string]string{"pool": "pct"}, "rendered-pct-a")
		pct := intstr.FromString("30%")
		createPool(t, c, "pct", "rendered-pct-a", &pct)
		controllertest.WaitObject(t, c, client.ObjectKey{Name: "pct"}, "updated on a", func(p *mcv1.MachineConfigPool) bool {
			return conditionIs(p, mcv1.PoolUpdated, metav1.ConditionTrue) && p.Status.MachineCount == 10
		})
		peak := watchInFlight(t, c, names, "rendered-pct-b")
		updatePool(t, c, "pct", func(p *mcv1.MachineConfigPool) { p.Spec.Configuration.Name = "rendered-pct-b" })
		rounds := rollOut(t, c, names, "rendered-pct-b", 3)
		require.NotEmpty(t, rounds)
		assert.Equal(t, 3, rounds[0], "the first round fills the budget of 3")
		controllertest.WaitObject(t, c, client.ObjectKey{Name: "pct"}, "updated on b", func(p *mcv1.MachineConfigPool) bool {
			return conditionIs(p, mcv1.PoolUpdated, metav1.ConditionTrue) && p.Status.UpdatedMachineCount == 10
		})
		assert.Equal(t, 3, peak.peak(), "three nodes in flight at most, and three at some point")
	})

	t.Run("pause stops the rollout, resume finishes it", func(t *testing.T) {
		createRendered(t, c, "rendered-pause-a")
		createRendered(t, c, "rendered-pause-b")
		names := createNodes(t, c, "pause", 4, map[string]string{"pool": "pause"}, "rendered-pause-a")
		two := intstr.FromInt32(2)
		createPool(t, c, "pause", "rendered-pause-a", &two)
		updatePool(t, c, "pause", func(p *mcv1.MachineConfigPool) {
			p.Spec.Paused = true
			p.Spec.Configuration.Name = "rendered-pause-b"
		})
		pool := controllertest.WaitObject(t, c, client.ObjectKey{Name: "pause"}, "paused", func(p *mcv1.MachineConfigPool) bool {
			return conditionIs(p, mcv1.PoolUpdating, metav1.ConditionFalse) && conditionOf(p, mcv1.PoolUpdating).Reason == "Paused"
		})
		assert.Contains(t, conditionOf(pool, mcv1.PoolUpdating).Message, "Pool is paused; will not update to rendered-pause-b")
		// The sync that wrote the paused status ran the rollout phase
		// before: it started no node.
		assert.Equal(t, 0, countOn(t, c, names, "rendered-pause-b"))
		assert.Equal(t, int32(4), pool.Status.MachineCount)
		assert.Equal(t, int32(0), pool.Status.UpdatedMachineCount)

		updatePool(t, c, "pause", func(p *mcv1.MachineConfigPool) { p.Spec.Paused = false })
		rounds := rollOut(t, c, names, "rendered-pause-b", 2)
		assert.Equal(t, []int{2, 2}, rounds)
		controllertest.WaitObject(t, c, client.ObjectKey{Name: "pause"}, "updated", func(p *mcv1.MachineConfigPool) bool {
			return conditionIs(p, mcv1.PoolUpdated, metav1.ConditionTrue) && p.Status.Configuration.Name == "rendered-pause-b"
		})
	})

	t.Run("a degraded node stops the rollout and the pool says which and why", func(t *testing.T) {
		createRendered(t, c, "rendered-deg-a")
		createRendered(t, c, "rendered-deg-b")
		names := createNodes(t, c, "deg", 5, map[string]string{"pool": "deg"}, "rendered-deg-a")
		createPool(t, c, "deg", "rendered-deg-a", nil)
		updatePool(t, c, "deg", func(p *mcv1.MachineConfigPool) { p.Spec.Configuration.Name = "rendered-deg-b" })

		var first string
		waitFirst := func() bool {
			f := inFlight(t, c, names, "rendered-deg-b")
			if len(f) == 1 {
				first = f[0]
			}
			return first != ""
		}
		controllertest.WaitObject(t, c, client.ObjectKey{Name: "deg"}, "a node started", func(*mcv1.MachineConfigPool) bool { return waitFirst() })
		controllertest.PatchNodeAnnotations(t, c, first, map[string]string{keyState: "Degraded", keyReason: "writing /etc/motd: disk full"})

		pool := controllertest.WaitObject(t, c, client.ObjectKey{Name: "deg"}, "node degraded", func(p *mcv1.MachineConfigPool) bool {
			return conditionIs(p, mcv1.PoolNodeDegraded, metav1.ConditionTrue)
		})
		nd := conditionOf(pool, mcv1.PoolNodeDegraded)
		assert.Contains(t, nd.Message, "node "+first)
		assert.Contains(t, nd.Message, "writing /etc/motd: disk full")
		assert.True(t, conditionIs(pool, mcv1.PoolDegraded, metav1.ConditionTrue))
		assert.Contains(t, conditionOf(pool, mcv1.PoolDegraded).Message, first)
		assert.Equal(t, int32(1), pool.Status.DegradedMachineCount)
		// The degraded node freed its slot (it is not unavailable but
		// degraded), yet no other node was started.
		assert.Equal(t, 1, countOn(t, c, names, "rendered-deg-b"))

		// The agent retries and succeeds: the rollout goes on.
		agentUpdate(t, c, first)
		rollOut(t, c, names, "rendered-deg-b", 1)
		pool = controllertest.WaitObject(t, c, client.ObjectKey{Name: "deg"}, "updated", func(p *mcv1.MachineConfigPool) bool {
			return conditionIs(p, mcv1.PoolUpdated, metav1.ConditionTrue)
		})
		assert.True(t, conditionIs(pool, mcv1.PoolNodeDegraded, metav1.ConditionFalse))
		assert.True(t, conditionIs(pool, mcv1.PoolDegraded, metav1.ConditionFalse))
	})

	t.Run("degraded nodes on a superseded configuration are re-targeted within maxUnavailable", func(t *testing.T) {
		createRendered(t, c, "rendered-stale-0")
		createRendered(t, c, "rendered-stale-a")
		createRendered(t, c, "rendered-stale-b")
		names := createNodes(t, c, "stale", 3, map[string]string{"pool": "stale"}, "rendered-stale-0")
		// Two nodes failed on a, which the pool targeted before.
		for _, n := range names[:2] {
			controllertest.PatchNodeAnnotations(t, c, n, map[string]string{keyDesired: "rendered-stale-a", keyState: "Degraded", keyReason: "writing /etc/motd: disk full"})
		}
		peak := watchInFlight(t, c, names, "rendered-stale-b")
		createPool(t, c, "stale", "rendered-stale-b", nil)

		// They are already unavailable, but each is drained and updated once
		// given b: with maxUnavailable 1, one at a time.
		var flying []string
		controllertest.WaitObject(t, c, client.ObjectKey{Name: "stale"}, "a degraded node re-targeted", func(*mcv1.MachineConfigPool) bool {
			flying = inFlight(t, c, names, "rendered-stale-b")
			return len(flying) > 0
		})
		require.Len(t, flying, 1, "with maxUnavailable 1, one degraded node at a time")
		first := flying[0]
		require.Contains(t, names[:2], first, "a degraded node first: the healthy one waits while a node is degraded")
		second := names[0]
		if first == names[0] {
			second = names[1]
		}
		assert.Equal(t, "rendered-stale-a", controllertest.GetNode(t, c, second).Annotations[keyDesired], "the second waits for room")
		assert.Equal(t, "rendered-stale-0", controllertest.GetNode(t, c, names[2]).Annotations[keyDesired])
		agentUpdate(t, c, first)
		controllertest.WaitObject(t, c, client.ObjectKey{Name: second}, "re-targeted once the first is done", func(n *corev1.Node) bool {
			return n.Annotations[keyDesired] == "rendered-stale-b"
		})
		agentUpdate(t, c, second)
		rollOut(t, c, names, "rendered-stale-b", 1)
		controllertest.WaitObject(t, c, client.ObjectKey{Name: "stale"}, "updated", func(p *mcv1.MachineConfigPool) bool {
			return conditionIs(p, mcv1.PoolUpdated, metav1.ConditionTrue) && p.Status.UpdatedMachineCount == 3
		})
		assert.Equal(t, 1, peak.peak(), "never more than one node given b and not done")
	})

	t.Run("a node leaving the pool is no longer counted nor updated", func(t *testing.T) {
		createRendered(t, c, "rendered-leave-a")
		createRendered(t, c, "rendered-leave-b")
		names := createNodes(t, c, "leave", 4, map[string]string{"pool": "leave"}, "rendered-leave-a")
		createPool(t, c, "leave", "rendered-leave-a", nil)
		controllertest.WaitObject(t, c, client.ObjectKey{Name: "leave"}, "4 machines", func(p *mcv1.MachineConfigPool) bool { return p.Status.MachineCount == 4 })
		updatePool(t, c, "leave", func(p *mcv1.MachineConfigPool) { p.Spec.Configuration.Name = "rendered-leave-b" })
		controllertest.WaitObject(t, c, client.ObjectKey{Name: "leave"}, "a node started", func(*mcv1.MachineConfigPool) bool {
			return len(inFlight(t, c, names, "rendered-leave-b")) == 1
		})
		// A node not yet started leaves.
		var leaver string
		for _, n := range names {
			if controllertest.GetNode(t, c, n).Annotations[keyDesired] == "rendered-leave-a" {
				leaver = n
			}
		}
		require.NotEmpty(t, leaver)
		node := controllertest.GetNode(t, c, leaver)
		patched := node.DeepCopy()
		delete(patched.Labels, "pool")
		require.NoError(t, c.Patch(t.Context(), patched, clientMergeFrom(node)))
		controllertest.WaitObject(t, c, client.ObjectKey{Name: "leave"}, "3 machines", func(p *mcv1.MachineConfigPool) bool { return p.Status.MachineCount == 3 })

		var stay []string
		for _, n := range names {
			if n != leaver {
				stay = append(stay, n)
			}
		}
		rollOut(t, c, stay, "rendered-leave-b", 1)
		controllertest.WaitObject(t, c, client.ObjectKey{Name: "leave"}, "updated without the leaver", func(p *mcv1.MachineConfigPool) bool {
			return conditionIs(p, mcv1.PoolUpdated, metav1.ConditionTrue) && p.Status.UpdatedMachineCount == 3
		})
		assert.Equal(t, "rendered-leave-a", controllertest.GetNode(t, c, leaver).Annotations[keyDesired], "the node that left keeps its configuration")
	})

	t.Run("a node in two pools is an error on both and updated by neither", func(t *testing.T) {
		createRendered(t, c, "rendered-x-a")
		createRendered(t, c, "rendered-y-a")
		createNodes(t, c, "x", 2, map[string]string{"pool": "x"}, "")
		createPool(t, c, "x", "rendered-x-a", nil)
		y := &mcv1.MachineConfigPool{ObjectMeta: metav1.ObjectMeta{Name: "y"}}
		y.Spec.NodeSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"also": "y"}}
		y.Spec.Configuration.Name = "rendered-y-a"
		require.NoError(t, c.Create(t.Context(), y))
		// Both pools have synced before the shared node exists: created
		// earlier, it could be driven by the first pool while the second
		// did not exist yet, which is no sharing.
		controllertest.WaitObject(t, c, client.ObjectKey{Name: "x"}, "synced", func(p *mcv1.MachineConfigPool) bool { return p.Status.MachineCount == 2 })
		controllertest.WaitObject(t, c, client.ObjectKey{Name: "y"}, "synced", func(p *mcv1.MachineConfigPool) bool {
			return p.Status.ObservedGeneration == p.Generation && conditionOf(p, mcv1.PoolDegraded).Type != ""
		})
		both := createNodes(t, c, "xy", 1, map[string]string{"pool": "x", "also": "y"}, "")[0]

		for _, name := range []string{"x", "y"} {
			pool := controllertest.WaitObject(t, c, client.ObjectKey{Name: name}, "degraded by the shared node", func(p *mcv1.MachineConfigPool) bool {
				return conditionIs(p, mcv1.PoolDegraded, metav1.ConditionTrue)
			})
			d := conditionOf(pool, mcv1.PoolDegraded)
			assert.Equal(t, "NodeInMultiplePools", d.Reason)
			assert.Contains(t, d.Message, "node "+both+" is also in pool")
		}
		x := controllertest.WaitObject(t, c, client.ObjectKey{Name: "x"}, "two machines", func(p *mcv1.MachineConfigPool) bool { return p.Status.MachineCount == 2 })
		assert.Equal(t, int32(2), x.Status.MachineCount, "the shared node is not counted")
		assert.Empty(t, controllertest.GetNode(t, c, both).Annotations[keyDesired], "neither pool drives the shared node")
	})

	t.Run("a node in a MachineDeployment's in-place rollout waits for it", func(t *testing.T) {
		createRendered(t, c, "rendered-ip-a")
		createRendered(t, c, "rendered-ip-b")
		names := createNodes(t, c, "ip", 2, map[string]string{"pool": "ip"}, "rendered-ip-a")
		// ip-0 is a candidate of an in-place rollout.
		node := controllertest.GetNode(t, c, names[0])
		patched := node.DeepCopy()
		patched.Labels[v1alpha1.LabelKeyNodeCandidateForUpdate] = "true"
		require.NoError(t, c.Patch(t.Context(), patched, clientMergeFrom(node)))
		two := intstr.FromInt32(2)
		createPool(t, c, "ip", "rendered-ip-b", &two)
		controllertest.WaitObject(t, c, client.ObjectKey{Name: names[1]}, "started", func(n *corev1.Node) bool { return n.Annotations[keyDesired] == "rendered-ip-b" })
		agentUpdate(t, c, names[1])
		pool := controllertest.WaitObject(t, c, client.ObjectKey{Name: "ip"}, "one updated", func(p *mcv1.MachineConfigPool) bool { return p.Status.UpdatedMachineCount == 1 })
		assert.Equal(t, "rendered-ip-a", controllertest.GetNode(t, c, names[0]).Annotations[keyDesired], "the in-place candidate is left alone")
		assert.True(t, conditionIs(pool, mcv1.PoolUpdating, metav1.ConditionTrue))

		// The in-place rollout is over: the pool takes the node.
		node = controllertest.GetNode(t, c, names[0])
		patched = node.DeepCopy()
		delete(patched.Labels, v1alpha1.LabelKeyNodeCandidateForUpdate)
		require.NoError(t, c.Patch(t.Context(), patched, clientMergeFrom(node)))
		controllertest.WaitObject(t, c, client.ObjectKey{Name: names[0]}, "started", func(n *corev1.Node) bool { return n.Annotations[keyDesired] == "rendered-ip-b" })
		agentUpdate(t, c, names[0])
		controllertest.WaitObject(t, c, client.ObjectKey{Name: "ip"}, "updated", func(p *mcv1.MachineConfigPool) bool {
			return conditionIs(p, mcv1.PoolUpdated, metav1.ConditionTrue)
		})
	})

	t.Run("nodes with a pre-update hook or asking not to be disrupted wait, and the pool says why", func(t *testing.T) {
		createRendered(t, c, "rendered-dnd-a")
		createRendered(t, c, "rendered-dnd-b")
		names := createNodes(t, c, "dnd", 4, map[string]string{"pool": "dnd"}, "rendered-dnd-a")
		// dnd-0 runs a pod that asks not to be disrupted; dnd-1 asks itself,
		// with Karpenter's key; dnd-3 carries an operator's pre-update hook.
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "dnd-batch", Namespace: "default",
				Annotations: map[string]string{"machina.io/do-not-disrupt": "true"}},
			Spec: corev1.PodSpec{NodeName: names[0], Containers: []corev1.Container{{Name: "c", Image: "batch"}}},
		}
		require.NoError(t, c.Create(t.Context(), pod))
		controllertest.PatchNodeAnnotations(t, c, names[1], map[string]string{"karpenter.sh/do-not-disrupt": "true"})
		controllertest.PatchNodeAnnotations(t, c, names[3], map[string]string{"pre-update.hook.machina.io/storage": "move replicas"})
		createPool(t, c, "dnd", "rendered-dnd-a", nil)
		controllertest.WaitObject(t, c, client.ObjectKey{Name: "dnd"}, "updated on a", func(p *mcv1.MachineConfigPool) bool {
			return conditionIs(p, mcv1.PoolUpdated, metav1.ConditionTrue) && p.Status.MachineCount == 4
		})

		updatePool(t, c, "dnd", func(p *mcv1.MachineConfigPool) { p.Spec.Configuration.Name = "rendered-dnd-b" })
		controllertest.WaitObject(t, c, client.ObjectKey{Name: names[2]}, "started", func(n *corev1.Node) bool { return n.Annotations[keyDesired] == "rendered-dnd-b" })
		agentUpdate(t, c, names[2])
		pool := controllertest.WaitObject(t, c, client.ObjectKey{Name: "dnd"}, "held", func(p *mcv1.MachineConfigPool) bool {
			return p.Status.UpdatedMachineCount == 1 && strings.Contains(conditionOf(p, mcv1.PoolUpdating).Message, "not started yet")
		})
		msg := conditionOf(pool, mcv1.PoolUpdating).Message
		assert.Contains(t, msg, "pod default/dnd-batch on node dnd-0 has machina.io/do-not-disrupt=true")
		assert.Contains(t, msg, "node dnd-1 has karpenter.sh/do-not-disrupt=true")
		assert.Contains(t, msg, "node dnd-3 waits for its pre-update hook(s) [pre-update.hook.machina.io/storage]")
		// The status is written after the rollout phase of the same sync:
		// that phase started none of them.
		assert.Equal(t, 0, countOn(t, c, []string{names[0], names[1], names[3]}, "rendered-dnd-b"), "held nodes are not started")

		// The Node's annotation goes: its Node's change starts it at once.
		controllertest.PatchNodeAnnotations(t, c, names[1], map[string]string{"karpenter.sh/do-not-disrupt": ""})
		controllertest.WaitObject(t, c, client.ObjectKey{Name: names[1]}, "started", func(n *corev1.Node) bool { return n.Annotations[keyDesired] == "rendered-dnd-b" })
		agentUpdate(t, c, names[1])
		// The operator takes its hook off: the node starts.
		controllertest.PatchNodeAnnotations(t, c, names[3], map[string]string{"pre-update.hook.machina.io/storage": ""})
		controllertest.WaitObject(t, c, client.ObjectKey{Name: names[3]}, "started", func(n *corev1.Node) bool { return n.Annotations[keyDesired] == "rendered-dnd-b" })
		assert.NotEqual(t, "rendered-dnd-b", controllertest.GetNode(t, c, names[0]).Annotations[keyDesired], "dnd-0 still holds")
		agentUpdate(t, c, names[3])

		// The pod finishes (pods are not watched: the pool looks again within
		// disruption.Recheck).
		pod.Status.Phase = corev1.PodSucceeded
		require.NoError(t, c.Status().Update(t.Context(), pod))
		controllertest.WaitObject(t, c, client.ObjectKey{Name: names[0]}, "started", func(n *corev1.Node) bool { return n.Annotations[keyDesired] == "rendered-dnd-b" })
		agentUpdate(t, c, names[0])
		pool = controllertest.WaitObject(t, c, client.ObjectKey{Name: "dnd"}, "updated", func(p *mcv1.MachineConfigPool) bool {
			return conditionIs(p, mcv1.PoolUpdated, metav1.ConditionTrue)
		})
		assert.Equal(t, int32(4), pool.Status.UpdatedMachineCount)
	})

	t.Run("a disruption budget of one node paces a pool whose maxUnavailable is 3", func(t *testing.T) {
		createRendered(t, c, "rendered-bud-a")
		createRendered(t, c, "rendered-bud-b")
		names := createNodes(t, c, "bud", 3, map[string]string{"pool": "bud"}, "rendered-bud-a")
		three := intstr.FromInt32(3)
		createPool(t, c, "bud", "rendered-bud-a", &three)
		updatePool(t, c, "bud", func(p *mcv1.MachineConfigPool) {
			p.Spec.Disruption = &mcv1.PoolDisruption{Budgets: []v1alpha1.DisruptionBudget{{Machines: intstr.FromInt32(1)}}}
		})
		controllertest.WaitObject(t, c, client.ObjectKey{Name: "bud"}, "updated on a", func(p *mcv1.MachineConfigPool) bool {
			return conditionIs(p, mcv1.PoolUpdated, metav1.ConditionTrue) && p.Status.MachineCount == 3
		})
		peak := watchInFlight(t, c, names, "rendered-bud-b")
		updatePool(t, c, "bud", func(p *mcv1.MachineConfigPool) { p.Spec.Configuration.Name = "rendered-bud-b" })
		controllertest.WaitObject(t, c, client.ObjectKey{Name: "bud"}, "held by the budget", func(p *mcv1.MachineConfigPool) bool {
			return strings.Contains(conditionOf(p, mcv1.PoolUpdating).Message,
				"not started yet: spec.disruption.budgets[0] (1 machines) allows 1 node(s) updating at once and 1 are")
		})
		rounds := rollOut(t, c, names, "rendered-bud-b", 1)
		assert.Equal(t, []int{1, 1, 1}, rounds)
		controllertest.WaitObject(t, c, client.ObjectKey{Name: "bud"}, "updated on b", func(p *mcv1.MachineConfigPool) bool {
			return conditionIs(p, mcv1.PoolUpdated, metav1.ConditionTrue) && p.Status.UpdatedMachineCount == 3
		})
		assert.Equal(t, 1, peak.peak(), "one node in flight at most under the budget")

		// A schedule the controller cannot read degrades the pool.
		updatePool(t, c, "bud", func(p *mcv1.MachineConfigPool) {
			p.Spec.Disruption.Budgets[0].Schedule = "whenever"
			p.Spec.Disruption.Budgets[0].Duration = v1alpha1.NewDuration(time.Hour)
		})
		controllertest.WaitObject(t, c, client.ObjectKey{Name: "bud"}, "degraded", func(p *mcv1.MachineConfigPool) bool {
			return conditionIs(p, mcv1.PoolDegraded, metav1.ConditionTrue) &&
				strings.Contains(conditionOf(p, mcv1.PoolDegraded).Message, `schedule "whenever"`)
		})
	})

	t.Run("a node born after the rendered configuration starts from it at once", func(t *testing.T) {
		// Nodes older than the rendered configuration (creation times have
		// a resolution of a second: same second counts as older).
		names := createNodes(t, c, "born-old", 3, map[string]string{"pool": "born"}, "")
		createRendered(t, c, "rendered-born-a")
		createPool(t, c, "born", "rendered-born-a", nil)
		// The old nodes (never configured, older than the configuration)
		// go one at a time.
		controllertest.WaitObject(t, c, client.ObjectKey{Name: "born"}, "one old node started", func(*mcv1.MachineConfigPool) bool {
			return len(inFlight(t, c, names, "rendered-born-a")) == 1
		})
		// A new machine's node joins while the budget is used up: it gets
		// the configuration anyway.
		rendered := &mcv1.MachineConfig{}
		require.NoError(t, c.Get(t.Context(), client.ObjectKey{Name: "rendered-born-a"}, rendered))
		require.Eventually(t, func() bool { return time.Now().After(rendered.CreationTimestamp.Add(time.Second)) },
			waitFor, 20*time.Millisecond, "the clock passes the second of the configuration's creation")
		fresh := createNodes(t, c, "born-new", 1, map[string]string{"pool": "born"}, "")[0]
		controllertest.WaitObject(t, c, client.ObjectKey{Name: fresh}, "given the current configuration", func(n *corev1.Node) bool {
			return n.Annotations[keyDesired] == "rendered-born-a"
		})
		assert.Len(t, inFlight(t, c, names, "rendered-born-a"), 1, "the old nodes still go one at a time")
		agentUpdate(t, c, fresh)
		rollOut(t, c, names, "rendered-born-a", 1)
		controllertest.WaitObject(t, c, client.ObjectKey{Name: "born"}, "updated", func(p *mcv1.MachineConfigPool) bool {
			return conditionIs(p, mcv1.PoolUpdated, metav1.ConditionTrue) && p.Status.UpdatedMachineCount == 4
		})
	})

	t.Run("the uncordon waits until the node is Ready on its new configuration", func(t *testing.T) {
		createRendered(t, c, "rendered-ready-a")
		createRendered(t, c, "rendered-ready-b")
		name := createNodes(t, c, "ready", 1, map[string]string{"pool": "ready"}, "rendered-ready-a")[0]
		createPool(t, c, "ready", "rendered-ready-b", nil)
		controllertest.WaitObject(t, c, client.ObjectKey{Name: name}, "started", func(n *corev1.Node) bool { return n.Annotations[keyDesired] == "rendered-ready-b" })
		controllertest.PatchNodeAnnotations(t, c, name, map[string]string{keyState: "Working"})
		controllertest.PatchNodeAnnotations(t, c, name, map[string]string{keyDrain: "drain-rendered-ready-b"})
		controllertest.WaitObject(t, c, client.ObjectKey{Name: name}, "drained", func(n *corev1.Node) bool {
			return n.Annotations[keyLastApplied] == "drain-rendered-ready-b" && n.Spec.Unschedulable
		})
		// The node reboots into the new configuration and is not Ready yet
		// when its agent asks for the uncordon.
		setReady(t, c, name, corev1.ConditionFalse)
		controllertest.PatchNodeAnnotations(t, c, name, map[string]string{keyDrain: "uncordon-rendered-ready-b"})
		// The controller hears of the request at once (a node event); it
		// must hold it for as long as the node stays NotReady.
		assert.Never(t, func() bool {
			n := controllertest.GetNode(t, c, name)
			return !n.Spec.Unschedulable || n.Annotations[keyLastApplied] == "uncordon-rendered-ready-b"
		}, 3*time.Second, 50*time.Millisecond, "a NotReady node was uncordoned")
		setReady(t, c, name, corev1.ConditionTrue)
		controllertest.WaitObject(t, c, client.ObjectKey{Name: name}, "uncordoned once Ready", func(n *corev1.Node) bool {
			return n.Annotations[keyLastApplied] == "uncordon-rendered-ready-b" && !n.Spec.Unschedulable
		})
	})

	t.Run("an out-of-range maxUnavailable degrades the pool and starts no node", func(t *testing.T) {
		createRendered(t, c, "rendered-range-a")
		createRendered(t, c, "rendered-range-b")
		names := createNodes(t, c, "range", 3, map[string]string{"pool": "range"}, "rendered-range-a")
		// 1e11% of 3 nodes wrapped around int32 to a negative budget.
		huge := intstr.FromString("100000000000%")
		createPool(t, c, "range", "rendered-range-b", &huge)
		pool := controllertest.WaitObject(t, c, client.ObjectKey{Name: "range"}, "degraded", func(p *mcv1.MachineConfigPool) bool {
			return conditionIs(p, mcv1.PoolDegraded, metav1.ConditionTrue)
		})
		d := conditionOf(pool, mcv1.PoolDegraded)
		assert.Equal(t, "InvalidPool", d.Reason)
		assert.Contains(t, d.Message, `maxUnavailable "100000000000%" must not be more than 100%`)
		assert.Equal(t, 0, countOn(t, c, names, "rendered-range-b"))

		fixed := intstr.FromString("100%")
		updatePool(t, c, "range", func(p *mcv1.MachineConfigPool) { p.Spec.MaxUnavailable = &fixed })
		rollOut(t, c, names, "rendered-range-b", 3)
		controllertest.WaitObject(t, c, client.ObjectKey{Name: "range"}, "updated", func(p *mcv1.MachineConfigPool) bool {
			return conditionIs(p, mcv1.PoolUpdated, metav1.ConditionTrue) && conditionIs(p, mcv1.PoolDegraded, metav1.ConditionFalse)
		})
	})

	t.Run("an empty nodeSelector selects nothing and says so", func(t *testing.T) {
		pool := &mcv1.MachineConfigPool{ObjectMeta: metav1.ObjectMeta{Name: "everything"}}
		pool.Spec.NodeSelector = &metav1.LabelSelector{}
		pool.Spec.Configuration.Name = "rendered-everything"
		require.NoError(t, c.Create(t.Context(), pool))
		got := controllertest.WaitObject(t, c, client.ObjectKey{Name: "everything"}, "degraded", func(p *mcv1.MachineConfigPool) bool {
			return conditionIs(p, mcv1.PoolDegraded, metav1.ConditionTrue)
		})
		assert.Contains(t, conditionOf(got, mcv1.PoolDegraded).Message, "SelectingAll")
		assert.Equal(t, int32(0), got.Status.MachineCount)
	})
}

// TestPoolRolloutAcrossARestart stops the controllers in the middle of a
// rollout and starts new ones: the state is all on the Nodes, so the new
// controllers go on within the budget and finish.
func TestPoolRolloutAcrossARestart(t *testing.T) {
	env := testenv.Start(t)
	c := env.Client
	stop := startControllers(t, env)

	createRendered(t, c, "rendered-rs-a")
	createRendered(t, c, "rendered-rs-b")
	names := createNodes(t, c, "rs", 6, map[string]string{"pool": "rs"}, "rendered-rs-a")
	two := intstr.FromInt32(2)
	createPool(t, c, "rs", "rendered-rs-b", &two)
	peak := watchInFlight(t, c, names, "rendered-rs-b")

	// First round under the first manager.
	controllertest.WaitObject(t, c, client.ObjectKey{Name: "rs"}, "two started", func(*mcv1.MachineConfigPool) bool {
		return len(inFlight(t, c, names, "rendered-rs-b")) == 2
	})
	flying := inFlight(t, c, names, "rendered-rs-b")
	agentUpdate(t, c, flying[0])
	// The manager stops with one node finished and one in flight; the
	// agent of the one in flight goes on while no manager runs, up to its
	// drain request.
	stop()
	controllertest.PatchNodeAnnotations(t, c, flying[1], map[string]string{keyState: "Working"})
	controllertest.PatchNodeAnnotations(t, c, flying[1], map[string]string{keyDrain: "drain-rendered-rs-b"})

	startControllers(t, env)
	controllertest.WaitObject(t, c, client.ObjectKey{Name: flying[1]}, "drain acknowledged by the new manager", func(n *corev1.Node) bool {
		return n.Annotations[keyLastApplied] == "drain-rendered-rs-b"
	})
	controllertest.PatchNodeAnnotations(t, c, flying[1], map[string]string{keyDrain: "uncordon-rendered-rs-b"})
	controllertest.WaitObject(t, c, client.ObjectKey{Name: flying[1]}, "uncordon acknowledged", func(n *corev1.Node) bool {
		return n.Annotations[keyLastApplied] == "uncordon-rendered-rs-b" && !n.Spec.Unschedulable
	})
	controllertest.PatchNodeAnnotations(t, c, flying[1], map[string]string{keyCurrent: "rendered-rs-b", keyState: "Done"})

	rollOut(t, c, names, "rendered-rs-b", 2)
	controllertest.WaitObject(t, c, client.ObjectKey{Name: "rs"}, "updated", func(p *mcv1.MachineConfigPool) bool {
		return conditionIs(p, mcv1.PoolUpdated, metav1.ConditionTrue) && p.Status.UpdatedMachineCount == 6
	})
	assert.LessOrEqual(t, peak.peak(), 2)
}
