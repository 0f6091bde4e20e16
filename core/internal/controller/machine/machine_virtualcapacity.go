package machine

import (
	"context"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/internal/controller/phase"
)

// reconcileVirtualCapacity puts the class's nodeTemplate.virtualCapacity
// into the Node's capacity and allocatable, as MCM does (machine-controller-manager
// pkg/util/provider/machinecontroller, virtual capacity of the node
// template): extended resources the VM does not report itself (a scheduler
// hint, a licence count), so that pods asking for them schedule on these
// Nodes as the cluster-autoscaler assumed from the template. What was
// applied is recorded on the Node in the annotation
// node.machine.sapcloud.io/last-applied-virtual-capacity (JSON); a
// resource dropped from the template is removed from the Node, and
// resources anyone else put there are left alone.
func (r *Reconciler) reconcileVirtualCapacity(ctx context.Context, s *scope) (phase.Result, error) {
	node, err := r.loadNode(ctx, s)
	if err != nil || node == nil {
		return phase.Result{}, err
	}
	desired, err := r.virtualCapacity(ctx, s)
	if err != nil {
		return phase.Result{}, err
	}
	last := corev1.ResourceList{}
	if raw := node.Annotations[v1alpha1.LastAppliedVirtualCapacityAnnotation]; raw != "" {
		if err := json.Unmarshal([]byte(raw), &last); err != nil {
			s.log.Info("Ignoring a malformed annotation", "annotation", v1alpha1.LastAppliedVirtualCapacityAnnotation)
			last = corev1.ResourceList{}
		}
	}
	if len(desired) == 0 && len(last) == 0 {
		return phase.Result{}, nil
	}

	updated := node.DeepCopy()
	updated.Status.Capacity = withVirtual(node.Status.Capacity, last, desired)
	updated.Status.Allocatable = withVirtual(node.Status.Allocatable, last, desired)
	if !sameResources(node.Status.Capacity, updated.Status.Capacity) || !sameResources(node.Status.Allocatable, updated.Status.Allocatable) {
		if err := r.writeNode(ctx, node, updated); err != nil {
			if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
				return phase.Result{RequeueAfter: r.Options.ShortRetry}, nil
			}
			return phase.Result{}, fmt.Errorf("applying the virtual capacity to node %s: %w", node.Name, err)
		}
	}
	record, err := json.Marshal(desired)
	if err != nil {
		return phase.Result{}, err
	}
	if len(desired) == 0 {
		record = nil
	}
	if node.Annotations[v1alpha1.LastAppliedVirtualCapacityAnnotation] == string(record) {
		s.node = updated
		return phase.Result{}, nil
	}
	annotated := updated.DeepCopy()
	if annotated.Annotations == nil {
		annotated.Annotations = map[string]string{}
	}
	if record == nil {
		delete(annotated.Annotations, v1alpha1.LastAppliedVirtualCapacityAnnotation)
	} else {
		annotated.Annotations[v1alpha1.LastAppliedVirtualCapacityAnnotation] = string(record)
	}
	if err := r.writeNode(ctx, updated, annotated); err != nil {
		if apierrors.IsNotFound(err) {
			return phase.Result{}, nil
		}
		return phase.Result{}, fmt.Errorf("recording the virtual capacity on node %s: %w", node.Name, err)
	}
	s.log.V(1).Info("Applied virtual capacity", "node", node.Name)
	s.node = annotated
	return phase.Result{}, nil
}

// virtualCapacity is nodeTemplate.virtualCapacity of the machine's class,
// read from the cache without its secrets; nil when the class has none or
// is gone (the create phase reports a missing class).
func (r *Reconciler) virtualCapacity(ctx context.Context, s *scope) (corev1.ResourceList, error) {
	class := s.class
	if class == nil {
		c := &v1alpha1.MachineClass{}
		err := r.Control.Get(ctx, client.ObjectKey{Namespace: s.machine.Namespace, Name: s.machine.Spec.Class.Name}, c)
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("reading MachineClass %s: %w", s.machine.Spec.Class.Name, err)
		}
		class = c
	}
	if class.NodeTemplate == nil {
		return nil, nil
	}
	return class.NodeTemplate.VirtualCapacity, nil
}

// withVirtual is current without the resources applied last time and with
// the desired ones.
func withVirtual(current, last, desired corev1.ResourceList) corev1.ResourceList {
	out := corev1.ResourceList{}
	for k, v := range current {
		if _, applied := last[k]; applied {
			if _, still := desired[k]; !still {
				continue
			}
		}
		out[k] = v
	}
	for k, v := range desired {
		out[k] = v
	}
	return out
}

func sameResources(a, b corev1.ResourceList) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		w, ok := b[k]
		if !ok || v.Cmp(w) != 0 {
			return false
		}
	}
	return true
}
