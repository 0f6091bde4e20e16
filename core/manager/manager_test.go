package manager

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/util/retry"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/testenv"
)

const (
	waitFor = 60 * time.Second
	tick    = 100 * time.Millisecond
	ns      = "machines"
)

// TestManager runs the whole manager in-process against two API servers
// (control and target) and a driver on a real socket, and follows one
// Machine through its life.
func TestManager(t *testing.T) {
	logTo(t)
	control := testenv.Start(t)
	target := testenv.Start(t, testenv.WithoutCRDs())
	cc, tc := control.Client, target.Client
	for _, name := range []string{ns, "elsewhere"} {
		require.NoError(t, cc.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}))
	}
	drv, endpoint := startTestDriver(t)

	opts := DefaultOptions()
	opts.ControlConfig = control.Config
	opts.TargetConfig = target.Config
	opts.Namespace = ns
	opts.DriverEndpoint = endpoint
	opts.MetricsBindAddress = freeAddress(t)
	opts.MetricsSecure = false // plain HTTP here; TestMetricsAuthentication covers HTTPS
	opts.HealthProbeBindAddress = freeAddress(t)
	opts.ConcurrentSyncs = 2
	opts.LeaderElectLeaseDuration = 4 * time.Second
	opts.LeaderElectRenewDeadline = 3 * time.Second
	opts.LeaderElectRetryPeriod = 500 * time.Millisecond
	opts.MachineSafetyOrphanVMsPeriod = time.Second
	opts.skipNameValidation = true
	_, stop := runManager(t, opts)
	health := "http://" + opts.HealthProbeBindAddress

	requireStatus(t, health+"/healthz", http.StatusOK)
	requireStatus(t, health+"/readyz", http.StatusOK)

	lease := &coordinationv1.Lease{}
	require.Eventually(t, func() bool {
		return cc.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: LeaderElectionID}, lease) == nil &&
			lease.Spec.HolderIdentity != nil && *lease.Spec.HolderIdentity != ""
	}, waitFor, tick, "the manager never took the lease %s/%s", ns, LeaderElectionID)

	t.Run("classes and secrets of the namespace get finalizers, others not", func(t *testing.T) {
		ctx := t.Context()
		secret := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "class-secret"},
			Data:       map[string][]byte{"userData": []byte("#cloud-config\n"), "token": []byte("s3cr3t")},
		}
		require.NoError(t, cc.Create(ctx, secret))
		class := newClass(ns, "small", secret.Name)
		require.NoError(t, cc.Create(ctx, class))
		stranger := newClass("elsewhere", "small", "")
		require.NoError(t, cc.Create(ctx, stranger))

		require.Eventually(t, func() bool { return hasFinalizer(t, cc, class, v1alpha1.MachineFinalizer) },
			waitFor, tick, "class has no finalizer")
		require.Eventually(t, func() bool { return hasFinalizer(t, cc, secret, v1alpha1.SecretFinalizer) },
			waitFor, tick, "secret has no finalizer")
		// Everything in ns has been reconciled by now; the class in the
		// other namespace is not watched at all.
		assert.False(t, hasFinalizer(t, cc, stranger, v1alpha1.MachineFinalizer))
	})

	t.Run("a machine is created, joins, and is deleted with its node and VM", func(t *testing.T) {
		ctx := t.Context()
		machine := &v1alpha1.Machine{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "m1"},
			Spec:       v1alpha1.MachineSpec{Class: v1alpha1.ClassSpec{Kind: "MachineClass", Name: "small"}},
		}
		require.NoError(t, cc.Create(ctx, machine))

		// The driver reported node name m1; play the kubelet.
		require.Eventually(t, func() bool {
			got := &v1alpha1.Machine{}
			return cc.Get(ctx, client.ObjectKeyFromObject(machine), got) == nil &&
				got.Labels[v1alpha1.NodeLabelKey] == "m1" && got.Spec.ProviderID == "test:///m1"
		}, waitFor, tick, "machine never got its VM")
		node := registerReadyNode(t, tc, "m1")

		require.Eventually(t, func() bool {
			got := &v1alpha1.Machine{}
			return cc.Get(ctx, client.ObjectKeyFromObject(machine), got) == nil &&
				got.Status.CurrentStatus.Phase == v1alpha1.MachineRunning
		}, waitFor, tick, "machine never became Running")
		require.Eventually(t, func() bool { return hasFinalizer(t, tc, node, v1alpha1.NodeFinalizer) },
			waitFor, tick, "node has no finalizer")

		drv.mu.Lock()
		namespaces := append([]string(nil), drv.classNamespaces...)
		drv.mu.Unlock()
		require.NotEmpty(t, namespaces)
		for _, got := range namespaces {
			assert.Equal(t, ns, got, "CreateMachine must carry machine_class.namespace (REQUIRED)")
		}

		require.NoError(t, cc.Delete(ctx, machine))
		require.Eventually(t, func() bool {
			return apierrors.IsNotFound(cc.Get(ctx, client.ObjectKeyFromObject(machine), &v1alpha1.Machine{}))
		}, waitFor, tick, "machine was never released")
		require.Eventually(t, func() bool {
			return apierrors.IsNotFound(tc.Get(ctx, client.ObjectKeyFromObject(node), &corev1.Node{}))
		}, waitFor, tick, "node was never deleted")
		assert.Zero(t, drv.vmCount(), "the VM must be deleted")
	})

	t.Run("orphan VMs are collected, live machines' VMs are not", func(t *testing.T) {
		ctx := t.Context()
		keeper := &v1alpha1.Machine{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "keeper"},
			Spec:       v1alpha1.MachineSpec{Class: v1alpha1.ClassSpec{Kind: "MachineClass", Name: "small"}},
		}
		require.NoError(t, cc.Create(ctx, keeper))
		require.Eventually(t, func() bool {
			got := &v1alpha1.Machine{}
			return cc.Get(ctx, client.ObjectKeyFromObject(keeper), got) == nil && got.Spec.ProviderID != ""
		}, waitFor, tick, "keeper never got its VM")

		// The counter is the process's: compared with its value before,
		// so that the test also holds when run again (-count).
		const deleted = `machina_orphan_vms_deleted_total{class="machines/small"}`
		metrics := "http://" + opts.MetricsBindAddress + "/metrics"
		before := seriesValue(get(t, metrics), deleted)
		drv.plant("ghost", "small", ns)
		require.Eventually(t, func() bool { return !drv.has("ghost") }, waitFor, tick,
			"the orphan VM was never collected (scans every second)")
		assert.True(t, drv.has("keeper"), "a live machine's VM was collected")
		// Counted after the driver's answer, so a moment after the VM went
		// (get fails the test on its own: read here, not in Eventually's
		// goroutine).
		var after float64
		for deadline := time.Now().Add(waitFor); ; time.Sleep(tick) {
			if after = seriesValue(get(t, metrics), deleted); after == before+1 || time.Now().After(deadline) {
				break
			}
		}
		assert.Equal(t, before+1, after, "the collection is counted once")

		require.NoError(t, cc.Delete(ctx, keeper))
		require.Eventually(t, func() bool {
			return apierrors.IsNotFound(cc.Get(ctx, client.ObjectKeyFromObject(keeper), &v1alpha1.Machine{}))
		}, waitFor, tick, "keeper was never released")
	})

	t.Run("readyz follows the driver's probe", func(t *testing.T) {
		drv.notReady.Store(true)
		requireStatus(t, health+"/readyz", http.StatusInternalServerError)
		requireStatus(t, health+"/healthz", http.StatusOK)
		drv.notReady.Store(false)
		requireStatus(t, health+"/readyz", http.StatusOK)
	})

	t.Run("metrics", func(t *testing.T) {
		body := get(t, "http://"+opts.MetricsBindAddress+"/metrics")
		for _, want := range []string{
			`grpc_client_handled_total{driver="test.driver.machina.io",grpc_code="OK",grpc_method="CreateMachine"`,
			`grpc_client_handling_seconds_bucket{driver="test.driver.machina.io",grpc_method="CreateMachine"`,
			`controller_runtime_reconcile_total{controller="machineclass"`,
			`controller_runtime_reconcile_total{controller="secret"`,
			`controller_runtime_reconcile_total{controller="node"`,
			`workqueue_depth{controller="machine-controller"`,
			`mcm_machine_items_total`,
			`rest_client_rate_limiter_duration_seconds_bucket{`,
			`rest_client_request_duration_seconds_bucket{`,
			`leader_election_master_status{name="machina-manager"} 1`,
			`machina_orphan_vms_deleted_total{class="machines/small"} `,
			`mcm_machine_controller_frozen 0`,
			`controller_runtime_reconcile_total{controller="machineset-safety"`,
			`mcm_cloud_api_driver_request_duration_seconds_bucket{driver="test.driver.machina.io",operation="create_machine"`,
		} {
			// Not assert.Contains: it would print the whole scrape.
			assert.True(t, strings.Contains(body, want), "/metrics lacks %s", want)
		}
		checkMCMMetricNames(t, body)
		checkConfigz(t, get(t, "http://"+opts.MetricsBindAddress+"/configz"), opts)
		// pprof is off by default.
		resp, err := http.Get("http://" + opts.MetricsBindAddress + "/debug/pprof/")
		require.NoError(t, err)
		_ = resp.Body.Close()
		assert.Equal(t, http.StatusNotFound, resp.StatusCode)
	})

	t.Run("a graceful stop releases the lease", func(t *testing.T) {
		stop()
		got := &coordinationv1.Lease{}
		require.NoError(t, cc.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: LeaderElectionID}, got))
		assert.True(t, got.Spec.HolderIdentity == nil || *got.Spec.HolderIdentity == "",
			"lease still held by %v", got.Spec.HolderIdentity)
	})
}

// TestManagerWithoutTargetAndProfiling runs without a target cluster
// (--target-kubeconfig=none) and with --profiling.
func TestManagerWithoutTargetAndProfiling(t *testing.T) {
	logTo(t)
	control := testenv.Start(t)
	_, endpoint := startTestDriver(t)
	opts := DefaultOptions()
	opts.ControlConfig = control.Config
	opts.TargetKubeconfig = NoTargetKubeconfig
	opts.DriverEndpoint = endpoint
	opts.LeaderElect = false
	opts.Profiling = true
	opts.MetricsBindAddress = freeAddress(t)
	opts.MetricsSecure = false // plain HTTP here; TestMetricsAuthentication covers HTTPS
	opts.HealthProbeBindAddress = freeAddress(t)
	opts.skipNameValidation = true
	runManager(t, opts)
	requireStatus(t, "http://"+opts.HealthProbeBindAddress+"/readyz", http.StatusOK)
	assert.Contains(t, get(t, "http://"+opts.MetricsBindAddress+"/debug/pprof/"), "goroutine")

	machine := &v1alpha1.Machine{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "headless"},
		Spec:       v1alpha1.MachineSpec{Class: v1alpha1.ClassSpec{Name: "small"}},
	}
	require.NoError(t, control.Client.Create(t.Context(), newClass("default", "small", "")))
	require.NoError(t, control.Client.Create(t.Context(), machine))
	require.Eventually(t, func() bool {
		got := &v1alpha1.Machine{}
		return control.Client.Get(t.Context(), client.ObjectKeyFromObject(machine), got) == nil &&
			got.Status.CurrentStatus.Phase == v1alpha1.MachineAvailable
	}, waitFor, tick, "without a target cluster a created machine becomes Available")
}

func TestNewRejectsBadOptions(t *testing.T) {
	opts := DefaultOptions()
	opts.Namespace = ""
	_, err := New(opts)
	require.ErrorContains(t, err, "--namespace")
}

func TestRunStopsWhileWaitingForTheDriver(t *testing.T) {
	control := testenv.Start(t)
	opts := DefaultOptions()
	opts.ControlConfig = control.Config
	opts.DriverEndpoint = "unix:///nonexistent/driver.sock"
	opts.LeaderElect = false
	opts.MetricsBindAddress, opts.HealthProbeBindAddress = "0", "0"
	opts.skipNameValidation = true
	m, err := New(opts)
	require.NoError(t, err)
	// A driver that never comes up keeps Run waiting; a stop while it
	// waits is graceful.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	require.NoError(t, m.Run(ctx))
	require.ErrorContains(t, m.Run(context.Background()), "Run called twice")
}

func TestRunFailsForADriverOfAnotherAPIVersion(t *testing.T) {
	control := testenv.Start(t)
	opts := DefaultOptions()
	opts.ControlConfig = control.Config
	opts.DriverEndpoint = startForeignServer(t)
	opts.LeaderElect = false
	opts.MetricsBindAddress, opts.HealthProbeBindAddress = "0", "0"
	opts.skipNameValidation = true
	m, err := New(opts)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err = m.Run(ctx)
	require.ErrorContains(t, err, "connecting to the driver")
	require.ErrorContains(t, err, "does not serve machina.driver.v1alpha1")
}

func newClass(namespace, name, secret string) *v1alpha1.MachineClass {
	c := &v1alpha1.MachineClass{
		ObjectMeta:   metav1.ObjectMeta{Namespace: namespace, Name: name},
		ProviderSpec: runtime.RawExtension{Raw: []byte(`{"size":"small"}`)},
	}
	if secret != "" {
		c.SecretRef = &corev1.SecretReference{Namespace: namespace, Name: secret}
	}
	return c
}

// registerReadyNode creates a Ready Node, as a kubelet would.
func registerReadyNode(t *testing.T, c client.Client, name string) *corev1.Node {
	t.Helper()
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
	require.NoError(t, c.Create(t.Context(), node))
	// The Node controller may add its finalizer in between: retry the
	// status write on a conflict, as a kubelet does.
	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := c.Get(t.Context(), client.ObjectKeyFromObject(node), node); err != nil {
			return err
		}
		node.Status.Conditions = []corev1.NodeCondition{{
			Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
			LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now(),
		}}
		return c.Status().Update(t.Context(), node)
	}))
	return node
}

func hasFinalizer(t *testing.T, c client.Client, obj client.Object, finalizer string) bool {
	got := obj.DeepCopyObject().(client.Object)
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(obj), got); err != nil {
		return false
	}
	return controllerutil.ContainsFinalizer(got, finalizer)
}

// freeAddress returns a loopback address with a port that was free a
// moment ago.
func freeAddress(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	return addr
}

func requireStatus(t *testing.T, url string, want int) {
	t.Helper()
	var last string
	require.Eventually(t, func() bool {
		resp, err := http.Get(url)
		if err != nil {
			last = err.Error()
			return false
		}
		defer func() { _ = resp.Body.Close() }()
		body, _ := io.ReadAll(resp.Body)
		last = fmt.Sprintf("%d %s", resp.StatusCode, strings.TrimSpace(string(body)))
		return resp.StatusCode == want
	}, waitFor, tick, "GET %s never answered %d; last: %s", url, want, last)
}

func get(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	require.Equal(t, http.StatusOK, resp.StatusCode, "GET %s", url)
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return string(body)
}

// seriesValue is the value of a series in a Prometheus text scrape, 0
// when the scrape lacks it.
func seriesValue(scrape, series string) float64 {
	for line := range strings.Lines(scrape) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), series+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err == nil {
				return f
			}
		}
	}
	return 0
}

// logSink is the writer of the process-wide logger: it forwards to the
// log of the test that runs (shown on failure) and drops what background
// goroutines write after that test ended.
var logSink = &switchWriter{}

func TestMain(m *testing.M) {
	ctrl.SetLogger(zap.New(zap.UseDevMode(true), zap.WriteTo(logSink)))
	os.Exit(m.Run())
}

func logTo(t *testing.T) {
	logSink.set(t)
	t.Cleanup(func() { logSink.set(nil) })
}

type switchWriter struct {
	mu sync.Mutex
	t  *testing.T
}

func (w *switchWriter) set(t *testing.T) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.t = t
}

func (w *switchWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.t != nil {
		line := strings.TrimRight(string(p), "\n")
		w.t.Log(line)
	}
	return len(p), nil
}

// runManager starts a manager with opts until the test ends; it returns
// the manager and what stops it earlier: a graceful stop, after which Run
// must have returned nil. Stopping twice is stopping once. The manager
// fails reads of kinds no informer covers, and the test fails if any
// came (requireInformedReads).
func runManager(t *testing.T, opts Options) (m *Manager, stop func()) {
	t.Helper()
	opts.failOnUninformedReads = true
	m, err := New(opts)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			require.NoError(t, <-done, "Run must return nil after a graceful stop")
		})
	}
	t.Cleanup(func() {
		stop()
		requireInformedReads(t, m)
	})
	return m, stop
}

// requireInformedReads fails the test if a controller of m (built with
// failOnUninformedReads) read a kind whose informer did not start with the
// cache: in production that read would have started the informer and
// waited for its first list, holding the reconcile (setup.InformAtStart).
func requireInformedReads(t *testing.T, m *Manager) {
	t.Helper()
	assert.Empty(t, m.uninformed.list(), "reads of kinds whose informers do not start with the cache (setup.InformAtStart)")
}
