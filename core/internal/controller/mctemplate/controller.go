package mctemplate

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	mcfgv1 "github.com/machina-io/machina/core/api/machineconfiguration/v1"
	"github.com/machina-io/machina/core/internal/controller/setup"
	"github.com/machina-io/machina/core/internal/mcfg"
)

// ControllerName names the template controller in logs, metrics and events.
const ControllerName = "machineconfig-template"

// Event reasons on the ControllerConfig.
const (
	// ReasonWritten: a base MachineConfig was created or written back.
	ReasonWritten = "Written"
	// ReasonFailed: the base MachineConfigs could not be written; the note
	// says why.
	ReasonFailed = "Failed"
	// ReasonPoolCreated: a built-in pool was missing and was created.
	ReasonPoolCreated = "PoolCreated"
)

// resync is how often the ControllerConfig is synced without events.
const resync = 10 * time.Minute

// Reconciler writes the base MachineConfigs of every role from the
// ControllerConfig.
type Reconciler struct {
	// Client reads (from the cache) and writes the ControllerConfig, pools
	// and MachineConfigs, in the cluster of the Nodes.
	Client client.Client
	// Recorder records events on the ControllerConfig.
	Recorder events.EventRecorder
	// ControllerVersion is written into the base MachineConfigs'
	// generated-by-controller-version annotation
	// (mcfg.DefaultControllerVersion when empty).
	ControllerVersion string
}

// SetupWithManager registers the controller with mgr, watching the
// ControllerConfigs, pools and MachineConfigs of target.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, env setup.Env) error {
	target, workers := env.Target, env.Workers
	if r.Client == nil {
		r.Client = target.GetClient()
	}
	if r.Recorder == nil {
		r.Recorder = setup.Recorder(target, ControllerName)
	}
	if r.ControllerVersion == "" {
		r.ControllerVersion = mcfg.DefaultControllerVersion
	}
	// Every pool (its name is a role; master and worker must exist) and
	// every base MachineConfig (edited or deleted) concern the one
	// ControllerConfig.
	one := []reconcile.Request{{NamespacedName: types.NamespacedName{Name: mcfgv1.ControllerConfigName}}}
	pools := handler.TypedEnqueueRequestsFromMapFunc(func(context.Context, *mcfgv1.MachineConfigPool) []reconcile.Request {
		return one
	})
	mcs := handler.TypedEnqueueRequestsFromMapFunc(func(_ context.Context, mc *mcfgv1.MachineConfig) []reconcile.Request {
		if ref := metav1.GetControllerOf(mc); ref != nil && ref.Kind == mcfg.ControllerConfigKind {
			return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: ref.Name}}}
		}
		return nil
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		WatchesRawSource(source.Kind(target.GetCache(), &mcfgv1.ControllerConfig{},
			&handler.TypedEnqueueRequestForObject[*mcfgv1.ControllerConfig]{})).
		WatchesRawSource(source.Kind(target.GetCache(), &mcfgv1.MachineConfigPool{}, pools)).
		WatchesRawSource(source.Kind(target.GetCache(), &mcfgv1.MachineConfig{}, mcs)).
		WithOptions(controller.Options{MaxConcurrentReconciles: max(workers, 1)}).
		Complete(r)
}

// Reconcile writes the base MachineConfigs of the ControllerConfig.
//
// A conflict (the object changed since the cache copy) is setup's conflict
// policy: synced again soon, no error.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	return setup.RequeueOnConflict(r.reconcile(ctx, req))
}

func (r *Reconciler) reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	cc := &mcfgv1.ControllerConfig{}
	if err := r.Client.Get(ctx, req.NamespacedName, cc); err != nil {
		// Deleted: its MachineConfigs go with it (owner references).
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !cc.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	log := logr.FromContextOrDiscard(ctx).WithValues("controllerConfig", cc.Name)
	orig := cc.DeepCopy()
	var roles []string
	failure := ""
	if cc.Name != mcfgv1.ControllerConfigName {
		failure = fmt.Sprintf("only the ControllerConfig named %s is read; this one is ignored", mcfgv1.ControllerConfigName)
	} else {
		var err error
		roles, failure, err = r.apply(ctx, cc, log)
		if err != nil {
			return ctrl.Result{}, err
		}
	}
	return ctrl.Result{RequeueAfter: resync}, r.writeStatus(ctx, orig, cc, roles, failure, log)
}

// apply creates the missing built-in pools and writes the base
// MachineConfigs of every role; it returns the roles written, or why not.
func (r *Reconciler) apply(ctx context.Context, cc *mcfgv1.ControllerConfig, log logr.Logger) ([]string, string, error) {
	created, err := r.ensurePools(ctx)
	for _, p := range created {
		log.Info("Created built-in pool", "pool", p)
		r.Recorder.Eventf(cc, nil, corev1.EventTypeNormal, ReasonPoolCreated, "CreatePool", "Created pool %s", p)
	}
	if err != nil {
		return nil, "", err
	}
	roles, err := r.roles(ctx)
	if err != nil {
		return nil, "", err
	}
	keep := map[string]bool{}
	for _, role := range roles {
		mcs, err := render(cc, role, r.ControllerVersion)
		if err != nil {
			return nil, err.Error(), nil
		}
		for _, mc := range mcs {
			keep[mc.Name] = true
			action, failure, err := mcfg.WriteOwned(ctx, r.Client, cc, mc)
			if err != nil || failure != "" {
				return nil, failure, err
			}
			if action != "" {
				log.Info("Base MachineConfig "+action, "machineConfig", mc.Name)
				r.Recorder.Eventf(cc, nil, corev1.EventTypeNormal, ReasonWritten, "Write", "%s %s", strings.ToUpper(action[:1])+action[1:], mc.Name)
			}
		}
	}
	return roles, "", r.deleteStale(ctx, cc, keep, log)
}

// roles are master, worker and the name of every other pool.
func (r *Reconciler) roles(ctx context.Context) ([]string, error) {
	pools := &mcfgv1.MachineConfigPoolList{}
	if err := r.Client.List(ctx, pools); err != nil {
		return nil, fmt.Errorf("listing pools: %w", err)
	}
	roles := slices.Clone(builtInRoles)
	for _, p := range pools.Items {
		if p.DeletionTimestamp.IsZero() && !slices.Contains(roles, p.Name) {
			roles = append(roles, p.Name)
		}
	}
	slices.Sort(roles)
	return roles, nil
}

// deleteStale deletes the MachineConfigs cc controls that are not in keep:
// those of a pool that is gone.
func (r *Reconciler) deleteStale(ctx context.Context, cc *mcfgv1.ControllerConfig, keep map[string]bool, log logr.Logger) error {
	list := &mcfgv1.MachineConfigList{}
	if err := r.Client.List(ctx, list); err != nil {
		return fmt.Errorf("listing MachineConfigs: %w", err)
	}
	for i := range list.Items {
		mc := &list.Items[i]
		if ref := metav1.GetControllerOf(mc); ref == nil || ref.UID != cc.UID || keep[mc.Name] {
			continue
		}
		if err := r.Client.Delete(ctx, mc); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("deleting %s: %w", mc.Name, err)
		}
		log.Info("Deleted the base MachineConfig of a role without pool", "machineConfig", mc.Name)
	}
	return nil
}

// writeStatus sets TemplateControllerCompleted and
// TemplateControllerFailing, and the observed generation.
func (r *Reconciler) writeStatus(ctx context.Context, orig, cc *mcfgv1.ControllerConfig, roles []string, failure string, log logr.Logger) error {
	done := metav1.Condition{Type: mcfgv1.TemplateControllerCompleted, Status: metav1.ConditionTrue, Reason: ReasonWritten,
		Message: "Base MachineConfigs written for roles " + strings.Join(roles, ", ")}
	failing := metav1.Condition{Type: mcfgv1.TemplateControllerFailing, Status: metav1.ConditionFalse, Reason: ReasonWritten}
	if failure != "" {
		done = metav1.Condition{Type: mcfgv1.TemplateControllerCompleted, Status: metav1.ConditionFalse, Reason: ReasonFailed, Message: failure}
		failing = metav1.Condition{Type: mcfgv1.TemplateControllerFailing, Status: metav1.ConditionTrue, Reason: ReasonFailed, Message: failure}
	}
	done.ObservedGeneration, failing.ObservedGeneration = cc.Generation, cc.Generation
	status := cc.Status.DeepCopy()
	meta.SetStatusCondition(&status.Conditions, done)
	meta.SetStatusCondition(&status.Conditions, failing)
	status.ObservedGeneration = cc.Generation
	if equality.Semantic.DeepEqual(*status, orig.Status) {
		return nil
	}
	if failure != "" {
		log.Info("Base MachineConfigs not written", "reason", failure)
		r.Recorder.Eventf(cc, nil, corev1.EventTypeWarning, ReasonFailed, "Write", "%s", failure)
	}
	p := setup.NewPatcher(r.Client, cc, setup.LockStatus())
	cc.Status = *status
	if err := p.Patch(ctx, cc); err != nil {
		return fmt.Errorf("writing the status of ControllerConfig %s: %w", cc.Name, err)
	}
	return nil
}
