package inplace

import (
	"fmt"
	"math"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	mcv1 "github.com/machina-io/machina/core/api/machineconfiguration/v1"
	"github.com/machina-io/machina/core/internal/intorpercent"
)

// MaxUnavailable resolves a machine configuration pool's maxUnavailable
// over its total nodes, as MCO does: unset is 1, a percentage is of total
// rounded down, and a result of 0 becomes 1 (a pool always moves).
//
// Values out of range are refused, never clamped or wrapped: a negative
// number, a percentage that is not digits followed by '%', or one above
// 100%. The arithmetic is exact, so a percentage of any length cannot wrap
// into a negative budget that would stall the pool without a word. An
// absolute number above total stays valid (a pool that lost nodes must not
// become invalid); the budget then lets every node go.
func MaxUnavailable(v *intstr.IntOrString, total int) (int32, error) {
	if v == nil {
		return 1, nil
	}
	if intorpercent.Above100(*v) {
		return 0, fmt.Errorf("maxUnavailable %q must not be more than 100%%", v.StrVal)
	}
	n, err := intorpercent.Scaled("maxUnavailable", *v, int32(min(total, math.MaxInt32)), false)
	if err != nil {
		return 0, err
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
