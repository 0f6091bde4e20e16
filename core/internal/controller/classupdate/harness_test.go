package classupdate

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/internal/controller/controllertest"
	"github.com/machina-io/machina/core/internal/controller/machine"
	"github.com/machina-io/machina/core/internal/controller/setup"
	"github.com/machina-io/machina/core/internal/driver"
	"github.com/machina-io/machina/core/internal/driverclass"
	"github.com/machina-io/machina/core/testenv"
	"github.com/machina-io/machina/drivers/inmemory"
	driverv1alpha1 "github.com/machina-io/machina/proto/machina/driver/v1alpha1"
	"github.com/machina-io/machina/sdk"
)

// This file is the harness of the class update tests: a real API server
// (envtest), the inmemory driver served by the SDK on a real Unix socket,
// and a manager running the Machine controller (which creates the VMs and
// records the class hash, without a target cluster) and the class update
// controller.

// countingDriver is the inmemory driver with UpdateMachine counted: how many
// calls are in flight at most, and a hold that keeps the calls for some
// machines waiting until released or cancelled.
type countingDriver struct {
	*inmemory.Driver

	inFlight, maxInFlight atomic.Int32

	mu sync.Mutex
	// held names the machines whose calls wait for release (or their
	// context); all machines when holdAll.
	held    map[string]bool
	holdAll bool
	release chan struct{}
}

func (d *countingDriver) UpdateMachine(ctx context.Context, req *driverv1alpha1.UpdateMachineRequest) (*driverv1alpha1.UpdateMachineResponse, error) {
	n := d.inFlight.Add(1)
	defer d.inFlight.Add(-1)
	for {
		m := d.maxInFlight.Load()
		if n <= m || d.maxInFlight.CompareAndSwap(m, n) {
			break
		}
	}
	d.mu.Lock()
	hold, release := d.holdAll || d.held[req.GetMachine().GetName()], d.release
	d.mu.Unlock()
	if hold {
		select {
		case <-release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return d.Driver.UpdateMachine(ctx, req)
}

// hold makes the calls for names (all machines when none is given) wait.
func (d *countingDriver) hold(names ...string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.release = make(chan struct{})
	d.holdAll = len(names) == 0
	d.held = map[string]bool{}
	for _, n := range names {
		d.held[n] = true
	}
}

// unhold lets every held call, and every later one, through.
func (d *countingDriver) unhold() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.holdAll, d.held = false, nil
	if d.release != nil {
		close(d.release)
		d.release = nil
	}
}

// world is one test's namespace, driver and manager.
type world struct {
	t   *testing.T
	ctx context.Context
	env *testenv.Env
	ns  string
	mem *inmemory.Driver
	drv *countingDriver
	dc  *driver.Client

	opts    Options
	stopMgr func()
}

func newWorld(t *testing.T, env *testenv.Env, memOpts inmemory.Options) *world {
	t.Helper()
	ctx := t.Context()
	w := &world{t: t, ctx: ctx, env: env, ns: controllertest.Namespace(t, env.Client, "cu"),
		opts: Options{MaxConcurrent: 2, ShortRetry: 100 * time.Millisecond, MediumRetry: time.Second, LongRetry: 5 * time.Second}}

	memOpts.Logger = slog.New(slog.DiscardHandler)
	w.mem = inmemory.New(memOpts)
	w.drv = &countingDriver{Driver: w.mem}
	srv, err := sdk.NewServer(inmemory.Info(""), w.drv, append(w.mem.SDKOptions(), sdk.WithLogger(slog.New(slog.DiscardHandler)), sdk.WithMetricsRegisterer(prometheus.NewRegistry()))...)
	require.NoError(t, err)
	dir, err := os.MkdirTemp("", "cu")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	endpoint := "unix://" + filepath.Join(dir, "d.sock")
	srvCtx, stopSrv := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(srvCtx, endpoint) }()
	t.Cleanup(func() {
		stopSrv()
		if err := <-served; err != nil {
			t.Errorf("the driver's server: %v", err)
		}
	})

	connectCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	w.dc, err = driver.Connect(connectCtx, endpoint, driver.Options{Logger: logr.Discard(), Registerer: prometheus.NewRegistry()})
	require.NoError(t, err)
	t.Cleanup(func() { _ = w.dc.Close() })
	return w
}

// start runs a manager with the Machine and class update controllers until
// stop (or the end of the test).
func (w *world) start() {
	w.t.Helper()
	_, w.stopMgr = controllertest.RunManager(w.t, w.env, func(mgr ctrl.Manager) error {
		machines := &machine.Reconciler{Driver: w.dc, Options: machine.Options{
			ShortRetry: 100 * time.Millisecond, MediumRetry: time.Second, LongRetry: 5 * time.Second,
			MaxConcurrentReconciles: 4,
		}}
		if err := machines.SetupWithManager(mgr, setup.Env{}); err != nil {
			return err
		}
		drivers, err := driver.NewSet([]*driver.Client{w.dc}, true)
		if err != nil {
			return err
		}
		return (&Reconciler{Drivers: drivers, Options: w.opts}).SetupWithManager(mgr, setup.Env{Workers: 2})
	}, func(o *ctrl.Options) {
		o.Cache = cache.Options{DefaultNamespaces: map[string]cache.Config{w.ns: {}}}
	})
}

// createClass creates a class with the given provider spec.
func (w *world) createClass(name, spec string) *v1alpha1.MachineClass {
	w.t.Helper()
	c := &v1alpha1.MachineClass{
		ObjectMeta:   metav1.ObjectMeta{Name: name, Namespace: w.ns},
		ProviderSpec: runtime.RawExtension{Raw: []byte(spec)},
	}
	require.NoError(w.t, w.env.Client.Create(w.ctx, c))
	return c
}

// setSpec changes the class's provider spec and returns its new hash.
func (w *world) setSpec(c *v1alpha1.MachineClass, spec string) string {
	w.t.Helper()
	require.NoError(w.t, w.env.Client.Get(w.ctx, client.ObjectKeyFromObject(c), c))
	c.ProviderSpec = runtime.RawExtension{Raw: []byte(spec)}
	require.NoError(w.t, w.env.Client.Update(w.ctx, c))
	return hashOf(w.t, c)
}

// createMachines creates machines of class and waits until each has a VM
// and records the class hash want.
func (w *world) createMachines(class string, want string, names ...string) {
	w.t.Helper()
	for _, n := range names {
		m := &v1alpha1.Machine{ObjectMeta: metav1.ObjectMeta{Name: n, Namespace: w.ns}}
		m.Spec.Class = v1alpha1.ClassSpec{Kind: "MachineClass", Name: class}
		require.NoError(w.t, w.env.Client.Create(w.ctx, m))
	}
	for _, n := range names {
		w.waitMachine(n, "a VM made from "+shortHash(want), func(m *v1alpha1.Machine) bool {
			return m.Spec.ProviderID != "" && m.Annotations[v1alpha1.ClassHashAnnotation] == want
		})
	}
}

// waitMachine waits until the machine satisfies cond.
func (w *world) waitMachine(name, what string, cond func(*v1alpha1.Machine) bool) *v1alpha1.Machine {
	w.t.Helper()
	return controllertest.WaitObject(w.t, w.env.Client, client.ObjectKey{Namespace: w.ns, Name: name}, what, cond)
}

// machine reads a machine.
func (w *world) machine(name string) *v1alpha1.Machine {
	w.t.Helper()
	m := &v1alpha1.Machine{}
	require.NoError(w.t, w.env.Client.Get(w.ctx, client.ObjectKey{Namespace: w.ns, Name: name}, m))
	return m
}

// vm returns the inmemory VM of a machine.
func (w *world) vm(name string) inmemory.VM {
	w.t.Helper()
	i := slices.IndexFunc(w.mem.VMs(), func(v inmemory.VM) bool { return v.Name == name })
	require.GreaterOrEqual(w.t, i, 0, "no VM for %s", name)
	return w.mem.VMs()[i]
}

// waitSnapshot waits until the class has a snapshot of hash.
func (w *world) waitSnapshot(class, hash string) {
	w.t.Helper()
	key := client.ObjectKey{Namespace: w.ns, Name: snapshotName(class, hash)}
	controllertest.WaitObject(w.t, w.env.Client, key, "been written", func(*appsv1.ControllerRevision) bool { return true })
}

// classUpdated returns the machine's ClassUpdated condition, nil when unset.
func classUpdated(m *v1alpha1.Machine) *metav1.Condition {
	return meta.FindStatusCondition(m.Status.MachineConditions, v1alpha1.MachineConditionClassUpdated)
}

// appliedTo is the wait condition "updated to hash".
func appliedTo(hash string) func(*v1alpha1.Machine) bool {
	return func(m *v1alpha1.Machine) bool {
		c := classUpdated(m)
		return m.Annotations[v1alpha1.ClassHashAnnotation] == hash && c != nil && c.Status == metav1.ConditionTrue && c.Reason == ReasonApplied
	}
}

func hashOf(t *testing.T, c *v1alpha1.MachineClass) string {
	t.Helper()
	h, err := driverclass.Hash(c)
	require.NoError(t, err)
	return h
}

// names returns "<prefix>-0" … "<prefix>-<n-1>".
func names(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%d", prefix, i)
	}
	return out
}
