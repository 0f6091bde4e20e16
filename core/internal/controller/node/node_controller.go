package node

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/internal/controller/setup"
)

// ControllerName names the controller in logs, metrics and events.
const ControllerName = "node"

// Event reasons.
const (
	// ReasonNodeDeleted (on the Node and the Machine): the Node is being
	// deleted, so its Machine is deleted.
	ReasonNodeDeleted = "NodeDeleted"
	// ReasonAmbiguousNode (on the Node): several Machines claim the Node, so
	// its deletion deletes none of them.
	ReasonAmbiguousNode = "AmbiguousNode"
	// ReasonReleased (on the Node): the Node is being deleted and no Machine
	// claims it, so the finalizer was removed.
	ReasonReleased = "Released"
	// ReasonTriggerDeletion is the reason of the events of a deletion asked
	// for with the Node annotation trigger-deletion-by-mcm.
	ReasonTriggerDeletion = "TriggerDeletion"
)

// Reconciler keeps the Node finalizer and turns a Node deletion into the
// deletion of its Machine.
type Reconciler struct {
	// Control reads Machines (from the manager's cache) and deletes them.
	Control client.Client
	// Target reads Nodes (from the target cluster's cache) and writes them.
	Target client.Client
	// ControlRecorder records events on Machines.
	ControlRecorder events.EventRecorder
	// TargetRecorder records events on Nodes.
	TargetRecorder events.EventRecorder
	// UnmanagedAfter is the age after which a Node no Machine names is
	// annotated not-managed-by-mcm (--machine-creation-timeout);
	// DefaultUnmanagedAfter when zero (node_unmanaged.go).
	UnmanagedAfter time.Duration

	added added
}

// SetupWithManager registers the controller with mgr, whose cluster holds
// the Machines, watching the Nodes of target (mgr itself when both live in
// one cluster, or a cluster.Cluster added to mgr), with the given number of
// concurrent workers.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, env setup.Env) error {
	target, workers := env.Target, env.Workers
	if target == nil {
		return errors.New("node controller: a target cluster is required")
	}
	if r.Control == nil {
		r.Control = mgr.GetClient()
	}
	if r.Target == nil {
		r.Target = target.GetClient()
	}
	if r.ControlRecorder == nil {
		r.ControlRecorder = setup.Recorder(mgr, ControllerName)
	}
	if r.TargetRecorder == nil {
		r.TargetRecorder = setup.Recorder(target, ControllerName)
	}
	if err := setup.IndexMachines(mgr); err != nil {
		return err
	}

	// A Node matters when it appears, is deleted, its finalizers change
	// (someone removed ours) or the trigger-deletion annotation appears.
	// Heartbeats and status updates do not.
	nodeChanged := predicate.TypedFuncs[*corev1.Node]{
		UpdateFunc: func(e event.TypedUpdateEvent[*corev1.Node]) bool {
			return !slices.Equal(e.ObjectOld.Finalizers, e.ObjectNew.Finalizers) ||
				!e.ObjectOld.DeletionTimestamp.Equal(e.ObjectNew.DeletionTimestamp) ||
				deletionTriggered(e.ObjectOld) != deletionTriggered(e.ObjectNew)
		},
	}
	// A Machine matters when it names a Node, stops naming it, or starts
	// being deleted (its Node must not get the finalizer back then).
	machineChanged := predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			return nodeNameOf(e.ObjectOld) != nodeNameOf(e.ObjectNew) ||
				e.ObjectOld.GetDeletionTimestamp().IsZero() != e.ObjectNew.GetDeletionTimestamp().IsZero()
		},
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		WatchesRawSource(source.Kind(target.GetCache(), &corev1.Node{},
			&handler.TypedEnqueueRequestForObject[*corev1.Node]{}, nodeChanged)).
		Watches(&v1alpha1.Machine{}, handler.EnqueueRequestsFromMapFunc(nodeOfMachine),
			builder.WithPredicates(machineChanged)).
		WithOptions(controller.Options{MaxConcurrentReconciles: max(workers, 1)}).
		Complete(r)
}

var _ reconcile.Reconciler = &Reconciler{}

// nodeNameOf returns the Node a Machine names in its label "node".
func nodeNameOf(obj client.Object) string {
	return obj.GetLabels()[v1alpha1.NodeLabelKey]
}

// nodeOfMachine maps a Machine to its Node. For updates controller-runtime
// calls it with the old and the new Machine, so a Node that loses its
// Machine hears of it.
func nodeOfMachine(_ context.Context, obj client.Object) []reconcile.Request {
	if name := nodeNameOf(obj); name != "" {
		return []reconcile.Request{{NamespacedName: client.ObjectKey{Name: name}}}
	}
	return nil
}

// Reconcile keeps the finalizer on a Node of a live Machine and, when the
// Node is being deleted, deletes its Machine or releases the Node. A
// conflict is setup's conflict policy: reconciled again soon, no error.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	return setup.RequeueOnConflict(r.reconcile(ctx, req))
}

func (r *Reconciler) reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	node := &corev1.Node{}
	if err := r.Target.Get(ctx, req.NamespacedName, node); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	machines, err := r.machinesOf(ctx, node.Name)
	if err != nil {
		return ctrl.Result{}, err
	}
	if node.DeletionTimestamp.IsZero() {
		if deletionTriggered(node) && anyLive(machines) {
			return r.deleteMachineOf(ctx, node, machines, ReasonTriggerDeletion,
				fmt.Sprintf("the node has the annotation %s=true", v1alpha1.TriggerDeletionByMCMAnnotation))
		}
		res, err := r.ensureFinalizer(ctx, node, machines)
		if err != nil || res.RequeueAfter > 0 {
			return res, err
		}
		return r.markUnmanaged(ctx, node, machines)
	}
	return r.reconcileDelete(ctx, node, machines)
}

// machinesOf lists, from the cache, the Machines whose label names the Node.
func (r *Reconciler) machinesOf(ctx context.Context, nodeName string) ([]v1alpha1.Machine, error) {
	list := &v1alpha1.MachineList{}
	if err := r.Control.List(ctx, list, client.MatchingFields{setup.MachineNodeIndex: nodeName}); err != nil {
		return nil, fmt.Errorf("listing machines of node %s: %w", nodeName, err)
	}
	return list.Items, nil
}

// ensureFinalizer adds the finalizer to a Node whose Machine is live. A
// Machine being deleted removes the finalizer at its node-deletion step;
// adding it back then would keep the Node forever.
func (r *Reconciler) ensureFinalizer(ctx context.Context, node *corev1.Node, machines []v1alpha1.Machine) (ctrl.Result, error) {
	if controllerutil.ContainsFinalizer(node, v1alpha1.NodeFinalizer) {
		r.added.seen(node.UID)
		return ctrl.Result{}, nil
	}
	if !anyLive(machines) {
		return ctrl.Result{}, nil
	}
	if wait := r.added.pending(node.UID, time.Now()); wait > 0 {
		// Added a moment ago; the cache has not caught up. Its event (a
		// finalizer change) brings the Node back; the requeue is the
		// safety net.
		return ctrl.Result{RequeueAfter: wait}, nil
	}
	// A strategic merge patch adds this finalizer to whatever finalizers the
	// Node has by then: no resourceVersion is needed, so the kubelet's
	// status updates (a Node changes every few seconds while it boots) do not
	// make it fail with a conflict.
	p := setup.NewPatcher(r.Target, node, setup.Strategic())
	controllerutil.AddFinalizer(node, v1alpha1.NodeFinalizer)
	if err := p.Patch(ctx, node); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(fmt.Errorf("adding finalizer to node: %w", err))
	}
	r.added.record(node.UID, time.Now())
	ctrl.LoggerFrom(ctx).V(1).Info("Added finalizer to node", "machine", klogRef(&machines[0]))
	return ctrl.Result{}, nil
}

// reconcileDelete handles a Node being deleted that still has the
// finalizer: its Machine is deleted, and the Machine's deletion flow releases
// the Node; a Node no Machine claims is released here.
func (r *Reconciler) reconcileDelete(ctx context.Context, node *corev1.Node, machines []v1alpha1.Machine) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(node, v1alpha1.NodeFinalizer) {
		return ctrl.Result{}, nil
	}
	if len(machines) == 0 {
		log := ctrl.LoggerFrom(ctx)
		p := setup.NewPatcher(r.Target, node, setup.Strategic())
		controllerutil.RemoveFinalizer(node, v1alpha1.NodeFinalizer)
		if err := p.Patch(ctx, node); err != nil {
			return ctrl.Result{}, client.IgnoreNotFound(fmt.Errorf("removing finalizer from node: %w", err))
		}
		log.Info("Released node being deleted: no machine claims it")
		r.TargetRecorder.Eventf(node, nil, corev1.EventTypeNormal, ReasonReleased, "Delete",
			"No machine claims the node any more; finalizer removed")
		return ctrl.Result{}, nil
	}
	return r.deleteMachineOf(ctx, node, machines, ReasonNodeDeleted, "the node is being deleted")
}

// deletionTriggered reports whether a Node asks for its Machine's deletion
// with the annotation trigger-deletion-by-mcm=true.
func deletionTriggered(node *corev1.Node) bool {
	return node.Annotations[v1alpha1.TriggerDeletionByMCMAnnotation] == "true"
}

// deleteMachineOf deletes the one Machine that claims node, for the reason
// why. Several claimants delete none: on a label collision the wrong VM
// could go.
func (r *Reconciler) deleteMachineOf(ctx context.Context, node *corev1.Node, machines []v1alpha1.Machine, reason, why string) (ctrl.Result, error) {
	log := ctrl.LoggerFrom(ctx)
	switch {
	case len(machines) == 0:
		return ctrl.Result{}, nil
	case len(machines) > 1:
		// Deleting machines on a label collision could delete the wrong VM;
		// a human must sort it out.
		names := make([]string, 0, len(machines))
		for i := range machines {
			names = append(names, klogRef(&machines[i]))
		}
		log.Info("Node is claimed by several machines; deleting none", "why", why, "machines", names)
		r.TargetRecorder.Eventf(node, nil, corev1.EventTypeWarning, ReasonAmbiguousNode, "Delete",
			"Node is claimed by several machines (%v); none is deleted (%s), delete the right one by hand", names, why)
		return ctrl.Result{}, nil
	}

	m := &machines[0]
	if !m.DeletionTimestamp.IsZero() {
		// Its deletion flow is under way and will release the Node.
		return ctrl.Result{}, nil
	}
	if err := r.Control.Delete(ctx, m, client.Preconditions{UID: &m.UID}); err != nil {
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			// Gone, or replaced by another Machine of the same name: look
			// again with a fresh cache.
			return ctrl.Result{RequeueAfter: setup.ConflictRetry}, nil
		}
		return ctrl.Result{}, fmt.Errorf("deleting machine %s of node (%s): %w", klogRef(m), why, err)
	}
	log.Info("Deleted the node's machine", "why", why, "machine", klogRef(m))
	r.TargetRecorder.Eventf(node, nil, corev1.EventTypeNormal, reason, "Delete",
		"Deleting machine %s: %s", klogRef(m), why)
	r.ControlRecorder.Eventf(m, nil, corev1.EventTypeNormal, reason, "Delete",
		"Deleting the machine of node %s: %s", node.Name, why)
	return ctrl.Result{}, nil
}

// anyLive reports whether a Machine of the list is not being deleted.
func anyLive(machines []v1alpha1.Machine) bool {
	for i := range machines {
		if machines[i].DeletionTimestamp.IsZero() {
			return true
		}
	}
	return false
}

func klogRef(m *v1alpha1.Machine) string {
	return m.Namespace + "/" + m.Name
}
