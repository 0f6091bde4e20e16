package manager

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/testenv"
)

// TestPreservation runs preservation with the whole manager (the Machine,
// MachineSet and MachineDeployment controllers together) against one API
// server; the machine controller's own scenarios are in
// core/internal/controller/machine/machine_preserve_test.go.
func TestPreservation(t *testing.T) {
	env := testenv.Start(t)
	t.Run("when-failed kept until expiry then replaced, set never short", func(t *testing.T) { testPreserveUntilExpiry(t, env) })
	t.Run("auto-preserve max", func(t *testing.T) { testAutoPreserveMax(t, env) })
}

// rollingDeployment creates a MachineDeployment of replicas machines of
// class-v1 with the RollingUpdate strategy.
func (w *ipWorld) rollingDeployment(name string, replicas int32, mutate ...func(*v1alpha1.MachineDeployment)) *v1alpha1.MachineDeployment {
	w.t.Helper()
	d := &v1alpha1.MachineDeployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: name},
		Spec: v1alpha1.MachineDeploymentSpec{
			Replicas: replicas,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"pool": name}},
			Strategy: v1alpha1.MachineDeploymentStrategy{Type: v1alpha1.RollingUpdateMachineDeploymentStrategyType},
			Template: v1alpha1.MachineTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"pool": name}},
				Spec:       v1alpha1.MachineSpec{Class: v1alpha1.ClassSpec{Kind: "MachineClass", Name: "class-v1"}},
			},
		},
	}
	for _, f := range mutate {
		f(d)
	}
	require.NoError(w.t, w.env.Client.Create(w.ctx, d))
	return d
}

// failNode reports the node NotReady, as a kubelet that stopped would.
func (w *ipWorld) failNode(name string) {
	w.t.Helper()
	require.Eventually(w.t, func() bool {
		n := &corev1.Node{}
		if w.env.Client.Get(w.ctx, client.ObjectKey{Name: name}, n) != nil {
			return false
		}
		now := metav1.Now()
		n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionFalse, Reason: "KubeletStopped", LastHeartbeatTime: now, LastTransitionTime: now}}
		return w.env.Client.Status().Update(w.ctx, n) == nil
	}, waitFor, tick)
}

func (w *ipWorld) annotateMachine(name, key, value string) {
	w.t.Helper()
	raw, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{key: value}}})
	require.NoError(w.t, err)
	m := &v1alpha1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: name}}
	require.NoError(w.t, w.env.Client.Patch(w.ctx, m, client.RawPatch("application/merge-patch+json", raw)))
}

func (w *ipWorld) nodeNamed(name string) *corev1.Node {
	w.t.Helper()
	n := &corev1.Node{}
	require.NoError(w.t, w.env.Client.Get(w.ctx, client.ObjectKey{Name: name}, n))
	return n
}

func nodePreserved(n *corev1.Node) corev1.NodeCondition {
	for _, c := range n.Status.Conditions {
		if c.Type == v1alpha1.NodePreserved {
			return c
		}
	}
	return corev1.NodeCondition{}
}

func preservedTaint(n *corev1.Node) bool {
	for _, t := range n.Spec.Taints {
		if t.Key == v1alpha1.PreservedTaintKey && t.Effect == corev1.TaintEffectNoSchedule {
			return true
		}
	}
	return false
}

// runningOthers counts the machines other than skip that are Running and
// not being deleted.
func runningOthers(machines []v1alpha1.Machine, skip string) int {
	n := 0
	for _, m := range machines {
		if m.Name != skip && m.DeletionTimestamp == nil && m.Status.CurrentStatus.Phase == v1alpha1.MachineRunning {
			n++
		}
	}
	return n
}

// The Done-means test of issue 17: a Failed machine annotated when-failed
// is kept until its expiry with the taint and the condition, then
// replaced, and its MachineSet never runs short of its replicas because of
// it.
func testPreserveUntilExpiry(t *testing.T, env *testenv.Env) {
	const preserveFor = 15 * time.Second
	w := newIPWorld(t, env, func(o *Options) {
		o.MachineHealthTimeout = time.Second
		o.MachinePreserveTimeout = preserveFor
	})
	w.rollingDeployment("web", 2)
	w.waitMachines(2, v1alpha1.MachineRunning)
	victim := w.machineList()[0].Name
	w.annotateMachine(victim, v1alpha1.PreserveAnnotation, v1alpha1.PreserveValueWhenFailed)
	w.failNode(victim)

	// Preserved: expiry stamped, node tainted (not cordoned) and drained,
	// the condition True.
	var expiry time.Time
	require.Eventually(t, func() bool {
		for _, m := range w.machineList() {
			if m.Name == victim && m.Status.CurrentStatus.Phase == v1alpha1.MachineFailed && m.Status.CurrentStatus.PreserveExpiryTime != nil {
				expiry = m.Status.CurrentStatus.PreserveExpiryTime.Time
				c := nodePreserved(w.nodeNamed(victim))
				return c.Status == corev1.ConditionTrue && strings.HasPrefix(c.Message, v1alpha1.PreservedNodeDrainSuccessfulMessage)
			}
		}
		return false
	}, waitFor, tick, "victim %s not preserved: %s", victim, w.describe())
	n := w.nodeNamed(victim)
	assert.True(t, preservedTaint(n), "taints: %v", n.Spec.Taints)
	assert.False(t, n.Spec.Unschedulable, "a taint, not a cordon")

	// The set runs two machines besides the preserved one, before the
	// expiry, and counts it as preserved, not as a replica.
	require.Eventually(t, func() bool { return runningOthers(w.machineList(), victim) == 2 }, waitFor, tick, "no replacement: %s", w.describe())
	require.True(t, time.Now().Before(expiry), "two other machines ran only after the expiry %s: the set did not replace the preserved machine while it was kept (or machines join slowly here: raise preserveFor)", expiry)
	require.Eventually(t, func() bool {
		sets := w.setList()
		return len(sets) == 1 && sets[0].Status.Replicas == 2 && sets[0].Status.PreservedFailedReplicas == 1
	}, waitFor, tick, "set status: %s", w.describe())
	require.Eventually(t, func() bool {
		d := &v1alpha1.MachineDeployment{}
		require.NoError(t, env.Client.Get(w.ctx, client.ObjectKey{Namespace: w.ns, Name: "web"}, d))
		return d.Status.PreservedFailedReplicas == 1 && d.Status.Replicas == 2
	}, waitFor, tick, "deployment status: %s", w.describe())

	// From now until the preserved machine is gone, two other machines run
	// at every look, and the preserved one is not deleted before its expiry.
	// A watch sees its deletionTimestamp even when the deletion is over
	// between two looks (a machine with nothing to drain goes in one
	// reconcile).
	deletion := victimDeletion(t, env, w.ns, victim)
	var short []string
	var deletedAt time.Time
	for {
		machines := w.machineList()
		var cur *v1alpha1.Machine
		for i := range machines {
			if machines[i].Name == victim {
				cur = &machines[i]
			}
		}
		if n := runningOthers(machines, victim); n < 2 {
			short = append(short, w.describe())
		}
		if cur == nil {
			break
		}
		if cur.DeletionTimestamp != nil && deletedAt.IsZero() {
			deletedAt = cur.DeletionTimestamp.Time
		}
		if cur.DeletionTimestamp == nil && time.Now().Before(expiry) {
			// Still preserved: taint and condition stay.
			n := w.nodeNamed(victim)
			if !preservedTaint(n) || nodePreserved(n).Status != corev1.ConditionTrue {
				// The preservation may have stopped in the last moment
				// before the expiry only if the clock passed it meanwhile.
				if time.Now().Before(expiry.Add(-time.Second)) {
					t.Errorf("preservation gone before the expiry %s: taints %v, condition %+v", expiry, n.Spec.Taints, nodePreserved(n))
				}
			}
		}
		if time.Now().After(expiry.Add(waitFor)) {
			t.Fatalf("the preserved machine %s was not replaced after its expiry %s: %s", victim, expiry, w.describe())
		}
		time.Sleep(tick)
	}
	assert.Empty(t, short, "the set ran short of its replicas")
	if deletedAt.IsZero() {
		select {
		case deletedAt = <-deletion:
		case <-time.After(waitFor):
		}
	}
	require.False(t, deletedAt.IsZero(), "the deletion was seen")
	assert.False(t, deletedAt.Before(expiry), "deleted at %s, before the expiry %s", deletedAt, expiry)
	w.waitMachines(2, v1alpha1.MachineRunning)
	sets := w.setList()
	require.Len(t, sets, 1)
	assert.Zero(t, sets[0].Status.PreservedFailedReplicas)
}

// autoPreserveFailedMachineMax 1: of two Failed machines, one is preserved
// by the set (auto-preserved, "Preserved by MCM."), the other replaced;
// lowering the maximum to 0 ends it and the machine is replaced.
func testAutoPreserveMax(t *testing.T, env *testenv.Env) {
	w := newIPWorld(t, env, func(o *Options) {
		o.MachineHealthTimeout = time.Second
		o.MachineMaxReplacements = "10"
	})
	one := int32(1)
	d := w.rollingDeployment("auto", 3, func(d *v1alpha1.MachineDeployment) { d.Spec.AutoPreserveFailedMachineMax = &one })
	w.waitMachines(3, v1alpha1.MachineRunning)
	machines := w.machineList()
	first, second := machines[0].Name, machines[1].Name
	w.failNode(first)
	w.failNode(second)

	var preserved string
	require.Eventually(t, func() bool {
		preserved = ""
		count := 0
		for _, m := range w.machineList() {
			if m.Annotations[v1alpha1.PreserveAnnotation] == v1alpha1.PreserveValueAutoPreserved &&
				m.Status.CurrentStatus.Phase == v1alpha1.MachineFailed && m.Status.CurrentStatus.PreserveExpiryTime != nil {
				preserved = m.Name
				count++
			}
		}
		return count == 1 && runningOthers(w.machineList(), preserved) == 3 && len(w.machineList()) == 4
	}, waitFor, tick, "want one auto-preserved Failed machine and three running: %s", w.describe())
	assert.Contains(t, []string{first, second}, preserved)
	assert.Equal(t, v1alpha1.PreservedByMCMMessage, nodePreserved(w.nodeNamed(preserved)).Reason)
	require.Eventually(t, func() bool {
		sets := w.setList()
		return len(sets) == 1 && sets[0].Status.AutoPreserveFailedMachineCount != nil &&
			*sets[0].Status.AutoPreserveFailedMachineCount == 1 && sets[0].Status.PreservedFailedReplicas == 1 &&
			sets[0].Spec.AutoPreserveFailedMachineMax != nil && *sets[0].Spec.AutoPreserveFailedMachineMax == 1
	}, waitFor, tick, "set status: %s", w.describe())

	// Lowered to 0: the set takes the value back, the preservation stops,
	// the machine is replaced.
	w.updateDeployment(d, func(cur *v1alpha1.MachineDeployment) {
		zero := int32(0)
		cur.Spec.AutoPreserveFailedMachineMax = &zero
	})
	require.Eventually(t, func() bool {
		for _, m := range w.machineList() {
			if m.Name == preserved {
				return false
			}
		}
		return true
	}, waitFor, tick, "the machine whose preservation ended is replaced: %s", w.describe())
	w.waitMachines(3, v1alpha1.MachineRunning)
	sets := w.setList()
	require.Len(t, sets, 1)
	require.NotNil(t, sets[0].Status.AutoPreserveFailedMachineCount)
	assert.Zero(t, *sets[0].Status.AutoPreserveFailedMachineCount)
}

// victimDeletion watches the namespace's Machines and sends the
// deletionTimestamp of machine name once a watch event shows it.
func victimDeletion(t *testing.T, env *testenv.Env, ns, name string) <-chan time.Time {
	t.Helper()
	wc, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
	require.NoError(t, err)
	watcher, err := wc.Watch(t.Context(), &v1alpha1.MachineList{}, client.InNamespace(ns))
	require.NoError(t, err)
	t.Cleanup(watcher.Stop)
	out := make(chan time.Time, 1)
	go func() {
		for ev := range watcher.ResultChan() {
			if m, ok := ev.Object.(*v1alpha1.Machine); ok && m.Name == name && m.DeletionTimestamp != nil {
				select {
				case out <- m.DeletionTimestamp.Time:
				default:
				}
			}
		}
	}()
	return out
}
