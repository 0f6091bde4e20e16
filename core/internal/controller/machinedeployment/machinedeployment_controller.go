package machinedeployment

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1alpha1 "github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/internal/controller/phase"
	"github.com/machina-io/machina/core/internal/controller/setup"
	"github.com/machina-io/machina/core/internal/controller/throttle"
	"github.com/machina-io/machina/core/internal/freeze"
	"github.com/machina-io/machina/core/internal/inplace"
)

// ControllerName names the controller in logs, metrics and events.
const ControllerName = "machinedeployment"

// Options tune the MachineDeployment controller. Start from DefaultOptions:
// the zero value turns the autoscaler annotation off.
type Options struct {
	// AutoscalerScaleDownAnnotationDuringRollout puts the cluster-autoscaler's
	// scale-down-disabled annotation on every node of a deployment while it
	// rolls out (flag --autoscaler-scaledown-annotation-during-rollout, default
	// true).
	AutoscalerScaleDownAnnotationDuringRollout bool

	// ResyncPeriod is how often every deployment is synced even without
	// events, as a safety net (MCM: 10 minutes). Zero means the default.
	ResyncPeriod time.Duration

	// InPlaceUpdateTimeout (--machine-inplace-update-timeout) is how long a
	// machine of an Auto in-place rollout may stay InPlaceUpdateFailed
	// before it is replaced (a Machine's inPlaceUpdateTimeout wins). Zero
	// means the default, inplace.DefaultTimeout.
	InPlaceUpdateTimeout time.Duration
}

// DefaultOptions returns MCM's settings.
func DefaultOptions() Options {
	return Options{AutoscalerScaleDownAnnotationDuringRollout: true, ResyncPeriod: setup.DefaultResyncPeriod,
		InPlaceUpdateTimeout: inplace.DefaultTimeout}
}

// Reconciler rolls MachineDeployments out through MachineSets the way the
// Kubernetes Deployment controller does with ReplicaSets: RollingUpdate within
// maxSurge and maxUnavailable, Recreate, pause, revisions and history,
// proportional scaling, the progress deadline, status and conditions. It also
// serves the cluster-autoscaler's protocol (trigger-deletion annotation) and
// marks the nodes of a rolling deployment in the target cluster.
//
// Its clients (setup.Clients) are the control cluster's: Client reads from the
// manager's cache, APIReader straight from the API server where the cache may
// lag behind this controller's own writes, and Recorder records events on
// MachineDeployments. SetupWithManager defaults them to the manager's.
type Reconciler struct {
	setup.Clients
	// Target is a client of the target cluster, where the Nodes are. Nil means
	// there is no target cluster: nodes are not touched.
	Target client.Client
	// Pods reads the target cluster's pods straight from its API server, for
	// the do-not-disrupt annotation (the disruption package). Required with
	// Target.
	Pods client.Reader
	// Gate is the API server freeze (MCM issue #718): while it is frozen the
	// controller neither scales, creates nor deletes machine sets and leaves
	// nodes alone; it only keeps the status up to date. Nil is never frozen.
	Gate *freeze.Gate

	Options

	// moved are the machines in-place rollouts moved that the cache may
	// not show moved yet (moved.go).
	moved movedMachines
	// throttle holds back the syncs that set and machine events ask for;
	// each sync tells it how many machines it walked (throttle.Cost).
	throttle *throttle.Throttle
}

// SetupWithManager registers the controller with the manager, with the given
// number of concurrent workers. The clients default to the manager's; Target
// is left as given.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, env setup.Env) error {
	workers := env.Workers
	r.Clients.Default(mgr, ControllerName)
	if r.Target != nil && r.Pods == nil {
		return fmt.Errorf("%s controller: a target cluster needs a reader of its pods", ControllerName)
	}
	if err := setup.IndexMachines(mgr); err != nil {
		return err
	}
	// The sets' status and the machines' node labels change with every
	// machine of a rollout or scale-up; throttled, they sync the deployment
	// (and write its status) a few times a second, not once per machine.
	// Changes of the deployment itself are not held back. The throttle keeps
	// a window per stream (streamOf): a rollout step waits on the one status
	// change of the old set that has just deleted its machines, which must
	// not wait behind the new set's stream, the deployment's own scaling of
	// the old set, or the old machines' deletions.
	r.throttle = throttle.New(throttle.ShortestWindow, throttle.LongestWindow)
	th := r.throttle
	return setup.NewController(mgr, ControllerName, &v1alpha1.MachineDeployment{}, workers,
		r.Gate, func() client.ObjectList { return &v1alpha1.MachineDeploymentList{} }).
		Watches(&v1alpha1.MachineSet{}, th.HandlerPerStream(handler.EnqueueRequestForOwner(mgr.GetScheme(), mgr.GetRESTMapper(),
			&v1alpha1.MachineDeployment{}, handler.OnlyControllerOwner()), streamOf)).
		Watches(&v1alpha1.MachineSet{}, handler.EnqueueRequestsFromMapFunc(r.deploymentsForOrphanSet)).
		Watches(&v1alpha1.Machine{}, th.HandlerPerStream(handler.EnqueueRequestsFromMapFunc(r.deploymentForMachine), streamOf),
			builder.WithPredicates(machineChangesThatMatter())).
		Complete(r)
}

var _ reconcile.Reconciler = &Reconciler{}

// streamOf is the throttle stream of an event, one of three per machine
// set: the set's reports (its status, for an observed spec), its changes
// that its controller has not observed yet (a new spec: mostly this
// controller's own scaling), and the events of its machines.
func streamOf(obj client.Object) types.UID {
	if ms, isSet := obj.(*v1alpha1.MachineSet); isSet {
		if ms.Generation != ms.Status.ObservedGeneration {
			return ms.UID + "/spec"
		}
		return ms.UID
	}
	if ref := metav1.GetControllerOfNoCopy(obj); ref != nil {
		return ref.UID + "/machines"
	}
	return ""
}

// deploymentsForOrphanSet maps a machine set without controller to the
// deployments whose selector matches it (one may adopt it).
func (r *Reconciler) deploymentsForOrphanSet(ctx context.Context, obj client.Object) []reconcile.Request {
	if metav1.GetControllerOf(obj) != nil || len(obj.GetLabels()) == 0 {
		return nil
	}
	list := &v1alpha1.MachineDeploymentList{}
	if err := r.Client.List(ctx, list, client.InNamespace(obj.GetNamespace())); err != nil {
		return nil
	}
	var out []reconcile.Request
	for i := range list.Items {
		sel, err := metav1.LabelSelectorAsSelector(list.Items[i].Spec.Selector)
		if err == nil && !sel.Empty() && sel.Matches(labels.Set(obj.GetLabels())) {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
		}
	}
	return out
}

// deploymentForMachine maps a machine to the deployment that controls its
// machine set. Machines matter to a deployment for a Recreate rollout (it
// waits for the last old machine to go) and for node marking (a machine's
// node label).
func (r *Reconciler) deploymentForMachine(ctx context.Context, obj client.Object) []reconcile.Request {
	ref := metav1.GetControllerOfNoCopy(obj)
	if ref == nil || ref.Kind != "MachineSet" {
		return nil
	}
	ms := &v1alpha1.MachineSet{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: obj.GetNamespace(), Name: ref.Name}, ms); err != nil || ms.UID != ref.UID {
		return nil
	}
	dref := metav1.GetControllerOf(ms)
	if dref == nil || dref.Kind != "MachineDeployment" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: obj.GetNamespace(), Name: dref.Name}}}
}

// machineChangesThatMatter passes the machine events a deployment reads
// machines for: deletions and a deletion timestamp being set (a Recreate
// rollout waits for the last old machine to go; the end of a rollout takes
// the marks off the nodes), and a machine's node label appearing or changing
// (its node is marked during a rollout). Everything else, creations and
// status updates included, reaches the deployment through its machine sets'
// status; passing it here would sync the deployment, whose work grows with
// its size, once more per machine write.
func machineChangesThatMatter() predicate.Predicate {
	return predicate.Funcs{
		CreateFunc: func(e event.CreateEvent) bool {
			return e.Object.GetLabels()[v1alpha1.NodeLabelKey] != ""
		},
		UpdateFunc: func(e event.UpdateEvent) bool {
			return e.ObjectOld.GetLabels()[v1alpha1.NodeLabelKey] != e.ObjectNew.GetLabels()[v1alpha1.NodeLabelKey] ||
				(e.ObjectOld.GetDeletionTimestamp() == nil) != (e.ObjectNew.GetDeletionTimestamp() == nil) ||
				inPlacePhaseChanged(e.ObjectOld, e.ObjectNew) || driftChanged(e.ObjectOld, e.ObjectNew)
		},
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
}

// driftChanged reports a machine whose VM starts or stops being drifted
// from its class (drifted): spec.disruption.replaceDrifted acts on it.
func driftChanged(o, n client.Object) bool {
	om, ok1 := o.(*v1alpha1.Machine)
	nm, ok2 := n.(*v1alpha1.Machine)
	return ok1 && ok2 && drifted(om) != drifted(nm)
}

// inPlacePhaseChanged reports a machine entering or leaving an in-place
// phase: an updated machine is moved to the new set, a failed one waits for
// its replacement. The machine sets' status does not tell (such a machine
// is unavailable before and after).
func inPlacePhaseChanged(o, n client.Object) bool {
	om, ok1 := o.(*v1alpha1.Machine)
	nm, ok2 := n.(*v1alpha1.Machine)
	if !ok1 || !ok2 {
		return false
	}
	op, np := om.Status.CurrentStatus.Phase, nm.Status.CurrentStatus.Phase
	isInPlace := func(p v1alpha1.MachinePhase) bool {
		return p == v1alpha1.MachineInPlaceUpdating || p == v1alpha1.MachineInPlaceUpdateSuccessful || p == v1alpha1.MachineInPlaceUpdateFailed
	}
	return op != np && (isInPlace(op) || isInPlace(np))
}

// Reconcile syncs one MachineDeployment. It reads like the Deployment
// controller's sync: gather the deployment into a scope, run the phases
// (reconcileNormal lists them), write the revision and the status once.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	res, err := r.reconcile(ctx, req)
	if apierrors.IsConflict(err) {
		// The deployment or one of its machine sets changed since the cache
		// copy this sync started from. The newer version is on its way to the
		// cache and its event (the deployment's own, or its machine set's
		// through the owner reference) syncs the deployment again; a
		// rate-limited retry would only wait longer for the same thing.
		ctrl.LoggerFrom(ctx).V(1).Info("Conflict; waiting for the newer version", "error", err.Error())
		return ctrl.Result{}, nil
	}
	return res, err
}

func (r *Reconciler) reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	d := &v1alpha1.MachineDeployment{}
	if err := r.Client.Get(ctx, req.NamespacedName, d); err != nil {
		if apierrors.IsNotFound(err) {
			r.throttle.Cost(req, 0)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if d.DeletionTimestamp != nil {
		return r.reconcileDelete(ctx, d)
	}
	// The finalizer is persisted before any machine set is created, so that
	// none can be left behind by a deployment that vanishes.
	if err := setup.AddFinalizer(ctx, r.Client, d, v1alpha1.MachineFinalizer); err != nil {
		return ctrl.Result{}, fmt.Errorf("adding finalizer to machine deployment %s: %w", d.Name, err)
	}
	s := newScope(ctx, d)
	res, err := r.reconcileNormal(ctx, s)
	r.throttle.Cost(req, s.machineCount())
	if werr := r.writeStatus(ctx, s); werr != nil {
		return ctrl.Result{}, errors.Join(err, werr)
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	return res.Requeue(setup.ResyncPeriod(r.ResyncPeriod)), nil
}

// reconcileNormal runs the phases of a deployment that is not being deleted,
// in this order; a phase that settles the sync stops the ones after it.
func (r *Reconciler) reconcileNormal(ctx context.Context, s *scope) (phase.Result, error) {
	return phase.Run(ctx, s,
		r.validate,        // validate.go: a usable selector and strategy, else report and stop
		r.loadSets,        // machinesets.go: claim the machine sets, split new and old, group the machines
		r.holdWhileFrozen, // freeze.go: the API server freeze: report the counts and stop
		r.recordPause,     // pause.go: pausing and resuming in the Progressing condition
		r.triggerDeletion, // triggerdeletion.go: mark the machines the cluster-autoscaler names
		r.scalePaused,     // pause.go: a paused deployment scales, cleans up history, and stops
		r.rollback,        // rollback.go: spec.rollbackTo: the old template in one spec write, and stop
		r.scale,           // scale.go: a scaling event: proportional scaling, and stop
		r.rollout,         // rollout.go: one step of the strategy's rollout (strategy.go), then its status
		r.expire,          // expiry.go: once rolled out, replace one machine older than expireAfter
	)
}
