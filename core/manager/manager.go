package manager

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/pprof"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	machinaiov1alpha1 "github.com/machina-io/machina/core/api/machina/v1alpha1"
	mcfgv1 "github.com/machina-io/machina/core/api/machineconfiguration/v1"
	"github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/internal/cachetrim"
	"github.com/machina-io/machina/core/internal/catchup"
	"github.com/machina-io/machina/core/internal/controller/safety/apiserver"
	"github.com/machina-io/machina/core/internal/controller/setup"
	"github.com/machina-io/machina/core/internal/driver"
	"github.com/machina-io/machina/core/internal/freeze"
)

// syncCheckTimeout bounds the readiness check of the caches; kubelet's
// default probe timeout is one second.
const syncCheckTimeout = 500 * time.Millisecond

// Manager is the machina manager: a controller-runtime manager on the
// control cluster, with the target cluster added to it, and (once Run has
// connected) the driver client. The controller-runtime manager runs the
// caches and the health and metrics servers in every replica; the
// controllers run in leadership terms (leader.go, term.go).
type Manager struct {
	opts   Options
	log    logr.Logger
	base   ctrl.Manager    // the process's manager; controllers go on a term
	target cluster.Cluster // nil without a target cluster
	// probes are the API servers the safety check probes.
	probes []namedConfig
	// gate is frozen by the API server safety check during an outage, and
	// by the election when the lease is lost.
	gate *freeze.Gate
	// frozen is the metric mcm_machine_controller_frozen.
	frozen prometheus.Gauge
	// caches knows every informer of both clusters' caches, to tell when
	// they have caught up with their API servers.
	caches *catchup.Tracker
	// indexes are the field indexes the terms' controllers declared.
	indexes *fieldIndexes
	// lock is the Lease this replica campaigns for (nil without
	// --leader-elect).
	lock *renewClock
	ran  atomic.Bool
	// uninformed records reads of kinds no informer covers (nil unless
	// opts.failOnUninformedReads).
	uninformed *uninformedReads
}

// New checks opts, loads the cluster configurations and builds the manager.
// It contacts neither the API servers nor the driver.
func New(opts Options) (*Manager, error) {
	if err := opts.Validate(); err != nil {
		return nil, fmt.Errorf("invalid options: %w", err)
	}
	log := opts.Logger
	if log.GetSink() == nil {
		log = ctrl.Log
	}
	configs, err := opts.loadConfigs()
	if err != nil {
		return nil, err
	}
	scheme, err := newScheme()
	if err != nil {
		return nil, err
	}

	syncPeriod := opts.MinResyncPeriod
	caches := &catchup.Tracker{}
	newCache, newTargetCache := setup.NewIndexedCache, cache.New
	var uninformed *uninformedReads
	if opts.failOnUninformedReads {
		uninformed = &uninformedReads{}
		newCache, newTargetCache = uninformed.newCache(newCache), uninformed.newCache(newTargetCache)
	}
	mgrOpts := ctrl.Options{
		Scheme: scheme,
		Logger: log,
		Cache: cache.Options{
			// MCM's namespace scoping: machine objects and their secrets
			// are watched in one namespace only.
			DefaultNamespaces: map[string]cache.Config{opts.Namespace: {}},
			SyncPeriod:        &syncPeriod,
			// No controller reads managed fields, nor most of a Node's
			// status; without them a cached object is about half the
			// size (a real Node a tenth), and cheaper to copy.
			DefaultTransform: cachetrim.Transform(),
			NewInformer:      caches.NewInformer("control"),
		},
		// Controllers read a parent's machines from the Machine informer's
		// index, without the copies of a List (setup.CachedMachines).
		NewCache: newCache,
		// The election is machina's own (leader.go): controller-runtime's
		// ends the process when the lease is lost.
		LeaderElection:         false,
		Metrics:                metricsOptions(opts),
		HealthProbeBindAddress: opts.HealthProbeBindAddress,
		Controller:             controllerOptions(opts),
	}
	mgr, err := ctrl.NewManager(configs.control, mgrOpts)
	if err != nil {
		return nil, fmt.Errorf("creating the controller manager: %w", err)
	}

	frozen, err := apiserver.FrozenGauge(ctrlmetrics.Registry)
	if err != nil {
		return nil, err
	}
	m := &Manager{opts: opts, log: log.WithName("manager"), base: mgr, probes: configs.probes, gate: &freeze.Gate{},
		frozen: frozen, caches: caches, indexes: &fieldIndexes{}, uninformed: uninformed}
	if opts.LeaderElect {
		recorder := mgr.GetEventRecorderFor(LeaderElectionID) //nolint:staticcheck // SA1019: client-go's leader election records the Lease's events through a core/v1 recorder
		lock, err := newLeaseLock(configs.leaderElection, opts.leaderElectionNamespace(), recorder, opts.LeaderElectRenewDeadline/2)
		if err != nil {
			return nil, err
		}
		m.lock = lock
	}
	if configs.target != nil {
		target, err := cluster.New(configs.target, func(o *cluster.Options) {
			o.Scheme = scheme
			o.Logger = log.WithName("target")
			o.Cache.SyncPeriod = &syncPeriod
			o.Cache.DefaultTransform = cachetrim.Transform()
			o.Cache.NewInformer = caches.NewInformer("target")
			o.NewCache = newTargetCache
		})
		if err != nil {
			return nil, fmt.Errorf("target cluster: %w", err)
		}
		if err := mgr.Add(target); err != nil {
			return nil, fmt.Errorf("adding the target cluster: %w", err)
		}
		m.target = target
	}
	if err := m.addNodeConfigServer(mgr, m.target); err != nil {
		return nil, err
	}

	// Request latency and the time spent waiting for --kube-api-qps tell
	// an operator whether the client limits bind; controller-runtime leaves
	// them off unless asked.
	ctrlmetrics.RegisterRESTClientMetrics(ctrlmetrics.MetricRequestLatency, ctrlmetrics.MetricRateLimiterLatency)
	if err := newStateMetrics(mgr.GetCache()).register(ctrlmetrics.Registry); err != nil {
		return nil, fmt.Errorf("registering machine state metrics: %w", err)
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return nil, err
	}
	if err := mgr.AddReadyzCheck("informers", m.informersSynced); err != nil {
		return nil, err
	}
	return m, nil
}

// Run checks that its namespace exists, connects to the driver, then runs
// the caches and the health and metrics servers, campaigns for the lease
// and runs the controllers while it leads, until ctx ends. It waits for
// the driver as long as ctx allows; the health and metrics servers start
// once the driver is connected. It fails at once when the namespace does
// not exist, when the driver does not serve this Driver API version, and
// when a server cannot listen. An unreachable API server is no reason to
// return: the replica waits for it, frozen. Run may be called only once.
func (m *Manager) Run(ctx context.Context) error {
	if !m.ran.CompareAndSwap(false, true) {
		return errors.New("manager: Run called twice")
	}
	if err := m.checkNamespaces(ctx); err != nil {
		return err
	}
	drivers, err := m.connectDrivers(ctx)
	if err != nil {
		if ctx.Err() != nil && !errors.Is(err, errDriverSet) {
			// Stopped (SIGTERM) while waiting for the driver: a graceful
			// stop, not a failure.
			m.log.Info("Stopped before the driver was connected")
			return nil
		}
		return fmt.Errorf("connecting to the driver: %w", err)
	}
	defer func() {
		if err := drivers.Close(); err != nil {
			m.log.Error(err, "Closing the driver connections")
		}
	}()

	// Ready only while every driver answers its Probe: a core whose driver
	// is gone can make no progress on that driver's machines.
	if err := m.addDriverChecks(drivers); err != nil {
		return err
	}
	for _, dc := range drivers.Drivers() {
		info := dc.Info()
		m.log.Info("Driver", "name", dc.Name(), "driver", info.Name, "driverVersion", info.VendorVersion, "providers", info.Providers)
	}
	m.log.Info("Starting", "namespace", m.opts.Namespace, "targetCluster", m.target != nil,
		"drivers", len(drivers.Drivers()), "leaderElection", m.opts.LeaderElect)

	// The caches and servers stop only after the controllers have.
	baseCtx, stopBase := context.WithCancel(context.WithoutCancel(ctx))
	defer stopBase()
	baseDone := make(chan error, 1)
	go func() { baseDone <- m.base.Start(baseCtx) }()
	leadCtx, stopLeading := context.WithCancel(ctx)
	defer stopLeading()
	leadDone := make(chan struct{})
	go func() {
		defer close(leadDone)
		m.lead(leadCtx, drivers)
	}()

	select {
	case <-leadDone: // ctx ended
	case err = <-baseDone:
		if err == nil {
			err = errors.New("the controller manager stopped")
		}
		stopLeading()
		<-leadDone
	}
	stopBase()
	if err == nil {
		err = <-baseDone
	}
	if err != nil {
		return fmt.Errorf("running the controllers: %w", err)
	}
	m.log.Info("Stopped")
	return nil
}

// catchUpTimeout bounds one attempt to see every cache catch up.
const catchUpTimeout = time.Minute

// lead runs leadership terms until ctx ends: with --leader-elect while
// this replica holds the lease, else one after the other. A term first
// waits until the caches have caught up with the API servers, then builds
// the controllers and runs them.
func (m *Manager) lead(ctx context.Context, drivers *driver.Set) {
	terms := 0
	runTerm := func(ctx context.Context) error {
		if m.lock != nil {
			// A replica that saw the API server go away while it
			// campaigned (a standby taking over after an outage) starts
			// frozen, as the leader that lost the lease is: the API
			// server check unfreezes once the outage is dealt with.
			if since, ok := m.lock.takeOutage(); ok {
				m.gate.Freeze(fmt.Sprintf("the control API server was unreachable from %s while this replica campaigned",
					since.UTC().Format(time.RFC3339)), since)
				m.markFrozen()
			}
		}
		if err := m.waitCaughtUp(ctx); err != nil {
			return err
		}
		t := newTerm(m.base, m.indexes, m.opts.skipNameValidation || terms > 0)
		terms++
		if err := m.setupControllers(drivers, t); err != nil {
			return fmt.Errorf("setting up the controllers: %w", err)
		}
		return t.run(ctx)
	}
	if m.lock != nil {
		(&elector{m: m, lock: m.lock, runTerm: runTerm}).run(ctx)
		return
	}
	// Without election this replica always leads; a term that failed (its
	// setup found no API server) is started again.
	for ctx.Err() == nil {
		if err := runTerm(ctx); err != nil && ctx.Err() == nil {
			m.log.Error(err, "The controllers stopped; starting them again")
		}
		select {
		case <-ctx.Done():
		case <-time.After(m.opts.LeaderElectRetryPeriod):
		}
	}
}

// waitCaughtUp returns once every informer cache has caught up with its
// API server (catchup.Tracker), retrying while an API server does not
// answer, or when ctx ends.
func (m *Manager) waitCaughtUp(ctx context.Context) error {
	for {
		err := m.caches.Wait(ctx, catchUpTimeout)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		m.log.Info("Waiting for the caches to catch up before starting the controllers", "error", err.Error())
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(m.opts.LeaderElectRetryPeriod):
		}
	}
}

// markFrozen sets mcm_machine_controller_frozen after the election froze
// the gate; the API server check keeps it in step from then on.
func (m *Manager) markFrozen() {
	if m.gate.Frozen() {
		m.frozen.Set(1)
	}
}

// informersSynced is the "informers" readiness check: ready once the
// caches of both clusters have synced. It waits at most syncCheckTimeout,
// so that a probe gets a clear failure rather than its own timeout.
func (m *Manager) informersSynced(req *http.Request) error {
	ctx, cancel := context.WithTimeout(req.Context(), syncCheckTimeout)
	defer cancel()
	if !m.base.GetCache().WaitForCacheSync(ctx) {
		return errors.New("control cluster cache not synced")
	}
	if m.target != nil && !m.target.GetCache().WaitForCacheSync(ctx) {
		return errors.New("target cluster cache not synced")
	}
	return nil
}

// newScheme knows the built-in types, machine.sapcloud.io/v1alpha1,
// machineconfiguration.openshift.io/v1 and machina.io/v1alpha1.
func newScheme() (*runtime.Scheme, error) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, err
	}
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	if err := mcfgv1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	if err := machinaiov1alpha1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	return scheme, nil
}

// extraMetricsHandlers are Go's pprof handlers when profiling is on. They
// share the metrics server (MCM serves them on its one HTTP port) instead
// of opening a port of their own.
func extraMetricsHandlers(profiling bool) map[string]http.Handler {
	if !profiling {
		return nil
	}
	return map[string]http.Handler{
		"/debug/pprof/":        http.HandlerFunc(pprof.Index),
		"/debug/pprof/cmdline": http.HandlerFunc(pprof.Cmdline),
		"/debug/pprof/profile": http.HandlerFunc(pprof.Profile),
		"/debug/pprof/symbol":  http.HandlerFunc(pprof.Symbol),
		"/debug/pprof/trace":   http.HandlerFunc(pprof.Trace),
	}
}
