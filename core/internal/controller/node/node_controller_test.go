package node_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/internal/controller/controllertest"
	"github.com/machina-io/machina/core/internal/controller/node"
	"github.com/machina-io/machina/core/internal/controller/setup"
	"github.com/machina-io/machina/core/testenv"
)

// hold is a finalizer of the test's own that keeps a deleted Machine around,
// standing in for the Machine controller's deletion flow.
const hold = "test.machina.io/hold"

// TestNodeController runs with two clusters, Machines in the control
// cluster and Nodes in the target cluster, as in production.
func TestNodeController(t *testing.T) {
	control := testenv.Start(t)
	target := testenv.Start(t, testenv.WithoutCRDs())
	mgr := startManager(t, control, target)
	cc, tc := control.Client, target.Client
	ns := "machines"
	require.NoError(t, cc.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))

	t.Run("node of a live machine gets the finalizer, a stranger does not", func(t *testing.T) {
		ctx := t.Context()
		m := newMachine(ns, "m-owned", "n-owned")
		require.NoError(t, cc.Create(ctx, m))
		controllertest.WaitCached(t, mgr, m)
		owned, stranger := newNode("n-owned"), newNode("n-stranger")
		require.NoError(t, tc.Create(ctx, owned))
		require.NoError(t, tc.Create(ctx, stranger))
		controllertest.RequireFinalizer(t, tc, owned, v1alpha1.NodeFinalizer, true)
		controllertest.RequireFinalizerFor(t, tc, stranger, v1alpha1.NodeFinalizer, false, time.Second)
	})

	t.Run("a node no machine names is marked not-managed-by-mcm, until one does", func(t *testing.T) {
		ctx := t.Context()
		n := newNode("n-unmanaged")
		require.NoError(t, tc.Create(ctx, n))
		annotation := func() (string, bool) {
			got := &corev1.Node{}
			require.NoError(t, tc.Get(ctx, client.ObjectKeyFromObject(n), got))
			v, ok := got.Annotations[v1alpha1.NotManagedByMCMAnnotation]
			return v, ok
		}
		_, marked := annotation()
		require.False(t, marked, "a young node is not marked")
		require.Eventually(t, func() bool { v, ok := annotation(); return ok && v == "1" }, 15*time.Second, 50*time.Millisecond,
			"the node was never marked not managed")
		m := newMachine(ns, "m-unmanaged", n.Name)
		require.NoError(t, cc.Create(ctx, m))
		require.Eventually(t, func() bool { _, ok := annotation(); return !ok }, 15*time.Second, 50*time.Millisecond,
			"the mark stayed after a machine named the node")
	})

	t.Run("a machine naming an existing node puts the finalizer on it", func(t *testing.T) {
		ctx := t.Context()
		n := newNode("n-late")
		require.NoError(t, tc.Create(ctx, n))
		m := newMachine(ns, "m-late", "")
		require.NoError(t, cc.Create(ctx, m))
		controllertest.RequireFinalizerFor(t, tc, n, v1alpha1.NodeFinalizer, false, 500*time.Millisecond)

		patch := client.MergeFrom(m.DeepCopy())
		m.Labels = map[string]string{v1alpha1.NodeLabelKey: n.Name}
		require.NoError(t, cc.Patch(ctx, m, patch))
		controllertest.RequireFinalizer(t, tc, n, v1alpha1.NodeFinalizer, true)
	})

	t.Run("deleting a node deletes its machine; the node goes with the machine", func(t *testing.T) {
		ctx := t.Context()
		m := newMachine(ns, "m-doomed", "n-doomed")
		m.Finalizers = []string{hold}
		require.NoError(t, cc.Create(ctx, m))
		controllertest.WaitCached(t, mgr, m)
		n := newNode("n-doomed")
		require.NoError(t, tc.Create(ctx, n))
		controllertest.RequireFinalizer(t, tc, n, v1alpha1.NodeFinalizer, true)

		require.NoError(t, tc.Delete(ctx, n))
		require.Eventually(t, func() bool {
			got := &v1alpha1.Machine{}
			return cc.Get(ctx, client.ObjectKeyFromObject(m), got) == nil && !got.DeletionTimestamp.IsZero()
		}, controllertest.WaitFor, controllertest.Tick, "machine was not deleted")
		controllertest.RequireEvent(t, cc, m, node.ReasonNodeDeleted, "machine of node n-doomed: the node is being deleted")
		controllertest.RequireEvent(t, tc, n, node.ReasonNodeDeleted, "Deleting machine machines/m-doomed")

		// The node waits for its machine.
		got := &corev1.Node{}
		require.NoError(t, tc.Get(ctx, client.ObjectKeyFromObject(n), got))
		require.True(t, controllerutil.ContainsFinalizer(got, v1alpha1.NodeFinalizer))

		// The machine goes (in production its deletion flow removes the
		// node finalizer first; here the machine simply disappears), and
		// the node no one claims any more is released.
		releaseMachine(t, cc, m)
		controllertest.RequireGone(t, tc, n)
	})

	t.Run("a node annotated trigger-deletion-by-mcm=true deletes its machine", func(t *testing.T) {
		ctx := t.Context()
		m := newMachine(ns, "m-triggered", "n-triggered")
		m.Finalizers = []string{hold}
		require.NoError(t, cc.Create(ctx, m))
		t.Cleanup(func() { releaseMachine(t, cc, m) })
		controllertest.WaitCached(t, mgr, m)
		n := newNode("n-triggered")
		require.NoError(t, tc.Create(ctx, n))
		controllertest.RequireFinalizer(t, tc, n, v1alpha1.NodeFinalizer, true)

		// Any other value is not a request.
		setNodeAnnotation(t, tc, n, v1alpha1.TriggerDeletionByMCMAnnotation, "false")
		requireMachineLiveFor(t, cc, m, time.Second)

		setNodeAnnotation(t, tc, n, v1alpha1.TriggerDeletionByMCMAnnotation, "true")
		require.Eventually(t, func() bool {
			got := &v1alpha1.Machine{}
			return cc.Get(ctx, client.ObjectKeyFromObject(m), got) == nil && !got.DeletionTimestamp.IsZero()
		}, controllertest.WaitFor, controllertest.Tick, "the annotation did not delete the machine")
		controllertest.RequireEvent(t, cc, m, node.ReasonTriggerDeletion, "trigger-deletion-by-mcm=true")
		controllertest.RequireEvent(t, tc, n, node.ReasonTriggerDeletion, "Deleting machine machines/m-triggered")
		// The Node itself stays: the machine's deletion flow drains and
		// deletes it after the VM.
		got := &corev1.Node{}
		require.NoError(t, tc.Get(ctx, client.ObjectKeyFromObject(n), got))
		require.True(t, got.DeletionTimestamp.IsZero())
	})

	t.Run("a node of a machine being deleted gets no finalizer", func(t *testing.T) {
		ctx := t.Context()
		m := newMachine(ns, "m-leaving", "n-leaving")
		m.Finalizers = []string{hold}
		require.NoError(t, cc.Create(ctx, m))
		require.NoError(t, cc.Delete(ctx, m))
		t.Cleanup(func() { releaseMachine(t, cc, m) })
		require.Eventually(t, func() bool {
			got := &v1alpha1.Machine{}
			return mgr.GetCache().Get(ctx, client.ObjectKeyFromObject(m), got) == nil && !got.DeletionTimestamp.IsZero()
		}, controllertest.WaitFor, controllertest.Tick)

		n := newNode("n-leaving")
		require.NoError(t, tc.Create(ctx, n))
		controllertest.RequireFinalizerFor(t, tc, n, v1alpha1.NodeFinalizer, false, time.Second)
	})

	t.Run("a node claimed by two machines deletes neither", func(t *testing.T) {
		ctx := t.Context()
		a, b := newMachine(ns, "m-twin-a", "n-twin"), newMachine(ns, "m-twin-b", "n-twin")
		require.NoError(t, cc.Create(ctx, a))
		require.NoError(t, cc.Create(ctx, b))
		controllertest.WaitCached(t, mgr, a, b)
		n := newNode("n-twin")
		require.NoError(t, tc.Create(ctx, n))
		controllertest.RequireFinalizer(t, tc, n, v1alpha1.NodeFinalizer, true)

		require.NoError(t, tc.Delete(ctx, n))
		controllertest.RequireEvent(t, tc, n, node.ReasonAmbiguousNode, "m-twin-a")
		for _, m := range []*v1alpha1.Machine{a, b} {
			got := &v1alpha1.Machine{}
			require.NoError(t, cc.Get(ctx, client.ObjectKeyFromObject(m), got))
			require.True(t, got.DeletionTimestamp.IsZero(), "machine %s was deleted", m.Name)
		}
		// Sorting it out: one machine goes, the other is then the owner
		// and is deleted in turn.
		require.NoError(t, cc.Delete(ctx, a))
		require.Eventually(t, func() bool {
			return apierrors.IsNotFound(cc.Get(ctx, client.ObjectKeyFromObject(b), &v1alpha1.Machine{}))
		}, controllertest.WaitFor, controllertest.Tick, "the remaining machine was not deleted")
		controllertest.RequireGone(t, tc, n)
	})
}

// startManager runs a manager on the control cluster with the Node
// controller watching the target cluster.
func startManager(t *testing.T, control, target *testenv.Env) ctrl.Manager {
	t.Helper()
	tcl, err := cluster.New(target.Config, func(o *cluster.Options) { o.Scheme = target.Scheme })
	require.NoError(t, err)
	mgr := controllertest.StartManager(t, control, func(mgr ctrl.Manager) error {
		if err := mgr.Add(tcl); err != nil {
			return err
		}
		// Nodes without a Machine are marked not managed after 2s.
		return (&node.Reconciler{UnmanagedAfter: 2 * time.Second}).SetupWithManager(mgr, setup.Env{Target: tcl, Workers: 2})
	})
	require.True(t, tcl.GetCache().WaitForCacheSync(t.Context()), "the target cluster's cache did not sync")
	return mgr
}

func newMachine(ns, name, nodeName string) *v1alpha1.Machine {
	m := &v1alpha1.Machine{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       v1alpha1.MachineSpec{Class: v1alpha1.ClassSpec{Kind: "MachineClass", Name: "c"}},
	}
	if nodeName != "" {
		m.Labels = map[string]string{v1alpha1.NodeLabelKey: nodeName}
	}
	return m
}

func newNode(name string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
}

// releaseMachine removes the test's hold finalizer so that a deleted
// machine disappears.
func releaseMachine(t *testing.T, c client.Client, m *v1alpha1.Machine) {
	t.Helper()
	got := &v1alpha1.Machine{}
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(m), got); err != nil {
		return
	}
	patch := client.MergeFrom(got.DeepCopy())
	got.Finalizers = nil
	require.NoError(t, client.IgnoreNotFound(c.Patch(context.Background(), got, patch)))
}

// setNodeAnnotation sets one annotation of the Node with a merge patch.
func setNodeAnnotation(t *testing.T, c client.Client, n *corev1.Node, key, value string) {
	t.Helper()
	patch := client.MergeFrom(n.DeepCopy())
	if n.Annotations == nil {
		n.Annotations = map[string]string{}
	}
	n.Annotations[key] = value
	require.NoError(t, c.Patch(t.Context(), n, patch))
}

// requireMachineLiveFor checks that the Machine is not deleted for d.
func requireMachineLiveFor(t *testing.T, c client.Client, m *v1alpha1.Machine, d time.Duration) {
	t.Helper()
	require.Never(t, func() bool {
		got := &v1alpha1.Machine{}
		return c.Get(t.Context(), client.ObjectKeyFromObject(m), got) != nil || !got.DeletionTimestamp.IsZero()
	}, d, controllertest.Tick, "the machine was deleted")
}
