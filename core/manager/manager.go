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
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/internal/driver"
	"github.com/machina-io/machina/core/internal/freeze"
)

// syncCheckTimeout bounds the readiness check of the caches; kubelet's
// default probe timeout is one second.
const syncCheckTimeout = 500 * time.Millisecond

// Manager is the machina manager: a controller-runtime manager on the
// control cluster, with the target cluster added to it, and (once Run has
// connected) the driver client.
type Manager struct {
	opts   Options
	log    logr.Logger
	mgr    ctrl.Manager
	target cluster.Cluster // nil without a target cluster
	// probes are the API servers the safety check probes.
	probes []namedConfig
	// gate is frozen by the API server safety check during an outage.
	gate *freeze.Gate
	ran  atomic.Bool
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
	mgrOpts := ctrl.Options{
		Scheme: scheme,
		Logger: log,
		Cache: cache.Options{
			// MCM's namespace scoping: machine objects and their secrets
			// are watched in one namespace only.
			DefaultNamespaces: map[string]cache.Config{opts.Namespace: {}},
			SyncPeriod:        &syncPeriod,
			// No controller reads managed fields; without them a cached
			// object is about half the size, and cheaper to copy.
			DefaultTransform: cache.TransformStripManagedFields(),
		},
		LeaderElection:             opts.LeaderElect,
		LeaderElectionID:           LeaderElectionID,
		LeaderElectionNamespace:    opts.leaderElectionNamespace(),
		LeaderElectionConfig:       configs.leaderElection,
		LeaderElectionResourceLock: "leases",
		// Run returns right after the controllers stop, so giving the lease
		// up at once is safe, and lets another replica take over without
		// waiting out the lease.
		LeaderElectionReleaseOnCancel: true,
		LeaseDuration:                 &opts.LeaderElectLeaseDuration,
		RenewDeadline:                 &opts.LeaderElectRenewDeadline,
		RetryPeriod:                   &opts.LeaderElectRetryPeriod,
		Metrics: metricsserver.Options{
			BindAddress:   opts.MetricsBindAddress,
			ExtraHandlers: extraMetricsHandlers(opts.Profiling),
		},
		HealthProbeBindAddress: opts.HealthProbeBindAddress,
	}
	if opts.skipNameValidation {
		skip := true
		mgrOpts.Controller = config.Controller{SkipNameValidation: &skip}
	}
	mgr, err := ctrl.NewManager(configs.control, mgrOpts)
	if err != nil {
		return nil, fmt.Errorf("creating the controller manager: %w", err)
	}

	m := &Manager{opts: opts, log: log.WithName("manager"), mgr: mgr, probes: configs.probes, gate: &freeze.Gate{}}
	if configs.target != nil {
		target, err := cluster.New(configs.target, func(o *cluster.Options) {
			o.Scheme = scheme
			o.Logger = log.WithName("target")
			o.Cache.SyncPeriod = &syncPeriod
			o.Cache.DefaultTransform = cache.TransformStripManagedFields()
		})
		if err != nil {
			return nil, fmt.Errorf("target cluster: %w", err)
		}
		if err := mgr.Add(target); err != nil {
			return nil, fmt.Errorf("adding the target cluster: %w", err)
		}
		m.target = target
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

// Run connects to the driver, registers the controllers and runs them
// until ctx ends. It waits for the driver as long as ctx allows; the
// health and metrics servers start once the driver is connected. It fails
// at once when the driver does not serve this Driver API version. Run may
// be called only once.
func (m *Manager) Run(ctx context.Context) error {
	if !m.ran.CompareAndSwap(false, true) {
		return errors.New("manager: Run called twice")
	}
	m.log.Info("Connecting to the driver", "endpoint", m.opts.DriverEndpoint)
	dc, err := driver.Connect(ctx, m.opts.DriverEndpoint, driver.Options{
		CreateTimeout: m.opts.DriverCreateTimeout,
		DeleteTimeout: m.opts.DriverDeleteTimeout,
		StatusTimeout: m.opts.DriverStatusTimeout,
		ListTimeout:   m.opts.DriverListTimeout,
		CallTimeout:   m.opts.DriverCallTimeout,
		Logger:        m.log.WithName("driver"),
	})
	if err != nil {
		if ctx.Err() != nil {
			// Stopped (SIGTERM) while waiting for the driver: a graceful
			// stop, not a failure.
			m.log.Info("Stopped before the driver was connected")
			return nil
		}
		return fmt.Errorf("connecting to the driver: %w", err)
	}
	defer func() {
		if err := dc.Close(); err != nil {
			m.log.Error(err, "Closing the driver connection")
		}
	}()

	// Ready only while the driver answers its Probe: a core whose driver
	// is gone can make no progress on machines.
	if err := m.mgr.AddReadyzCheck("driver", dc.HealthChecker()); err != nil {
		return err
	}
	if err := m.setupControllers(dc); err != nil {
		return err
	}
	info := dc.Info()
	m.log.Info("Starting controllers", "namespace", m.opts.Namespace, "targetCluster", m.target != nil,
		"driver", info.Name, "driverVersion", info.VendorVersion, "leaderElection", m.opts.LeaderElect)
	if err := m.mgr.Start(ctx); err != nil {
		return fmt.Errorf("running the controllers: %w", err)
	}
	m.log.Info("Stopped")
	return nil
}

// informersSynced is the "informers" readiness check: ready once the
// caches of both clusters have synced. It waits at most syncCheckTimeout,
// so that a probe gets a clear failure rather than its own timeout.
func (m *Manager) informersSynced(req *http.Request) error {
	ctx, cancel := context.WithTimeout(req.Context(), syncCheckTimeout)
	defer cancel()
	if !m.mgr.GetCache().WaitForCacheSync(ctx) {
		return errors.New("control cluster cache not synced")
	}
	if m.target != nil && !m.target.GetCache().WaitForCacheSync(ctx) {
		return errors.New("target cluster cache not synced")
	}
	return nil
}

// newScheme knows the built-in types and machine.sapcloud.io/v1alpha1.
func newScheme() (*runtime.Scheme, error) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, err
	}
	if err := v1alpha1.AddToScheme(scheme); err != nil {
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
