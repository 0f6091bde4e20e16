package manager

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/testenv"
	"github.com/machina-io/machina/sdk"
)

// serveProviderDriver serves d, listing providers, on endpoint until stop
// is called or the test ends.
func serveProviderDriver(t *testing.T, d *testDriver, endpoint string, providers ...string) (stop func()) {
	t.Helper()
	srv, err := sdk.NewServer(sdk.Info{Name: "test.driver.machina.io", Version: "0.0.1", Providers: providers}, d)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, endpoint) }()
	stopped := false
	stop = func() {
		if !stopped {
			stopped = true
			cancel()
			require.NoError(t, <-done)
		}
	}
	t.Cleanup(stop)
	return stop
}

// socketEndpoint is a fresh socket path (t.TempDir() can exceed the
// 108-byte limit of a socket path).
func socketEndpoint(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "m")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return "unix://" + filepath.Join(dir, "driver.sock")
}

// routingOptions runs a manager without a target cluster (machines turn
// Available once their VM exists) on the drivers given.
func routingOptions(t *testing.T, control *testenv.Env, drivers ...DriverEndpoint) Options {
	opts := DefaultOptions()
	opts.ControlConfig = control.Config
	opts.TargetKubeconfig = NoTargetKubeconfig
	opts.Namespace = "default"
	opts.DriverEndpoint = ""
	opts.DriverEndpoints = drivers
	opts.LeaderElect = false
	opts.MetricsBindAddress = freeAddress(t)
	opts.HealthProbeBindAddress = freeAddress(t)
	opts.skipNameValidation = true
	return opts
}

// TestRouting runs one manager with two drivers: each gets the calls of
// its provider's machines only; a class whose provider no driver serves
// gets DriverFound=False and an event, and its machine is left alone until
// a driver serves it; a driver that restarts is used again.
func TestRouting(t *testing.T) {
	logTo(t)
	control := testenv.Start(t)
	cc := control.Client
	drvA, drvB := &testDriver{vms: map[string]testVM{}}, &testDriver{vms: map[string]testVM{}}
	endpointA, endpointB := socketEndpoint(t), socketEndpoint(t)
	serveProviderDriver(t, drvA, endpointA, "provider-a")
	stopB := serveProviderDriver(t, drvB, endpointB, "provider-b")

	opts := routingOptions(t, control,
		DriverEndpoint{Name: "pool-a", Endpoint: endpointA},
		DriverEndpoint{Name: "pool-b", Endpoint: endpointB})
	runManager(t, opts)
	health := "http://" + opts.HealthProbeBindAddress
	requireStatus(t, health+"/readyz", http.StatusOK)
	verbose := get(t, health+"/readyz?verbose")
	assert.Contains(t, verbose, "[+]driver-pool-a ok")
	assert.Contains(t, verbose, "[+]driver-pool-b ok")

	for _, c := range []struct{ name, provider string }{{"class-a", "provider-a"}, {"class-b", "provider-b"}, {"class-c", "provider-c"}} {
		class := newClass("default", c.name, "")
		class.Provider = c.provider
		require.NoError(t, cc.Create(t.Context(), class))
	}
	newMachine := func(name, class string) *v1alpha1.Machine {
		m := &v1alpha1.Machine{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
			Spec:       v1alpha1.MachineSpec{Class: v1alpha1.ClassSpec{Kind: "MachineClass", Name: class}},
		}
		require.NoError(t, cc.Create(t.Context(), m))
		return m
	}
	ma, mb, mc := newMachine("ma", "class-a"), newMachine("mb", "class-b"), newMachine("mc", "class-c")
	available := func(m *v1alpha1.Machine) func() bool {
		return func() bool {
			got := &v1alpha1.Machine{}
			return cc.Get(t.Context(), client.ObjectKeyFromObject(m), got) == nil && got.Status.CurrentStatus.Phase == v1alpha1.MachineAvailable
		}
	}

	t.Run("each machine's calls go to the driver of its class's provider", func(t *testing.T) {
		require.Eventually(t, available(ma), waitFor, tick)
		require.Eventually(t, available(mb), waitFor, tick)
		assert.True(t, drvA.has("ma"))
		assert.False(t, drvA.has("mb"))
		assert.True(t, drvB.has("mb"))
		assert.False(t, drvB.has("ma"))
	})

	t.Run("a class without a driver: condition, event, its machine left alone", func(t *testing.T) {
		require.Eventually(t, func() bool {
			cond := driverFound(t, cc, "class-c")
			return cond != nil && cond.Status == metav1.ConditionFalse && cond.Reason == v1alpha1.MachineClassNoDriver
		}, waitFor, tick)
		assert.Contains(t, driverFound(t, cc, "class-c").Message, `"provider-c"`)
		cond := driverFound(t, cc, "class-a")
		require.NotNil(t, cond)
		assert.Equal(t, metav1.ConditionTrue, cond.Status)
		assert.Contains(t, cond.Message, "pool-a")
		require.Eventually(t, func() bool { return hasEvent(t, cc, "class-c", v1alpha1.MachineClassNoDriver) }, waitFor, tick)

		// The machine controller has seen mc (its finalizer goes on
		// before any phase), and wrote nothing else: no VM, no phase, no
		// failed operation.
		require.Eventually(t, func() bool { return hasFinalizer(t, cc, mc, v1alpha1.MachineFinalizer) }, waitFor, tick)
		got := &v1alpha1.Machine{}
		require.NoError(t, cc.Get(t.Context(), client.ObjectKeyFromObject(mc), got))
		assert.Empty(t, got.Status.CurrentStatus.Phase)
		assert.Empty(t, got.Status.LastOperation.State)
		assert.Empty(t, got.Spec.ProviderID)
		assert.False(t, drvA.has("mc"))
		assert.False(t, drvB.has("mc"))
	})

	t.Run("a driver that restarts serving the missing provider takes the class over", func(t *testing.T) {
		stopB()
		requireStatus(t, health+"/readyz", http.StatusInternalServerError)
		assert.Contains(t, readyzBody(t, health), "[-]driver-pool-b failed")
		assert.Contains(t, readyzBody(t, health), "[+]driver-pool-a ok")
		serveProviderDriver(t, drvB, endpointB, "provider-b", "provider-c")
		requireStatus(t, health+"/readyz", http.StatusOK)

		// The controllers re-check a class without a driver every minute
		// or so; a change of the class is looked at at once. The client
		// reads the restarted driver's providers shortly after it is
		// ready again, so the class is changed until the class controller
		// has seen them, and once more for the machine controller.
		bump := 0
		changeClass := func() {
			bump++
			class := &v1alpha1.MachineClass{}
			require.NoError(t, cc.Get(t.Context(), client.ObjectKey{Namespace: "default", Name: "class-c"}, class))
			class.ProviderSpec = runtime.RawExtension{Raw: []byte(fmt.Sprintf(`{"size":"m","bump":%d}`, bump))}
			require.NoError(t, cc.Update(t.Context(), class))
		}
		require.Eventually(t, func() bool {
			cond := driverFound(t, cc, "class-c")
			if cond != nil && cond.Status == metav1.ConditionTrue && strings.Contains(cond.Message, "pool-b") {
				return true
			}
			changeClass()
			return false
		}, waitFor, time.Second)
		changeClass()
		require.Eventually(t, available(mc), waitFor, tick)
		assert.True(t, drvB.has("mc"))
		assert.False(t, drvA.has("mc"))
		require.Eventually(t, func() bool { return hasEvent(t, cc, "class-c", v1alpha1.MachineClassDriverServes) }, waitFor, tick)

		// The restarted driver serves its machines as before.
		md := newMachine("md", "class-b")
		require.Eventually(t, available(md), waitFor, tick)
		assert.True(t, drvB.has("md"))
	})
}

// TestRoutingRefusesOverlappingProviders: two drivers that claim the same
// provider stop the manager at start, naming both.
func TestRoutingRefusesOverlappingProviders(t *testing.T) {
	control := testenv.Start(t)
	endpointA, endpointB := socketEndpoint(t), socketEndpoint(t)
	serveProviderDriver(t, &testDriver{vms: map[string]testVM{}}, endpointA, "provider-a", "shared")
	serveProviderDriver(t, &testDriver{vms: map[string]testVM{}}, endpointB, "provider-b", "shared")
	opts := routingOptions(t, control,
		DriverEndpoint{Name: "pool-a", Endpoint: endpointA},
		DriverEndpoint{Name: "pool-b", Endpoint: endpointB})
	m, err := New(opts)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err = m.Run(ctx)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `drivers "pool-a" and "pool-b" both serve provider "shared"`)
	assert.NoError(t, ctx.Err(), "refused at once, not after waiting")
}

func driverFound(t *testing.T, c client.Client, class string) *metav1.Condition {
	t.Helper()
	got := &v1alpha1.MachineClass{}
	require.NoError(t, c.Get(t.Context(), client.ObjectKey{Namespace: "default", Name: class}, got))
	if got.Status == nil {
		return nil
	}
	return meta.FindStatusCondition(got.Status.Conditions, v1alpha1.MachineClassDriverFound)
}

func hasEvent(t *testing.T, c client.Client, object, reason string) bool {
	t.Helper()
	events := &corev1.EventList{}
	require.NoError(t, c.List(t.Context(), events, client.InNamespace("default")))
	for _, e := range events.Items {
		if e.InvolvedObject.Name == object && e.Reason == reason {
			return true
		}
	}
	return false
}

// readyzBody returns the verbose readiness answer, whatever its status.
func readyzBody(t *testing.T, health string) string {
	t.Helper()
	resp, err := http.Get(health + "/readyz?verbose")
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return string(body)
}
