package machineset

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1alpha1 "github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/internal/controller/phase"
	"github.com/machina-io/machina/core/internal/controller/setup"
	"github.com/machina-io/machina/core/internal/controller/throttle"
	"github.com/machina-io/machina/core/internal/freeze"
)

// ControllerName names the controller in logs, metrics and events.
const ControllerName = "machineset"

// Options tune the MachineSet controller.
type Options struct {
	// BurstReplicas bounds the machine creations, and separately the
	// machine deletions, one set has in flight at once (MCM caps the
	// machines created or deleted per sync at the same 100). A sync creates
	// or deletes all the machines it needs, in slow-start batches that grow
	// to this bound. Zero means the default.
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
	return Options{BurstReplicas: 100, ResyncPeriod: setup.DefaultResyncPeriod}
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
//
// Its clients (setup.Clients) default to the manager's: Client reads from the
// cache and writes to the API server, Recorder records events on
// MachineSets, and APIReader reads straight from the API server. Before it
// creates or deletes machines the controller re-lists them through
// APIReader, so that a cache lagging behind its own earlier writes cannot
// make it create twice or pick the wrong victim.
type Reconciler struct {
	setup.Clients
	// Gate is the API server freeze (MCM issue #718): while it is frozen the
	// controller creates and deletes no machines, Failed replacements
	// included, and only keeps the status up to date. Nil is never frozen.
	Gate *freeze.Gate
	// Target reads Nodes (the cache of the cluster that holds them) and
	// Pods their pods straight from its API server, so that a scale-down
	// passes over nodes that ask not to be disrupted (holds.go). Both nil
	// without a target cluster: nothing is held.
	Target client.Reader
	Pods   client.Reader

	Options

	// templates spares the template sync the machines already in sync.
	templates templateMemo
	// throttle holds back the syncs that machine events ask for; each sync
	// tells it how many machines it walked (throttle.Cost).
	throttle *throttle.Throttle
}

// SetupWithManager registers the controller with the manager, with the given
// number of concurrent workers.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, env setup.Env) error {
	workers := env.Workers
	r.Clients.Default(mgr, ControllerName)
	r.Options = r.Options.withDefaults()
	if err := setup.IndexMachines(mgr); err != nil {
		return err
	}
	r.throttle = throttle.New(throttle.ShortestWindow, throttle.LongestWindow)
	// The set's own status writes do not sync it again: in a scale-up each
	// sync would find new counts, write them and sync again, walking all
	// the set's machines as fast as the API server answers, past the
	// throttle of their events. Nothing a sync does waits for its own
	// status.
	return setup.NewController(mgr, ControllerName, &v1alpha1.MachineSet{}, workers,
		r.Gate, func() client.ObjectList { return &v1alpha1.MachineSetList{} }, builder.WithPredicates(setup.NotOnlyStatus())).
		Watches(&v1alpha1.Machine{}, r.throttle.Handler(handler.EnqueueRequestsFromMapFunc(r.setsForMachine)),
			builder.WithPredicates(machineChangesThatMatter())).
		Complete(r)
}

var _ reconcile.Reconciler = &Reconciler{}

// setsForMachine maps a machine event to the set that controls the machine
// or, for an orphan, to every set in its namespace whose selector matches it
// (one of them may adopt it). For updates controller-runtime calls it with
// the old and the new machine, so a set that loses a machine hears of it too.
func (r *Reconciler) setsForMachine(ctx context.Context, obj client.Object) []reconcile.Request {
	if ref := metav1.GetControllerOfNoCopy(obj); ref != nil {
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

// Reconcile syncs one MachineSet: a set being deleted deletes its machines
// and then its finalizer (delete.go); any other gets the finalizer, is
// gathered into a scope, and goes through the phases reconcileNormal lists;
// the status they computed is written once, at the end.
// A conflict (the set or a machine changed since the cache copy this sync
// started from) is setup's conflict policy: synced again soon, no error.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	return setup.RequeueOnConflict(r.reconcile(ctx, req))
}

func (r *Reconciler) reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	ms := &v1alpha1.MachineSet{}
	if err := r.Client.Get(ctx, req.NamespacedName, ms); err != nil {
		if apierrors.IsNotFound(err) {
			r.templates.forget(req.NamespacedName)
			r.throttle.Cost(req, 0)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if ms.DeletionTimestamp != nil {
		return r.reconcileDelete(ctx, ms)
	}
	// The finalizer is persisted before any machine is created, so that none
	// can be left behind by a set that vanishes.
	if err := setup.AddFinalizer(ctx, r.Client, ms, v1alpha1.MachineFinalizer); err != nil {
		return ctrl.Result{}, fmt.Errorf("adding finalizer to machine set %s: %w", ms.Name, err)
	}
	s := newScope(ctx, r.Client, ms)
	res, err := r.reconcileNormal(ctx, s)
	r.throttle.Cost(req, len(s.machines))
	if werr := r.writeStatus(ctx, s); werr != nil {
		return ctrl.Result{}, werr
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	return res.Requeue(r.Options.withDefaults().ResyncPeriod), nil
}

// reconcileNormal runs the phases of a set that is not being deleted, in
// this order; a phase that settles the sync stops the ones after it.
func (r *Reconciler) reconcileNormal(ctx context.Context, s *scope) (phase.Result, error) {
	return phase.Run(ctx, s,
		r.validate,        // validate.go: a usable selector, else report and stop
		r.claimMachines,   // adoption.go: adopt orphans, release machines that no longer match
		r.syncTemplate,    // template_sync.go: node template, configuration and class kind onto the machines
		r.holdWhileFrozen, // freeze.go: the API server freeze: report the counts and stop
		r.autoPreserve,    // preserve.go: mark Failed machines for preservation, up to autoPreserveFailedMachineMax
		r.manageReplicas,  // replicas.go: plan against a fresh list, delete and create machines
		r.computeStatus,   // status.go: the counts and the ReplicaFailure condition
	)
}
