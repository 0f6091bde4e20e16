package node

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/internal/controller/setup"
)

// DefaultUnmanagedAfter is how old a Node without a Machine must be before
// it is marked not managed: MCM's default creation timeout, the longest a
// Machine may take to name its Node.
const DefaultUnmanagedAfter = 20 * time.Minute

// notManagedValue is the value MCM writes.
const notManagedValue = "1"

// markUnmanaged keeps the annotation node.machine.sapcloud.io/not-managed-by-mcm
// as MCM does (machine-controller-manager pkg/util/provider/machinecontroller
// machine_safety.go, AnnotateNodesUnmanagedByMCM): "1" on a Node that no
// Machine names and that is older than the creation timeout (younger ones
// may still be joining for a Machine), removed as soon as a Machine names
// it. Such a Node is otherwise left alone: it gets no finalizer, and its
// deletion deletes no Machine. A Node is reconciled again when it reaches
// the age.
func (r *Reconciler) markUnmanaged(ctx context.Context, node *corev1.Node, machines []v1alpha1.Machine) (ctrl.Result, error) {
	_, marked := node.Annotations[v1alpha1.NotManagedByMCMAnnotation]
	if len(machines) > 0 {
		if !marked {
			return ctrl.Result{}, nil
		}
		return r.patchUnmanaged(ctx, node, false)
	}
	if marked {
		return ctrl.Result{}, nil
	}
	after := r.UnmanagedAfter
	if after <= 0 {
		after = DefaultUnmanagedAfter
	}
	if wait := time.Until(node.CreationTimestamp.Add(after)); wait > 0 {
		return ctrl.Result{RequeueAfter: wait}, nil
	}
	return r.patchUnmanaged(ctx, node, true)
}

// patchUnmanaged sets or removes the annotation with a merge patch (no
// conflict with the kubelet's writes).
func (r *Reconciler) patchUnmanaged(ctx context.Context, node *corev1.Node, set bool) (ctrl.Result, error) {
	p := setup.NewPatcher(r.Target, node)
	if set {
		if node.Annotations == nil {
			node.Annotations = map[string]string{}
		}
		node.Annotations[v1alpha1.NotManagedByMCMAnnotation] = notManagedValue
	} else {
		delete(node.Annotations, v1alpha1.NotManagedByMCMAnnotation)
	}
	if err := p.Patch(ctx, node); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(fmt.Errorf("annotating node %s: %w", v1alpha1.NotManagedByMCMAnnotation, err))
	}
	ctrl.LoggerFrom(ctx).Info("Node annotation "+v1alpha1.NotManagedByMCMAnnotation, "set", set)
	return ctrl.Result{}, nil
}
