// Package setup holds what the MachineSet and MachineDeployment controllers
// share when they register with a manager: the clients they default to the
// manager's, their worker count, their resync period, and the controller
// builder every one of them starts from (named, watching its own kind, and
// synced again the moment the API server freeze gate opens). Every
// controller records its events through Recorder (events.go).
package setup

import (
	"time"

	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/cluster"

	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"

	"github.com/machina-io/machina/core/internal/freeze"
)

// DefaultResyncPeriod is how often every object is synced even without
// events, as a safety net (MCM: 10 minutes).
const DefaultResyncPeriod = 10 * time.Minute

// ResyncPeriod returns period, or DefaultResyncPeriod when it is not positive.
func ResyncPeriod(period time.Duration) time.Duration {
	if period <= 0 {
		return DefaultResyncPeriod
	}
	return period
}

// Clients are what a controller reads, writes and reports through.
type Clients struct {
	// Client reads from the manager's cache and writes to the API server.
	Client client.Client
	// APIReader reads straight from the API server, where the cache may lag
	// behind the controller's own writes.
	APIReader client.Reader
	// Recorder records events on the controller's objects (Recorder).
	Recorder events.EventRecorder
	// Cache is the cache that serves Client's reads, when Client is the
	// manager's: Machines reads its index without copies.
	Cache cache.Cache
}

// Machines reads cached Machines by index without copies (CachedMachines).
func (c Clients) Machines() CachedMachines { return CachedMachines{Cache: c.Cache, Client: c.Client} }

// Default fills the clients left unset with the manager's: its client, its
// API reader, and its event recorder for the controller name.
func (c *Clients) Default(mgr ctrl.Manager, name string) {
	if c.Client == nil {
		c.Client, c.Cache = mgr.GetClient(), mgr.GetCache()
	}
	if c.APIReader == nil {
		c.APIReader = mgr.GetAPIReader()
	}
	if c.Recorder == nil {
		c.Recorder = Recorder(mgr, name)
	}
}

// NewController starts the builder of a controller named name that
// reconciles objects of forType with workers concurrent reconciles (at least
// one). Objects synced while gate was frozen are synced again the moment it
// opens: newList lists every object of forType for that. opts apply to
// the watch of forType (e.g. NotOnlyStatus).
func NewController(mgr ctrl.Manager, name string, forType client.Object, workers int, gate *freeze.Gate, newList func() client.ObjectList, opts ...builder.ForOption) *builder.Builder {
	return ctrl.NewControllerManagedBy(mgr).
		Named(name).
		For(forType, opts...).
		WatchesRawSource(freeze.UnfreezeSource(gate, mgr.GetCache(), newList)).
		WithOptions(controller.Options{MaxConcurrentReconciles: max(workers, 1)})
}

// Env is what every controller is set up with, one signature for all:
// SetupWithManager(mgr, env). The manager (mgr) holds the machine objects;
// Target is the cluster of the Nodes, nil without one (a controller that
// needs it is set up only with one); Workers is the number of concurrent
// reconciles, 0 meaning the controller's own default.
type Env struct {
	Target  cluster.Cluster
	Workers int
}
