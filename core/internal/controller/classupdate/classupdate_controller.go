package classupdate

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/internal/controller/phase"
	"github.com/machina-io/machina/core/internal/controller/setup"
	"github.com/machina-io/machina/core/internal/controller/throttle"
	"github.com/machina-io/machina/core/internal/driver"
	"github.com/machina-io/machina/core/internal/driverclass"
	"github.com/machina-io/machina/core/internal/freeze"
)

// ControllerName names the controller in logs, metrics and events.
const ControllerName = "classupdate"

// DefaultMaxConcurrent is how many machines of a class are updated at a time
// unless Options says otherwise (--class-update-max-concurrent).
const DefaultMaxConcurrent = 3

// Options tune the controller.
type Options struct {
	// MaxConcurrent is the budget: how many machines of one class have an
	// UpdateMachine call in flight at a time. 0 or less: DefaultMaxConcurrent.
	MaxConcurrent int
	// ShortRetry, MediumRetry and LongRetry are the retry periods of the
	// Driver API's reaction table (§7.3): 5s, 3m, 10m when zero.
	ShortRetry, MediumRetry, LongRetry time.Duration
	// SnapshotRetention is how long a snapshot no machine refers to is kept
	// (10m when zero, negative: not kept): a machine just created from it
	// may not have reached the cache yet.
	SnapshotRetention time.Duration
}

func (o Options) withDefaults() Options {
	if o.MaxConcurrent <= 0 {
		o.MaxConcurrent = DefaultMaxConcurrent
	}
	if o.ShortRetry <= 0 {
		o.ShortRetry = 5 * time.Second
	}
	if o.MediumRetry <= 0 {
		o.MediumRetry = 3 * time.Minute
	}
	if o.LongRetry <= 0 {
		o.LongRetry = 10 * time.Minute
	}
	if o.SnapshotRetention == 0 {
		o.SnapshotRetention = 10 * time.Minute
	}
	return o
}

// Reconciler applies class changes to the VMs of the class's machines.
type Reconciler struct {
	// Client reads from the manager's cache and writes to the API server.
	Client client.Client
	// APIReader reads a machine straight from the API server when a record
	// of a driver's answer met a newer machine than the cache's.
	APIReader client.Reader
	// Recorder records events on Machines.
	Recorder events.EventRecorder
	// Drivers finds the driver of a class. Required.
	Drivers driver.Router
	// Gate is the API server freeze: nothing is called while it is frozen.
	// Optional.
	Gate *freeze.Gate
	// Options tune the controller.
	Options Options

	// machines reads a class's cached machines without copies.
	machines setup.CachedMachines

	// retryAt holds, per machine UID and class hash, when a failed update
	// may be tried again. In memory only: a new leader tries at once, which
	// UpdateMachine's idempotency makes safe.
	mu      sync.Mutex
	retryAt map[retryKey]time.Time
	// answered holds the updates answered (applied or refused) whose
	// record the cache may not show yet.
	answered map[retryKey]bool
	// calls are the UpdateMachine calls in flight.
	calls *calls
	// hashes holds each class's contents hash as its last reconcile
	// computed it (client.ObjectKey to string), for mayNeedWork.
	hashes sync.Map
}

type retryKey struct {
	uid  string
	hash string
}

// SetupWithManager registers the controller with the manager, with the
// given number of concurrent workers (classes reconciled at a time).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, env setup.Env) error {
	workers := env.Workers
	if r.Drivers == nil {
		return errors.New("class update controller: Drivers is required")
	}
	if r.Client == nil {
		r.Client = mgr.GetClient()
	}
	if r.APIReader == nil {
		r.APIReader = mgr.GetAPIReader()
	}
	r.machines = setup.NewCachedMachines(r.Client, mgr.GetClient(), mgr.GetCache())
	if r.Recorder == nil {
		r.Recorder = setup.Recorder(mgr, ControllerName)
	}
	r.Options = r.Options.withDefaults()
	r.retryAt = map[retryKey]time.Time{}
	r.answered = map[retryKey]bool{}
	r.calls = newCalls()
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &v1alpha1.Machine{}, indexClass, classOf); err != nil {
		return fmt.Errorf("indexing machines by class: %w", err)
	}
	// The class snapshots are read from the manager's cache (snapshot.go);
	// no watch covers them.
	if r.Client == mgr.GetClient() {
		if err := setup.InformAtStart(mgr, &appsv1.ControllerRevision{}); err != nil {
			return err
		}
	}
	// Throttled: a reconcile walks every machine of the class, and a
	// scale-up of a thousand machines would otherwise walk them a thousand
	// times.
	b := ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		For(&v1alpha1.MachineClass{}, builder.WithPredicates(contentsChanged())).
		Watches(&v1alpha1.Machine{}, throttle.New(throttle.ShortestWindow, throttle.LongestWindow).Handler(handler.EnqueueRequestsFromMapFunc(classOfMachine)),
			builder.WithPredicates(r.machineEvents())).
		WatchesRawSource(source.Channel(r.calls.ended, &handler.TypedEnqueueRequestForObject[*v1alpha1.MachineClass]{})).
		WithOptions(controller.Options{MaxConcurrentReconciles: max(workers, 1)})
	if r.Gate != nil {
		b = b.WatchesRawSource(freeze.UnfreezeSource(r.Gate, mgr.GetCache(), func() client.ObjectList { return &v1alpha1.MachineClassList{} }))
	}
	return b.Complete(r)
}

// machineEvents passes the events of a machine that changes its class
// record or its provider ID (its VM exists now), or goes, and then only if
// a reconcile of its class may have something to do with it
// (mayNeedWork): not its many status writes, and not the VMs of a
// scale-up's new machines made from the class's current contents, which
// would each make a reconcile walk all of the class's machines.
func (r *Reconciler) machineEvents() predicate.Funcs {
	return predicate.Funcs{
		CreateFunc: func(e event.CreateEvent) bool {
			return r.mayNeedWork(e.Object.(*v1alpha1.Machine))
		},
		UpdateFunc: func(e event.UpdateEvent) bool {
			o, n := e.ObjectOld.(*v1alpha1.Machine), e.ObjectNew.(*v1alpha1.Machine)
			changed := o.Spec.ProviderID != n.Spec.ProviderID || o.Spec.Class.Name != n.Spec.Class.Name ||
				o.Annotations[v1alpha1.ClassHashAnnotation] != n.Annotations[v1alpha1.ClassHashAnnotation] ||
				o.Annotations[v1alpha1.ClassHashNeedsNewVMAnnotation] != n.Annotations[v1alpha1.ClassHashNeedsNewVMAnnotation] ||
				!n.DeletionTimestamp.IsZero()
			// The old object too: a machine that leaves an old hash may
			// have been the last to need its snapshot.
			return changed && (r.mayNeedWork(o) || r.mayNeedWork(n))
		},
	}
}

// contentsChanged passes class events whose contents hash changed, and every
// create and delete. MachineClasses have no status, and MCM's CRD counts no
// generation on them, so the predicate compares what a VM is made from.
func contentsChanged() predicate.Funcs {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			o, n := e.ObjectOld.(*v1alpha1.MachineClass), e.ObjectNew.(*v1alpha1.MachineClass)
			ho, errO := driverclass.Hash(o)
			hn, errN := driverclass.Hash(n)
			return errO != nil || errN != nil || ho != hn
		},
	}
}

// classOfMachine maps a Machine to its class.
func classOfMachine(_ context.Context, obj client.Object) []reconcile.Request {
	names := classOf(obj)
	if len(names) == 0 {
		return nil
	}
	return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: obj.GetNamespace(), Name: names[0]}}}
}

// indexClass indexes Machines by the name of their MachineClass.
const indexClass = "classupdate.machina.io/class-name"

// classOf is the index function of indexClass.
func classOf(obj client.Object) []string {
	m, ok := obj.(*v1alpha1.Machine)
	if !ok || !m.Spec.Class.RefersToMachineClass() {
		return nil
	}
	return []string{m.Spec.Class.Name}
}

var _ reconcile.Reconciler = &Reconciler{}

// Reconcile brings the VMs of a class's machines to the class's contents. A
// conflict (a machine changed since the cache copy) is setup's conflict
// policy: reconciled again soon, no error.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	return setup.RequeueOnConflict(r.reconcile(ctx, req))
}

func (r *Reconciler) reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	class := &v1alpha1.MachineClass{}
	if err := r.Client.Get(ctx, req.NamespacedName, class); err != nil {
		if apierrors.IsNotFound(err) {
			r.hashes.Delete(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !class.DeletionTimestamp.IsZero() {
		r.hashes.Delete(req.NamespacedName)
		return ctrl.Result{}, nil
	}
	hash, err := driverclass.Hash(class)
	if err != nil {
		return ctrl.Result{}, err
	}
	// Before the machines are read: a machine event that mayNeedWork
	// judges against this hash comes after the machine is in the cache,
	// so a machine this reconcile does not see is judged against it.
	r.hashes.Store(req.NamespacedName, hash)
	s := &scope{class: class, hash: hash, log: ctrl.LoggerFrom(ctx)}
	if s.machines, err = r.machinesOf(ctx, class); err != nil {
		return ctrl.Result{}, err
	}
	res, err := phase.Run(ctx, s, r.snapshot, r.stamp, r.update)
	if err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{RequeueAfter: res.RequeueAfter}, nil
}

// mayNeedWork reports whether a reconcile of m's class may have to act on
// m: it is being deleted, or it has a VM whose recorded contents are
// missing (stamp) or not the class's as its last reconcile saw them
// (update), or the class has not been reconciled yet. A reconcile walks
// all of the class's machines, so the events of machines that need
// nothing are not worth one.
func (r *Reconciler) mayNeedWork(m *v1alpha1.Machine) bool {
	if !m.DeletionTimestamp.IsZero() {
		return true
	}
	if m.Spec.ProviderID == "" {
		return false
	}
	names := classOf(m)
	if len(names) == 0 {
		return false
	}
	known, ok := r.hashes.Load(client.ObjectKey{Namespace: m.Namespace, Name: names[0]})
	recorded := m.Annotations[v1alpha1.ClassHashAnnotation]
	return !ok || recorded == "" || recorded != known.(string)
}

// machinesOf lists the class's machines that are not being deleted, from
// the cache through the class index and without copies: a reconcile walks
// them all and changes few (stamp and update copy those first).
func (r *Reconciler) machinesOf(ctx context.Context, class *v1alpha1.MachineClass) ([]*v1alpha1.Machine, error) {
	all, err := r.machines.ByField(ctx, class.Namespace, indexClass, class.Name)
	if err != nil {
		return nil, fmt.Errorf("listing the machines of class %s: %w", class.Name, err)
	}
	var out []*v1alpha1.Machine
	for _, m := range all {
		if m.DeletionTimestamp.IsZero() {
			out = append(out, m)
		}
	}
	return out, nil
}
