package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/testenv"
	driverv1alpha1 "github.com/machina-io/machina/proto/machina/driver/v1alpha1"
)

const (
	e2eNamespace = "e2e"
	waitFor      = 90 * time.Second
	poll         = 100 * time.Millisecond
	providerSpec = `{"capacity":{"cpu":"2","memory":"4Gi"}}`
)

// TestEndToEnd runs machina-manager and machina-driver-inmemory as real
// processes, talking over a real Unix socket, against a real API server,
// and follows a Machine from creation to deletion, through a driver crash.
func TestEndToEnd(t *testing.T) {
	managerBin, driverBin := buildBinaries(t)

	env := testenv.Start(t)
	c := env.Client
	ctx := t.Context()
	require.NoError(t, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: e2eNamespace}}))

	sockets := socketDir(t)
	socket := filepath.Join(sockets, "driver.sock")
	endpoint := "unix://" + socket
	stateFile := filepath.Join(t.TempDir(), "vms.json")
	// The driver is restarted within a subtest but must live as long as
	// the whole test: this closure holds the test's t.
	restartDriver := func() *child { return startDriver(t, driverBin, socket, "--state-file="+stateFile) }
	driver := restartDriver()

	metricsAddr, healthAddr := freeAddress(t), freeAddress(t)
	manager := start(t, "manager", managerBin, managerFlags(env.Kubeconfig, e2eNamespace, endpoint, metricsAddr, healthAddr,
		"--leader-elect-lease-duration=4s",
		"--leader-elect-renew-deadline=3s",
		"--leader-elect-retry-period=500ms",
		"--machine-creation-timeout=3m",
		"--driver-status-timeout=5s",
		"--concurrent-syncs=5",
		"--v=1",
	)...)
	health := "http://" + healthAddr

	requireHTTP(t, manager, health+"/healthz", http.StatusOK)
	requireHTTP(t, manager, health+"/readyz", http.StatusOK)
	require.Eventually(t, func() bool {
		lease := &coordinationv1.Lease{}
		return c.Get(ctx, client.ObjectKey{Namespace: e2eNamespace, Name: "machina-manager"}, lease) == nil &&
			lease.Spec.HolderIdentity != nil && *lease.Spec.HolderIdentity != ""
	}, waitFor, poll, "the manager never took its lease")

	secret, class := createClass(t, c, e2eNamespace, "e2e-class", "e2e-secret",
		map[string][]byte{"userData": []byte("#cloud-config\n"), "apiToken": []byte("t0ps3cret")})
	machine := &v1alpha1.Machine{
		ObjectMeta: metav1.ObjectMeta{Namespace: e2eNamespace, Name: "e2e-machine"},
		Spec:       v1alpha1.MachineSpec{Class: v1alpha1.ClassSpec{Kind: "MachineClass", Name: class.Name}},
	}
	require.NoError(t, c.Create(ctx, machine))

	// The VM exists once the machine has a provider ID and names its node.
	var nodeName string
	require.Eventually(t, func() bool {
		got := &v1alpha1.Machine{}
		if c.Get(ctx, client.ObjectKeyFromObject(machine), got) != nil {
			return false
		}
		nodeName = got.Labels[v1alpha1.NodeLabelKey]
		return got.Spec.ProviderID != "" && nodeName != ""
	}, waitFor, poll, "the machine never got a VM")

	// The test plays the kubelet: it registers the Node and reports Ready.
	node := registerNode(t, c, nodeName)
	requirePhase(t, c, machine, v1alpha1.MachineRunning)
	requireFinalizer(t, c, class, v1alpha1.MachineFinalizer)
	requireFinalizer(t, c, secret, v1alpha1.SecretFinalizer)
	requireFinalizer(t, c, node, v1alpha1.NodeFinalizer)
	requireFinalizer(t, c, machine, v1alpha1.MachineFinalizer)
	requireVM(t, endpoint, machine, codes.OK)

	t.Run("metrics", func(t *testing.T) {
		body := httpGet(t, "http://"+metricsAddr+"/metrics")
		for _, want := range []string{
			`grpc_client_handled_total{driver="inmemory.driver.machina.io",grpc_code="OK",grpc_method="CreateMachine"`,
			`grpc_client_handling_seconds_bucket{driver="inmemory.driver.machina.io",grpc_method="CreateMachine"`,
			`grpc_client_handled_total{driver="inmemory.driver.machina.io",grpc_code="OK",grpc_method="GetPluginInfo"`,
			`controller_runtime_reconcile_total{controller="machine-controller",result="success"}`,
			`controller_runtime_reconcile_total{controller="machineclass",result="success"}`,
			`controller_runtime_reconcile_total{controller="node",result="success"}`,
			`workqueue_adds_total{controller="machine-controller",name="machine-controller"`,
			`workqueue_depth{controller="secret",name="secret"`,
			`mcm_machine_items_total`,
			`mcm_cloud_api_driver_request_duration_seconds_bucket{driver="inmemory.driver.machina.io",operation="create_machine"`,
		} {
			assert.True(t, strings.Contains(body, want), "/metrics lacks %s", want)
		}
	})

	t.Run("driver crash and restart", func(t *testing.T) {
		watch := watchForFailed(t, c)
		driver.Kill()
		requireHTTP(t, manager, health+"/readyz", http.StatusInternalServerError)
		require.True(t, manager.Running(), "the manager must survive its driver")

		// A machine created while the driver is down fails its calls
		// (UNAVAILABLE) and is retried; it must not be Failed for it.
		second := &v1alpha1.Machine{
			ObjectMeta: metav1.ObjectMeta{Namespace: e2eNamespace, Name: "e2e-machine-2"},
			Spec:       machine.Spec,
		}
		require.NoError(t, c.Create(ctx, second))
		require.Eventually(t, func() bool {
			got := &v1alpha1.Machine{}
			return c.Get(ctx, client.ObjectKeyFromObject(second), got) == nil &&
				got.Status.LastOperation.State == v1alpha1.MachineStateFailed
		}, waitFor, poll, "the controller never reported the unreachable driver on the new machine")

		driver = restartDriver()
		requireHTTP(t, manager, health+"/readyz", http.StatusOK)
		require.True(t, manager.Running())
		requirePhase(t, c, machine, v1alpha1.MachineRunning)
		requireVM(t, endpoint, machine, codes.OK)

		// The second machine is created once the driver is back.
		var secondNode string
		require.Eventually(t, func() bool {
			got := &v1alpha1.Machine{}
			if c.Get(ctx, client.ObjectKeyFromObject(second), got) != nil {
				return false
			}
			secondNode = got.Labels[v1alpha1.NodeLabelKey]
			return got.Spec.ProviderID != "" && secondNode != ""
		}, waitFor, poll, "the second machine never got a VM after the driver came back")
		registerNode(t, c, secondNode)
		requirePhase(t, c, second, v1alpha1.MachineRunning)
		assert.Empty(t, watch(), "machines became Failed")

		require.NoError(t, c.Delete(ctx, second))
		requireGone(t, c, second)
	})

	t.Run("deletion releases node, VM and finalizers", func(t *testing.T) {
		require.NoError(t, c.Delete(ctx, machine))
		requireGone(t, c, machine)
		requireGone(t, c, node)
		requireVM(t, endpoint, machine, codes.NotFound)

		// The class keeps its finalizer while it lives (MCM's rule); once
		// nothing refers to it, deleting it goes through, and its secret
		// loses the finalizer with the last class.
		require.NoError(t, c.Delete(ctx, class))
		requireGone(t, c, class)
		require.Eventually(t, func() bool {
			got := &corev1.Secret{}
			return c.Get(ctx, client.ObjectKeyFromObject(secret), got) == nil &&
				!controllerutil.ContainsFinalizer(got, v1alpha1.SecretFinalizer)
		}, waitFor, poll, "the secret kept its finalizer")
		require.NoError(t, c.Delete(ctx, secret))
		requireGone(t, c, secret)
	})

	t.Run("SIGTERM stops gracefully and releases the lease", func(t *testing.T) {
		before := len(manager.log.String())
		err, inTime := manager.stop(30 * time.Second)
		require.True(t, inTime, "the manager did not stop within 30s")
		require.NoError(t, err, "exit code %d", manager.ExitCode())
		// A normal stop is no error: nothing it logs from the signal on is
		// at error level (it used to log "leader election lost").
		stopLog := manager.log.String()[before:]
		require.Contains(t, stopLog, `"msg":"Stopped"`, "the manager logs its stop (JSON lines)")
		for _, line := range strings.Split(stopLog, "\n") {
			assert.NotContains(t, line, `"level":"error"`, "an error-level line after SIGTERM")
		}
		lease := &coordinationv1.Lease{}
		require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: e2eNamespace, Name: "machina-manager"}, lease))
		assert.True(t, lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity == "",
			"lease still held by %v", lease.Spec.HolderIdentity)
	})

	assert.NotContains(t, manager.log.String(), "t0ps3cret", "a secret value reached the manager's log")
	assert.NotContains(t, driver.log.String(), "t0ps3cret", "a secret value reached the driver's log")
}

// registerNode creates a Ready Node, as a kubelet would.
func registerNode(t *testing.T, c client.Client, name string) *corev1.Node {
	t.Helper()
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
	require.NoError(t, c.Create(t.Context(), node))
	now := metav1.Now()
	// The Node controller may add its finalizer in between: retry the
	// status write on a conflict, as a kubelet does.
	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := c.Get(t.Context(), client.ObjectKeyFromObject(node), node); err != nil {
			return err
		}
		node.Status.Conditions = []corev1.NodeCondition{{
			Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
			LastHeartbeatTime: now, LastTransitionTime: now,
		}}
		return c.Status().Update(t.Context(), node)
	}))
	return node
}

func requirePhase(t *testing.T, c client.Client, m *v1alpha1.Machine, want v1alpha1.MachinePhase) {
	t.Helper()
	var last v1alpha1.MachineStatus
	require.Eventually(t, func() bool {
		got := &v1alpha1.Machine{}
		if c.Get(t.Context(), client.ObjectKeyFromObject(m), got) != nil {
			return false
		}
		last = got.Status
		return got.Status.CurrentStatus.Phase == want
	}, waitFor, poll, "machine never reached %s; last phase %q, last operation %+v",
		want, last.CurrentStatus.Phase, last.LastOperation)
}

// watchForFailed polls the machines of the namespace until the returned
// function is called, and that function returns the machines it saw in
// phase Failed (with their last operation).
func watchForFailed(t *testing.T, c client.Client) func() []string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan []string, 1)
	go func() {
		seen := map[string]string{}
		tick := time.NewTicker(poll)
		defer tick.Stop()
		for {
			list := &v1alpha1.MachineList{}
			if err := c.List(ctx, list, client.InNamespace(e2eNamespace)); err == nil {
				for _, m := range list.Items {
					if m.Status.CurrentStatus.Phase == v1alpha1.MachineFailed {
						seen[m.Name] = m.Status.LastOperation.Description
					}
				}
			}
			select {
			case <-ctx.Done():
				var out []string
				for name, desc := range seen {
					out = append(out, name+": "+desc)
				}
				done <- out
				return
			case <-tick.C:
			}
		}
	}()
	var once sync.Once
	var result []string
	stop := func() []string {
		once.Do(func() {
			cancel()
			result = <-done
		})
		return result
	}
	t.Cleanup(func() { stop() })
	return stop
}

func requireFinalizer(t *testing.T, c client.Client, obj client.Object, finalizer string) {
	t.Helper()
	require.Eventually(t, func() bool {
		got := obj.DeepCopyObject().(client.Object)
		return c.Get(t.Context(), client.ObjectKeyFromObject(obj), got) == nil &&
			controllerutil.ContainsFinalizer(got, finalizer)
	}, waitFor, poll, "%T %s never got finalizer %s", obj, obj.GetName(), finalizer)
}

func requireGone(t *testing.T, c client.Client, obj client.Object) {
	t.Helper()
	require.Eventually(t, func() bool {
		got := obj.DeepCopyObject().(client.Object)
		return apierrors.IsNotFound(c.Get(t.Context(), client.ObjectKeyFromObject(obj), got))
	}, waitFor, poll, "%T %s is still there", obj, obj.GetName())
}

// requireVM asks the driver directly, over its socket, about the machine's
// VM, until it answers with want (retrying ABORTED and UNAVAILABLE, which a
// busy or restarting driver may answer).
func requireVM(t *testing.T, endpoint string, m *v1alpha1.Machine, want codes.Code) {
	t.Helper()
	conn, err := grpc.NewClient("unix://"+strings.TrimPrefix(endpoint, "unix://"),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	defer func() { _ = conn.Close() }()
	ms := driverv1alpha1.NewMachineServiceClient(conn)
	var last error
	require.Eventually(t, func() bool {
		callCtx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		defer cancel()
		_, last = ms.GetMachineStatus(callCtx, &driverv1alpha1.GetMachineStatusRequest{
			Machine: &driverv1alpha1.Machine{Name: m.Name, Namespace: m.Namespace},
			MachineClass: &driverv1alpha1.MachineClass{
				Name: m.Spec.Class.Name, Namespace: m.Namespace, ProviderSpec: []byte(providerSpec),
			},
		})
		return status.Code(last) == want
	}, waitFor, poll, "GetMachineStatus(%s) never answered %s; last: %v", m.Name, want, last)
}

// createClass creates in namespace the Secret secretName with data and the
// MachineClass className of providerSpec that refers to it.
func createClass(t *testing.T, c client.Client, namespace, className, secretName string, data map[string][]byte) (*corev1.Secret, *v1alpha1.MachineClass) {
	t.Helper()
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: secretName},
		Data:       data,
	}
	class := &v1alpha1.MachineClass{
		ObjectMeta:   metav1.ObjectMeta{Namespace: namespace, Name: className},
		ProviderSpec: runtime.RawExtension{Raw: []byte(providerSpec)},
		SecretRef:    &corev1.SecretReference{Namespace: namespace, Name: secretName},
	}
	require.NoError(t, c.Create(t.Context(), secret))
	require.NoError(t, c.Create(t.Context(), class))
	return secret, class
}

// requireHTTP waits until url answers want, failing early if the manager
// exits.
func requireHTTP(t *testing.T, manager *child, url string, want int) {
	t.Helper()
	var last string
	exited := false
	require.Eventually(t, func() bool {
		if !manager.Running() {
			exited = true
			return true
		}
		resp, err := http.Get(url)
		if err != nil {
			last = err.Error()
			return false
		}
		defer func() { _ = resp.Body.Close() }()
		body, _ := io.ReadAll(resp.Body)
		last = fmt.Sprintf("%d %s", resp.StatusCode, strings.TrimSpace(string(body)))
		return resp.StatusCode == want
	}, waitFor, poll, "GET %s never answered %d; last: %s", url, want, last)
	require.False(t, exited, "the manager exited (code %d) while waiting for GET %s", manager.ExitCode(), url)
}

func httpGet(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	require.Equal(t, http.StatusOK, resp.StatusCode, "GET %s", url)
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return string(body)
}
