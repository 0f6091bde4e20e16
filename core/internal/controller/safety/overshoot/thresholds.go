package overshoot

import (
	"fmt"
	"math"
	"math/big"
	"strings"

	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/machina-io/machina/core/api/v1alpha1"
)

// defaultMaxSurge is the maxSurge of a rolling deployment that does not
// set one; the MachineDeployment controller uses the same default.
var defaultMaxSurge = intstr.FromInt32(1)

// Thresholds are the machine counts at which a MachineSet is frozen
// (Higher) and unfrozen (Lower).
type Thresholds struct {
	Higher, Lower int32
}

// ComputeThresholds returns the thresholds of ms, owned by md (nil for a
// standalone set), for the given safetyUp and safetyDown.
//
// The sums are taken in int64 and kept within int32 (found by fuzzing): a
// limit beyond 2^31-1 can never be reached by a machine count, and a sum
// that wrapped around would freeze a set at once.
func ComputeThresholds(ms *v1alpha1.MachineSet, md *v1alpha1.MachineDeployment, safetyUp, safetyDown int32) (Thresholds, error) {
	higher := 2*int64(ms.Spec.Replicas) + int64(safetyUp)
	if md != nil {
		surge, err := maxSurge(md)
		if err != nil {
			return Thresholds{}, err
		}
		higher = int64(md.Spec.Replicas) + int64(surge) + int64(safetyUp)
	}
	return Thresholds{Higher: toInt32(higher), Lower: toInt32(higher - int64(safetyDown))}, nil
}

func toInt32(n int64) int32 {
	return int32(min(max(n, math.MinInt32), math.MaxInt32))
}

// maxSurge is how many machines md may have above its replicas during an
// update, rounded up: its rollingUpdate (or inPlaceUpdate) maxSurge, and 0
// for Recreate.
func maxSurge(md *v1alpha1.MachineDeployment) (int32, error) {
	var cfg *v1alpha1.UpdateConfiguration
	switch md.Spec.Strategy.Type {
	case v1alpha1.RecreateMachineDeploymentStrategyType:
		return 0, nil
	case v1alpha1.InPlaceUpdateMachineDeploymentStrategyType:
		if u := md.Spec.Strategy.InPlaceUpdate; u != nil {
			cfg = &u.UpdateConfiguration
		}
	default: // RollingUpdate, also when unset
		if u := md.Spec.Strategy.RollingUpdate; u != nil {
			cfg = &u.UpdateConfiguration
		}
	}
	surge := defaultMaxSurge
	if cfg != nil && cfg.MaxSurge != nil {
		surge = *cfg.MaxSurge
	}
	// Exact arithmetic, refusing what the MachineDeployment controller
	// refuses (it reports the deployment): a negative surge, or one beyond
	// an int32. Kubernetes' float helper wraps a huge percentage around.
	if surge.Type == intstr.Int {
		if surge.IntVal < 0 {
			return 0, fmt.Errorf("MachineDeployment %s: maxSurge %d is negative", md.Name, surge.IntVal)
		}
		return surge.IntVal, nil
	}
	pct, ok := new(big.Int).SetString(strings.TrimSuffix(surge.StrVal, "%"), 10)
	if !ok || !strings.HasSuffix(surge.StrVal, "%") || pct.Sign() < 0 {
		return 0, fmt.Errorf("MachineDeployment %s: maxSurge %q is not a number or a percentage", md.Name, surge.StrVal)
	}
	n, rem := new(big.Int).QuoRem(pct.Mul(pct, big.NewInt(int64(max(md.Spec.Replicas, 0)))), big.NewInt(100), new(big.Int))
	if rem.Sign() > 0 {
		n.Add(n, big.NewInt(1))
	}
	if !n.IsInt64() || n.Int64() > math.MaxInt32 {
		return 0, fmt.Errorf("MachineDeployment %s: maxSurge %q is beyond the largest machine count", md.Name, surge.StrVal)
	}
	return int32(n.Int64()), nil
}
