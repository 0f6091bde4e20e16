package controllertest

import (
	"context"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/machina-io/machina/core/testenv"
)

// StartManager starts a manager on env with the controllers that setup
// registers, and returns once its cache has synced. The metrics and health
// servers are off, and controller names need not be unique, because a test
// binary starts one manager per test; opts change other options (a cache
// limited to a namespace, say). The manager stops when the test ends; an
// error from it fails the test.
func StartManager(t testing.TB, env *testenv.Env, setup func(ctrl.Manager) error, opts ...func(*ctrl.Options)) ctrl.Manager {
	t.Helper()
	mgr, _ := RunManager(t, env, setup, opts...)
	return mgr
}

// RunManager is StartManager for a test that also stops the manager
// before it ends (to restart the controllers, say): stop cancels it and
// waits for it to return. Calling stop again, or at the test's end, does
// nothing more.
func RunManager(t testing.TB, env *testenv.Env, setup func(ctrl.Manager) error, opts ...func(*ctrl.Options)) (mgr ctrl.Manager, stop func()) {
	t.Helper()
	mgr = NewManager(t, env.Config, env.Scheme, opts...)
	if err := setup(mgr); err != nil {
		t.Fatalf("setting up the controllers: %v", err)
	}
	stop = Start(t, mgr)
	if !mgr.GetCache().WaitForCacheSync(t.Context()) {
		t.Fatal("the manager's cache did not sync")
	}
	return mgr, stop
}

// NewManager returns a manager for cfg that is not started yet, for a test
// that adds its controllers itself or reaches the API server another way (a
// Proxy's Config, say). The metrics and health servers are off, and
// controller names need not be unique; opts change other options.
func NewManager(t testing.TB, cfg *rest.Config, scheme *runtime.Scheme, opts ...func(*ctrl.Options)) ctrl.Manager {
	t.Helper()
	skip := true
	options := ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Controller:             config.Controller{SkipNameValidation: &skip},
	}
	for _, opt := range opts {
		opt(&options)
	}
	mgr, err := ctrl.NewManager(cfg, options)
	if err != nil {
		t.Fatalf("new manager: %v", err)
	}
	return mgr
}

// Start starts mgr and returns at once, without waiting for its caches: a
// test of cold caches needs the manager running before they sync. stop
// cancels the manager and waits (up to WaitFor) for it to return; it runs
// at the test's end too, and calling it again does nothing more.
func Start(t testing.TB, mgr ctrl.Manager) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("manager stopped with an error: %v", err)
				}
			case <-time.After(WaitFor):
				t.Errorf("the manager did not stop within %s", WaitFor)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// WaitCached waits until the manager's cache holds every object. A test
// waits for it before an action whose outcome depends on the controller
// having seen the objects.
func WaitCached(t testing.TB, mgr ctrl.Manager, objs ...client.Object) {
	t.Helper()
	for _, obj := range objs {
		into := obj.DeepCopyObject().(client.Object)
		if !eventually(func() bool {
			return mgr.GetCache().Get(t.Context(), client.ObjectKeyFromObject(obj), into) == nil
		}) {
			t.Fatalf("cache never saw %s", obj.GetName())
		}
	}
}

// eventually polls cond every Tick until it holds (true) or WaitFor has
// passed (false). cond runs at least once after the deadline, so a slow
// first attempt does not fail a condition that holds.
func eventually(cond func() bool) bool {
	for deadline := time.Now().Add(WaitFor); ; time.Sleep(Tick) {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
	}
}
