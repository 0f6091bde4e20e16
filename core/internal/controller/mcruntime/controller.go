package mcruntime

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

// ControllerName names the ContainerRuntimeConfig controller in logs,
// metrics and events.
const ControllerName = "containerruntimeconfig"

// Event reasons on ContainerRuntimeConfigs.
const (
	// ReasonApplied: the generated MachineConfigs were written.
	ReasonApplied = "Applied"
	// ReasonFailed: they could not be; the note says why.
	ReasonFailed = "Failed"
)

// resync is how often a ContainerRuntimeConfig is synced without events.
const resync = 10 * time.Minute

// Reconciler turns ContainerRuntimeConfigs into MachineConfigs for the
// pools they select.
type Reconciler struct {
	// Client reads (from the cache) and writes ContainerRuntimeConfigs,
	// pools and MachineConfigs, in the cluster of the Nodes.
	Client client.Client
	// Recorder records events on ContainerRuntimeConfigs.
	Recorder events.EventRecorder
	// ControllerVersion is written into the generated MachineConfigs'
	// generated-by-controller-version annotation
	// (mcfg.DefaultControllerVersion when empty).
	ControllerVersion string
}

// SetupWithManager registers the controller with mgr, watching the
// ContainerRuntimeConfigs, pools and MachineConfigs of target.
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
	// A pool concerns every ContainerRuntimeConfig (its labels decide which
	// select it); a generated MachineConfig only its owner (edited or
	// deleted, it is written again).
	pools := handler.TypedEnqueueRequestsFromMapFunc(func(ctx context.Context, _ *mcfgv1.MachineConfigPool) []reconcile.Request {
		return r.all(ctx)
	})
	mcs := handler.TypedEnqueueRequestsFromMapFunc(func(_ context.Context, mc *mcfgv1.MachineConfig) []reconcile.Request {
		if ref := metav1.GetControllerOf(mc); ref != nil && ref.Kind == "ContainerRuntimeConfig" {
			return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: ref.Name}}}
		}
		return nil
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		WatchesRawSource(source.Kind(target.GetCache(), &mcfgv1.ContainerRuntimeConfig{},
			&handler.TypedEnqueueRequestForObject[*mcfgv1.ContainerRuntimeConfig]{})).
		WatchesRawSource(source.Kind(target.GetCache(), &mcfgv1.MachineConfigPool{}, pools)).
		WatchesRawSource(source.Kind(target.GetCache(), &mcfgv1.MachineConfig{}, mcs)).
		WithOptions(controller.Options{MaxConcurrentReconciles: max(workers, 1)}).
		Complete(r)
}

func (r *Reconciler) all(ctx context.Context) []reconcile.Request {
	list := &mcfgv1.ContainerRuntimeConfigList{}
	if err := r.Client.List(ctx, list); err != nil {
		logr.FromContextOrDiscard(ctx).Error(err, "Listing ContainerRuntimeConfigs")
		return nil
	}
	out := make([]reconcile.Request, 0, len(list.Items))
	for _, c := range list.Items {
		out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Name: c.Name}})
	}
	return out
}

// Reconcile writes the MachineConfigs of one ContainerRuntimeConfig, or
// deletes them when it is deleted.
//
// A conflict (the object changed since the cache copy, or another one took
// the same name suffix first) is setup's conflict policy: synced again
// soon, no error.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	return setup.RequeueOnConflict(r.reconcile(ctx, req))
}

func (r *Reconciler) reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	crc := &mcfgv1.ContainerRuntimeConfig{}
	if err := r.Client.Get(ctx, req.NamespacedName, crc); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	log := logr.FromContextOrDiscard(ctx).WithValues("containerRuntimeConfig", crc.Name)
	if !crc.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, mcfg.Release(ctx, r.Client, crc, mcfgv1.ContainerRuntimeConfigFinalizer, "container runtime", log)
	}
	if err := setup.AddFinalizer(ctx, r.Client, crc, mcfgv1.ContainerRuntimeConfigFinalizer); err != nil {
		return ctrl.Result{}, fmt.Errorf("adding the finalizer: %w", err)
	}
	orig := crc.DeepCopy()
	written, failure, err := r.apply(ctx, crc, log)
	if err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{RequeueAfter: resync}, r.writeStatus(ctx, orig, crc, written, failure, log)
}

// apply validates the ContainerRuntimeConfig and writes its
// MachineConfigs. One that cannot be applied returns the reason as failure
// and leaves what it wrote before; err is for the API server's errors.
func (r *Reconciler) apply(ctx context.Context, crc *mcfgv1.ContainerRuntimeConfig, log logr.Logger) (written []string, failure string, err error) {
	if verr := validate(crc.Spec.ContainerRuntimeConfig); verr != nil {
		return nil, verr.Error(), nil
	}
	pools, failure, err := r.selectedPools(ctx, crc)
	if err != nil || failure != "" {
		return nil, failure, err
	}
	suffix, failure, err := r.suffix(ctx, crc, pools)
	if err != nil || failure != "" {
		return nil, failure, err
	}
	ds := dropins(crc.Spec.ContainerRuntimeConfig)
	for _, pool := range pools {
		mc, err := generatedMachineConfig(generatedName(pool.Name, suffix), pool.Name, r.ControllerVersion, ds)
		if err != nil {
			return nil, "", err
		}
		action, failure, err := mcfg.WriteOwned(ctx, r.Client, crc, mc)
		if err != nil || failure != "" {
			return nil, failure, err
		}
		if action != "" {
			log.Info("Generated container runtime MachineConfig "+action, "machineConfig", mc.Name)
		}
		written = append(written, mc.Name)
	}
	return written, "", mcfg.DeleteOwned(ctx, r.Client, crc, written, "container runtime", log)
}

// selectedPools are the pools the selector selects; an empty or missing
// selector selects none, which is a failure.
func (r *Reconciler) selectedPools(ctx context.Context, crc *mcfgv1.ContainerRuntimeConfig) ([]mcfgv1.MachineConfigPool, string, error) {
	sel := crc.Spec.MachineConfigPoolSelector
	if sel == nil || (len(sel.MatchLabels) == 0 && len(sel.MatchExpressions) == 0) {
		return nil, "spec.machineConfigPoolSelector is empty: it selects no pool", nil
	}
	selector, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		return nil, fmt.Sprintf("spec.machineConfigPoolSelector: %v", err), nil
	}
	list := &mcfgv1.MachineConfigPoolList{}
	if err := r.Client.List(ctx, list, client.MatchingLabelsSelector{Selector: selector}); err != nil {
		return nil, "", fmt.Errorf("listing pools: %w", err)
	}
	if len(list.Items) == 0 {
		return nil, fmt.Sprintf("no MachineConfigPool matches spec.machineConfigPoolSelector %s", selector), nil
	}
	slices.SortFunc(list.Items, func(a, b mcfgv1.MachineConfigPool) int { return strings.Compare(a.Name, b.Name) })
	return list.Items, "", nil
}

// suffix is the name suffix, chosen per pool and recorded once.
func (r *Reconciler) suffix(ctx context.Context, crc *mcfgv1.ContainerRuntimeConfig, pools []mcfgv1.MachineConfigPool) (string, string, error) {
	if s, ok := crc.Annotations[mcfgv1.MCNameSuffixAnnotation]; ok {
		return s, "", nil
	}
	all := &mcfgv1.ContainerRuntimeConfigList{}
	if err := r.Client.List(ctx, all); err != nil {
		return "", "", fmt.Errorf("listing ContainerRuntimeConfigs: %w", err)
	}
	claims := make([]mcfg.SuffixClaim, 0, len(all.Items))
	for _, o := range all.Items {
		s, ok := o.Annotations[mcfgv1.MCNameSuffixAnnotation]
		claims = append(claims, mcfg.SuffixClaim{UID: o.UID, Selector: o.Spec.MachineConfigPoolSelector, Suffix: s, HasSuffix: ok})
	}
	s, err := mcfg.ChooseSuffix(crc.UID, claims, pools)
	if err != nil {
		return "", "ContainerRuntimeConfigs: " + err.Error(), nil
	}
	// The optimistic lock makes two created together take turns.
	p := setup.NewPatcher(r.Client, crc, setup.LockObject())
	if crc.Annotations == nil {
		crc.Annotations = map[string]string{}
	}
	crc.Annotations[mcfgv1.MCNameSuffixAnnotation] = s
	if err := p.Patch(ctx, crc); err != nil {
		return "", "", fmt.Errorf("recording the name suffix: %w", err)
	}
	return s, "", nil
}

// writeStatus sets Success and Failure, and the observed generation.
func (r *Reconciler) writeStatus(ctx context.Context, orig, crc *mcfgv1.ContainerRuntimeConfig, written []string, failure string, log logr.Logger) error {
	success := metav1.Condition{Type: mcfgv1.ContainerRuntimeConfigSuccess, Status: metav1.ConditionTrue, Reason: ReasonApplied,
		Message: "Wrote " + strings.Join(written, ", ")}
	failed := metav1.Condition{Type: mcfgv1.ContainerRuntimeConfigFailure, Status: metav1.ConditionFalse, Reason: ReasonApplied}
	if failure != "" {
		success = metav1.Condition{Type: mcfgv1.ContainerRuntimeConfigSuccess, Status: metav1.ConditionFalse, Reason: ReasonFailed, Message: failure}
		failed = metav1.Condition{Type: mcfgv1.ContainerRuntimeConfigFailure, Status: metav1.ConditionTrue, Reason: ReasonFailed, Message: failure}
	}
	success.ObservedGeneration, failed.ObservedGeneration = crc.Generation, crc.Generation
	status := crc.Status.DeepCopy()
	meta.SetStatusCondition(&status.Conditions, success)
	meta.SetStatusCondition(&status.Conditions, failed)
	status.ObservedGeneration = crc.Generation
	if equality.Semantic.DeepEqual(*status, orig.Status) {
		return nil
	}
	if failure != "" {
		log.Info("ContainerRuntimeConfig cannot be applied", "reason", failure)
		r.Recorder.Eventf(crc, nil, corev1.EventTypeWarning, ReasonFailed, "Apply", "%s", failure)
	} else {
		r.Recorder.Eventf(crc, nil, corev1.EventTypeNormal, ReasonApplied, "Apply", "Wrote %s", strings.Join(written, ", "))
	}
	p := setup.NewPatcher(r.Client, crc, setup.LockStatus())
	crc.Status = *status
	if err := p.Patch(ctx, crc); err != nil {
		return fmt.Errorf("writing the status of ContainerRuntimeConfig %s: %w", crc.Name, err)
	}
	return nil
}
