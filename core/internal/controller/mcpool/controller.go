package mcpool

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
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

	mcv1 "github.com/machina-io/machina/core/api/machineconfiguration/v1"
	"github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/disruption"
	"github.com/machina-io/machina/core/internal/controller/phase"
	"github.com/machina-io/machina/core/internal/controller/setup"
	"github.com/machina-io/machina/core/internal/mcfg"
)

// ControllerName names the pool update controller in logs, metrics and
// events.
const ControllerName = "machineconfigpool"

// Event reasons on MachineConfigPools.
const (
	// ReasonSetDesiredConfig: a node was given the pool's configuration.
	ReasonSetDesiredConfig = "SetDesiredConfig"
	// ReasonSelectingAll: the pool's nodeSelector is empty, which would
	// select every Node; it selects none instead.
	ReasonSelectingAll = mcfg.SelectingAll
	// ReasonNodeInMultiplePools: a Node is chosen by this pool and another
	// custom pool (MCO's rule allows one custom pool, plus master or
	// worker, per Node).
	ReasonNodeInMultiplePools = "NodeInMultiplePools"
	// ReasonUnsupportedField: the pool's spec sets a field of MCO's API
	// that machina does not act on (spec.pinnedImageSets,
	// spec.osImageStream); the message names it.
	ReasonUnsupportedField = "UnsupportedField"
	// ReasonInvalidPool: the pool's spec cannot be used (a bad selector, a
	// bad maxUnavailable, a reference to a missing MachineSet).
	ReasonInvalidPool = "InvalidPool"
	// ReasonDisruptionHeld: nodes the update would start next wait for a
	// pre-update hook or ask not to be disrupted (machina.io/do-not-disrupt
	// on the Node or a pod of it); the message names them and what holds.
	ReasonDisruptionHeld = "DisruptionHeld"
)

// resync is how often a pool is synced without events: a safety net, every
// change of a pool, a Node or a Machine brings a sync anyway.
const resync = 10 * time.Minute

// Reconciler rolls each MachineConfigPool's configuration out to its Nodes.
type Reconciler struct {
	// Target reads (from its cache) and writes the pools, MachineConfigs
	// and Nodes: they live in the cluster of the Nodes, where the node
	// agents read them.
	Target client.Client
	// Control reads Machines, MachineSets and MachineDeployments (from the
	// manager's cache), for pools that name a MachineSet or a
	// MachineDeployment. Nil without machine objects: such pools then
	// select nothing and say why.
	Control client.Client
	// Pods reads the target cluster's pods, uncached, for the
	// do-not-disrupt annotation (the target's API reader when nil).
	Pods client.Reader
	// Recorder records events on pools.
	Recorder events.EventRecorder
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

// SetupWithManager registers the controller with mgr (whose cluster holds
// the machine objects), watching the pools, MachineConfigs and Nodes of
// target (mgr itself when both are one cluster).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, env setup.Env) error {
	target, workers := env.Target, env.Workers
	if r.Target == nil {
		r.Target = target.GetClient()
	}
	if r.Control == nil {
		r.Control = mgr.GetClient()
	}
	if r.Pods == nil {
		r.Pods = target.GetAPIReader()
	}
	if r.Recorder == nil {
		r.Recorder = setup.Recorder(target, ControllerName)
	}
	if r.Now == nil {
		r.Now = time.Now
	}
	servePoolMetrics(target.GetClient())
	allPools := handler.TypedEnqueueRequestsFromMapFunc(func(ctx context.Context, _ client.Object) []reconcile.Request {
		return r.allPools(ctx)
	})
	// A Node matters to every pool when its labels (membership), the
	// handshake's annotations, schedulability or health change; its
	// heartbeats do not. Every pool is synced because a Node that changes
	// its labels may leave one pool for another.
	nodeChanged := predicate.TypedFuncs[*corev1.Node]{
		UpdateFunc: func(e event.TypedUpdateEvent[*corev1.Node]) bool {
			o, n := e.ObjectOld, e.ObjectNew
			return !mapsEqual(o.Labels, n.Labels) || handshakeChanged(o, n) ||
				disruption.Key(o.Annotations) != disruption.Key(n.Annotations) ||
				!slices.Equal(disruption.PreUpdateHooks(o.Annotations), disruption.PreUpdateHooks(n.Annotations)) ||
				o.Spec.Unschedulable != n.Spec.Unschedulable ||
				newPoolNode(o).healthy() != newPoolNode(n).healthy()
		},
	}
	b := ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		WatchesRawSource(source.Kind(target.GetCache(), &mcv1.MachineConfigPool{},
			&handler.TypedEnqueueRequestForObject[*mcv1.MachineConfigPool]{})).
		// A pool that comes, goes or changes its spec (its selector) may
		// take a Node from another pool or give one back: every pool syncs.
		WatchesRawSource(source.Kind(target.GetCache(), &mcv1.MachineConfigPool{},
			handler.TypedEnqueueRequestsFromMapFunc(func(ctx context.Context, _ *mcv1.MachineConfigPool) []reconcile.Request {
				return r.allPools(ctx)
			}), predicate.TypedFuncs[*mcv1.MachineConfigPool]{
				UpdateFunc: func(e event.TypedUpdateEvent[*mcv1.MachineConfigPool]) bool {
					return e.ObjectOld.Generation != e.ObjectNew.Generation ||
						e.ObjectOld.DeletionTimestamp.IsZero() != e.ObjectNew.DeletionTimestamp.IsZero()
				},
				GenericFunc: func(event.TypedGenericEvent[*mcv1.MachineConfigPool]) bool { return false },
			})).
		WatchesRawSource(source.Kind(target.GetCache(), &corev1.Node{},
			handler.TypedEnqueueRequestsFromMapFunc(func(ctx context.Context, _ *corev1.Node) []reconcile.Request {
				return r.allPools(ctx)
			}), nodeChanged)).
		WithOptions(controller.Options{MaxConcurrentReconciles: max(workers, 1)})
	// Machines joining or leaving a MachineSet or MachineDeployment, or
	// naming their Node, change the pools that name those.
	b = b.Watches(&v1alpha1.Machine{}, allPools, builder.WithPredicates(predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			return !mapsEqual(e.ObjectOld.GetLabels(), e.ObjectNew.GetLabels()) ||
				mcfg.MachineNode(e.ObjectOld.(*v1alpha1.Machine)) != mcfg.MachineNode(e.ObjectNew.(*v1alpha1.Machine))
		},
	}))
	return b.Complete(r)
}

// allPools lists every pool for a sync.
func (r *Reconciler) allPools(ctx context.Context) []reconcile.Request {
	list := &mcv1.MachineConfigPoolList{}
	if err := r.Target.List(ctx, list); err != nil {
		logr.FromContextOrDiscard(ctx).Error(err, "Listing MachineConfigPools")
		return nil
	}
	out := make([]reconcile.Request, 0, len(list.Items))
	for _, p := range list.Items {
		out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Name: p.Name}})
	}
	return out
}

func handshakeChanged(o, n *corev1.Node) bool {
	for _, k := range []string{annDesiredConfig, annCurrentConfig, annState, annReason} {
		if o.Annotations[k] != n.Annotations[k] {
			return true
		}
	}
	return false
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// Reconcile syncs one pool: its members, the next nodes of its rollout,
// its status.
//
// A conflict (the pool changed since the cache copy; the render controller
// writes into the same status) is setup's conflict policy: synced again
// soon, no error.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	return setup.RequeueOnConflict(r.reconcile(ctx, req))
}

func (r *Reconciler) reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	pool := &mcv1.MachineConfigPool{}
	if err := r.Target.Get(ctx, req.NamespacedName, pool); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !pool.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil // its nodes keep what they have
	}
	s := &scope{
		pool:   pool,
		orig:   pool.DeepCopy(),
		target: pool.Spec.Configuration.Name,
		log:    logr.FromContextOrDiscard(ctx).WithValues("pool", pool.Name),
		now:    r.Now(),
	}
	res, err := phase.Run(ctx, s, r.members, r.rollout, r.status)
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("pool %s: %w", pool.Name, err)
	}
	if err := r.writeStatus(ctx, s); err != nil {
		return ctrl.Result{}, err
	}
	return res.Requeue(resync), nil
}
