package inplace

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	mcv1 "github.com/machina-io/machina/core/api/machineconfiguration/v1"
)

// MaxUnavailable resolves a machine configuration pool's maxUnavailable
// over its total nodes, as MCO does: unset is 1, a percentage is of total
// rounded down, and a result of 0 becomes 1 (a pool always moves). A
// negative number or a malformed percentage is an error.
func MaxUnavailable(v *intstr.IntOrString, total int) (int32, error) {
	if v == nil {
		return 1, nil
	}
	n, err := intstr.GetScaledValueFromIntOrPercent(v, total, false)
	if err != nil {
		return 0, fmt.Errorf("maxUnavailable %q: %w", v.String(), err)
	}
	if n < 0 {
		return 0, fmt.Errorf("maxUnavailable %q is negative", v.String())
	}
	return int32(max(n, 1)), nil
}

// ConfigUpdating tells whether a machine configuration pool is updating n:
// its desiredConfig is set and differs from currentConfig, or its agent is
// Working. A MachineDeployment's in-place rollout does not select such a
// node (the pool's update finishes first), and a pool does not start a node
// that an in-place rollout marked: one node is never driven by both.
func ConfigUpdating(n *corev1.Node) bool {
	desired := n.Annotations[mcv1.DesiredConfigAnnotation]
	return desired != "" && (desired != n.Annotations[mcv1.CurrentConfigAnnotation] ||
		n.Annotations[mcv1.StateAnnotation] == mcv1.MachineConfigStateWorking)
}
