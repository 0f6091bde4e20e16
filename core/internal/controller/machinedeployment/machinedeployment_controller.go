package machinedeployment

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1alpha1 "github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/internal/controller/safety/freeze"
	"github.com/machina-io/machina/core/internal/controller/throttle"
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
}

// DefaultOptions returns MCM's settings.
func DefaultOptions() Options {
	return Options{AutoscalerScaleDownAnnotationDuringRollout: true, ResyncPeriod: 10 * time.Minute}
}

// Reconciler rolls MachineDeployments out through MachineSets the way the
// Kubernetes Deployment controller does with ReplicaSets: RollingUpdate within
// maxSurge and maxUnavailable, Recreate, pause, revisions and history,
// proportional scaling, the progress deadline, status and conditions. It also
// serves the cluster-autoscaler's protocol (trigger-deletion annotation) and
// marks the nodes of a rolling deployment in the target cluster.
type Reconciler struct {
	// Client reads from the manager's cache and writes to the API server of
	// the control cluster.
	Client client.Client
	// APIReader reads straight from the control cluster's API server, where
	// the cache may lag behind this controller's own writes. SetupWithManager
	// defaults it to the manager's API reader.
	APIReader client.Reader
	// Target is a client of the target cluster, where the Nodes are. Nil means
	// there is no target cluster: nodes are not touched.
	Target client.Client
	// Recorder records events on MachineDeployments.
	Recorder record.EventRecorder
	// Gate is the API server freeze (MCM issue #718): while it is frozen the
	// controller neither scales, creates nor deletes machine sets and leaves
	// nodes alone; it only keeps the status up to date. Nil is never frozen.
	Gate *freeze.Gate

	Options
}

// SetupWithManager registers the controller with the manager, with the given
// number of concurrent workers. Client, APIReader and Recorder default to the
// manager's; Target is left as given.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, workers int) error {
	if r.Client == nil {
		r.Client = mgr.GetClient()
	}
	if r.APIReader == nil {
		r.APIReader = mgr.GetAPIReader()
	}
	if r.Recorder == nil {
		r.Recorder = mgr.GetEventRecorderFor(ControllerName) //nolint:staticcheck // record.EventRecorder is this package's API
	}
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &v1alpha1.Machine{}, indexMachineController, machineControllerUID); err != nil {
		return fmt.Errorf("indexing machines by controller: %w", err)
	}
	// The sets' status and the machines' node labels change with every
	// machine of a rollout or scale-up; throttled, they sync the deployment
	// (and write its status) a few times a second, not once per machine.
	// Changes of the deployment itself are not held back.
	th := throttle.New(throttle.Window)
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		For(&v1alpha1.MachineDeployment{}).
		Watches(&v1alpha1.MachineSet{}, th.Handler(handler.EnqueueRequestForOwner(mgr.GetScheme(), mgr.GetRESTMapper(),
			&v1alpha1.MachineDeployment{}, handler.OnlyControllerOwner()))).
		Watches(&v1alpha1.MachineSet{}, handler.EnqueueRequestsFromMapFunc(r.deploymentsForOrphanSet)).
		Watches(&v1alpha1.Machine{}, th.Handler(handler.EnqueueRequestsFromMapFunc(r.deploymentForMachine)),
			builder.WithPredicates(machineChangesThatMatter())).
		WatchesRawSource(freeze.UnfreezeSource(r.Gate, mgr.GetCache(), func() client.ObjectList { return &v1alpha1.MachineDeploymentList{} })).
		WithOptions(controller.Options{MaxConcurrentReconciles: max(workers, 1)}).
		Complete(r)
}

var _ reconcile.Reconciler = &Reconciler{}

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
	ref := metav1.GetControllerOf(obj)
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
			return e.Object.GetLabels()[LabelNode] != ""
		},
		UpdateFunc: func(e event.UpdateEvent) bool {
			return e.ObjectOld.GetLabels()[LabelNode] != e.ObjectNew.GetLabels()[LabelNode] ||
				(e.ObjectOld.GetDeletionTimestamp() == nil) != (e.ObjectNew.GetDeletionTimestamp() == nil)
		},
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
}

// scope is what one sync knows: the deployment (a working copy whose status
// is changed in memory and written once at the end), its machine sets, and
// their machines.
type scope struct {
	d          *v1alpha1.MachineDeployment
	origStatus v1alpha1.MachineDeploymentStatus
	sets       []*v1alpha1.MachineSet
	new        *v1alpha1.MachineSet
	old        []*v1alpha1.MachineSet
	machines   map[types.UID][]*v1alpha1.Machine
	now        time.Time

	// revision is the revision the deployment's annotation should carry.
	revision string
	// skipStatus is set when the sync wrote the deployment's spec; the next
	// sync, triggered by that write, computes the status.
	skipStatus bool
	// retryNodes is set when a node could not be marked for the rollout
	// because it changed meanwhile; the sync runs again soon for it.
	retryNodes bool
}

func (s *scope) setRevision(rev string) { s.revision = rev }

// all returns the old sets and the new one.
func (s *scope) all() []*v1alpha1.MachineSet {
	out := append([]*v1alpha1.MachineSet(nil), s.old...)
	if s.new != nil {
		out = append(out, s.new)
	}
	return out
}

// oldMachinesLeft reports whether any old machine set still wants or has
// machines, terminating ones included.
func (s *scope) oldMachinesLeft() bool {
	for _, ms := range s.old {
		if ms.Spec.Replicas > 0 || ms.Status.Replicas > 0 {
			return true
		}
	}
	for _, ms := range s.old {
		if len(s.machines[ms.UID]) > 0 {
			return true
		}
	}
	return false
}

// Reconcile syncs one MachineDeployment. It reads like the Deployment
// controller's sync: deletion, selector check, machine sets, pause, the
// autoscaler's requests, then a scaling event, a rollback or a rollout step,
// and finally one status write.
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
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	resync := r.ResyncPeriod
	if resync <= 0 {
		resync = DefaultOptions().ResyncPeriod
	}
	if d.DeletionTimestamp != nil {
		return r.reconcileDelete(ctx, d)
	}
	if err := r.ensureFinalizer(ctx, d); err != nil {
		return ctrl.Result{}, err
	}
	s := &scope{d: d.DeepCopy(), origStatus: *d.Status.DeepCopy(), now: time.Now()}
	s.revision = s.d.Annotations[AnnotationRevision]

	selector, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil || selector.Empty() || !selector.Matches(labels.Set(d.Spec.Template.Labels)) {
		r.Recorder.Event(d, corev1.EventTypeWarning, "SelectingAll", "The selector is invalid, empty or does not match the template labels; a non-empty selector matching the template is required")
		st := *d.Status.DeepCopy()
		st.ObservedGeneration = d.Generation
		return ctrl.Result{}, r.patchStatus(ctx, s, st)
	}
	if err := validateStrategy(d); err != nil {
		// Nothing is scaled or rolled: a refused value is reported, never
		// clamped into something the user did not ask for. The condition
		// stays until the strategy is fixed; a spec change syncs again.
		msg := "The strategy cannot be acted on: " + err.Error()
		r.Recorder.Event(d, corev1.EventTypeWarning, ReasonInvalidStrategy, msg)
		ctrl.LoggerFrom(ctx).Info("Invalid strategy; not scaling or rolling out", "error", err.Error())
		st := *d.Status.DeepCopy()
		st.ObservedGeneration = d.Generation
		c := newCondition(v1alpha1.MachineDeploymentProgressing, v1alpha1.ConditionFalse, ReasonInvalidStrategy, msg, s.now)
		if cur := getCondition(&st, v1alpha1.MachineDeploymentProgressing); cur != nil && cur.Reason == ReasonInvalidStrategy && cur.Message != msg {
			removeCondition(&st, v1alpha1.MachineDeploymentProgressing) // another invalid value: new message
		}
		setCondition(&st, c)
		return ctrl.Result{}, r.patchStatus(ctx, s, st)
	}
	if c := getCondition(&s.d.Status, v1alpha1.MachineDeploymentProgressing); c != nil && c.Reason == ReasonInvalidStrategy {
		// Fixed: progress is judged afresh, from the machine set found or
		// created by this sync.
		removeCondition(&s.d.Status, v1alpha1.MachineDeploymentProgressing)
	}
	if err := r.loadSets(ctx, s, selector); err != nil {
		return ctrl.Result{}, err
	}
	if r.Gate.Frozen() {
		// What the cache shows may be stale: no scaling, no new or deleted
		// machine sets, no node marks; the counts are still reported. The
		// gate's source syncs the deployment again when it opens.
		ctrl.LoggerFrom(ctx).V(1).Info("API server freeze: not scaling machine sets", "reason", r.Gate.Reason())
		s.d.Status = calculateStatus(s.d, s.all(), s.new, s.now)
		if err := r.finish(ctx, s); err != nil {
			return ctrl.Result{}, err
		}
		return ctrl.Result{RequeueAfter: freeze.Recheck}, nil
	}

	requeue, syncErr := r.sync(ctx, s)
	if s.retryNodes && (requeue <= 0 || requeue > nodeConflictRetry) {
		requeue = nodeConflictRetry
	}
	if err := r.finish(ctx, s); err != nil {
		return ctrl.Result{}, errors.Join(syncErr, err)
	}
	if syncErr != nil {
		return ctrl.Result{}, syncErr
	}
	if requeue > 0 && requeue < resync {
		return ctrl.Result{RequeueAfter: requeue}, nil
	}
	return ctrl.Result{RequeueAfter: resync}, nil
}

// sync runs the steps that act on machine sets and computes the status into
// s.d.Status. It returns when to look again for a progress deadline.
func (r *Reconciler) sync(ctx context.Context, s *scope) (time.Duration, error) {
	d := s.d
	checkPausedConditions(d, s.now)
	if err := r.handleTriggerDeletion(ctx, s); err != nil {
		return 0, err
	}
	switch {
	case d.Spec.Paused:
		// A paused deployment still follows scaling, proportionally; it does
		// not roll.
		return 0, r.scaleOnly(ctx, s, true)
	case d.Spec.RollbackTo != nil:
		return 0, r.rollback(ctx, s)
	case isScalingEvent(d, s.all()):
		return 0, r.scaleOnly(ctx, s, false)
	}
	var err error
	if isRollingUpdate(d) {
		err = r.rolloutRolling(ctx, s)
	} else {
		err = r.rolloutRecreate(ctx, s)
	}
	st, recheck := rolloutStatus(d, s.all(), s.new, s.now)
	d.Status = st
	return recheck, err
}

// scaleOnly handles a scaling event or a paused deployment: the sets are
// scaled, history is cleaned up when paused, and the status counts refreshed
// without judging progress.
func (r *Reconciler) scaleOnly(ctx context.Context, s *scope, paused bool) error {
	if _, err := r.getNewMachineSet(ctx, s, false); err != nil {
		return err
	}
	err := r.scale(ctx, s)
	if err == nil && paused {
		err = r.cleanupHistory(ctx, s)
	}
	s.d.Status = calculateStatus(s.d, s.all(), s.new, s.now)
	return err
}

// loadSets claims the deployment's machine sets, splits them into the new
// one and the old ones, and groups the machines by set. The machines are the
// cache's own objects, not copies (copying every machine on every sync was
// most of the controller's CPU in a scale-up): they are only read, and must
// be deep-copied before a change.
func (r *Reconciler) loadSets(ctx context.Context, s *scope, selector labels.Selector) error {
	sets, err := r.claimMachineSets(ctx, s.d, selector)
	if err != nil {
		return err
	}
	s.sets = sets
	s.new, s.old = splitNewOld(s.d, sets)
	s.machines = map[types.UID][]*v1alpha1.Machine{}
	for _, ms := range sets {
		machines := &v1alpha1.MachineList{}
		if err := r.Client.List(ctx, machines, client.InNamespace(s.d.Namespace), client.MatchingFields{indexMachineController: string(ms.UID)}, client.UnsafeDisableDeepCopy); err != nil {
			return fmt.Errorf("listing machines of %s: %w", ms.Name, err)
		}
		for i := range machines.Items {
			s.machines[ms.UID] = append(s.machines[ms.UID], &machines.Items[i])
		}
	}
	return nil
}

// indexMachineController indexes cached Machines by the UID of their
// controller (a machine set), so that a deployment reads only its own
// machines.
const indexMachineController = "machinedeployment.machina.io/machine-controller-uid"

func machineControllerUID(o client.Object) []string {
	if ref := metav1.GetControllerOf(o); ref != nil {
		return []string{string(ref.UID)}
	}
	return nil
}

// finish writes what the sync changed on the deployment: the revision
// annotation (metadata) and the status, each only if it differs.
func (r *Reconciler) finish(ctx context.Context, s *scope) error {
	if s.skipStatus {
		return nil
	}
	if s.revision != "" && s.d.Annotations[AnnotationRevision] != s.revision {
		rev := s.revision
		if err := r.patchDeploymentMeta(ctx, s, func(d *v1alpha1.MachineDeployment) {
			d.Annotations[AnnotationRevision] = rev
		}); err != nil {
			return err
		}
	}
	return r.patchStatus(ctx, s, s.d.Status)
}

// patchDeploymentMeta changes the deployment's metadata with an optimistic
// lock and takes the new metadata (resourceVersion included) into s.d,
// leaving the in-memory status alone.
func (r *Reconciler) patchDeploymentMeta(ctx context.Context, s *scope, change func(*v1alpha1.MachineDeployment)) error {
	base := s.d.DeepCopy()
	base.Status = s.origStatus
	updated := base.DeepCopy()
	if updated.Annotations == nil {
		updated.Annotations = map[string]string{}
	}
	change(updated)
	if err := r.Client.Patch(ctx, updated, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("updating machine deployment %s: %w", s.d.Name, err)
	}
	s.d.ObjectMeta = updated.ObjectMeta
	return nil
}

// patchStatus writes st if it differs from the stored status, with an
// optimistic lock: a status computed from a stale copy is not written.
func (r *Reconciler) patchStatus(ctx context.Context, s *scope, st v1alpha1.MachineDeploymentStatus) error {
	if apiequality.Semantic.DeepEqual(s.origStatus, st) {
		return nil
	}
	base := s.d.DeepCopy()
	base.Status = s.origStatus
	updated := base.DeepCopy()
	updated.Status = st
	if err := r.Client.Status().Patch(ctx, updated, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("updating status of machine deployment %s: %w", s.d.Name, err)
	}
	return nil
}

// ensureFinalizer adds MCM's finalizer, so that deleting a deployment first
// deletes its machine sets.
func (r *Reconciler) ensureFinalizer(ctx context.Context, d *v1alpha1.MachineDeployment) error {
	if controllerutil.ContainsFinalizer(d, FinalizerName) {
		return nil
	}
	orig := d.DeepCopy()
	controllerutil.AddFinalizer(d, FinalizerName)
	if err := r.Client.Patch(ctx, d, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("adding finalizer to machine deployment %s: %w", d.Name, err)
	}
	return nil
}

// reconcileDelete deletes the machine sets of a deployment being deleted and
// removes the finalizer once they are gone. The sets delete their machines
// the same way, so the deployment goes last. Owner references alone are not
// enough: a control plane without a garbage collector would leave them.
func (r *Reconciler) reconcileDelete(ctx context.Context, d *v1alpha1.MachineDeployment) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(d, FinalizerName) {
		return ctrl.Result{}, nil
	}
	live := &v1alpha1.MachineSetList{}
	if err := r.APIReader.List(ctx, live, client.InNamespace(d.Namespace)); err != nil {
		return ctrl.Result{}, fmt.Errorf("listing machine sets: %w", err)
	}
	remaining := 0
	for i := range live.Items {
		ms := &live.Items[i]
		if ref := metav1.GetControllerOf(ms); ref == nil || ref.UID != d.UID {
			continue
		}
		remaining++
		if ms.DeletionTimestamp != nil {
			continue
		}
		if err := r.Client.Delete(ctx, ms, client.Preconditions{UID: &ms.UID}); err != nil && !apierrors.IsNotFound(err) {
			return ctrl.Result{}, fmt.Errorf("deleting machine set %s: %w", ms.Name, err)
		}
	}
	if remaining > 0 {
		return ctrl.Result{RequeueAfter: time.Minute}, nil
	}
	orig := d.DeepCopy()
	controllerutil.RemoveFinalizer(d, FinalizerName)
	if err := r.Client.Patch(ctx, d, client.MergeFrom(orig)); err != nil && !apierrors.IsNotFound(err) {
		return ctrl.Result{}, fmt.Errorf("removing finalizer of machine deployment %s: %w", d.Name, err)
	}
	return ctrl.Result{}, nil
}
