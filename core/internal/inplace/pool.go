package inplace

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	mcv1 "github.com/machina-io/machina/core/api/machineconfiguration/v1"
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
	var n int64
	switch v.Type {
	case intstr.Int:
		if v.IntVal < 0 {
			return 0, fmt.Errorf("maxUnavailable %d must not be negative", v.IntVal)
		}
		n = int64(v.IntVal)
	case intstr.String:
		digits, ok := strings.CutSuffix(v.StrVal, "%")
		p, err := strconv.ParseUint(digits, 10, 64)
		if !ok || digits == "" || strings.TrimLeft(digits, "0123456789") != "" || (err != nil && !errors.Is(err, strconv.ErrRange)) {
			return 0, fmt.Errorf("maxUnavailable %q must be a number or a percentage such as \"10%%\"", v.StrVal)
		}
		if err != nil || p > 100 {
			return 0, fmt.Errorf("maxUnavailable %q must not be more than 100%%", v.StrVal)
		}
		n = int64(p) * int64(min(total, math.MaxInt32)) / 100
	default:
		return 0, fmt.Errorf("maxUnavailable is neither a number nor a percentage")
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
