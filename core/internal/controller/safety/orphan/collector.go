package orphan

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/internal/controller/setup"
	"github.com/machina-io/machina/core/internal/driver"
	driverv1alpha1 "github.com/machina-io/machina/proto/machina/driver/v1alpha1"
)

// Name names the collector in logs and events.
const Name = "orphan-vm-collector"

// DefaultPeriod is the default of --machine-safety-orphan-vms-period (MCM's).
const DefaultPeriod = 15 * time.Minute

// Driver is the part of the core's driver client the collector uses;
// *driver.Client implements it.
type Driver interface {
	Has(driverv1alpha1.Capability_Type) bool
	ListMachines(context.Context, *driverv1alpha1.ListMachinesRequest) (*driverv1alpha1.ListMachinesResponse, error)
	DeleteMachine(context.Context, *driverv1alpha1.DeleteMachineRequest) (*driverv1alpha1.DeleteMachineResponse, error)
}

// Collector finds and deletes orphan VMs, every Period, as a manager
// Runnable that runs only on the elected leader. Build it with the fields
// below and add it with SetupWithManager.
type Collector struct {
	// Drivers finds the driver of each class: every class is scanned
	// through the driver of its provider, and a class whose provider has no
	// driver is skipped. Nil: Driver serves every class.
	Drivers driver.Router
	// Driver is the one connected driver when Drivers is nil.
	Driver Driver
	// Client reads MachineClasses and Machines from the manager's cache;
	// mgr.GetClient() when nil.
	Client client.Reader
	// APIReader reads from the API server directly: the liveness check at
	// the start of a scan, the fresh read of a Machine before its VM is
	// deleted, and the classes' Secrets. mgr.GetAPIReader() when nil.
	APIReader client.Reader
	// Cache is waited for before the first scan; mgr.GetCache() when nil.
	Cache SyncWaiter
	// Recorder emits OrphanVMDeleted events on MachineClasses;
	// setup.Recorder(mgr, Name) when nil. Each event names the Machine the
	// VM was made for as related object, so that every deleted VM keeps
	// its own event rather than folding into one series per class.
	Recorder events.EventRecorder
	// Period is the time between scans (--machine-safety-orphan-vms-period);
	// DefaultPeriod when zero.
	Period time.Duration
	// Namespace limits the scan to the classes of one namespace; empty
	// scans every class the cache holds.
	Namespace string
	// Registerer receives the collector's metrics; controller-runtime's
	// registry when nil.
	Registerer prometheus.Registerer
	// Trigger, when set, asks for scans between the periodic ones
	// (trigger.go): the Machine controller fires it when a driver answers
	// OUT_OF_RANGE.
	Trigger *Trigger
	// Observe, when set, is called after every scan with its result. Tests
	// use it to count scans.
	Observe func(Result)

	log     logr.Logger
	metrics *metrics

	// mu serialises scans and guards the fields set by init.
	mu sync.Mutex
	// seen holds the candidates of the last successful scan of each class.
	seen map[classKey]map[vmKey]struct{}
}

// SyncWaiter waits for the informers a collector reads through.
type SyncWaiter interface {
	WaitForCacheSync(ctx context.Context) bool
}

var _ manager.Runnable = &Collector{}
var _ manager.LeaderElectionRunnable = &Collector{}

// SetupWithManager fills unset fields from mgr and adds the collector to
// mgr.
func (c *Collector) SetupWithManager(mgr ctrl.Manager, env setup.Env) error {
	if c.Client == nil {
		c.Client = mgr.GetClient()
	}
	if c.APIReader == nil {
		c.APIReader = mgr.GetAPIReader()
	}
	if c.Cache == nil {
		c.Cache = mgr.GetCache()
	}
	if c.Recorder == nil {
		c.Recorder = setup.Recorder(mgr, Name)
	}
	c.mu.Lock()
	err := c.init()
	c.mu.Unlock()
	if err != nil {
		return err
	}
	return mgr.Add(c)
}

// init checks the required fields and sets the defaults; it is idempotent.
// The caller holds c.mu.
func (c *Collector) init() error {
	switch {
	case c.Driver == nil && c.Drivers == nil:
		return errors.New("orphan collector: Drivers or Driver is required")
	case c.Client == nil || c.APIReader == nil || c.Cache == nil || c.Recorder == nil:
		return errors.New("orphan collector: Client, APIReader, Cache and Recorder are required")
	}
	if c.Period <= 0 {
		c.Period = DefaultPeriod
	}
	if c.Registerer == nil {
		c.Registerer = ctrlmetrics.Registry
	}
	if c.metrics == nil {
		m, err := newMetrics(c.Registerer)
		if err != nil {
			return fmt.Errorf("orphan collector: %w", err)
		}
		c.metrics = m
	}
	if c.log.GetSink() == nil {
		c.log = ctrl.Log.WithName(Name)
	}
	return nil
}

// NeedLeaderElection is true: two managers must never collect at once, and
// a standby's caches may lag.
func (c *Collector) NeedLeaderElection() bool { return true }

// Start waits for the caches of Machines and MachineClasses, scans at once
// (a first scan only marks candidates) and then every Period, until ctx
// ends.
func (c *Collector) Start(ctx context.Context) error {
	c.mu.Lock()
	err := c.init()
	c.mu.Unlock()
	if err != nil {
		return err
	}
	if err := c.waitForCaches(ctx); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	c.log.Info("Orphan VM collector started", "period", c.Period)
	ticker := time.NewTicker(c.Period)
	defer ticker.Stop()
	for {
		c.scanAndReport(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C:
		case <-c.Trigger.fired():
			c.log.Info("Orphan VM scan asked for: a driver answered OUT_OF_RANGE (several VMs for one machine)")
		}
	}
}

// waitForCaches makes sure the informers of Machines and MachineClasses
// exist and have synced. While the API server is unreachable this blocks,
// and nothing is scanned.
func (c *Collector) waitForCaches(ctx context.Context) error {
	// The manager's cache creates informers lazily; make sure the ones the
	// scan reads exist, so that the wait below covers them.
	if g, ok := c.Cache.(cache.Informers); ok {
		for _, obj := range []client.Object{&v1alpha1.Machine{}, &v1alpha1.MachineClass{}} {
			if _, err := g.GetInformer(ctx, obj); err != nil {
				return fmt.Errorf("orphan collector: informer for %T: %w", obj, err)
			}
		}
	}
	if !c.Cache.WaitForCacheSync(ctx) {
		return errors.New("orphan collector: caches did not sync")
	}
	return nil
}

func (c *Collector) scanAndReport(ctx context.Context) {
	res := c.Scan(ctx)
	if res.Err != nil && ctx.Err() == nil {
		c.log.Error(res.Err, "Orphan VM scan aborted; nothing was deleted and all candidates were forgotten")
	}
	if c.Observe != nil {
		c.Observe(res)
	}
}
