package manager

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/internal/controller/setup"
	"github.com/machina-io/machina/core/testenv"
)

// licence is the class's virtual capacity: the manager writes it into the
// Node's status from its cached copy of the Node.
const licence corev1.ResourceName = "example.com/licence"

// TestCacheKeepsWhatControllersRead runs the manager and follows one
// Machine to Running on a Node whose kubelet reports a full status (images,
// nodeInfo, daemon endpoints). The manager writes that Node three ways from
// its cached copy: the Node finalizer (a metadata patch), the virtual
// capacity (a status patch) and its annotation. Its cache then holds the
// Node without images, nodeInfo and daemon endpoints, and with everything
// the controllers read, while the API server still has all of it: no write
// of the manager sent a dropped field back empty. Managed fields are checked
// on the Machine: the API server (1.37) records none for Nodes.
func TestCacheKeepsWhatControllersRead(t *testing.T) {
	logTo(t)
	env := testenv.Start(t)
	c := env.Client
	ctx := t.Context()
	require.NoError(t, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	_, endpoint := startTestDriver(t)

	opts := DefaultOptions()
	opts.ControlConfig = env.Config
	opts.TargetConfig = env.Config // a target cache of its own, on the same API server
	opts.Namespace = ns
	opts.DriverEndpoint = endpoint
	opts.LeaderElect = false
	opts.MetricsBindAddress = "0"
	opts.HealthProbeBindAddress = "0"
	opts.skipNameValidation = true
	m, _ := runManager(t, opts)

	class := newClass(ns, "small", "")
	class.NodeTemplate = &v1alpha1.NodeTemplate{
		Capacity:        corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")},
		VirtualCapacity: corev1.ResourceList{licence: resource.MustParse("1")},
		InstanceType:    "small", Region: "r", Zone: "z",
	}
	require.NoError(t, c.Create(ctx, class))
	machine := &v1alpha1.Machine{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "m1"},
		Spec:       v1alpha1.MachineSpec{Class: v1alpha1.ClassSpec{Kind: "MachineClass", Name: "small"}},
	}
	require.NoError(t, c.Create(ctx, machine))
	require.Eventually(t, func() bool {
		got := &v1alpha1.Machine{}
		return c.Get(ctx, client.ObjectKeyFromObject(machine), got) == nil && got.Labels[v1alpha1.NodeLabelKey] == "m1"
	}, waitFor, tick, "the machine never got its VM")
	node := registerFullNode(t, c, "m1")

	// The manager's writes reached the API server.
	live := &corev1.Node{}
	require.Eventually(t, func() bool {
		if c.Get(ctx, client.ObjectKeyFromObject(node), live) != nil {
			return false
		}
		_, licensed := live.Status.Capacity[licence]
		return licensed && hasFinalizer(t, c, live, v1alpha1.NodeFinalizer) &&
			live.Annotations[v1alpha1.LastAppliedVirtualCapacityAnnotation] != ""
	}, waitFor, tick, "the manager never wrote the node's finalizer and virtual capacity")
	require.Eventually(t, func() bool {
		got := &v1alpha1.Machine{}
		return c.Get(ctx, client.ObjectKeyFromObject(machine), got) == nil && got.Status.CurrentStatus.Phase == v1alpha1.MachineRunning
	}, waitFor, tick, "the machine never became Running")

	// The API server kept what the kubelet wrote.
	require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(node), live))
	assert.Equal(t, node.Status.Images, live.Status.Images, "the node's images on the API server")
	assert.Equal(t, node.Status.NodeInfo, live.Status.NodeInfo, "the node's nodeInfo on the API server")
	assert.Equal(t, node.Status.DaemonEndpoints, live.Status.DaemonEndpoints)
	assert.Equal(t, node.Status.Addresses, live.Status.Addresses)
	assert.True(t, live.Status.Capacity.Cpu().Equal(resource.MustParse("2")), "the kubelet's capacity on the API server")

	// The cache has the manager's writes, without what nothing reads.
	cache := m.target.GetCache()
	cached := &corev1.Node{}
	require.Eventually(t, func() bool {
		return cache.Get(ctx, client.ObjectKeyFromObject(node), cached) == nil && cached.ResourceVersion == live.ResourceVersion
	}, waitFor, tick, "the target cache never caught up with the node")
	assert.Empty(t, cached.ManagedFields, "cached node's managed fields")
	assert.Empty(t, cached.Status.Images, "cached node's images")
	assert.Zero(t, cached.Status.NodeInfo, "cached node's nodeInfo")
	assert.Zero(t, cached.Status.DaemonEndpoints, "cached node's daemon endpoints")
	assert.Equal(t, live.Status.Conditions, cached.Status.Conditions, "cached node's conditions")
	assert.Equal(t, live.Status.Capacity, cached.Status.Capacity, "cached node's capacity")
	assert.Equal(t, live.Status.Allocatable, cached.Status.Allocatable, "cached node's allocatable")
	assert.Equal(t, live.Status.Addresses, cached.Status.Addresses, "cached node's addresses")
	assert.Equal(t, live.Finalizers, cached.Finalizers)
	assert.Equal(t, live.Annotations, cached.Annotations)

	// Machines lose their managed fields only.
	liveMachine, cachedMachine := &v1alpha1.Machine{}, &v1alpha1.Machine{}
	require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(machine), liveMachine))
	assert.NotEmpty(t, liveMachine.ManagedFields, "the machine's managed fields on the API server")
	require.NoError(t, m.base.GetCache().Get(ctx, client.ObjectKeyFromObject(machine), cachedMachine))
	assert.Empty(t, cachedMachine.ManagedFields, "cached machine's managed fields")
	assert.Equal(t, liveMachine.Spec, cachedMachine.Spec)

	// Controllers read machines by index from the informer itself, though
	// the cache is of one named namespace (setup.NewIndexedCache) and they
	// see it through a leadership term: the same object twice, not a
	// List's copies.
	termMgr := newTerm(m.base, m.indexes, true)
	byIndex := setup.NewCachedMachines(termMgr.GetClient(), termMgr.GetClient(), termMgr.GetCache())
	first, err := byIndex.ByField(ctx, ns, setup.MachineNodeIndex, "m1")
	require.NoError(t, err)
	require.Len(t, first, 1)
	again, err := byIndex.ByField(ctx, ns, setup.MachineNodeIndex, "m1")
	require.NoError(t, err)
	require.Len(t, again, 1)
	assert.Same(t, first[0], again[0], "the manager's cache hands out its machines without copies")
}

// registerFullNode creates a Ready Node with the status a real kubelet
// reports: capacity, addresses, images, nodeInfo, daemon endpoints.
func registerFullNode(t *testing.T, c client.Client, name string) *corev1.Node {
	t.Helper()
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
	require.NoError(t, c.Create(t.Context(), node))
	var status corev1.NodeStatus
	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := c.Get(t.Context(), client.ObjectKeyFromObject(node), node); err != nil {
			return err
		}
		node.Status.Conditions = []corev1.NodeCondition{{
			Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
			LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now(),
		}}
		node.Status.Capacity = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourcePods: resource.MustParse("110")}
		node.Status.Allocatable = node.Status.Capacity.DeepCopy()
		node.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.0.0.1"}}
		node.Status.NodeInfo = corev1.NodeSystemInfo{KubeletVersion: "v1.35.0", OSImage: "Garden Linux", MachineID: "m1", BootID: "b1"}
		node.Status.DaemonEndpoints = corev1.NodeDaemonEndpoints{KubeletEndpoint: corev1.DaemonEndpoint{Port: 10250}}
		node.Status.Images = []corev1.ContainerImage{
			{Names: []string{"registry.k8s.io/pause@sha256:7031c1b283388d2c2e09b57badb803c05ebed362dc88d84b480cc47f72a21097", "registry.k8s.io/pause:3.10"}, SizeBytes: 320368},
			{Names: []string{"registry.k8s.io/kube-proxy@sha256:0c8c5d4ac4b7d8b3e1d2f0f7d6a5e4b3c2a1f0e9d8c7b6a5f4e3d2c1b0a9f8e7", "registry.k8s.io/kube-proxy:v1.35.0"}, SizeBytes: 30560000},
		}
		if err := c.Status().Update(t.Context(), node); err != nil {
			return err
		}
		status = node.Status
		return nil
	}))
	node.Status = status
	return node
}
