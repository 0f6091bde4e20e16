package overshoot

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/machina-io/machina/core/api/v1alpha1"
)

// ControllerName names the controller in logs, metrics and events.
const ControllerName = "machineset-safety"

// Defaults of the flags, MCM's.
const (
	// DefaultSafetyUp is the default of --safety-up.
	DefaultSafetyUp = 2
	// DefaultSafetyDown is the default of --safety-down.
	DefaultSafetyDown = 1
	// DefaultPeriod is the default of --machine-safety-overshooting-period.
	DefaultPeriod = time.Minute
)

// Event reasons on MachineSets, MCM's.
const (
	ReasonFrozeMachineSet   = "FrozeMachineSet"
	ReasonUnfrozeMachineSet = "UnfrozeMachineSet"
)

// conflictRetry is how soon a write that lost an optimistic-lock race is
// retried.
const conflictRetry = 200 * time.Millisecond

// Reconciler freezes and unfreezes MachineSets (and their
// MachineDeployments) by the number of their machines.
type Reconciler struct {
	// Client reads through the manager's cache and writes to the API
	// server; mgr.GetClient() when nil.
	Client client.Client
	// Recorder emits FrozeMachineSet and UnfrozeMachineSet on MachineSets;
	// the manager's core/v1 recorder when nil (as the MachineSet controller
	// uses, so that kubectl shows both controllers' events alike).
	Recorder record.EventRecorder
	// SafetyUp (--safety-up) and SafetyDown (--safety-down); the defaults
	// when both are zero.
	SafetyUp, SafetyDown int32
	// Period (--machine-safety-overshooting-period) is how often every
	// MachineSet is checked even without events; DefaultPeriod when zero.
	Period time.Duration
}

// SetupWithManager registers the controller with mgr, with the given number
// of workers.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, workers int) error {
	if r.Client == nil {
		r.Client = mgr.GetClient()
	}
	if r.Recorder == nil {
		r.Recorder = mgr.GetEventRecorderFor(ControllerName) //nolint:staticcheck // see Recorder
	}
	if r.SafetyUp == 0 && r.SafetyDown == 0 {
		r.SafetyUp, r.SafetyDown = DefaultSafetyUp, DefaultSafetyDown
	}
	if r.SafetyUp < 0 || r.SafetyDown < 0 {
		return errors.New("overshoot safety: --safety-up and --safety-down must not be negative")
	}
	if r.Period <= 0 {
		r.Period = DefaultPeriod
	}
	// MCM checks on every machine that appears; a machine that goes may
	// bring the count down to the unfreeze threshold. Status updates of
	// machines change no count.
	machineCountChanged := predicate.Funcs{
		UpdateFunc:  func(event.UpdateEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		For(&v1alpha1.MachineSet{}).
		Watches(&v1alpha1.Machine{}, handler.EnqueueRequestForOwner(mgr.GetScheme(), mgr.GetRESTMapper(),
			&v1alpha1.MachineSet{}, handler.OnlyControllerOwner()), builder.WithPredicates(machineCountChanged)).
		Watches(&v1alpha1.MachineDeployment{}, handler.EnqueueRequestsFromMapFunc(r.setsOfDeployment)).
		WithOptions(controller.Options{MaxConcurrentReconciles: max(workers, 1)}).
		Complete(r)
}

var _ reconcile.Reconciler = &Reconciler{}

// setsOfDeployment maps a MachineDeployment to its MachineSets: its
// replicas, strategy and annotations change the sets' thresholds.
func (r *Reconciler) setsOfDeployment(ctx context.Context, obj client.Object) []reconcile.Request {
	sets, err := r.setsOf(ctx, obj.(*v1alpha1.MachineDeployment))
	if err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing machine sets of a machine deployment")
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(sets))
	for _, ms := range sets {
		reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(ms)})
	}
	return reqs
}

// Reconcile checks one MachineSet: it honours an unfreeze annotation, counts
// the set's machines, freezes or unfreezes the set, and brings its
// MachineDeployment's freeze in line with its sets.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	ms := &v1alpha1.MachineSet{}
	if err := r.Client.Get(ctx, req.NamespacedName, ms); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	md, err := r.deploymentOf(ctx, ms)
	if err != nil {
		return ctrl.Result{}, err
	}
	if err := r.reconcileSet(ctx, ms, md); err != nil {
		return resultOf(err)
	}
	if md != nil {
		if err := r.syncDeployment(ctx, md, ms); err != nil {
			return resultOf(err)
		}
	}
	return ctrl.Result{RequeueAfter: r.Period}, nil
}

// reconcileSet applies the unfreeze annotations and the thresholds to ms.
func (r *Reconciler) reconcileSet(ctx context.Context, ms *v1alpha1.MachineSet, md *v1alpha1.MachineDeployment) error {
	log := ctrl.LoggerFrom(ctx)
	if md != nil && hasUnfreezeAnnotation(md) {
		// A deployment's annotation lifts the freeze of all its sets: it is
		// handed on to each set and then removed from the deployment.
		if err := r.forwardUnfreeze(ctx, md); err != nil {
			return err
		}
		if err := r.Client.Get(ctx, client.ObjectKeyFromObject(ms), ms); err != nil {
			return client.IgnoreNotFound(err)
		}
	}
	if hasUnfreezeAnnotation(ms) {
		log.Info("Unfreezing machine set: unfreeze annotation")
		if err := r.unfreezeSet(ctx, ms, "the annotation "+v1alpha1.UnfreezeAnnotation+" was set"); err != nil {
			return err
		}
	}
	if ms.DeletionTimestamp != nil {
		return nil // a set being deleted creates nothing; the MachineSet controller ignores its label
	}

	th, err := ComputeThresholds(ms, md, r.SafetyUp, r.SafetyDown)
	if err != nil {
		log.Error(err, "Cannot compute the overshooting thresholds")
		return nil // a broken deployment spec is the deployment controller's to report
	}
	count, err := r.countMachines(ctx, ms)
	if err != nil {
		return err
	}
	frozen := isFrozen(ms)
	switch {
	case count >= th.Higher && !frozen:
		msg := fmt.Sprintf("MachineSet %s has %d machines, at or above its limit of %d", ms.Name, count, th.Higher)
		log.Info("Freezing machine set: too many machines", "machines", count, "higher", th.Higher, "lower", th.Lower)
		return r.freezeSet(ctx, ms, msg)
	case count <= th.Lower && frozen:
		msg := fmt.Sprintf("MachineSet %s has %d machines, at or below %d", ms.Name, count, th.Lower)
		log.Info("Unfreezing machine set", "machines", count, "higher", th.Higher, "lower", th.Lower)
		return r.unfreezeSet(ctx, ms, msg)
	}
	return nil
}

// resultOf turns an error into a reconcile result: a lost optimistic-lock
// race is retried soon and quietly.
func resultOf(err error) (ctrl.Result, error) {
	if apierrors.IsConflict(err) {
		return ctrl.Result{RequeueAfter: conflictRetry}, nil
	}
	return ctrl.Result{}, err
}

// deploymentOf returns the MachineDeployment that controls ms, nil when
// there is none (or it is gone).
func (r *Reconciler) deploymentOf(ctx context.Context, ms *v1alpha1.MachineSet) (*v1alpha1.MachineDeployment, error) {
	owner := metav1.GetControllerOf(ms)
	if owner == nil || owner.Kind != "MachineDeployment" {
		return nil, nil
	}
	md := &v1alpha1.MachineDeployment{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: ms.Namespace, Name: owner.Name}, md); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, err
	}
	if md.UID != owner.UID {
		return nil, nil // a new deployment of the same name is not this set's owner
	}
	return md, nil
}

// setsOf returns the MachineSets md controls.
func (r *Reconciler) setsOf(ctx context.Context, md *v1alpha1.MachineDeployment) ([]*v1alpha1.MachineSet, error) {
	list := &v1alpha1.MachineSetList{}
	if err := r.Client.List(ctx, list, client.InNamespace(md.Namespace)); err != nil {
		return nil, err
	}
	var sets []*v1alpha1.MachineSet
	for i := range list.Items {
		if owner := metav1.GetControllerOf(&list.Items[i]); owner != nil && owner.UID == md.UID {
			sets = append(sets, &list.Items[i])
		}
	}
	return sets, nil
}

// countMachines counts the machines ms controls, those being deleted
// included: as in MCM, a set is unfrozen only once its surplus is gone.
func (r *Reconciler) countMachines(ctx context.Context, ms *v1alpha1.MachineSet) (int32, error) {
	list := &v1alpha1.MachineList{}
	opts := []client.ListOption{client.InNamespace(ms.Namespace)}
	if sel := ms.Spec.Template.Labels; len(sel) > 0 {
		opts = append(opts, client.MatchingLabels(sel))
	}
	if err := r.Client.List(ctx, list, opts...); err != nil {
		return 0, err
	}
	var n int32
	for i := range list.Items {
		if owner := metav1.GetControllerOf(&list.Items[i]); owner != nil && owner.UID == ms.UID {
			n++
		}
	}
	return n, nil
}
