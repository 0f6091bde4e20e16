package machine

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/internal/mcmmetrics"
	"github.com/machina-io/machina/core/testenv"
	"github.com/machina-io/machina/drivers/inmemory"
)

// TestMCMParity covers behaviour the Machine controller has for parity with
// MCM (docs/operating.md, "Differences from MCM"), against one API server.
func TestMCMParity(t *testing.T) {
	env := testenv.Start(t)
	for _, s := range []struct {
		name string
		run  func(t *testing.T, env *testenv.Env)
	}{
		{"duration gauges and failed joins", testMCMDurations},
		{"terminating node condition", testTerminatingCondition},
		{"misconfigured PDB", testMisconfiguredPDB},
		{"max evict retries", testMaxEvictRetries},
		{"virtual capacity", testVirtualCapacity},
		{"OUT_OF_RANGE asks for an orphan scan", testOutOfRangeOrphanScan},
		{"invalid effective-creation-timeout", testInvalidEffectiveCreationTimeout},
	} {
		t.Run(s.name, func(t *testing.T) { s.run(t, env) })
	}
}

// series returns the metric of c whose labels include want, nil when there
// is none.
func series(t *testing.T, c prometheus.Collector, want map[string]string) *dto.Metric {
	t.Helper()
	ch := make(chan prometheus.Metric, 100)
	go func() { c.Collect(ch); close(ch) }()
	var found *dto.Metric
	for m := range ch {
		d := &dto.Metric{}
		require.NoError(t, m.Write(d))
		match := 0
		for _, l := range d.GetLabel() {
			if v, ok := want[l.GetName()]; ok && v == l.GetValue() {
				match++
			}
		}
		if match == len(want) && found == nil {
			found = d
		}
	}
	return found
}

// A machine of a deployment sets MCM's create, join, drain and delete
// gauges for its deployment, instance type and zone; one that never joins
// counts in mcm_machine_num_failed_join.
func testMCMDurations(t *testing.T, env *testenv.Env) {
	w := newWorld(t, env, env, inmemory.Options{})
	class := w.class("small", nil)
	class.NodeTemplate = &v1alpha1.NodeTemplate{InstanceType: "m-large", Capacity: corev1.ResourceList{}}
	require.NoError(t, env.Client.Update(w.ctx, class))
	w.kubelet.holdNode("pd-late")
	w.start()
	labels := func(m *v1alpha1.Machine) {
		m.Labels = map[string]string{v1alpha1.MachineDeploymentNameLabel: "workers"}
		m.Spec.NodeTemplateSpec.Labels = map[string]string{"topology.kubernetes.io/zone": "zone-a"}
	}
	w.machine("pd-ok", "small", labels)
	// The annotation effective-creation-timeout wins over spec.creationTimeout.
	w.machine("pd-late", "small", labels, func(m *v1alpha1.Machine) {
		m.Annotations = map[string]string{v1alpha1.EffectiveCreationTimeoutAnnotation: "2s"}
		m.Spec.MachineConfiguration = &v1alpha1.MachineConfiguration{MachineCreationTimeout: &v1alpha1.Duration{Duration: 10 * time.Minute}}
	})
	w.waitPhase("pd-ok", v1alpha1.MachineRunning, waitLong)
	all := map[string]string{"namespace": w.ns, "machine_deployment": "workers", "instance_type": "m-large", "zone": "zone-a"}
	assert.NotNil(t, series(t, mcmmetrics.CreateDuration, all), "mcm_machine_create_duration_seconds%v", all)
	assert.NotNil(t, series(t, mcmmetrics.JoinDuration, all), "mcm_machine_join_duration_seconds%v", all)

	late := w.waitPhase("pd-late", v1alpha1.MachineFailed, waitLong)
	assert.Contains(t, late.Status.LastOperation.Description, "within the creation timeout of 2s")
	failed := series(t, mcmmetrics.FailedJoin, all)
	require.NotNil(t, failed, "mcm_machine_num_failed_join%v", all)
	assert.Equal(t, 1.0, failed.GetCounter().GetValue())

	w.delete("pd-ok")
	w.waitGone("pd-ok", waitLong)
	assert.NotNil(t, series(t, mcmmetrics.DeleteDuration, all), "mcm_machine_delete_duration_seconds%v", all)
	assert.NotNil(t, series(t, mcmmetrics.DrainDuration, map[string]string{"namespace": w.ns, "machine_deployment": "workers"}),
		"mcm_machine_drain_duration_seconds")
}

// An effective-creation-timeout that is no positive duration is bad input:
// the machine gets a Warning event saying so, and spec.creationTimeout
// applies instead of it.
func testInvalidEffectiveCreationTimeout(t *testing.T, env *testenv.Env) {
	w := newWorld(t, env, env, inmemory.Options{})
	w.class("small", nil)
	w.kubelet.holdNode("pe-bad")
	w.start()
	w.machine("pe-bad", "small", func(m *v1alpha1.Machine) {
		m.Annotations = map[string]string{v1alpha1.EffectiveCreationTimeoutAnnotation: "soon"}
		m.Spec.MachineConfiguration = &v1alpha1.MachineConfiguration{MachineCreationTimeout: &v1alpha1.Duration{Duration: 2 * time.Second}}
	})
	ev := w.waitEvent("pe-bad", corev1.EventTypeWarning, reasonInvalidAnnotation)
	assert.Contains(t, ev, `node.machine.sapcloud.io/effective-creation-timeout="soon" is no positive duration`)
	failed := w.waitPhase("pe-bad", v1alpha1.MachineFailed, waitLong)
	assert.Contains(t, failed.Status.LastOperation.Description, "within the creation timeout of 2s")
}

// terminatingCondition reads the node's Terminating condition, nil when it
// has none.
func terminatingCondition(t *testing.T, w *world, c client.Client, node string) *corev1.NodeCondition {
	t.Helper()
	n := &corev1.Node{}
	require.NoError(t, c.Get(w.ctx, client.ObjectKey{Name: node}, n))
	for i := range n.Status.Conditions {
		if n.Status.Conditions[i].Type == v1alpha1.NodeTerminationCondition {
			return &n.Status.Conditions[i]
		}
	}
	return nil
}

// Before the drain, the Node gets Terminating=True: reason ScaleDown for a
// healthy machine, Unhealthy for a Failed one. A budget holds both drains
// so that the Nodes can be looked at.
func testTerminatingCondition(t *testing.T, env *testenv.Env) {
	w := newWorld(t, env, env, inmemory.Options{})
	w.class("small", nil)
	w.start()
	w.machine("pt-down", "small")
	w.machine("pt-sick", "small", func(m *v1alpha1.Machine) {
		m.Spec.MachineConfiguration = &v1alpha1.MachineConfiguration{MachineHealthTimeout: &v1alpha1.Duration{Duration: time.Second}}
	})
	w.waitPhase("pt-down", v1alpha1.MachineRunning, waitLong)
	w.waitPhase("pt-sick", v1alpha1.MachineRunning, waitLong)
	c := env.Client
	assert.Nil(t, terminatingCondition(t, w, c, "pt-down"), "no condition before the deletion")
	runningPod(t, w.ctx, c, w.ns, "held-1", "pt-down", map[string]string{"app": "held"})
	runningPod(t, w.ctx, c, w.ns, "held-2", "pt-sick", map[string]string{"app": "held"})
	pdb(t, w, c, "held", map[string]string{"app": "held"})

	setNodeCondition(t, w.ctx, c, "pt-sick", corev1.NodeReady, corev1.ConditionFalse)
	w.waitPhase("pt-sick", v1alpha1.MachineFailed, waitLong)

	w.delete("pt-down")
	w.delete("pt-sick")
	for node, reason := range map[string]string{"pt-down": v1alpha1.NodeScaledDown, "pt-sick": v1alpha1.NodeUnhealthy} {
		w.eventually(node, waitLong, "the drain", func(m *v1alpha1.Machine) bool {
			return m.Status.DeletionStep == v1alpha1.DeletionStepDrain
		})
		cond := terminatingCondition(t, w, c, node)
		require.NotNil(t, cond, "node %s has no Terminating condition", node)
		assert.Equal(t, corev1.ConditionTrue, cond.Status)
		assert.Equal(t, reason, cond.Reason, "node %s", node)
	}
	allowDisruptions(t, w, c, "held", 2)
	w.waitGone("pt-down", waitLong)
	w.waitGone("pt-sick", waitLong)
}

// A budget that can never allow an eviction (every pod healthy, 0
// disruptions allowed, its status current) fails the drain at once with the
// budget's name in lastOperation, the Drained condition and an event; once
// fixed, the drain completes.
func testMisconfiguredPDB(t *testing.T, env *testenv.Env) {
	w := newWorld(t, env, env, inmemory.Options{})
	w.class("small", nil)
	w.start()
	w.machine("pp-1", "small")
	w.waitPhase("pp-1", v1alpha1.MachineRunning, waitLong)
	c := env.Client
	runningPod(t, w.ctx, c, w.ns, "db", "pp-1", map[string]string{"app": "db"})
	budget := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: "db-strict"},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MinAvailable: ptr.To(intstr.FromInt32(1)),
			Selector:     &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}},
		},
	}
	require.NoError(t, c.Create(w.ctx, budget))
	// What the disruption controller would write: one pod expected, one
	// healthy, none may go.
	budget.Status = policyv1.PodDisruptionBudgetStatus{ObservedGeneration: budget.Generation, ExpectedPods: 1, CurrentHealthy: 1, DesiredHealthy: 1}
	require.NoError(t, c.Status().Update(w.ctx, budget))

	w.delete("pp-1")
	m := w.eventually("pp-1", waitLong, "the drain to fail on the budget", func(m *v1alpha1.Machine) bool {
		return m.Status.LastOperation.State == v1alpha1.MachineStateFailed && strings.Contains(m.Status.LastOperation.Description, "db-strict")
	})
	assert.Contains(t, m.Status.LastOperation.Description, "can never allow an eviction")
	assert.Equal(t, conditionMisconfigured, drainedCondition(m).Reason)
	assert.Contains(t, w.waitEvent("pp-1", corev1.EventTypeWarning, reasonMisconfiguredPDB), "PodDisruptionBudget db-strict of pod "+w.ns+"/db")
	assert.Zero(t, w.mem.Calls(inmemory.MethodDeleteMachine), "no VM deletion before the drain is done")

	allowDisruptions(t, w, c, "db-strict", 1)
	w.waitGone("pp-1", waitLong)
}

// An eviction refused for longer than spec.maxEvictRetries retries of the
// retry interval fails the drain (lastOperation Failed, one event); the
// drain goes on and completes once the budget allows it.
func testMaxEvictRetries(t *testing.T, env *testenv.Env) {
	w := newWorld(t, env, env, inmemory.Options{})
	w.opts.EvictRetryInterval = 500 * time.Millisecond
	w.class("small", nil)
	w.start()
	w.machine("pr-1", "small", func(m *v1alpha1.Machine) {
		m.Spec.MachineConfiguration = &v1alpha1.MachineConfiguration{MaxEvictRetries: ptr.To(int32(2))}
	})
	w.waitPhase("pr-1", v1alpha1.MachineRunning, waitLong)
	c := env.Client
	runningPod(t, w.ctx, c, w.ns, "web", "pr-1", map[string]string{"app": "web"})
	pdb(t, w, c, "web", map[string]string{"app": "web"})

	w.delete("pr-1")
	m := w.eventually("pr-1", waitLong, "the drain to be blocked", func(m *v1alpha1.Machine) bool {
		c := drainedCondition(m)
		return c != nil && strings.Contains(c.Message, "blocked by a PodDisruptionBudget")
	})
	assert.Equal(t, v1alpha1.MachineStateProcessing, m.Status.LastOperation.State, "within the retries the drain is not Failed")
	m = w.eventually("pr-1", waitLong, "the retries to run out", func(m *v1alpha1.Machine) bool {
		return m.Status.LastOperation.State == v1alpha1.MachineStateFailed
	})
	assert.Contains(t, m.Status.LastOperation.Description, "evictions refused for 2 retries of 500ms (maxEvictRetries)")
	assert.Equal(t, conditionRetriesExhaust, drainedCondition(m).Reason)
	w.waitEvent("pr-1", corev1.EventTypeWarning, reasonEvictionsRetried)
	start := m.Status.DeletionStepStartTime.Time
	assert.GreaterOrEqual(t, m.Status.LastOperation.LastUpdateTime.Sub(start), 900*time.Millisecond,
		"not before 2 retries of 500ms (second precision of the start time)")

	allowDisruptions(t, w, c, "web", 1)
	w.waitGone("pr-1", waitLong)
}

// The class's nodeTemplate.virtualCapacity reaches the Node's capacity and
// allocatable, recorded in last-applied-virtual-capacity; a resource
// dropped from the template leaves the Node, others' resources stay.
func testVirtualCapacity(t *testing.T, env *testenv.Env) {
	w := newWorld(t, env, env, inmemory.Options{})
	class := w.class("small", nil)
	class.NodeTemplate = &v1alpha1.NodeTemplate{Capacity: corev1.ResourceList{},
		VirtualCapacity: corev1.ResourceList{"example.com/licence": resource.MustParse("4")}}
	require.NoError(t, env.Client.Update(w.ctx, class))
	w.start()
	w.machine("pv-1", "small")
	w.waitPhase("pv-1", v1alpha1.MachineRunning, waitLong)
	c := env.Client
	node := func() *corev1.Node {
		n := &corev1.Node{}
		require.NoError(t, c.Get(w.ctx, client.ObjectKey{Name: "pv-1"}, n))
		return n
	}
	has := func(n *corev1.Node, name corev1.ResourceName, want string) bool {
		q, ok := n.Status.Capacity[name]
		a, okA := n.Status.Allocatable[name]
		return ok && okA && q.String() == want && a.String() == want
	}
	require.Eventually(t, func() bool { return has(node(), "example.com/licence", "4") }, waitLong, 50*time.Millisecond,
		"the virtual capacity never reached the node")
	assert.JSONEq(t, `{"example.com/licence":"4"}`, node().Annotations[v1alpha1.LastAppliedVirtualCapacityAnnotation])

	// Someone else's extended resource stays; the template's change moves ours.
	n := node()
	n.Status.Capacity["example.com/theirs"] = resource.MustParse("1")
	require.NoError(t, c.Status().Update(w.ctx, n))
	require.NoError(t, c.Get(w.ctx, client.ObjectKeyFromObject(class), class))
	class.NodeTemplate.VirtualCapacity = corev1.ResourceList{"example.com/hint": resource.MustParse("2")}
	require.NoError(t, c.Update(w.ctx, class))
	require.Eventually(t, func() bool {
		n := node()
		_, old := n.Status.Capacity["example.com/licence"]
		return has(n, "example.com/hint", "2") && !old
	}, waitLong, 50*time.Millisecond, "the node did not follow the template's change")
	assert.Contains(t, node().Status.Capacity, corev1.ResourceName("example.com/theirs"))
}

// A driver answering OUT_OF_RANGE (MCM's "several VMs") asks the orphan
// collector for a scan, once per such failure.
func testOutOfRangeOrphanScan(t *testing.T, env *testenv.Env) {
	w := newWorld(t, env, env, inmemory.Options{})
	var fired atomic.Int32
	w.configure = func(r *Reconciler, _ client.Client) { r.OrphanScan = func() { fired.Add(1) } }
	w.class("small", nil)
	w.mem.SetFault(inmemory.MethodCreateMachine, inmemory.Fault{Code: codes.OutOfRange, Message: "several VMs", Count: 1})
	w.start()
	w.machine("po-1", "small")
	m := w.eventually("po-1", waitLong, "the failed create", func(m *v1alpha1.Machine) bool {
		return m != nil && m.Status.LastOperation.ErrorCode == codes.OutOfRange.String()
	})
	assert.Equal(t, v1alpha1.MachineStateFailed, m.Status.LastOperation.State)
	require.Eventually(t, func() bool { return fired.Load() == 1 }, waitLong, 20*time.Millisecond, "no orphan scan asked for")
	w.waitPhase("po-1", v1alpha1.MachineRunning, waitLong)
	assert.Equal(t, int32(1), fired.Load(), "asked once for one failure")
}
