package machine

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/internal/controller/setup"
	"github.com/machina-io/machina/core/internal/driver"
	"github.com/machina-io/machina/core/testenv"
	"github.com/machina-io/machina/drivers/inmemory"
	driverv1alpha1 "github.com/machina-io/machina/proto/machina/driver/v1alpha1"
	"github.com/machina-io/machina/sdk"
)

// This file is the test harness of the controller: a real API server
// (envtest), the inmemory driver served by the SDK on a real Unix socket,
// a manager running the controller, a simulated kubelet (kubelet_test.go)
// and a recorder of every state a Machine passes through
// (recorder_test.go). No fakes: every call crosses a real boundary.

func TestMain(m *testing.M) {
	// The controllers log through the loggers the harness gives them;
	// controller-runtime's global logger is only used by code outside them.
	ctrl.SetLogger(logr.Discard())
	os.Exit(m.Run())
}

// fastOptions are short retry periods and generous timeouts, so that tests
// are fast and a timeout only fires where a test asks for it (per machine).
// The retry periods differ enough that a test can tell them apart.
func fastOptions() Options {
	return Options{
		CreationTimeout:         2 * time.Minute,
		HealthTimeout:           2 * time.Minute,
		DrainTimeout:            2 * time.Minute,
		ShortRetry:              100 * time.Millisecond,
		MediumRetry:             time.Second,
		ResourceExhaustedRetry:  3 * time.Second,
		LongRetry:               5 * time.Second,
		DrainPollInterval:       100 * time.Millisecond,
		MaxConcurrentReconciles: 4,
	}
}

// world is one test's universe: a namespace on the control cluster, a
// target cluster (the same one, or another), a driver, a kubelet, a
// manager.
type world struct {
	t       *testing.T
	ctx     context.Context
	control *testenv.Env
	target  *testenv.Env
	ns      string

	mem     *inmemory.Driver
	drv     *recordingDriver
	socket  string
	stopSrv func()
	logs    *logSink
	kubelet *kubelet
	rec     *recorder
	stopMgr func()
	opts    Options
	// configure, when set, sets the hooks of the Reconciler (gate,
	// meltdown guard) before start registers it; cached is the manager's
	// client.
	configure func(r *Reconciler, cached client.Client)
	mgrCount  int
	// noTarget runs the controller without a target cluster.
	noTarget bool
	// cacheConfig, when set, is the configuration the manager's cache of
	// the control cluster uses (its client writes and APIReader go
	// direct): a test can cut the cache off from the API server.
	cacheConfig *rest.Config
}

var nsCounter struct {
	sync.Mutex
	n int
}

// newWorld prepares a world in a fresh namespace of control; target may be
// the same Env. The driver serves at once; the manager starts with start.
func newWorld(t *testing.T, control, target *testenv.Env, memOpts inmemory.Options) *world {
	t.Helper()
	nsCounter.Lock()
	nsCounter.n++
	ns := fmt.Sprintf("t%d-%s", nsCounter.n, strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(t.Name())))
	nsCounter.Unlock()
	if len(ns) > 50 {
		ns = strings.TrimRight(ns[:50], "-")
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)

	w := &world{t: t, ctx: ctx, control: control, target: target, ns: ns, logs: &logSink{}, opts: fastOptions()}
	require.NoError(t, control.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))

	// A short socket path: sun_path holds 108 bytes.
	dir, err := os.MkdirTemp("", "m")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	w.socket = filepath.Join(dir, "d.sock")

	memOpts.Logger = slog.New(slog.NewTextHandler(w.logs, &slog.HandlerOptions{Level: slog.Level(-10)}))
	w.mem = inmemory.New(memOpts)
	w.drv = &recordingDriver{Driver: w.mem}
	w.startDriver()

	// On failure, the end of the logs tells what the controller did.
	t.Cleanup(func() {
		if t.Failed() {
			logs := w.logs.String()
			if len(logs) > 30000 {
				logs = logs[len(logs)-30000:]
			}
			t.Logf("last log lines:\n%s", logs)
		}
	})
	w.kubelet = startKubelet(t, ctx, target.Client, w.mem, &w.drv.vmMu, ns)
	w.rec = startRecorder(t, ctx, control, ns)
	return w
}

// startDriver serves the driver on the world's socket (again, after
// stopDriver: a driver restart).
func (w *world) startDriver() {
	srv, err := sdk.NewServer(inmemory.Info(""), w.drv, append(w.mem.SDKOptions(),
		sdk.WithLogger(slog.New(slog.NewTextHandler(w.logs, &slog.HandlerOptions{Level: slog.Level(-10)}))),
		sdk.WithMetricsRegisterer(prometheus.NewRegistry()),
	)...)
	require.NoError(w.t, err)
	ctx, cancel := context.WithCancel(w.ctx)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, "unix://"+w.socket) }()
	var once sync.Once
	w.stopSrv = func() {
		once.Do(func() {
			cancel()
			require.NoError(w.t, <-done)
		})
	}
	w.t.Cleanup(w.stopSrv)
}

func (w *world) stopDriver() { w.stopSrv() }

// start runs a manager with the controller, as the manager binary would:
// its own driver client, caches, event recorder. A second start after stop
// is a restarted manager.
func (w *world) start() {
	w.t.Helper()
	log := w.logs.logger().WithName(fmt.Sprintf("manager-%d", w.mgrCount))
	w.mgrCount++

	connectCtx, cancelConnect := context.WithTimeout(w.ctx, time.Minute)
	defer cancelConnect()
	dc, err := driver.Connect(connectCtx, "unix://"+w.socket, driver.Options{
		Logger:     log.WithName("driver"),
		Registerer: prometheus.NewRegistry(),
	})
	require.NoError(w.t, err)

	mgrOpts := ctrl.Options{
		Scheme:                 w.control.Scheme,
		Logger:                 log,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Cache:                  cache.Options{DefaultNamespaces: map[string]cache.Config{w.ns: {}}},
		Controller:             config.Controller{SkipNameValidation: ptr.To(true)},
	}
	if w.cacheConfig != nil {
		mgrOpts.NewCache = func(_ *rest.Config, o cache.Options) (cache.Cache, error) { return cache.New(w.cacheConfig, o) }
	}
	mgr, err := ctrl.NewManager(w.control.Config, mgrOpts)
	require.NoError(w.t, err)

	var target cluster.Cluster = mgr
	if w.noTarget {
		target = nil
	} else if w.target != w.control {
		tc, err := cluster.New(w.target.Config, func(o *cluster.Options) {
			o.Scheme = w.target.Scheme
			o.Logger = log.WithName("target")
		})
		require.NoError(w.t, err)
		require.NoError(w.t, mgr.Add(tc))
		target = tc
	}
	r := &Reconciler{Driver: dc, Options: w.opts}
	if w.configure != nil {
		w.configure(r, mgr.GetClient())
	}
	require.NoError(w.t, r.SetupWithManager(mgr, setup.Env{Target: target}))

	ctx, cancel := context.WithCancel(w.ctx)
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	var once sync.Once
	w.stopMgr = func() {
		once.Do(func() {
			cancel()
			require.NoError(w.t, <-done)
			require.NoError(w.t, dc.Close())
		})
	}
	w.t.Cleanup(w.stopMgr)
}

func (w *world) stop() { w.stopMgr() }

// class creates a MachineClass with a Secret holding secretData.
func (w *world) class(name string, secretData map[string]string) *v1alpha1.MachineClass {
	w.t.Helper()
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: name + "-secret"}, StringData: secretData}
	require.NoError(w.t, w.control.Client.Create(w.ctx, secret))
	c := &v1alpha1.MachineClass{
		ObjectMeta:   metav1.ObjectMeta{Namespace: w.ns, Name: name},
		ProviderSpec: runtime.RawExtension{Raw: []byte(`{"capacity":{"cpu":"2","memory":"4Gi"}}`)},
		SecretRef:    &corev1.SecretReference{Name: secret.Name, Namespace: w.ns},
	}
	require.NoError(w.t, w.control.Client.Create(w.ctx, c))
	return c
}

// machine creates a Machine of class.
func (w *world) machine(name, class string, mutate ...func(*v1alpha1.Machine)) *v1alpha1.Machine {
	w.t.Helper()
	m := &v1alpha1.Machine{
		ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: name},
		Spec:       v1alpha1.MachineSpec{Class: v1alpha1.ClassSpec{Kind: "MachineClass", Name: class}},
	}
	for _, f := range mutate {
		f(m)
	}
	require.NoError(w.t, w.control.Client.Create(w.ctx, m))
	return m
}

// get reads a Machine straight from the API server; nil when it is gone.
func (w *world) get(name string) *v1alpha1.Machine {
	w.t.Helper()
	m := &v1alpha1.Machine{}
	err := w.control.Client.Get(w.ctx, client.ObjectKey{Namespace: w.ns, Name: name}, m)
	if apierrors.IsNotFound(err) {
		return nil
	}
	require.NoError(w.t, err)
	return m
}

// eventually waits until cond holds for the Machine, failing with the
// machine's last state and history otherwise.
func (w *world) eventually(name string, timeout time.Duration, what string, cond func(m *v1alpha1.Machine) bool) *v1alpha1.Machine {
	w.t.Helper()
	var last *v1alpha1.Machine
	deadline := time.Now().Add(timeout)
	for {
		last = w.get(name)
		if cond(last) {
			return last
		}
		if time.Now().After(deadline) {
			js, _ := json.MarshalIndent(last, "", "  ")
			w.t.Fatalf("machine %s: waited %s for %s; history %v; last state:\n%s", name, timeout, what, w.rec.history(name), js)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (w *world) waitPhase(name string, phase v1alpha1.MachinePhase, timeout time.Duration) *v1alpha1.Machine {
	w.t.Helper()
	m := w.eventually(name, timeout, "phase "+string(phase), func(m *v1alpha1.Machine) bool {
		return m != nil && m.Status.CurrentStatus.Phase == phase
	})
	// The recorder's watch sees it too, so that assertions on the path
	// include it.
	require.Eventually(w.t, func() bool { return slices.Contains(w.rec.phasesOf(name), string(phase)) },
		timeout, 10*time.Millisecond, "the recorder never saw phase %s of %s: it saw %v; its watches ended: %v",
		phase, name, w.rec.phasesOf(name), w.rec.watchEnds())
	return m
}

func (w *world) waitGone(name string, timeout time.Duration) {
	w.t.Helper()
	w.eventually(name, timeout, "the machine to be gone", func(m *v1alpha1.Machine) bool { return m == nil })
	require.Eventually(w.t, func() bool { return w.rec.deleted(name) }, timeout, 10*time.Millisecond,
		"the recorder never saw the deletion of %s", name)
}

func (w *world) delete(name string) {
	w.t.Helper()
	m := &v1alpha1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: name}}
	require.NoError(w.t, w.control.Client.Delete(w.ctx, m))
}

// events returns the events of the namespace, as "type reason: note".
func (w *world) events() []string {
	w.t.Helper()
	list := &eventsv1.EventList{}
	require.NoError(w.t, w.control.Client.List(w.ctx, list, client.InNamespace(w.ns)))
	var out []string
	for _, e := range list.Items {
		out = append(out, fmt.Sprintf("%s %s %s: %s", e.Regarding.Name, e.Type, e.Reason, e.Note))
	}
	return out
}

// waitEvent waits for an event on machine with reason.
func (w *world) waitEvent(machine, typ, reason string) string {
	w.t.Helper()
	prefix := fmt.Sprintf("%s %s %s:", machine, typ, reason)
	var found string
	require.Eventually(w.t, func() bool {
		for _, e := range w.events() {
			if strings.HasPrefix(e, prefix) {
				found = e
				return true
			}
		}
		return false
	}, 30*time.Second, 50*time.Millisecond, "no event %q; events: %v", prefix, w.events())
	return found
}

// logSink collects every log line of the controller, the driver client,
// the SDK server and the driver.
type logSink struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logSink) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logSink) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// logger is a logr.Logger at the highest verbosity, writing to the sink.
func (l *logSink) logger() logr.Logger {
	return funcr.New(func(prefix, args string) {
		_, _ = io.WriteString(l, prefix+" "+args+"\n")
	}, funcr.Options{Verbosity: 10})
}

// recordingDriver is the inmemory driver with a note of when each Machine
// RPC arrived and of the last CreateMachine request.
type recordingDriver struct {
	*inmemory.Driver
	mu         sync.Mutex
	times      map[string][]time.Time
	lastCreate *driverv1alpha1.CreateMachineRequest
	// vmMu keeps the kubelet from registering a Node while a VM is
	// deleted (kubelet.vmMu).
	vmMu sync.Mutex
}

func (r *recordingDriver) note(rpc string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.times == nil {
		r.times = map[string][]time.Time{}
	}
	r.times[rpc] = append(r.times[rpc], time.Now())
}

// callTimes returns when the RPC was called, in order.
func (r *recordingDriver) callTimes(rpc string) []time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]time.Time(nil), r.times[rpc]...)
}

func (r *recordingDriver) CreateMachine(ctx context.Context, req *driverv1alpha1.CreateMachineRequest) (*driverv1alpha1.CreateMachineResponse, error) {
	r.note(inmemory.MethodCreateMachine)
	r.mu.Lock()
	r.lastCreate = req
	r.mu.Unlock()
	return r.Driver.CreateMachine(ctx, req)
}

func (r *recordingDriver) DeleteMachine(ctx context.Context, req *driverv1alpha1.DeleteMachineRequest) (*driverv1alpha1.DeleteMachineResponse, error) {
	r.note(inmemory.MethodDeleteMachine)
	r.vmMu.Lock()
	defer r.vmMu.Unlock()
	return r.Driver.DeleteMachine(ctx, req)
}

func (r *recordingDriver) GetMachineStatus(ctx context.Context, req *driverv1alpha1.GetMachineStatusRequest) (*driverv1alpha1.GetMachineStatusResponse, error) {
	r.note(inmemory.MethodGetMachineStatus)
	return r.Driver.GetMachineStatus(ctx, req)
}

func (r *recordingDriver) InitializeMachine(ctx context.Context, req *driverv1alpha1.InitializeMachineRequest) (*driverv1alpha1.InitializeMachineResponse, error) {
	r.note(inmemory.MethodInitializeMachine)
	return r.Driver.InitializeMachine(ctx, req)
}

func (r *recordingDriver) createRequest() *driverv1alpha1.CreateMachineRequest {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lastCreate
}

// TestMachineController runs the controller's envtest scenarios against one
// API server (each in its own namespace, with its own driver and manager).
// The two-cluster scenario has its own test with two API servers.
func TestMachineController(t *testing.T) {
	env := testenv.Start(t)
	scenarios := []struct {
		name string
		run  func(t *testing.T, env *testenv.Env)
	}{
		{"create join run", testCreateJoinRun},
		{"adopt existing VM", testAdoptExistingVM},
		{"initialize", testInitialize},
		{"lost create answer", testLostCreateAnswer},
		{"create errors", testCreateErrors},
		{"creation timeout driver failing", testCreationTimeoutDriverFailing},
		{"creation timeout no node", testCreationTimeoutNoNode},
		{"stale node", testStaleNode},
		{"missing class", testMissingClass},
		{"node template", testNodeTemplate},
		{"health", testHealth},
		{"health timeout", testHealthTimeout},
		{"delete with PDB", testDeleteWithPDB},
		{"delete forced by drain timeout", testDeleteForcedByDrainTimeout},
		{"delete held by hooks", testDeleteHeldByHooks},
		{"delete excluded from draining", testDeleteExcludedFromDraining},
		{"delete with drain rules", testDeleteWithDrainRules},
		{"expireAfter on a bare machine", testExpireAfterOnBareMachine},
		{"delete VM error", testDeleteVMError},
		{"restart mid deletion", testRestartMidDeletion},
		{"driver restart", testDriverRestart},
		{"secrets never leak", testSecretsNeverLeak},
		{"no target cluster", testNoTargetCluster},
	}
	for _, s := range scenarios {
		t.Run(s.name, func(t *testing.T) { s.run(t, env) })
	}
}
