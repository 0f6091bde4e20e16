package mckubelet

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	mcfgv1 "github.com/machina-io/machina/core/api/machineconfiguration/v1"
	"github.com/machina-io/machina/core/internal/controller/phase"
	"github.com/machina-io/machina/core/internal/controller/setup"
	"github.com/machina-io/machina/core/internal/mcfg"
)

// ControllerName names the KubeletConfig controller in logs, metrics and
// events.
const ControllerName = "kubeletconfig"

// Event reasons on KubeletConfigs.
const (
	// ReasonApplied: the generated MachineConfigs were written.
	ReasonApplied = "Applied"
	// ReasonFailed: they could not be; the note says why.
	ReasonFailed = "Failed"
)

// resync is how often a KubeletConfig is synced without events.
const resync = 10 * time.Minute

// Reconciler turns KubeletConfigs into MachineConfigs for the pools they
// select.
type Reconciler struct {
	// Client reads (from the cache) and writes KubeletConfigs, pools and
	// MachineConfigs, in the cluster of the Nodes.
	Client client.Client
	// Recorder records events on KubeletConfigs.
	Recorder events.EventRecorder
	// ControllerVersion is written into the generated MachineConfigs'
	// generated-by-controller-version annotation
	// (mcfg.DefaultControllerVersion when empty).
	ControllerVersion string
}

// SetupWithManager registers the controller with mgr, watching the
// KubeletConfigs, pools and MachineConfigs of target.
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
	// A pool appearing, or changing its labels or MachineConfig selector,
	// and a MachineConfig changing the pools' base kubelet configuration,
	// concern every KubeletConfig; a generated MachineConfig only its owner.
	all := func(ctx context.Context) []reconcile.Request { return r.all(ctx) }
	pools := handler.TypedEnqueueRequestsFromMapFunc(func(ctx context.Context, _ *mcfgv1.MachineConfigPool) []reconcile.Request {
		return all(ctx)
	})
	mcs := handler.TypedEnqueueRequestsFromMapFunc(func(ctx context.Context, mc *mcfgv1.MachineConfig) []reconcile.Request {
		if ref := metav1.GetControllerOf(mc); ref != nil && ref.Kind == "KubeletConfig" {
			return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: ref.Name}}}
		}
		if mcfg.IsBase(mc) {
			return all(ctx)
		}
		return nil // rendered, or another controller's
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		WatchesRawSource(source.Kind(target.GetCache(), &mcfgv1.KubeletConfig{},
			&handler.TypedEnqueueRequestForObject[*mcfgv1.KubeletConfig]{})).
		WatchesRawSource(source.Kind(target.GetCache(), &mcfgv1.MachineConfigPool{}, pools,
			poolSpecOrLabelsChanged())).
		WatchesRawSource(source.Kind(target.GetCache(), &mcfgv1.MachineConfig{}, mcs)).
		WithOptions(controller.Options{MaxConcurrentReconciles: max(workers, 1)}).
		Complete(r)
}

func (r *Reconciler) all(ctx context.Context) []reconcile.Request {
	list := &mcfgv1.KubeletConfigList{}
	if err := r.Client.List(ctx, list); err != nil {
		logr.FromContextOrDiscard(ctx).Error(err, "Listing KubeletConfigs")
		return nil
	}
	out := make([]reconcile.Request, 0, len(list.Items))
	for _, kc := range list.Items {
		out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Name: kc.Name}})
	}
	return out
}

// Reconcile writes the MachineConfigs of one KubeletConfig, or deletes
// them when it is deleted.
//
// A conflict (the object changed since the cache copy, or another one took
// the same name suffix first) is setup's conflict policy: synced again
// soon, no error.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	return setup.RequeueOnConflict(r.reconcile(ctx, req))
}

func (r *Reconciler) reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	kc := &mcfgv1.KubeletConfig{}
	if err := r.Client.Get(ctx, req.NamespacedName, kc); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	log := logr.FromContextOrDiscard(ctx).WithValues("kubeletConfig", kc.Name)
	if !kc.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, mcfg.Release(ctx, r.Client, kc, mcfgv1.KubeletConfigFinalizer, "kubelet", log)
	}
	if err := setup.AddFinalizer(ctx, r.Client, kc, mcfgv1.KubeletConfigFinalizer); err != nil {
		return ctrl.Result{}, fmt.Errorf("adding the finalizer: %w", err)
	}
	s := &scope{kc: kc, orig: kc.DeepCopy(), log: log}
	if _, err := phase.Run(ctx, s, r.validate, r.selectPools, r.claimSuffix, r.writeConfigs); err != nil {
		return ctrl.Result{}, err
	}
	if err := r.writeStatus(ctx, s.orig, kc, s.written, s.failure, log); err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{RequeueAfter: resync}, nil
}

// scope is one sync of a KubeletConfig: what the phases read and found.
// A phase that meets a KubeletConfig that cannot be applied sets failure
// and stops the ones after it; the status says why.
type scope struct {
	kc, orig *mcfgv1.KubeletConfig
	log      logr.Logger
	user     *userSpec
	pools    []mcfgv1.MachineConfigPool
	suffix   string
	// written are the MachineConfigs written, none after a failure.
	written []string
	failure string
}

// fail records why the KubeletConfig cannot be applied and stops the sync
// (the MachineConfigs written before stay as they are).
func (s *scope) fail(why string) (phase.Result, error) {
	s.failure, s.written = why, nil
	return phase.Result{Stop: true}, nil
}

// selectPools is the phase that finds the pools the KubeletConfig selects.
func (r *Reconciler) selectPools(ctx context.Context, s *scope) (phase.Result, error) {
	pools, failure, err := r.selectedPools(ctx, s.kc)
	if err != nil {
		return phase.Result{}, err
	}
	if failure != "" {
		return s.fail(failure)
	}
	s.pools = pools
	return phase.Result{}, nil
}

// selectedPools are the pools the KubeletConfig's selector selects; an
// empty or missing selector selects none, which is a failure.
func (r *Reconciler) selectedPools(ctx context.Context, kc *mcfgv1.KubeletConfig) ([]mcfgv1.MachineConfigPool, string, error) {
	sel := kc.Spec.MachineConfigPoolSelector
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

// suffix is the KubeletConfig's name suffix, chosen among those the
// KubeletConfigs selecting the same pools leave free, and recorded once.
func (r *Reconciler) suffix(ctx context.Context, kc *mcfgv1.KubeletConfig, pools []mcfgv1.MachineConfigPool) (string, string, error) {
	if s, ok := kc.Annotations[mcfgv1.MCNameSuffixAnnotation]; ok {
		return s, "", nil
	}
	all := &mcfgv1.KubeletConfigList{}
	if err := r.Client.List(ctx, all); err != nil {
		return "", "", fmt.Errorf("listing KubeletConfigs: %w", err)
	}
	s, err := chooseSuffix(kc, all.Items, pools)
	if err != nil {
		return "", err.Error(), nil
	}
	// The optimistic lock makes two KubeletConfigs created together take
	// turns: the second one syncs again and sees the first one's suffix.
	p := setup.NewPatcher(r.Client, kc, setup.LockObject())
	if kc.Annotations == nil {
		kc.Annotations = map[string]string{}
	}
	kc.Annotations[mcfgv1.MCNameSuffixAnnotation] = s
	if err := p.Patch(ctx, kc); err != nil {
		return "", "", fmt.Errorf("recording the name suffix: %w", err)
	}
	return s, "", nil
}

// poolFragments are the pool's base MachineConfigs (mcfg.IsBase: the
// user's and the templates') in merge order.
func (r *Reconciler) poolFragments(ctx context.Context, pool *mcfgv1.MachineConfigPool) ([]mcfgv1.MachineConfig, error) {
	if pool.Spec.MachineConfigSelector == nil {
		return nil, nil
	}
	selector, err := metav1.LabelSelectorAsSelector(pool.Spec.MachineConfigSelector)
	if err != nil {
		return nil, nil // the render controller reports a bad pool selector
	}
	list := &mcfgv1.MachineConfigList{}
	if err := r.Client.List(ctx, list, client.MatchingLabelsSelector{Selector: selector}); err != nil {
		return nil, fmt.Errorf("listing the MachineConfigs of pool %s: %w", pool.Name, err)
	}
	var out []mcfgv1.MachineConfig
	for _, mc := range list.Items {
		if mcfg.IsBase(&mc) {
			out = append(out, mc)
		}
	}
	mcfg.SortFragments(out)
	return out, nil
}

// write creates or updates a generated MachineConfig. One of the same name
// that the KubeletConfig does not own is not touched: a failure.
func (r *Reconciler) write(ctx context.Context, kc *mcfgv1.KubeletConfig, want *mcfgv1.MachineConfig, log logr.Logger) (string, error) {
	existing := &mcfgv1.MachineConfig{}
	err := r.Client.Get(ctx, client.ObjectKeyFromObject(want), existing)
	if apierrors.IsNotFound(err) {
		if err := controllerutil.SetControllerReference(kc, want, r.Client.Scheme()); err != nil {
			return "", err
		}
		if err := r.Client.Create(ctx, want); err != nil {
			return "", fmt.Errorf("creating %s: %w", want.Name, err)
		}
		log.Info("Created generated kubelet MachineConfig", "machineConfig", want.Name)
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("reading %s: %w", want.Name, err)
	}
	if ref := metav1.GetControllerOf(existing); ref == nil || ref.UID != kc.UID {
		return fmt.Sprintf("MachineConfig %s exists and was not generated from this KubeletConfig", want.Name), nil
	}
	if equality.Semantic.DeepEqual(existing.Spec, want.Spec) && existing.Labels[mcfgv1.RoleLabel] == want.Labels[mcfgv1.RoleLabel] {
		return "", nil
	}
	p := setup.NewPatcher(r.Client, existing, setup.LockObject())
	existing.Spec = want.Spec
	existing.Labels = want.Labels
	existing.Annotations = want.Annotations
	if err := p.Patch(ctx, existing); err != nil {
		return "", fmt.Errorf("updating %s: %w", want.Name, err)
	}
	log.Info("Updated generated kubelet MachineConfig", "machineConfig", want.Name)
	return "", nil
}

// writeStatus sets Success and Failure, and the observed generation.
func (r *Reconciler) writeStatus(ctx context.Context, orig, kc *mcfgv1.KubeletConfig, written []string, failure string, log logr.Logger) error {
	success := metav1.Condition{Type: mcfgv1.KubeletConfigSuccess, Status: metav1.ConditionTrue, Reason: ReasonApplied,
		Message: "Wrote " + strings.Join(written, ", ")}
	failed := metav1.Condition{Type: mcfgv1.KubeletConfigFailure, Status: metav1.ConditionFalse, Reason: ReasonApplied}
	if failure != "" {
		success = metav1.Condition{Type: mcfgv1.KubeletConfigSuccess, Status: metav1.ConditionFalse, Reason: ReasonFailed, Message: failure}
		failed = metav1.Condition{Type: mcfgv1.KubeletConfigFailure, Status: metav1.ConditionTrue, Reason: ReasonFailed, Message: failure}
	}
	for _, c := range []*metav1.Condition{&success, &failed} {
		c.ObservedGeneration = kc.Generation
	}
	status := kc.Status.DeepCopy()
	meta.SetStatusCondition(&status.Conditions, success)
	meta.SetStatusCondition(&status.Conditions, failed)
	status.ObservedGeneration = kc.Generation
	if equality.Semantic.DeepEqual(*status, orig.Status) {
		return nil
	}
	if failure != "" {
		log.Info("KubeletConfig cannot be applied", "reason", failure)
		r.Recorder.Eventf(kc, nil, corev1.EventTypeWarning, ReasonFailed, "Apply", "%s", failure)
	} else {
		r.Recorder.Eventf(kc, nil, corev1.EventTypeNormal, ReasonApplied, "Apply", "Wrote %s", strings.Join(written, ", "))
	}
	p := setup.NewPatcher(r.Client, kc, setup.LockStatus())
	kc.Status = *status
	if err := p.Patch(ctx, kc); err != nil {
		return fmt.Errorf("writing the status of KubeletConfig %s: %w", kc.Name, err)
	}
	return nil
}
