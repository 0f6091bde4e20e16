package inplace

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/intstr"
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
