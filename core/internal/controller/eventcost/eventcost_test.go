package eventcost_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/internal/cachetrim"
	"github.com/machina-io/machina/core/internal/controller/classupdate"
	"github.com/machina-io/machina/core/internal/controller/machine"
	"github.com/machina-io/machina/core/internal/controller/machineset"
	"github.com/machina-io/machina/core/internal/controller/node"
	"github.com/machina-io/machina/core/internal/controller/safety/overshoot"
	"github.com/machina-io/machina/core/internal/controller/setup"
	"github.com/machina-io/machina/core/internal/driver"
	"github.com/machina-io/machina/core/testenv"
	"github.com/machina-io/machina/drivers/inmemory"
	"github.com/machina-io/machina/sdk"
)

const (
	ns = "fleet"
	// small and large are the two fleet sizes; large is 8× small, so a
	// cost linear in the fleet would grow about eightfold.
	small, large = 50, 400
	// growth is how much a reconcile may cost more at the large fleet than
	// at the small one: generous, since a constant cost measures within a
	// few percent and a linear one about 8×.
	growth = 2.0
	// runs is how many reconciles one measurement averages.
	runs = 40
	// probeMachines is the size of the MachineSet whose reconcile is
	// measured; it does not change with the fleet.
	probeMachines = 3
)

// The logger drops everything, always: not controllertest.UseTestLogger,
// because MACHINA_TEST_LOG would add a logger's allocations to what is
// measured.
func init() { ctrl.SetLogger(logr.Discard()) }

// TestPerEventCostDoesNotGrowWithTheFleet measures one reconcile of a
// Running Machine, of a MachineSet of 3 machines and of one Node, in the steady state (nothing
// to do but look), and the Node path: a heartbeat of the probe's Node
// through the cache (watch event, decoding, the manager's transform), beside a fleet of 50 and then of 400 machines with
// their Nodes, owned by another MachineSet, in the same cache. The
// controllers are registered with a manager whose cache alone runs: no
// controller reconciles in the background, so the process's allocations
// during the measured calls are theirs (and the informers' handling of the
// watch events of their own writes, which do not depend on the fleet).
func TestPerEventCostDoesNotGrowWithTheFleet(t *testing.T) {
	env := testenv.Start(t)
	ctx := t.Context()
	c := env.Client
	require.NoError(t, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))

	mgr, err := ctrl.NewManager(env.Config, ctrl.Options{
		Scheme:                 env.Scheme,
		Logger:                 logr.Discard(),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Controller:             config.Controller{SkipNameValidation: ptr.To(true)},
		// The manager's cache transform (core/manager).
		Cache: cache.Options{DefaultTransform: cachetrim.Transform()},
	})
	require.NoError(t, err)
	machines := &machine.Reconciler{Driver: startDriver(t)}
	require.NoError(t, machines.SetupWithManager(mgr, setup.Env{Target: mgr}))
	sets := &machineset.Reconciler{}
	require.NoError(t, sets.SetupWithManager(mgr, setup.Env{Workers: 1}))
	nodes := &node.Reconciler{UnmanagedAfter: time.Hour}
	require.NoError(t, nodes.SetupWithManager(mgr, setup.Env{Target: mgr, Workers: 1}))
	drivers, err := driver.NewSet([]*driver.Client{machines.Driver}, true)
	require.NoError(t, err)
	classes := &classupdate.Reconciler{Drivers: drivers}
	require.NoError(t, classes.SetupWithManager(mgr, setup.Env{Workers: 1}))
	overshoots := &overshoot.Reconciler{}
	require.NoError(t, overshoots.SetupWithManager(mgr, setup.Env{Workers: 1}))
	cacheCtx, stopCache := context.WithCancel(context.Background())
	cacheDone := make(chan error, 1)
	go func() { cacheDone <- mgr.GetCache().Start(cacheCtx) }()
	t.Cleanup(func() { stopCache(); require.NoError(t, <-cacheDone) })
	require.True(t, mgr.GetCache().WaitForCacheSync(ctx), "the cache did not sync")

	probe := createSet(t, c, "probe", "c", probeMachines)
	fleet := createSet(t, c, "fleet", "c", large)
	// The class update controller's probe: a class of its own, of which
	// the fleet has no machine.
	require.NoError(t, c.Create(ctx, &v1alpha1.MachineClass{
		ObjectMeta:   metav1.ObjectMeta{Namespace: ns, Name: "probe-class"},
		ProviderSpec: k8sruntime.RawExtension{Raw: []byte(`{}`)},
	}))
	classProbe := createSet(t, c, "class-probe", "probe-class", probeMachines)
	for i := range probeMachines {
		createMachine(t, c, probe, i)
		createMachine(t, c, classProbe, i)
	}

	setReq := ctrl.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: probe.Name}}
	nodeReq := ctrl.Request{NamespacedName: types.NamespacedName{Name: nodeName(probe.Name, 0)}}
	machineReq := ctrl.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: nodeName(probe.Name, 0)}}
	classReq := ctrl.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: "probe-class"}}
	heartbeat := heartbeatPath(t, mgr.GetCache(), startKubelet(t, env.Kubeconfig), nodeReq.Name)
	measure := func(n int) (machineCost, setCost, nodeCost, classCost, overshootCost, heartbeatCost cost) {
		waitCached(t, mgr.GetCache(), 2*probeMachines+n)
		machineCost = measureCost(t, func() {
			_, err := machines.Reconcile(ctx, machineReq)
			require.NoError(t, err)
		})
		setCost = measureCost(t, func() {
			_, err := sets.Reconcile(ctx, setReq)
			require.NoError(t, err)
		})
		nodeCost = measureCost(t, func() {
			_, err := nodes.Reconcile(ctx, nodeReq)
			require.NoError(t, err)
		})
		classCost = measureCost(t, func() {
			_, err := classes.Reconcile(ctx, classReq)
			require.NoError(t, err)
		})
		overshootCost = measureCost(t, func() {
			_, err := overshoots.Reconcile(ctx, setReq)
			require.NoError(t, err)
		})
		heartbeatCost = measureCost(t, heartbeat)
		// The measured calls did the work: the set counts its machines as
		// ready and the Node carries the finalizer of its live machine.
		got := &v1alpha1.MachineSet{}
		require.NoError(t, c.Get(ctx, setReq.NamespacedName, got))
		require.EqualValues(t, probeMachines, got.Status.ReadyReplicas, "the probe set's status")
		n0 := &corev1.Node{}
		require.NoError(t, c.Get(ctx, nodeReq.NamespacedName, n0))
		require.Contains(t, n0.Finalizers, v1alpha1.NodeFinalizer, "the probe node's finalizer")
		m0 := &v1alpha1.Machine{}
		require.NoError(t, c.Get(ctx, machineReq.NamespacedName, m0))
		require.Equal(t, v1alpha1.MachineRunning, m0.Status.CurrentStatus.Phase, "the probe machine's phase")
		// The class update controller recorded the class contents on its
		// probe's machines (which had no record); the overshoot check left
		// the probe set unfrozen.
		c0 := &v1alpha1.Machine{}
		require.NoError(t, c.Get(ctx, types.NamespacedName{Namespace: ns, Name: nodeName(classProbe.Name, 0)}, c0))
		require.NotEmpty(t, c0.Annotations[v1alpha1.ClassHashAnnotation], "the class probe machine's class record")
		require.NotEqual(t, v1alpha1.FreezeValue, got.Labels[v1alpha1.FreezeLabel], "the probe set is frozen")
		t.Logf("fleet %d: Machine reconcile %s; MachineSet reconcile %s; Node reconcile %s; class update reconcile %s; overshoot reconcile %s; Node heartbeat through the cache %s",
			n, machineCost, setCost, nodeCost, classCost, overshootCost, heartbeatCost)
		return machineCost, setCost, nodeCost, classCost, overshootCost, heartbeatCost
	}

	createMachines(t, c, fleet, 0, small)
	machineSmall, setSmall, nodeSmall, classSmall, overshootSmall, heartbeatSmall := measure(small)
	createMachines(t, c, fleet, small, large)
	machineLarge, setLarge, nodeLarge, classLarge, overshootLarge, heartbeatLarge := measure(large)

	machineSmall.requireFlat(t, "Machine", machineLarge)
	setSmall.requireFlat(t, "MachineSet", setLarge)
	nodeSmall.requireFlat(t, "Node", nodeLarge)
	classSmall.requireFlat(t, "class update", classLarge)
	overshootSmall.requireFlat(t, "overshoot", overshootLarge)
	heartbeatSmall.requireFlat(t, "Node heartbeat", heartbeatLarge)
}

// cost is what one call allocated, on average, and the time it took (logged
// only: a time depends on the machine's load).
type cost struct{ allocs, bytes, micros float64 }

func (c cost) String() string {
	return fmt.Sprintf("%.0f allocations, %.0f bytes, %.0f µs", c.allocs, c.bytes, c.micros)
}

func (c cost) requireFlat(t *testing.T, what string, atLarge cost) {
	t.Helper()
	require.LessOrEqualf(t, atLarge.allocs, growth*c.allocs,
		"a %s reconcile allocates %.0f times with %d other machines and %.0f with %d: its cost grows with the fleet", what, c.allocs, small, atLarge.allocs, large)
	require.LessOrEqualf(t, atLarge.bytes, growth*c.bytes,
		"a %s reconcile allocates %.0f bytes with %d other machines and %.0f with %d: its cost grows with the fleet", what, c.bytes, small, atLarge.bytes, large)
}

// measureCost runs f a few times first (a first reconcile may write:
// status, finalizer), then averages the process's allocations over runs
// calls.
func measureCost(t *testing.T, f func()) cost {
	t.Helper()
	for range 3 {
		f()
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	start := time.Now()
	for range runs {
		f()
	}
	took := time.Since(start)
	runtime.ReadMemStats(&after)
	return cost{
		allocs: float64(after.Mallocs-before.Mallocs) / runs,
		bytes:  float64(after.TotalAlloc-before.TotalAlloc) / runs,
		micros: float64(took.Microseconds()) / runs,
	}
}

func selector(set string) map[string]string { return map[string]string{"set": set} }

func createSet(t *testing.T, c client.Client, name, className string, replicas int32) *v1alpha1.MachineSet {
	t.Helper()
	class := v1alpha1.ClassSpec{Kind: "MachineClass", Name: className}
	ms := &v1alpha1.MachineSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.MachineSetSpec{
			Replicas:     replicas,
			Selector:     &metav1.LabelSelector{MatchLabels: selector(name)},
			MachineClass: class,
			Template: v1alpha1.MachineTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: selector(name)},
				Spec:       v1alpha1.MachineSpec{Class: class},
			},
		},
	}
	require.NoError(t, c.Create(t.Context(), ms))
	return ms
}

func nodeName(set string, i int) string { return fmt.Sprintf("%s-%d", set, i) }

// createMachine creates machine i of set, Running on its Node, as the
// Machine controller leaves it, and the Node with the Node controller's
// finalizer.
func createMachine(t *testing.T, c client.Client, set *v1alpha1.MachineSet, i int) {
	ctx := t.Context()
	name := nodeName(set.Name, i)
	labels := selector(set.Name)
	labels[v1alpha1.NodeLabelKey] = name
	m := &v1alpha1.Machine{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: ns, Name: name, Labels: labels,
			Finalizers:      []string{v1alpha1.MachineFinalizer},
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(set, v1alpha1.GroupVersion.WithKind("MachineSet"))},
		},
		Spec: *set.Spec.Template.Spec.DeepCopy(),
	}
	m.Spec.ProviderID = "fleet://" + name
	require.NoError(t, c.Create(ctx, m))
	m.Status.CurrentStatus = v1alpha1.CurrentStatus{Phase: v1alpha1.MachineRunning, LastUpdateTime: metav1.Now()}
	require.NoError(t, c.Status().Update(ctx, m))
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Finalizers: []string{v1alpha1.NodeFinalizer}}}
	n.Spec.ProviderID = m.Spec.ProviderID
	require.NoError(t, c.Create(ctx, n))
	// Ready, with the rest of a kubelet's status; only the probe's Nodes
	// are read (the fleet's machines are not reconciled).
	n.Status = kubeletStatus(name)
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}}
	require.NoError(t, c.Status().Update(ctx, n))
}

// startDriver serves the inmemory driver on a Unix socket and connects the
// core's driver client to it, as the manager does; the Machine controller
// needs one, though a Running machine costs it no driver call.
func startDriver(t *testing.T) *driver.Client {
	t.Helper()
	dir, err := os.MkdirTemp("", "ec") // short: sun_path holds 108 bytes
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	endpoint := "unix://" + filepath.Join(dir, "d.sock")
	mem := inmemory.New(inmemory.Options{})
	srv, err := sdk.NewServer(inmemory.Info(""), mem, append(mem.SDKOptions(),
		sdk.WithLogger(slog.New(slog.DiscardHandler)), sdk.WithMetricsRegisterer(prometheus.NewRegistry()))...)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, endpoint) }()
	dc, err := driver.Connect(t.Context(), endpoint, driver.Options{Logger: logr.Discard(), Registerer: prometheus.NewRegistry()})
	require.NoError(t, err)
	t.Cleanup(func() {
		require.NoError(t, dc.Close())
		cancel()
		require.NoError(t, <-served)
	})
	return dc
}

// createMachines creates machines from to to-1 of set, eight at a time.
func createMachines(t *testing.T, c client.Client, set *v1alpha1.MachineSet, from, to int) {
	t.Helper()
	next := make(chan int)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for i := range next {
				createMachine(t, c, set, i)
			}
		})
	}
	for i := from; i < to; i++ {
		next <- i
	}
	close(next)
	wg.Wait()
}

// waitCached waits until the cache holds n Running machines and n Nodes.
func waitCached(t *testing.T, r client.Reader, n int) {
	t.Helper()
	require.Eventually(t, func() bool {
		machines, nodes := &v1alpha1.MachineList{}, &corev1.NodeList{}
		if r.List(t.Context(), machines, client.InNamespace(ns)) != nil || r.List(t.Context(), nodes) != nil {
			return false
		}
		running := 0
		for _, m := range machines.Items {
			if m.Status.CurrentStatus.Phase == v1alpha1.MachineRunning {
				running++
			}
		}
		return running == n && len(nodes.Items) == n
	}, time.Minute, 50*time.Millisecond, "the cache never held %d Running machines and their Nodes", n)
}
