package machinedeployment

import (
	"fmt"
	"math"

	"k8s.io/apimachinery/pkg/util/intstr"

	v1alpha1 "github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/internal/intorpercent"
)

// Defaults for an unset maxSurge or maxUnavailable: add one machine at a
// time and never go below the desired count, the safe choice for machines,
// which take minutes to create.
var (
	defaultMaxSurge       = intstr.FromInt32(1)
	defaultMaxUnavailable = intstr.FromInt32(0)
)

// updateBounds resolves an UpdateConfiguration (nil: all defaults) into
// maxSurge and maxUnavailable machine counts for replicas (resolveBounds).
// Every strategy with bounds reads its configuration through it.
func updateBounds(cfg *v1alpha1.UpdateConfiguration, replicas int32) (surge, unavailable int32, err error) {
	s, u := defaultMaxSurge, defaultMaxUnavailable
	if cfg != nil {
		if cfg.MaxSurge != nil {
			s = *cfg.MaxSurge
		}
		if cfg.MaxUnavailable != nil {
			u = *cfg.MaxUnavailable
		}
	}
	return resolveBounds(s, u, replicas)
}

// resolveBounds turns maxSurge and maxUnavailable into machine counts for
// desired replicas: a surge percentage rounds up, an unavailable percentage
// rounds down (so both err on the side of availability). When both come out
// as zero no rollout could make progress, so maxUnavailable becomes 1, as
// Kubernetes does.
//
// Values out of range are refused, never clamped: a negative number, a
// percentage that is not digits followed by '%', a maxUnavailable above
// 100%, or a surge that takes replicas+maxSurge beyond the largest machine
// count (2^31-1). The arithmetic is exact (no float, no int32 wrap-around),
// so a refusal here is what keeps a rollout from stalling on a negative or
// wrapped count. An absolute maxUnavailable above replicas stays valid (a
// deployment scaled down below it must not become invalid); maxUnavailable
// caps it at replicas, as Kubernetes does.
func resolveBounds(surge, unavailable intstr.IntOrString, desired int32) (int32, int32, error) {
	if desired < 0 {
		return 0, 0, fmt.Errorf("replicas %d must not be negative", desired)
	}
	s, err := intorpercent.Scaled("maxSurge", surge, desired, true)
	if err != nil {
		return 0, 0, err
	}
	u, err := intorpercent.Scaled("maxUnavailable", unavailable, desired, false)
	if err != nil {
		return 0, 0, err
	}
	// Checked on the percentage itself, so that the verdict does not depend
	// on the replicas (150% of 0 is still refused).
	if intorpercent.Above100(unavailable) {
		return 0, 0, fmt.Errorf("maxUnavailable %q must not be more than 100%%", unavailable.StrVal)
	}
	if int64(desired)+s > math.MaxInt32 {
		return 0, 0, fmt.Errorf("maxSurge %s is %d machines: with %d replicas that exceeds the largest machine count, %d",
			surge.String(), s, desired, math.MaxInt32)
	}
	if s == 0 && u == 0 {
		u = 1
	}
	return int32(s), int32(u), nil
}
