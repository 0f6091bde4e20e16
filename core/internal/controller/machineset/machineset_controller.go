package machineset

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1alpha1 "github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/internal/controller/safety/freeze"
	"github.com/machina-io/machina/core/internal/controller/throttle"
)

// ControllerName names the controller in logs, metrics and events.
const ControllerName = "machineset"

// Options tune the MachineSet controller.
type Options struct {
	// BurstReplicas caps the machines created, and separately the machines
	// deleted, in one sync of one set (MCM: 100). Zero means the default.
	BurstReplicas int

	// ResyncPeriod is how often every set is synced even without events, as a
	// safety net (MCM: 10 minutes). Zero means the default.
	ResyncPeriod time.Duration

	// NewMachineFinalizers are put on every machine the set creates. The
	// manager passes the Machine controller's finalizer, which that
	// controller would otherwise add with a write of its own before its
	// first driver call. Empty when no Machine controller runs (tests of
	// the set alone), so that deleted machines go at once.
	NewMachineFinalizers []string
}

// DefaultOptions returns MCM's settings.
func DefaultOptions() Options {
	return Options{BurstReplicas: 100, ResyncPeriod: 10 * time.Minute}
}

func (o Options) withDefaults() Options {
	d := DefaultOptions()
	if o.BurstReplicas <= 0 {
		o.BurstReplicas = d.BurstReplicas
	}
	if o.ResyncPeriod <= 0 {
		o.ResyncPeriod = d.ResyncPeriod
	}
	return o
}

// Reconciler keeps the machines of each MachineSet at spec.replicas, the way
// a ReplicaSet keeps pods: it creates machines from the template, deletes the
// surplus in priority order, replaces Failed machines, adopts and releases
// machines through controller references, and reports the counts in status.
type Reconciler struct {
	// Client reads from the manager's cache and writes to the API server.
	Client client.Client
	// APIReader reads straight from the API server. Before it creates or
	// deletes machines the controller re-lists them through it, so that a
	// cache lagging behind its own earlier writes cannot make it create twice
	// or pick the wrong victim. SetupWithManager defaults it to the manager's
	// API reader.
	APIReader client.Reader
	// Recorder records events on MachineSets.
	Recorder record.EventRecorder
	// Gate is the API server freeze (MCM issue #718): while it is frozen the
	// controller creates and deletes no machines, Failed replacements
	// included, and only keeps the status up to date. Nil is never frozen.
	Gate *freeze.Gate

	Options
}

// SetupWithManager registers the controller with the manager, with the given
// number of concurrent workers.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, workers int) error {
	if r.Client == nil {
		r.Client = mgr.GetClient()
	}
	if r.APIReader == nil {
		r.APIReader = mgr.GetAPIReader()
	}
	if r.Recorder == nil {
		r.Recorder = mgr.GetEventRecorderFor(ControllerName) //nolint:staticcheck // record.EventRecorder is this package's API
	}
	r.Options = r.Options.withDefaults()
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &v1alpha1.Machine{}, indexControllerUID, controllerUID); err != nil {
		return fmt.Errorf("indexing machines by controller: %w", err)
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		For(&v1alpha1.MachineSet{}).
		Watches(&v1alpha1.Machine{}, throttle.New(throttle.Window).Handler(handler.EnqueueRequestsFromMapFunc(r.setsForMachine)),
			builder.WithPredicates(machineChangesThatMatter())).
		WatchesRawSource(freeze.UnfreezeSource(r.Gate, mgr.GetCache(), func() client.ObjectList { return &v1alpha1.MachineSetList{} })).
		WithOptions(controller.Options{MaxConcurrentReconciles: max(workers, 1)}).
		Complete(r)
}

var _ reconcile.Reconciler = &Reconciler{}

// setsForMachine maps a machine event to the set that controls the machine
// or, for an orphan, to every set in its namespace whose selector matches it
// (one of them may adopt it). For updates controller-runtime calls it with
// the old and the new machine, so a set that loses a machine hears of it too.
func (r *Reconciler) setsForMachine(ctx context.Context, obj client.Object) []reconcile.Request {
	if ref := metav1.GetControllerOf(obj); ref != nil {
		if ref.Kind != "MachineSet" || ref.APIVersion != v1alpha1.GroupVersion.String() {
			return nil
		}
		return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: obj.GetNamespace(), Name: ref.Name}}}
	}
	if len(obj.GetLabels()) == 0 {
		return nil
	}
	sets := &v1alpha1.MachineSetList{}
	if err := r.Client.List(ctx, sets, client.InNamespace(obj.GetNamespace())); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing machine sets for an orphan machine", "machine", obj.GetName())
		return nil
	}
	var out []reconcile.Request
	for i := range sets.Items {
		sel, err := metav1.LabelSelectorAsSelector(sets.Items[i].Spec.Selector)
		if err != nil || sel.Empty() || !sel.Matches(labels.Set(obj.GetLabels())) {
			continue
		}
		out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&sets.Items[i])})
	}
	return out
}

// Reconcile syncs one MachineSet.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	ms := &v1alpha1.MachineSet{}
	if err := r.Client.Get(ctx, req.NamespacedName, ms); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if ms.DeletionTimestamp != nil {
		return r.reconcileDelete(ctx, ms)
	}
	res, err := r.sync(ctx, ms)
	if apierrors.IsConflict(err) {
		// The set (or a machine) changed since the cache copy this sync
		// started from. The newer version is on its way to the cache, and its
		// event syncs the set again; a rate-limited retry would only wait
		// longer for the same thing.
		ctrl.LoggerFrom(ctx).V(1).Info("Conflict; waiting for the newer version", "error", err.Error())
		return ctrl.Result{}, nil
	}
	return res, err
}

// sync runs one sync of a set that is not being deleted: finalizer, machine
// claims, template propagation, creations and deletions (unless the API
// server freeze holds them back), and one status write.
func (r *Reconciler) sync(ctx context.Context, ms *v1alpha1.MachineSet) (ctrl.Result, error) {
	if err := r.ensureFinalizer(ctx, ms); err != nil {
		return ctrl.Result{}, err
	}
	selector, ok := r.validSelector(ctx, ms)
	if !ok {
		return ctrl.Result{}, r.patchStatus(ctx, ms, observedOnly(ms))
	}

	machines, err := r.ownedMachines(ctx, ms, selector)
	if err != nil {
		return ctrl.Result{}, err
	}
	if err := r.syncTemplateToMachines(ctx, ms, machines); err != nil {
		return ctrl.Result{}, err
	}
	resync := r.Options.withDefaults().ResyncPeriod
	if r.Gate.Frozen() {
		return r.syncFrozen(ctx, ms, machines, resync)
	}
	machines, p, err := r.planReplicas(ctx, ms, selector, machines)
	if err != nil {
		return ctrl.Result{}, err
	}
	_, manageErr := r.executePlan(ctx, ms, p)

	st, untilAvailable := computeStatus(ms, without(machines, p.deletions()), manageErr, time.Now())
	if err := r.patchStatus(ctx, ms, st); err != nil {
		return ctrl.Result{}, err
	}
	if manageErr != nil {
		return ctrl.Result{}, manageErr
	}
	return ctrl.Result{RequeueAfter: nextSync(untilAvailable, resync)}, nil
}

// syncFrozen is the sync while the API server freeze holds: what the cache
// shows may be stale, so no machine is created or deleted; the counts are
// still reported. Conditions stay as they are (a ReplicaFailure from before
// the freeze is neither confirmed nor cleared). The set is looked at again
// when the gate opens.
func (r *Reconciler) syncFrozen(ctx context.Context, ms *v1alpha1.MachineSet, machines []*v1alpha1.Machine, resync time.Duration) (ctrl.Result, error) {
	ctrl.LoggerFrom(ctx).V(1).Info("API server freeze: not creating or deleting machines", "reason", r.Gate.Reason())
	st, untilAvailable := computeStatus(ms, machines, nil, time.Now())
	st.Conditions = ms.Status.DeepCopy().Conditions
	if err := r.patchStatus(ctx, ms, st); err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{RequeueAfter: min(nextSync(untilAvailable, resync), freeze.Recheck)}, nil
}

// nextSync is when to sync the set again without an event: when a ready
// machine becomes available, else after the resync period.
func nextSync(untilAvailable, resync time.Duration) time.Duration {
	if untilAvailable > 0 && untilAvailable < resync {
		// A little slack so that the machine is surely past its minReadySeconds.
		return untilAvailable + 100*time.Millisecond
	}
	return resync
}

// ensureFinalizer adds MCM's finalizer, so that a deleted set first deletes
// its machines (the cluster may run no garbage collector, and MCM clients
// expect the finalizer).
func (r *Reconciler) ensureFinalizer(ctx context.Context, ms *v1alpha1.MachineSet) error {
	if controllerutil.ContainsFinalizer(ms, FinalizerName) {
		return nil
	}
	orig := ms.DeepCopy()
	controllerutil.AddFinalizer(ms, FinalizerName)
	if err := r.Client.Patch(ctx, ms, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("adding finalizer to machine set %s: %w", ms.Name, err)
	}
	return nil
}

// validSelector parses the selector and checks that it is not empty and
// selects the template's labels; a set without a usable selector would take
// or create machines it can never count. Problems are reported as events.
func (r *Reconciler) validSelector(ctx context.Context, ms *v1alpha1.MachineSet) (labels.Selector, bool) {
	sel, err := metav1.LabelSelectorAsSelector(ms.Spec.Selector)
	var problem string
	switch {
	case err != nil:
		problem = fmt.Sprintf("Invalid selector: %v", err)
	case sel.Empty():
		problem = "The selector is empty; a non-empty selector is required"
	case !sel.Matches(labels.Set(ms.Spec.Template.Labels)):
		problem = "The selector does not match the template's labels"
	}
	if problem != "" {
		ctrl.LoggerFrom(ctx).Info("Not syncing machine set", "reason", problem)
		r.Recorder.Event(ms, corev1.EventTypeWarning, "InvalidSelector", problem)
		return nil, false
	}
	return sel, true
}

// observedOnly is the stored status with observedGeneration moved on, for a
// set the controller cannot act on.
func observedOnly(ms *v1alpha1.MachineSet) v1alpha1.MachineSetStatus {
	st := *ms.Status.DeepCopy()
	st.ObservedGeneration = ms.Generation
	return st
}

// indexControllerUID indexes cached Machines by the UID of their controller,
// and machines without a controller under indexOrphan, so that a set finds
// the machines it controls and the orphans it may adopt without reading
// every machine of the namespace.
const indexControllerUID = "machineset.machina.io/controller-uid"

// indexOrphan is the index value of a machine without a controller; no UID
// looks like it.
const indexOrphan = "<orphan>"

func controllerUID(o client.Object) []string {
	if ref := metav1.GetControllerOf(o); ref != nil {
		return []string{string(ref.UID)}
	}
	return []string{indexOrphan}
}

// ownedMachines reads from the cache the machines the set may claim: those
// it controls (candidates for release) and the orphans its selector matches
// (candidates for adoption), and claims them. The lists are not deep-copied:
// a set syncs after most machine changes, and copying every machine each
// time was most of the controller's CPU. The returned machines are the
// cache's own objects and must be copied before they are changed.
func (r *Reconciler) ownedMachines(ctx context.Context, ms *v1alpha1.MachineSet, selector labels.Selector) ([]*v1alpha1.Machine, error) {
	controlled := &v1alpha1.MachineList{}
	if err := r.Client.List(ctx, controlled, client.InNamespace(ms.Namespace),
		client.MatchingFields{indexControllerUID: string(ms.UID)}, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("listing machines: %w", err)
	}
	orphans := &v1alpha1.MachineList{}
	if err := r.Client.List(ctx, orphans, client.InNamespace(ms.Namespace),
		client.MatchingFields{indexControllerUID: indexOrphan}, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("listing machines: %w", err)
	}
	all := controlled.Items
	for i := range orphans.Items {
		if selector.Matches(labels.Set(orphans.Items[i].Labels)) {
			all = append(all, orphans.Items[i])
		}
	}
	return r.claimMachines(ctx, ms, selector, all)
}

// planReplicas computes the plan from the cached machines and, if the plan
// would change anything, again from a fresh list: the cache may not yet show
// machines this controller created or deleted a moment ago, or annotations
// the MachineDeployment controller just set on the machines to delete.
func (r *Reconciler) planReplicas(ctx context.Context, ms *v1alpha1.MachineSet, selector labels.Selector, cached []*v1alpha1.Machine) ([]*v1alpha1.Machine, plan, error) {
	now := time.Now()
	burst := r.Options.withDefaults().BurstReplicas
	p := computePlan(ms, cached, burst, now)
	if p.empty() {
		return cached, p, nil
	}
	live := &v1alpha1.MachineList{}
	if err := r.APIReader.List(ctx, live, client.InNamespace(ms.Namespace), client.MatchingLabelsSelector{Selector: selector}); err != nil {
		return nil, plan{}, fmt.Errorf("listing machines: %w", err)
	}
	var owned []*v1alpha1.Machine
	for i := range live.Items {
		if ref := metav1.GetControllerOf(&live.Items[i]); ref != nil && ref.UID == ms.UID {
			owned = append(owned, &live.Items[i])
		}
	}
	return owned, computePlan(ms, owned, burst, now), nil
}

// without returns machines minus the ones in drop.
func without(machines, drop []*v1alpha1.Machine) []*v1alpha1.Machine {
	if len(drop) == 0 {
		return machines
	}
	gone := make(map[string]bool, len(drop))
	for _, m := range drop {
		gone[m.Name] = true
	}
	var out []*v1alpha1.Machine
	for _, m := range machines {
		if !gone[m.Name] {
			out = append(out, m)
		}
	}
	return out
}

// reconcileDelete deletes the machines of a set that is being deleted and
// removes the finalizer once none is left. Owner references alone are not
// enough: a control plane without a garbage collector would leave the
// machines behind.
func (r *Reconciler) reconcileDelete(ctx context.Context, ms *v1alpha1.MachineSet) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(ms, FinalizerName) {
		return ctrl.Result{}, nil
	}
	if r.Gate.Frozen() {
		ctrl.LoggerFrom(ctx).V(1).Info("API server freeze: not deleting the machines of a deleted set", "reason", r.Gate.Reason())
		return ctrl.Result{RequeueAfter: freeze.Recheck}, nil
	}
	live := &v1alpha1.MachineList{}
	if err := r.APIReader.List(ctx, live, client.InNamespace(ms.Namespace)); err != nil {
		return ctrl.Result{}, fmt.Errorf("listing machines: %w", err)
	}
	remaining := 0
	for i := range live.Items {
		m := &live.Items[i]
		if ref := metav1.GetControllerOf(m); ref == nil || ref.UID != ms.UID {
			continue
		}
		remaining++
		if m.DeletionTimestamp != nil {
			continue
		}
		if err := r.deleteMachine(ctx, ms, m); err != nil {
			return ctrl.Result{}, err
		}
	}
	if remaining > 0 {
		// Machine deletions wake the set up; the requeue is a safety net for
		// machines whose deletion takes long.
		return ctrl.Result{RequeueAfter: time.Minute}, nil
	}
	orig := ms.DeepCopy()
	controllerutil.RemoveFinalizer(ms, FinalizerName)
	if err := r.Client.Patch(ctx, ms, client.MergeFrom(orig)); err != nil && !apierrors.IsNotFound(err) {
		return ctrl.Result{}, fmt.Errorf("removing finalizer of machine set %s: %w", ms.Name, err)
	}
	return ctrl.Result{}, nil
}
