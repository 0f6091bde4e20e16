package overshoot

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/internal/controller/setup"
	"github.com/machina-io/machina/core/internal/controller/throttle"
	"github.com/machina-io/machina/core/scaledown"
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
	// APIReader reads from the API server, not the cache: a freeze is
	// confirmed on fresh reads. mgr.GetAPIReader() when nil.
	APIReader client.Reader
	// Recorder emits FrozeMachineSet and UnfrozeMachineSet on MachineSets;
	// setup.Recorder(mgr, ControllerName) when nil.
	Recorder events.EventRecorder
	// SafetyUp (--safety-up) and SafetyDown (--safety-down); the defaults
	// when both are zero.
	SafetyUp, SafetyDown int32
	// Period (--machine-safety-overshooting-period) is how often every
	// MachineSet is checked even without events; DefaultPeriod when zero.
	Period time.Duration

	// machines reads a set's cached machines without copies.
	machines setup.CachedMachines
}

// SetupWithManager registers the controller with mgr, with the given number
// of workers.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, env setup.Env) error {
	workers := env.Workers
	if r.Client == nil {
		r.Client = mgr.GetClient()
	}
	r.machines = setup.NewCachedMachines(r.Client, mgr.GetClient(), mgr.GetCache())
	if r.APIReader == nil {
		r.APIReader = mgr.GetAPIReader()
	}
	if r.Recorder == nil {
		r.Recorder = setup.Recorder(mgr, ControllerName)
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
	if err := setup.IndexMachines(mgr); err != nil {
		return err
	}
	// MCM checks on every machine that appears; a machine that goes may
	// bring the count down to the unfreeze threshold. Status updates of
	// machines change no count. A check walks the set's machines, so the
	// machine events are throttled: a scale-up of a thousand machines is
	// checked a few times a second, not a thousand times.
	machineCountChanged := predicate.Funcs{
		UpdateFunc:  func(event.UpdateEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		For(&v1alpha1.MachineSet{}).
		Watches(&v1alpha1.Machine{}, throttle.New(throttle.ShortestWindow, throttle.LongestWindow).Handler(handler.EnqueueRequestForOwner(mgr.GetScheme(), mgr.GetRESTMapper(),
			&v1alpha1.MachineSet{}, handler.OnlyControllerOwner())), builder.WithPredicates(machineCountChanged)).
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
		// A set that still overshoots freezes again below, at once.
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
	machines, err := r.machinesOf(ctx, ms, false)
	if err != nil {
		return err
	}
	frozen := isFrozen(ms)
	if !frozen && !overshoots(ms, th, int32(len(machines))) {
		// Each machine the index gives counts once at most, and overshoots
		// grows with the count: a set that could not overshoot even if
		// every one counted is done without looking at them. A scale-up
		// checks its set on every machine that appears; walking thousands
		// each time made the check's cost grow with the fleet.
		return nil
	}
	live, all := countMachines(ms, machines)
	switch {
	case !frozen && overshoots(ms, th, live):
		c, err := r.confirm(ctx, ms, md)
		if err != nil || c == nil {
			return err
		}
		msg := fmt.Sprintf("MachineSet %s has %d machines, at or above its limit of %d and more than the %d it accounts for",
			ms.Name, c.live, c.th.Higher, accountedFor(c.ms))
		log.Info("Freezing machine set: too many machines", "machines", c.live, "beingDeleted", c.all-c.live,
			"higher", c.th.Higher, "lower", c.th.Lower, "replicas", c.ms.Spec.Replicas, "statusReplicas", c.ms.Status.Replicas)
		*ms = *c.ms // the deployment's freeze below follows the set as written
		return r.freezeSet(ctx, ms, msg)
	case all <= th.Lower && frozen:
		msg := fmt.Sprintf("MachineSet %s has %d machines, at or below %d", ms.Name, all, th.Lower)
		log.Info("Unfreezing machine set", "machines", all, "higher", th.Higher, "lower", th.Lower)
		return r.unfreezeSet(ctx, ms, msg)
	}
	return nil
}

// overshoots reports whether ms, with live machines not being deleted,
// has run away: live is at or above the limit, and more than the set
// accounts for, max(spec.replicas, status.replicas), while the set's
// controller has acted on the set's current spec.
//
// The baseline is what the MachineSet controller persists, so that it is
// the same for every manager, a new leader or a restarted one included. The
// set creates machines only up to spec.replicas, and status.replicas is the
// count of machines not being deleted at its last sync, less that sync's
// deletions. A scale-down lowers the limit (and then spec.replicas) while
// the machines are still there, but never beyond status.replicas, which
// counted them; a set or a second controller that creates machines beyond
// spec.replicas, or machines the set does not see, brings live beyond both.
// While status.observedGeneration is behind metadata.generation, the set's
// controller has not yet acted on a new spec (say, replicas 150 -> 0), and
// status.replicas may predate its last creations: the check waits for the
// status that follows. A set never synced (observedGeneration 0) has
// created none of its machines, so spec.replicas alone is its baseline.
func overshoots(ms *v1alpha1.MachineSet, th Thresholds, live int32) bool {
	settled := ms.Status.ObservedGeneration == 0 || ms.Status.ObservedGeneration >= ms.Generation
	return settled && live >= th.Higher && live > accountedFor(ms)
}

// accountedFor is the count of live machines a set explains by its spec and
// status.
func accountedFor(ms *v1alpha1.MachineSet) int32 {
	if ms.Status.ObservedGeneration == 0 {
		return ms.Spec.Replicas
	}
	return max(ms.Spec.Replicas, ms.Status.Replicas)
}

// confirmed is a set's overshoot as read from the API server.
type confirmed struct {
	ms        *v1alpha1.MachineSet
	th        Thresholds
	live, all int32
}

// confirm reads ms, its deployment and its machines again from the API
// server, in that order, and returns them if the set still overshoots, nil
// if not. The cache's watches of sets and of machines are separate streams:
// the status the MachineSet controller writes after a scale-down's
// deletions can reach the cache before the deletions do, and 100 machines
// that seem to be live against a status that no longer counts them are no
// overshoot. Machines listed after the set was read include every change
// made before the set's status was written.
func (r *Reconciler) confirm(ctx context.Context, ms *v1alpha1.MachineSet, md *v1alpha1.MachineDeployment) (*confirmed, error) {
	fresh := &v1alpha1.MachineSet{}
	if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(ms), fresh); err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	if fresh.UID != ms.UID || fresh.DeletionTimestamp != nil {
		return nil, nil
	}
	if md != nil {
		freshMD := &v1alpha1.MachineDeployment{}
		if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(md), freshMD); client.IgnoreNotFound(err) != nil {
			return nil, err
		} else if err == nil && freshMD.UID == md.UID {
			md = freshMD
		}
	}
	th, err := ComputeThresholds(fresh, md, r.SafetyUp, r.SafetyDown)
	if err != nil {
		return nil, nil // reported by the check on the cached objects
	}
	machines, err := r.machinesOf(ctx, fresh, true)
	if err != nil {
		return nil, err
	}
	live, all := countMachines(fresh, machines)
	if !overshoots(fresh, th, live) {
		ctrl.LoggerFrom(ctx).V(1).Info("Not freezing machine set: the API server does not confirm the cache's count",
			"machines", live, "higher", th.Higher, "replicas", fresh.Spec.Replicas, "statusReplicas", fresh.Status.Replicas)
		return nil, nil
	}
	return &confirmed{ms: fresh, th: th, live: live, all: all}, nil
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

// countMachines counts, of machines, those ms controls: live ones (not being
// deleted), which decide a freeze, and all, which decide an unfreeze. A
// machine being deleted is on its way out: counting it toward the limit
// froze every large scale-down (MCM does). As in MCM, a frozen set is
// unfrozen only once its surplus is gone, being deleted or not. A preserved
// Failed machine counts in neither: the set runs another machine in its
// place on purpose (machineset/preserve.go), and up to
// autoPreserveFailedMachineMax of them must not freeze it.
func countMachines(ms *v1alpha1.MachineSet, machines []*v1alpha1.Machine) (live, all int32) {
	templateLabels := labels.SelectorFromSet(ms.Spec.Template.Labels)
	now := time.Now()
	for _, m := range machines {
		if !templateLabels.Matches(labels.Set(m.Labels)) {
			continue
		}
		if m.Status.CurrentStatus.Phase == v1alpha1.MachineFailed && scaledown.Preserved(m, now) {
			continue
		}
		if owner := metav1.GetControllerOfNoCopy(m); owner != nil && owner.UID == ms.UID {
			all++
			if m.DeletionTimestamp == nil {
				live++
			}
		}
	}
	return live, all
}

// machinesOf reads the machines of ms: from the API server, by the set's
// template labels, or from the cache through the controller index and
// without copies (a set is checked on every machine that appears or goes,
// and only read).
func (r *Reconciler) machinesOf(ctx context.Context, ms *v1alpha1.MachineSet, fromAPIServer bool) ([]*v1alpha1.Machine, error) {
	if !fromAPIServer {
		return r.machines.ByField(ctx, ms.Namespace, setup.MachineControllerIndex, string(ms.UID))
	}
	opts := []client.ListOption{client.InNamespace(ms.Namespace)}
	if sel := ms.Spec.Template.Labels; len(sel) > 0 {
		opts = append(opts, client.MatchingLabels(sel))
	}
	list := &v1alpha1.MachineList{}
	if err := r.APIReader.List(ctx, list, opts...); err != nil {
		return nil, err
	}
	out := make([]*v1alpha1.Machine, len(list.Items))
	for i := range list.Items {
		out[i] = &list.Items[i]
	}
	return out, nil
}
