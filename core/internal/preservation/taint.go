package preservation

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/machina-io/machina/core/api/v1alpha1"
)

// HasTaint reports whether n carries the preserved taint, whatever its
// effect.
func HasTaint(n *corev1.Node) bool {
	for _, t := range n.Spec.Taints {
		if t.Key == v1alpha1.PreservedTaintKey {
			return true
		}
	}
	return false
}

// AddTaint gives n the preserved NoSchedule taint, unless it has it.
func AddTaint(n *corev1.Node) {
	for _, t := range n.Spec.Taints {
		if t.Key == v1alpha1.PreservedTaintKey && t.Effect == corev1.TaintEffectNoSchedule {
			return
		}
	}
	n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: v1alpha1.PreservedTaintKey, Effect: corev1.TaintEffectNoSchedule})
}

// RemoveTaint removes every preserved taint of n; n's taint list is left as
// it was when it had none.
func RemoveTaint(n *corev1.Node) {
	var kept []corev1.Taint
	for _, t := range n.Spec.Taints {
		if t.Key != v1alpha1.PreservedTaintKey {
			kept = append(kept, t)
		}
	}
	if len(kept) != len(n.Spec.Taints) {
		n.Spec.Taints = kept
	}
}
