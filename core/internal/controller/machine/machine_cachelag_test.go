package machine

import (
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/internal/controller/controllertest"
	"github.com/machina-io/machina/core/internal/freeze"
	"github.com/machina-io/machina/core/internal/inplace"
	"github.com/machina-io/machina/core/testenv"
	"github.com/machina-io/machina/drivers/inmemory"
)

// TestUnknownMachineRecoversWhileTheCacheLags is what follows an API
// server outage: the Machine cache's watch is still waiting out its
// reconnect backoff (up to half a minute after the API server is back)
// while the Node cache is current. The controller marks a machine Unknown,
// looks at it again in the grace period after the outage (holding it), and
// then its Node is Ready again. The machine must be Running again although
// the cache still shows it as it was before the controller's own write:
// the controller must not take that old view (Running, nothing to do) for
// the machine, since the late cache event, a status change, triggers no
// reconcile of its own.
func TestUnknownMachineRecoversWhileTheCacheLags(t *testing.T) {
	env := testenv.Start(t)
	// The Nodes come through a cache of their own that stays connected
	// (the target cluster is the same API server, reached directly).
	target := *env
	w := newWorld(t, env, &target, inmemory.Options{})
	proxy := controllertest.StartProxy(t, env.Config)
	w.cacheConfig = proxy.Config(env.Config)
	gate := &freeze.Gate{}
	var cached client.Client
	w.configure = func(r *Reconciler, c client.Client) { r.Gate, cached = gate, c }
	w.class("small", nil)
	w.start()
	w.machine("m1", "small", func(m *v1alpha1.Machine) {
		m.Spec.MachineConfiguration = &v1alpha1.MachineConfiguration{MachineHealthTimeout: &v1alpha1.Duration{Duration: time.Second}}
	})
	w.waitPhase("m1", v1alpha1.MachineRunning, waitLong)

	// An outage has just ended: the grace period lasts a minute.
	gate.Freeze("test: API server unreachable", time.Now().Add(-time.Minute))
	gate.UnfreezeWithGrace(time.Now())
	// The Machine cache shows the machine as it is, then loses its API
	// server (and keeps what it has).
	require.Eventually(t, func() bool {
		m := &v1alpha1.Machine{}
		return cached.Get(w.ctx, client.ObjectKey{Namespace: w.ns, Name: "m1"}, m) == nil &&
			m.ResourceVersion == w.get("m1").ResourceVersion
	}, waitLong, 20*time.Millisecond, "the cache never showed the Running machine")
	proxy.SetDown(true)

	setNodeCondition(t, w.ctx, env.Client, "m1", corev1.NodeReady, corev1.ConditionFalse)
	w.waitPhase("m1", v1alpha1.MachineUnknown, waitLong)
	// The health timeout passes in the grace period: the controller looks
	// at the machine again and holds it.
	require.Eventually(t, func() bool {
		return strings.Contains(w.logs.String(), "Grace period after an API server outage; not failing an unhealthy machine")
	}, waitLong, 20*time.Millisecond, "the controller never held the machine in the grace period")
	m := &v1alpha1.Machine{}
	require.NoError(t, cached.Get(w.ctx, client.ObjectKey{Namespace: w.ns, Name: "m1"}, m))
	require.Equal(t, v1alpha1.MachineRunning, m.Status.CurrentStatus.Phase, "the cache must still lag for the test to mean anything")

	// The kubelet reports again.
	setNodeCondition(t, w.ctx, env.Client, "m1", corev1.NodeReady, corev1.ConditionTrue)
	m = w.waitPhase("m1", v1alpha1.MachineRunning, 15*time.Second)
	assert.Contains(t, m.Status.LastOperation.Description, "healthy again")
	assert.NotContains(t, w.rec.phasesOf("m1"), "Failed")

	// Once the cache is back it shows the machine Running, and the
	// controller leaves it so.
	proxy.SetDown(false)
	require.Eventually(t, func() bool {
		m := &v1alpha1.Machine{}
		return cached.Get(w.ctx, client.ObjectKey{Namespace: w.ns, Name: "m1"}, m) == nil &&
			m.Status.CurrentStatus.Phase == v1alpha1.MachineRunning && m.ResourceVersion == w.get("m1").ResourceVersion
	}, waitLong, 50*time.Millisecond, "the cache never caught up")
	assert.Equal(t, v1alpha1.MachineRunning, w.get("m1").Status.CurrentStatus.Phase)
}

// TestNodeReadLiveWhileTheCacheLagsBehindTheGoSignal: the controller has
// written a Node's InPlaceUpdate condition (the go signal) and its cache
// does not show that write yet. The next reconcile must read the Node from
// the API server: decided from the cached copy, which still shows the node
// a candidate, the condition would be taken back to SelectedForUpdate and
// the agent, waiting for the go signal, would never update the node (one
// machine of 200 hung in InPlaceUpdating that way in the in-place bench).
func TestNodeReadLiveWhileTheCacheLagsBehindTheGoSignal(t *testing.T) {
	w, proxy, rec, cached := runningBehindProxy(t)
	setNodeLabels(t, w, "m1", v1alpha1.LabelKeyNodeCandidateForUpdate, "true")
	w.waitNodeReason("m1", "m1", v1alpha1.CandidateForUpdate)
	cachedReason := func() string {
		n := &corev1.Node{}
		require.NoError(t, cached.Get(w.ctx, client.ObjectKey{Name: "m1"}, n))
		return inplace.Reason(n)
	}
	require.Eventually(t, func() bool { return cachedReason() == v1alpha1.CandidateForUpdate }, waitLong, 20*time.Millisecond)
	proxy.SetDown(true)

	m := w.get("m1")
	s := &scope{machine: m.DeepCopy(), original: m, now: time.Now(), log: logr.Discard()}
	_, err := rec.loadNode(w.ctx, s)
	require.NoError(t, err)
	require.NoError(t, rec.setInPlaceCondition(w.ctx, s, v1alpha1.ReadyForUpdate, ""))
	require.Equal(t, v1alpha1.ReadyForUpdate, inplace.Reason(w.node("m1")))
	require.Equal(t, v1alpha1.CandidateForUpdate, cachedReason(), "the cache must still lag for the test to mean anything")

	next := &scope{machine: m.DeepCopy(), original: m, now: time.Now(), log: logr.Discard()}
	node, err := rec.loadNode(w.ctx, next)
	require.NoError(t, err)
	assert.Equal(t, v1alpha1.ReadyForUpdate, inplace.Reason(node), "the Node was read from the cache, behind the controller's own write")

	// Once the cache shows the write, the Node comes from the cache again.
	proxy.SetDown(false)
	require.Eventually(t, func() bool { return cachedReason() == v1alpha1.ReadyForUpdate }, waitLong, 20*time.Millisecond)
	_, err = rec.loadNode(w.ctx, &scope{machine: m.DeepCopy(), original: m, now: time.Now(), log: logr.Discard()})
	require.NoError(t, err)
	_, remembered := rec.nodesWritten.Get(node.UID, time.Now())
	assert.False(t, remembered, "the write is forgotten once the cache shows it")
}

// TestNodeWritesReadLiveWhileTheCacheLags: every Node write of the
// controller (writeNode), not only the in-place go signal, is read back
// live until the Node cache shows it. Here the termination condition (a
// status write) and a label (a metadata write, as preservation and the
// node template make) are written while the cache is cut off; the next
// reconcile's Node must carry each, or it would decide from a Node older
// than its own write (write the condition again, preserve a Node just
// released).
func TestNodeWritesReadLiveWhileTheCacheLags(t *testing.T) {
	w, proxy, rec, cached := runningBehindProxy(t)
	hasCondition := func(n *corev1.Node, typ corev1.NodeConditionType) bool {
		for _, c := range n.Status.Conditions {
			if c.Type == typ && c.Status == corev1.ConditionTrue {
				return true
			}
		}
		return false
	}
	cachedNode := func() *corev1.Node {
		n := &corev1.Node{}
		require.NoError(t, client.IgnoreNotFound(cached.Get(w.ctx, client.ObjectKey{Name: "m1"}, n)))
		return n
	}
	require.Eventually(t, func() bool { return hasCondition(cachedNode(), corev1.NodeReady) }, waitLong, 20*time.Millisecond)
	proxy.SetDown(true)
	m := w.get("m1")
	newScope := func() *scope { return &scope{machine: m.DeepCopy(), original: m, now: time.Now(), log: logr.Discard()} }

	require.NoError(t, rec.markNodeTerminating(w.ctx, newScope()))
	require.True(t, hasCondition(w.node("m1"), v1alpha1.NodeTerminationCondition), "written")
	require.False(t, hasCondition(cachedNode(), v1alpha1.NodeTerminationCondition), "the cache must still lag for the test to mean anything")
	node, err := rec.loadNode(w.ctx, newScope())
	require.NoError(t, err)
	assert.True(t, hasCondition(node, v1alpha1.NodeTerminationCondition), "the Node was read from the cache, behind the controller's own write")

	// A metadata write (the preservation and node template paths), of a
	// label the controller leaves alone.
	before := w.node("m1")
	labelled := before.DeepCopy()
	labelled.Labels["test.machina.io/written"] = "yes"
	require.NoError(t, rec.writeNode(w.ctx, before, labelled))
	require.Empty(t, cachedNode().Labels["test.machina.io/written"], "the cache must still lag")
	node, err = rec.loadNode(w.ctx, newScope())
	require.NoError(t, err)
	assert.Equal(t, "yes", node.Labels["test.machina.io/written"], "the Node was read from the cache, behind the controller's own write")

	// Once the cache shows the writes, the Node comes from the cache again.
	proxy.SetDown(false)
	require.Eventually(t, func() bool { return cachedNode().Labels["test.machina.io/written"] == "yes" }, waitLong, 20*time.Millisecond)
	_, err = rec.loadNode(w.ctx, newScope())
	require.NoError(t, err)
	_, remembered := rec.nodesWritten.Get(node.UID, time.Now())
	assert.False(t, remembered, "the writes are forgotten once the cache shows them")
}

// runningBehindProxy starts a world whose manager's cache reads through a
// proxy the test can cut (proxy.SetDown), with one Running machine m1; it
// returns the Reconciler and the manager's cached client.
func runningBehindProxy(t *testing.T) (*world, *controllertest.Proxy, *Reconciler, client.Client) {
	t.Helper()
	env := testenv.Start(t)
	w := newWorld(t, env, env, inmemory.Options{})
	proxy := controllertest.StartProxy(t, env.Config)
	w.cacheConfig = proxy.Config(env.Config)
	var rec *Reconciler
	var cached client.Client
	w.configure = func(r *Reconciler, c client.Client) { rec, cached = r, c }
	w.class("small", nil)
	w.start()
	w.machine("m1", "small")
	w.waitPhase("m1", v1alpha1.MachineRunning, waitLong)
	return w, proxy, rec, cached
}
