package machine

import (
	"context"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/internal/controller/setup"
	"github.com/machina-io/machina/core/internal/inplace"
)

// machinesOfNode maps a Node to the Machines whose label "node" names it
// (normally one; Machines of every watched namespace).
func (r *Reconciler) machinesOfNode(ctx context.Context, node *corev1.Node) []ctrl.Request {
	list := &v1alpha1.MachineList{}
	if err := r.Control.List(ctx, list, client.MatchingFields{setup.MachineNodeIndex: node.Name}); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing machines of node", "node", node.Name)
		return nil
	}
	return requestsFor(list.Items)
}

// machinesOfClass maps a MachineClass to the Machines that use it.
func (r *Reconciler) machinesOfClass(ctx context.Context, o client.Object) []ctrl.Request {
	list := &v1alpha1.MachineList{}
	if err := r.Control.List(ctx, list, client.InNamespace(o.GetNamespace()), client.MatchingFields{indexClassName: o.GetName()}); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing machines of class", "machineClass", client.ObjectKeyFromObject(o))
		return nil
	}
	return requestsFor(list.Items)
}

// machinesOfSecret maps a Secret to the Machines whose class refers to it.
func (r *Reconciler) machinesOfSecret(ctx context.Context, o client.Object) []ctrl.Request {
	classes := &v1alpha1.MachineClassList{}
	if err := r.Control.List(ctx, classes); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing machine classes")
		return nil
	}
	var reqs []ctrl.Request
	for i := range classes.Items {
		c := &classes.Items[i]
		if refersTo(c.SecretRef, c.Namespace, o) || refersTo(c.CredentialsSecretRef, c.Namespace, o) {
			reqs = append(reqs, r.machinesOfClass(ctx, c)...)
		}
	}
	return reqs
}

func refersTo(ref *corev1.SecretReference, classNamespace string, o client.Object) bool {
	if ref == nil || ref.Name != o.GetName() {
		return false
	}
	ns := ref.Namespace
	if ns == "" {
		ns = classNamespace
	}
	return ns == o.GetNamespace()
}

func requestsFor(machines []v1alpha1.Machine) []ctrl.Request {
	reqs := make([]ctrl.Request, 0, len(machines))
	for i := range machines {
		reqs = append(reqs, ctrl.Request{NamespacedName: types.NamespacedName{Namespace: machines[i].Namespace, Name: machines[i].Name}})
	}
	return reqs
}

// createdOnly lets only creations through: a Machine waiting for its class
// or Secret is retried as soon as it appears; changes to existing classes
// do not change existing VMs (the Driver API has no update call).
func createdOnly() predicate.Predicate {
	return predicate.Funcs{
		CreateFunc:  func(event.CreateEvent) bool { return true },
		UpdateFunc:  func(event.UpdateEvent) bool { return false },
		DeleteFunc:  func(event.DeleteEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
}

// classChanged lets through a MachineClass's creation (machines may wait
// for it) and changes of its generation: a changed provider spec or node
// template reaches the machines of the class at once (their node template,
// and the spec the next create or initialize sends), instead of at their
// next unrelated reconcile. Status-only and metadata-only writes do not
// fan out to every machine of the class.
func classChanged() predicate.Predicate {
	return predicate.Funcs{
		CreateFunc: func(event.CreateEvent) bool { return true },
		UpdateFunc: func(e event.UpdateEvent) bool {
			return e.ObjectOld != nil && e.ObjectNew != nil && e.ObjectOld.GetGeneration() != e.ObjectNew.GetGeneration()
		},
		DeleteFunc:  func(event.DeleteEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
}

// nodeChanged lets through the Node events the controller acts on:
// creation, deletion, and updates that change a condition's status, a
// label, an annotation or a taint. A label change covers the in-place
// update's labels (candidate-for-update, selected-for-update appearing,
// update-result changing: machine_inplace.go). Kubelet heartbeats, which change only
// timestamps, are dropped, so that a thousand healthy Nodes cause no
// reconciles.
// nodePriority is the queue priority of a Node's machines: urgent while the
// Node is in the step of an in-place update that the rollout's next wave
// waits on (selected: drain and go signal; the agent's result: the phase
// the deployment moves machines on), high for every other change. A
// rollout marks all of a set's nodes candidates at once and selects a few
// of them right after; the selected ones must not wait behind hundreds of
// candidates, whose machines only record the mark. An update's priority is
// the higher of its two Nodes' (setup.WithPriority), so the rollout's
// clean-up of an updated Node (which turns the machine Running and frees
// its slot) is urgent too.
func nodePriority(n *corev1.Node) int {
	if inplace.IsSelected(n) || inplace.Result(n) != "" {
		return setup.UrgentPriority
	}
	return setup.HighPriority
}

func nodeChanged() predicate.TypedPredicate[*corev1.Node] {
	return predicate.TypedFuncs[*corev1.Node]{
		UpdateFunc: func(e event.TypedUpdateEvent[*corev1.Node]) bool {
			o, n := e.ObjectOld, e.ObjectNew
			return !equality.Semantic.DeepEqual(o.Labels, n.Labels) ||
				!equality.Semantic.DeepEqual(o.Annotations, n.Annotations) ||
				!equality.Semantic.DeepEqual(o.Spec.Taints, n.Spec.Taints) ||
				o.Spec.Unschedulable != n.Spec.Unschedulable ||
				!o.DeletionTimestamp.Equal(n.DeletionTimestamp) ||
				!sameConditionStatuses(o.Status.Conditions, n.Status.Conditions)
		},
	}
}

func sameConditionStatuses(a, b []corev1.NodeCondition) bool {
	type key struct {
		t corev1.NodeConditionType
		s corev1.ConditionStatus
	}
	keys := func(cs []corev1.NodeCondition) []key {
		out := make([]key, 0, len(cs))
		for _, c := range cs {
			out = append(out, key{c.Type, c.Status})
		}
		slices.SortFunc(out, func(x, y key) int {
			if x.t < y.t {
				return -1
			}
			if x.t > y.t {
				return 1
			}
			return 0
		})
		return out
	}
	return slices.Equal(keys(a), keys(b))
}
