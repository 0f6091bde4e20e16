package machineclass

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/internal/controller/setup"
	"github.com/machina-io/machina/core/internal/driver"
)

// ControllerName names the controller in logs, metrics and events.
const ControllerName = "machineclass"

// Event reasons on MachineClasses.
const (
	// ReasonDeletionBlocked: the class is being deleted but objects still
	// refer to it.
	ReasonDeletionBlocked = "DeletionBlocked"
	// ReasonReleased: the last reference is gone and the finalizer was removed.
	ReasonReleased = "Released"
)

// blockedRecheck is how often a class whose deletion is blocked is looked at
// again even without events. Every change of a referrer already triggers a
// reconcile; this is only a safety net, so it is long (MCM's LongRetry).
const blockedRecheck = 10 * time.Minute

// Reconciler keeps the finalizer on MachineClasses and releases a deleted
// class once nothing refers to it.
type Reconciler struct {
	// Client reads from the manager's cache and writes to the API server.
	Client client.Client
	// Recorder records events on MachineClasses.
	Recorder events.EventRecorder
	// Drivers, when set, is asked for the driver of each live class; the
	// answer is the class's DriverFound condition (driver.go).
	Drivers driver.Router
}

// SetupWithManager registers the controller, and the cache indexes it
// reads referrers through, with the manager, with the given number of
// concurrent workers.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, env setup.Env) error {
	workers := env.Workers
	if r.Client == nil {
		r.Client = mgr.GetClient()
	}
	if r.Recorder == nil {
		r.Recorder = setup.Recorder(mgr, ControllerName)
	}
	for _, obj := range []client.Object{&v1alpha1.Machine{}, &v1alpha1.MachineSet{}, &v1alpha1.MachineDeployment{}} {
		if err := mgr.GetFieldIndexer().IndexField(context.Background(), obj, classRefIndex, indexClassRef); err != nil {
			return fmt.Errorf("indexing %T by class: %w", obj, err)
		}
	}
	// A referrer matters when it appears, disappears or changes its class;
	// status updates (most of a Machine's updates) do not.
	referrerChanged := predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			return classNameOf(e.ObjectOld) != classNameOf(e.ObjectNew)
		},
	}
	toClass := handler.EnqueueRequestsFromMapFunc(classOfReferrer)
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		For(&v1alpha1.MachineClass{}).
		Watches(&v1alpha1.Machine{}, toClass, builder.WithPredicates(referrerChanged)).
		Watches(&v1alpha1.MachineSet{}, toClass, builder.WithPredicates(referrerChanged)).
		Watches(&v1alpha1.MachineDeployment{}, toClass, builder.WithPredicates(referrerChanged)).
		WithOptions(controller.Options{MaxConcurrentReconciles: max(workers, 1)}).
		Complete(r)
}

var _ reconcile.Reconciler = &Reconciler{}

// classOfReferrer maps a Machine, MachineSet or MachineDeployment to the
// class it refers to. For updates controller-runtime calls it with the old
// and the new object, so a class that loses a referrer hears of it.
func classOfReferrer(_ context.Context, obj client.Object) []reconcile.Request {
	name := classNameOf(obj)
	if name == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: obj.GetNamespace(), Name: name}}}
}

// Reconcile adds the finalizer to a live class and reports whether its node
// template lets the cluster-autoscaler scale up from zero and which driver
// serves it; it removes the finalizer from a class being deleted once
// nothing refers to it. A conflict is setup's conflict policy: reconciled
// again soon, no error.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	return setup.RequeueOnConflict(r.reconcile(ctx, req))
}

func (r *Reconciler) reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	class := &v1alpha1.MachineClass{}
	if err := r.Client.Get(ctx, req.NamespacedName, class); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !class.DeletionTimestamp.IsZero() {
		return r.reconcileDelete(ctx, class)
	}
	if !controllerutil.ContainsFinalizer(class, v1alpha1.MachineFinalizer) {
		if err := setup.AddFinalizer(ctx, r.Client, class, v1alpha1.MachineFinalizer); err != nil {
			return ctrl.Result{}, fmt.Errorf("adding finalizer to machine class: %w", err)
		}
		ctrl.LoggerFrom(ctx).V(1).Info("Added finalizer to machine class")
	}

	// Both conditions are written in one status patch; their events follow
	// a successful write.
	p := setup.NewPatcher(r.Client, class)
	announce := []func(){setNodeTemplateCondition(ctx, r.Recorder, class)}
	var res ctrl.Result
	var driverErr error
	if r.Drivers != nil {
		var a func()
		res, a, driverErr = r.setDriverCondition(ctx, class)
		announce = append(announce, a)
	}
	if err := p.Patch(ctx, class); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(fmt.Errorf("writing machine class status: %w", err))
	}
	for _, a := range announce {
		if a != nil {
			a()
		}
	}
	return res, driverErr
}

// reconcileDelete releases a class being deleted once nothing refers to it,
// and otherwise says who holds it.
func (r *Reconciler) reconcileDelete(ctx context.Context, class *v1alpha1.MachineClass) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(class, v1alpha1.MachineFinalizer) {
		return ctrl.Result{}, nil
	}
	refs, err := referrers(ctx, r.Client, class)
	if err != nil {
		return ctrl.Result{}, err
	}
	if len(refs) > 0 {
		who := describeReferrers(refs)
		ctrl.LoggerFrom(ctx).Info("Machine class deletion blocked: still referenced", "referrers", len(refs), "referencedBy", who)
		r.Recorder.Eventf(class, nil, corev1.EventTypeWarning, ReasonDeletionBlocked, "Delete",
			"Deletion waits until nothing refers to the class; still referenced by %s", who)
		return ctrl.Result{RequeueAfter: blockedRecheck}, nil
	}
	// Locked: a class changed since it was read is looked at again
	// (setup.RequeueOnConflict) rather than released from a stale copy.
	p := setup.NewPatcher(r.Client, class, setup.LockObject())
	controllerutil.RemoveFinalizer(class, v1alpha1.MachineFinalizer)
	if err := p.Patch(ctx, class); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(fmt.Errorf("removing finalizer from machine class: %w", err))
	}
	ctrl.LoggerFrom(ctx).Info("Released machine class: nothing refers to it any more")
	r.Recorder.Eventf(class, nil, corev1.EventTypeNormal, ReasonReleased, "Delete",
		"No machine, machine set or machine deployment refers to the class any more; finalizer removed")
	return ctrl.Result{}, nil
}
