package machine

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/source"

	machinaio "github.com/machina-io/machina/core/api/machina/v1alpha1"
	"github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/internal/bootstrap"
	"github.com/machina-io/machina/core/internal/controller/phase"
	"github.com/machina-io/machina/core/internal/controller/setup"
	"github.com/machina-io/machina/core/internal/drain"
	"github.com/machina-io/machina/core/internal/driver"
	"github.com/machina-io/machina/core/internal/freeze"
	"github.com/machina-io/machina/core/internal/meltdown"
)

// ControllerName names the controller in logs, metrics and events.
const ControllerName = "machine-controller"

// Reconciler reconciles Machines. Control, Driver and Options are set by the
// caller; SetupWithManager fills what is left unset.
type Reconciler struct {
	// Control reads and writes Machines, MachineClasses and Secrets in the
	// control cluster (usually the manager's cached client).
	Control client.Client
	// Target reads (through its cache) and writes Nodes in the target
	// cluster. Nil runs the controller without a target cluster: no Node is
	// awaited, drained or deleted, and a created machine becomes Available.
	Target client.Client
	// Drainer drains Nodes of the target cluster; built from the target
	// cluster's config by SetupWithManager when nil.
	Drainer *drain.Drainer
	// Tokens manages bootstrap tokens in the target cluster; built by
	// SetupWithManager when nil, with a client that does not cache Secrets.
	Tokens *bootstrap.Tokens
	// Drivers finds the driver of a machine's class. Nil: Driver serves
	// every class.
	Drivers driver.Router
	// Driver is the one connected driver when Drivers is nil.
	Driver *driver.Client
	// Recorder emits events on Machines; the manager's recorder for
	// ControllerName when nil.
	Recorder events.EventRecorder
	// OrphanScan, when set, asks the orphan VM collector for a scan now
	// (machine_orphanscan.go).
	OrphanScan func()
	// Gate is the API server freeze gate: while it is frozen the controller
	// makes no health decisions (no machine goes Unknown→Failed or
	// Pending→Failed), because a node that looks unhealthy may only be
	// unreachable through a broken API server. Deletions go on. Nil is a
	// gate that never freezes.
	Gate *freeze.Gate
	// Meltdown limits how many machines of one MachineDeployment the health
	// timeout may fail at a time (--machine-max-replacements). Nil: no
	// limit.
	Meltdown *meltdown.Guard
	// APIReader reads Machines straight from the API server, when the
	// cache has not caught up with the controller's own last write; the
	// manager's API reader when nil.
	APIReader client.Reader
	// TargetReader reads Nodes straight from the target cluster's API
	// server, when the cache has not caught up with the controller's own
	// last write of the Node's in-place condition; the target cluster's API
	// reader when nil.
	TargetReader client.Reader
	// Options tune the controller; zero fields take their defaults.
	Options Options

	written setup.Written[struct{}]
	// nodesWritten are the Nodes this controller wrote and the cache may
	// not show yet (writeNode, machine_node.go).
	nodesWritten setup.Written[struct{}]
	vmChecks     vmChecks
	retries      retryGate
	released     releasedMachines
}

// Field indexes of the controller's Machine cache. The names carry the
// controller's name so that they cannot collide with other controllers'
// indexes on the same manager.
const (
	indexClassName = "machine-controller.machina.io/class-name"
)

// SetupWithManager registers the controller with mgr. target is the
// cluster that holds the Nodes: mgr itself when Machines and Nodes live in
// one cluster, a cluster.Cluster added to mgr (mgr.Add) when they do not,
// or nil to run without a target cluster.
//
// The controller watches Machines (spec, label, annotation and deletion
// changes, not its own status writes), MachineClasses when they appear or
// their generation changes, Secrets when they appear (a machine may be
// waiting for them), the freeze gate when it opens, and the target cluster's
// Nodes (condition, label, annotation, taint and existence changes), each
// mapped to the Machine whose label "node" names it.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, env setup.Env) error {
	target := env.Target
	if r.Drivers == nil {
		if r.Driver == nil {
			return errors.New("machine controller: Drivers or Driver is required")
		}
		set, err := driver.NewSet([]*driver.Client{r.Driver}, true)
		if err != nil {
			return fmt.Errorf("machine controller: %w", err)
		}
		r.Drivers = set
	}
	r.Options = r.Options.withDefaults()
	if r.Control == nil {
		r.Control = mgr.GetClient()
	}
	if r.Recorder == nil {
		r.Recorder = setup.Recorder(mgr, ControllerName)
	}
	if r.APIReader == nil {
		r.APIReader = mgr.GetAPIReader()
	}
	if target != nil {
		if err := r.setupTarget(target); err != nil {
			return err
		}
	}

	ctx := context.Background()
	indexer := mgr.GetFieldIndexer()
	if err := setup.IndexMachines(mgr); err != nil {
		return err
	}
	if err := indexer.IndexField(ctx, &v1alpha1.Machine{}, indexClassName, func(o client.Object) []string {
		if n := o.(*v1alpha1.Machine).Spec.Class.Name; n != "" {
			return []string{n}
		}
		return nil
	}); err != nil {
		return fmt.Errorf("indexing machines by class: %w", err)
	}

	// The drain reads them from the manager's cache (drainRules).
	if r.Control == mgr.GetClient() {
		if err := setup.InformAtStart(mgr, &machinaio.MachineDrainRule{}); err != nil {
			return err
		}
	}

	b := ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		For(&v1alpha1.Machine{}, builder.WithPredicates(predicate.Or(
			predicate.GenerationChangedPredicate{},
			predicate.LabelChangedPredicate{},
			predicate.AnnotationChangedPredicate{},
		))).
		Watches(&v1alpha1.MachineClass{}, handler.EnqueueRequestsFromMapFunc(r.machinesOfClass),
			builder.WithPredicates(classChanged())).
		Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(r.machinesOfSecret),
			builder.WithPredicates(createdOnly())).
		// Machines whose health decision waited for the gate are looked at
		// again the moment it opens.
		WatchesRawSource(freeze.UnfreezeSource(r.Gate, r.Control, func() client.ObjectList { return &v1alpha1.MachineList{} })).
		WithOptions(controller.Options{MaxConcurrentReconciles: r.Options.MaxConcurrentReconciles})
	if target != nil {
		// A Node's change (NotReady, gone, updated in place) is served
		// before the bulk of queued creations: the health decision and the
		// rollout wait on it, and a scale-up of thousands must not delay it.
		b = b.WatchesRawSource(source.Kind(target.GetCache(), &corev1.Node{},
			setup.WithPriority(handler.TypedEnqueueRequestsFromMapFunc(r.machinesOfNode), nodePriority), nodeChanged()))
	}
	return b.Complete(r)
}

// setupTarget fills the target-cluster fields left unset.
func (r *Reconciler) setupTarget(target cluster.Cluster) error {
	if r.Target == nil {
		r.Target = target.GetClient()
	}
	if r.TargetReader == nil {
		r.TargetReader = target.GetAPIReader()
	}
	if r.Drainer == nil {
		cs, err := kubernetes.NewForConfigAndClient(target.GetConfig(), target.GetHTTPClient())
		if err != nil {
			return fmt.Errorf("machine controller: target clientset: %w", err)
		}
		r.Drainer = drain.New(cs)
	}
	if r.Tokens == nil {
		// Straight to the API server: a cached client would keep every
		// Secret of kube-system in memory.
		c, err := client.New(target.GetConfig(), client.Options{Scheme: target.GetScheme(), HTTPClient: target.GetHTTPClient()})
		if err != nil {
			return fmt.Errorf("machine controller: target client: %w", err)
		}
		r.Tokens = &bootstrap.Tokens{Client: c, ExtraGroups: r.Options.BootstrapTokenAuthExtraGroups}
	}
	return nil
}

// requeueNow asks for the next reconcile at once, without the work queue's
// rate limiter: the deletion flow uses it to move to its next step after
// the current one was persisted.
const requeueNow = time.Millisecond

// Reconcile brings one Machine a step closer to what it asks for: gather,
// run the phases, write once.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	log := ctrl.LoggerFrom(ctx)
	m := &v1alpha1.Machine{}
	if err := r.Control.Get(ctx, req.NamespacedName, m); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if r.released.has(m.UID) {
		// A stale copy of a machine this controller released: done.
		return ctrl.Result{}, nil
	}
	// The Machine as the cache shows it, or from the API server while the
	// cache does not show this controller's last write (written_versions.go).
	m, err := setup.ReadFresh(ctx, &r.written, r.APIReader, m)
	if m == nil || err != nil {
		return ctrl.Result{}, err
	}
	s := &scope{machine: m.DeepCopy(), original: m, now: r.clockNow(), log: log}

	var res phase.Result
	if r.refuseInvalidDurations(s) {
		// timeouts.go: reported on the machine; nothing else is done with
		// it until the field is fixed.
	} else if observeTimeoutStarts(s); m.DeletionTimestamp.IsZero() {
		r.reportIgnoredExpiry(s)
		res, err = r.reconcileNormal(ctx, s)
	} else {
		// A permit the machine may hold from being failed is not given
		// back here: m may be a live read ahead of the cache the guard
		// counts from, and until the cache shows the machine Failed,
		// deleting or gone, the permit is what counts it.
		r.vmChecks.forget(m.UID)
		res, err = r.reconcileDelete(ctx, s)
	}
	r.askForOrphanScan(s)
	if perr := r.patch(ctx, s); perr != nil {
		err = errors.Join(err, perr)
		if s.permitHeld {
			// The machine is not Failed after all: its permit must not
			// keep another machine waiting until it expires.
			r.releasePermit(m)
		}
	}
	if err != nil {
		// A conflict (the Machine changed since the cache copy) is setup's
		// conflict policy: reconciled again soon, no error.
		return setup.RequeueOnConflict(ctrl.Result{}, err)
	}
	return ctrl.Result{RequeueAfter: res.RequeueAfter}, nil
}

// reconcileNormal runs the phases of a Machine that is not being deleted.
func (r *Reconciler) reconcileNormal(ctx context.Context, s *scope) (phase.Result, error) {
	// The finalizer is persisted before any driver call, so that no VM can
	// be created for a Machine that could then vanish without deleting it.
	if err := r.ensureFinalizer(ctx, s); err != nil {
		return phase.Result{}, err
	}
	return phase.Run(ctx, s,
		r.reconcileCreate,
		r.reconcileNodeTemplate,
		r.reconcileVirtualCapacity, // machine_virtualcapacity.go
		r.reconcileInPlace,
		r.reconcileHealth,
		r.reconcilePreservation, // machine_preserve.go
		r.reconcileVMCheck,
	)
}
