package mcgc

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	mcfgv1 "github.com/machina-io/machina/core/api/machineconfiguration/v1"
	"github.com/machina-io/machina/core/internal/controller/setup"
	"github.com/machina-io/machina/core/internal/mcfg"
)

// ControllerName names the collector of rendered configurations in logs,
// metrics and events.
const ControllerName = "machineconfig-gc"

// DefaultGrace is how long a rendered configuration nobody refers to is
// kept: long enough to look at what a pool ran before, and to roll back
// by hand.
const DefaultGrace = time.Hour

// Collector deletes rendered MachineConfigs that no pool (spec or status
// configuration) and no Node (currentConfig or desiredConfig annotation)
// has referred to for Grace. MCO never deletes them; a cluster that changes
// its configuration often piles them up.
type Collector struct {
	// Client reads (from the cache) and writes MachineConfigs, pools and
	// Nodes of the cluster of the Nodes.
	Client client.Client
	// APIReader reads straight from the API server: the last look before a
	// deletion must not be a stale cache's.
	APIReader client.Reader
	// Grace is how long an unreferenced rendered configuration is kept
	// (DefaultGrace when not positive).
	Grace time.Duration
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

// SetupWithManager registers the collector with mgr, watching the rendered
// MachineConfigs, pools and Nodes of target.
func (c *Collector) SetupWithManager(mgr ctrl.Manager, env setup.Env) error {
	target, workers := env.Target, env.Workers
	if c.Client == nil {
		c.Client = target.GetClient()
	}
	if c.APIReader == nil {
		c.APIReader = target.GetAPIReader()
	}
	if c.Grace <= 0 {
		c.Grace = DefaultGrace
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	rendered := predicate.NewTypedPredicateFuncs(func(mc *mcfgv1.MachineConfig) bool { return mcfg.IsRendered(mc) })
	// For updates the map functions run with the old and the new object,
	// so the configuration a pool or a Node stops naming is looked at too.
	poolRefs := handler.TypedEnqueueRequestsFromMapFunc(func(_ context.Context, p *mcfgv1.MachineConfigPool) []reconcile.Request {
		return requests(poolConfigs(p))
	})
	nodeRefs := handler.TypedEnqueueRequestsFromMapFunc(func(_ context.Context, n *corev1.Node) []reconcile.Request {
		return requests(nodeConfigs(n))
	})
	nodeChanged := predicate.TypedFuncs[*corev1.Node]{
		UpdateFunc: func(e event.TypedUpdateEvent[*corev1.Node]) bool {
			return !slices.Equal(nodeConfigs(e.ObjectOld), nodeConfigs(e.ObjectNew))
		},
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		WatchesRawSource(source.Kind(target.GetCache(), &mcfgv1.MachineConfig{},
			&handler.TypedEnqueueRequestForObject[*mcfgv1.MachineConfig]{}, rendered)).
		WatchesRawSource(source.Kind(target.GetCache(), &mcfgv1.MachineConfigPool{}, poolRefs)).
		WatchesRawSource(source.Kind(target.GetCache(), &corev1.Node{}, nodeRefs, nodeChanged)).
		WithOptions(controller.Options{MaxConcurrentReconciles: max(workers, 1)}).
		Complete(c)
}

// Reconcile marks a rendered configuration nobody refers to, unmarks one
// referred to again, and deletes one marked for longer than Grace.
func (c *Collector) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	mc := &mcfgv1.MachineConfig{}
	if err := c.Client.Get(ctx, req.NamespacedName, mc); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !mcfg.IsRendered(mc) || !mc.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	log := logr.FromContextOrDiscard(ctx).WithValues("machineConfig", mc.Name)
	used, err := c.referenced(ctx, c.Client, mc.Name)
	if err != nil {
		return ctrl.Result{}, err
	}
	since, marked := mc.Annotations[mcfgv1.UnreferencedSinceAnnotation]
	if used {
		if marked {
			return ctrl.Result{}, c.mark(ctx, mc, "")
		}
		return ctrl.Result{}, nil
	}
	now := c.Now()
	t, err := time.Parse(time.RFC3339, since)
	if !marked || err != nil {
		log.V(1).Info("Rendered MachineConfig is no longer referenced", "grace", c.Grace)
		return ctrl.Result{RequeueAfter: c.Grace}, c.mark(ctx, mc, now.UTC().Format(time.RFC3339))
	}
	if left := t.Add(c.Grace).Sub(now); left > 0 {
		return ctrl.Result{RequeueAfter: left}, nil
	}
	// The cache may not show a reference made a moment ago: ask the API
	// server before deleting.
	if used, err := c.referenced(ctx, c.APIReader, mc.Name); err != nil || used {
		return ctrl.Result{}, err
	}
	err = c.Client.Delete(ctx, mc, client.Preconditions{UID: &mc.UID, ResourceVersion: &mc.ResourceVersion})
	if err != nil && !apierrors.IsNotFound(err) {
		return ctrl.Result{}, fmt.Errorf("deleting unreferenced %s: %w", mc.Name, err)
	}
	log.Info("Deleted rendered MachineConfig nobody referred to", "unreferencedSince", since, "grace", c.Grace)
	return ctrl.Result{}, nil
}

// mark sets (or, with "", removes) the unreferenced-since annotation.
func (c *Collector) mark(ctx context.Context, mc *mcfgv1.MachineConfig, since string) error {
	patch := client.MergeFromWithOptions(mc.DeepCopy(), client.MergeFromWithOptimisticLock{})
	if since == "" {
		delete(mc.Annotations, mcfgv1.UnreferencedSinceAnnotation)
	} else {
		if mc.Annotations == nil {
			mc.Annotations = map[string]string{}
		}
		mc.Annotations[mcfgv1.UnreferencedSinceAnnotation] = since
	}
	if err := c.Client.Patch(ctx, mc, patch); err != nil {
		return fmt.Errorf("marking %s: %w", mc.Name, client.IgnoreNotFound(err))
	}
	return nil
}
