package mcrender

import (
	"context"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	mcfgv1 "github.com/machina-io/machina/core/api/machineconfiguration/v1"
	"github.com/machina-io/machina/core/internal/controller/phase"
	"github.com/machina-io/machina/core/internal/controller/setup"
	"github.com/machina-io/machina/core/internal/mcfg"
)

// ControllerName names the render controller in logs, metrics and events.
const ControllerName = "machineconfig-render"

// Event reasons on MachineConfigPools.
const (
	// ReasonRendered: the pool's target configuration changed.
	ReasonRendered = "Rendered"
	// ReasonRenderFailed: the pool's MachineConfigs cannot be rendered.
	ReasonRenderFailed = "RenderFailed"
)

// resync is how often a pool is rendered again without events: a safety
// net; every change of a pool or a MachineConfig brings a render.
const resync = 10 * time.Minute

// Reconciler renders each MachineConfigPool's MachineConfigs into one
// rendered MachineConfig and makes it the pool's target.
type Reconciler struct {
	// Client reads (from the cache) and writes pools and MachineConfigs, and
	// reads Nodes, in the cluster of the Nodes.
	Client client.Client
	// Control reads Machines, MachineSets and MachineDeployments (from the
	// manager's cache), for the nodes of pools that name a MachineSet or a
	// MachineDeployment. Nil without machine objects.
	Control client.Client
	// Recorder records events on pools.
	Recorder events.EventRecorder
	// ControllerVersion is written into the generated-by-controller-version
	// annotation (mcfg.DefaultControllerVersion when empty).
	ControllerVersion string
}

// SetupWithManager registers the controller with mgr, watching the pools
// and MachineConfigs of target (the cluster of the Nodes; mgr's own when
// both are one cluster).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, env setup.Env) error {
	target, workers := env.Target, env.Workers
	if r.Client == nil {
		r.Client = target.GetClient()
	}
	if r.Control == nil {
		r.Control = mgr.GetClient()
	}
	if r.Recorder == nil {
		r.Recorder = setup.Recorder(target, ControllerName)
	}
	if r.ControllerVersion == "" {
		r.ControllerVersion = mcfg.DefaultControllerVersion
	}
	// Only a pool's spec matters (its selector); its status moves with
	// every node update and is no reason to render.
	poolChanged := predicate.TypedFuncs[*mcfgv1.MachineConfigPool]{
		UpdateFunc: func(e event.TypedUpdateEvent[*mcfgv1.MachineConfigPool]) bool {
			return e.ObjectOld.Generation != e.ObjectNew.Generation ||
				!mapsEqual(e.ObjectOld.Labels, e.ObjectNew.Labels)
		},
	}
	// A fragment may join or leave any pool by its labels, so every pool
	// renders again. A rendered configuration matters to its pool only: if
	// it is deleted while still the pool's rendering, it is written again.
	allPools := handler.TypedEnqueueRequestsFromMapFunc(func(ctx context.Context, mc *mcfgv1.MachineConfig) []reconcile.Request {
		if mcfg.IsRendered(mc) {
			return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: metav1.GetControllerOf(mc).Name}}}
		}
		return r.allPools(ctx)
	})
	// A Node matters to a pool whose rendering depends on its nodes' labels
	// (refuse.go: the 64k-pages kernel on arm64 only) when it comes, goes or
	// changes labels; its status does not.
	nodeChanged := predicate.TypedFuncs[*corev1.Node]{
		UpdateFunc: func(e event.TypedUpdateEvent[*corev1.Node]) bool {
			return !mapsEqual(e.ObjectOld.Labels, e.ObjectNew.Labels)
		},
	}
	archPools := handler.TypedEnqueueRequestsFromMapFunc(func(ctx context.Context, _ *corev1.Node) []reconcile.Request {
		return r.archPools(ctx)
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		WatchesRawSource(source.Kind(target.GetCache(), &mcfgv1.MachineConfigPool{},
			&handler.TypedEnqueueRequestForObject[*mcfgv1.MachineConfigPool]{}, poolChanged)).
		WatchesRawSource(source.Kind(target.GetCache(), &mcfgv1.MachineConfig{}, allPools)).
		WatchesRawSource(source.Kind(target.GetCache(), &corev1.Node{}, archPools, nodeChanged)).
		WithOptions(controller.Options{MaxConcurrentReconciles: max(workers, 1)}).
		Complete(r)
}

// allPools lists every pool for a render.
func (r *Reconciler) allPools(ctx context.Context) []reconcile.Request {
	list := &mcfgv1.MachineConfigPoolList{}
	if err := r.Client.List(ctx, list); err != nil {
		logr.FromContextOrDiscard(ctx).Error(err, "Listing MachineConfigPools")
		return nil
	}
	out := make([]reconcile.Request, 0, len(list.Items))
	for _, p := range list.Items {
		out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Name: p.Name}})
	}
	return out
}

// archPools lists the pools whose rendering depends on their nodes'
// architecture: those whose target runs the 64k-pages kernel, and those
// whose rendering was refused for a node's architecture.
func (r *Reconciler) archPools(ctx context.Context) []reconcile.Request {
	list := &mcfgv1.MachineConfigPoolList{}
	if err := r.Client.List(ctx, list); err != nil {
		logr.FromContextOrDiscard(ctx).Error(err, "Listing MachineConfigPools")
		return nil
	}
	var out []reconcile.Request
	for i := range list.Items {
		p := &list.Items[i]
		if c := meta.FindStatusCondition(p.Status.Conditions, mcfgv1.PoolRenderDegraded); c != nil && c.Reason == reasonArch {
			out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Name: p.Name}})
			continue
		}
		target := &mcfgv1.MachineConfig{}
		if p.Spec.Configuration.Name != "" && r.Client.Get(ctx, client.ObjectKey{Name: p.Spec.Configuration.Name}, target) == nil &&
			target.Spec.KernelType == kernel64kPages {
			out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Name: p.Name}})
		}
	}
	return out
}

// Reconcile renders one pool: select its fragments, merge them, refuse
// what the pool's target or nodes cannot take, write the rendered
// MachineConfig, point the pool at it, report RenderDegraded.
//
// A conflict (the pool changed since the cache copy; the update controller
// writes into the same status) is setup's conflict policy: synced again
// soon, no error.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	return setup.RequeueOnConflict(r.reconcile(ctx, req))
}

func (r *Reconciler) reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	pool := &mcfgv1.MachineConfigPool{}
	if err := r.Client.Get(ctx, req.NamespacedName, pool); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !pool.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	s := &scope{
		pool:    pool,
		orig:    pool.DeepCopy(),
		patcher: setup.NewPatcher(r.Client, pool, setup.LockObject(), setup.LockStatus()),
		log:     logr.FromContextOrDiscard(ctx).WithValues("pool", pool.Name),
	}
	res, err := phase.Run(ctx, s, r.selectFragments, r.render, r.refuse, r.writeRendered, r.pointPool)
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("pool %s: %w", pool.Name, err)
	}
	if err := r.writeStatus(ctx, s); err != nil {
		return ctrl.Result{}, err
	}
	return res.Requeue(resync), nil
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
