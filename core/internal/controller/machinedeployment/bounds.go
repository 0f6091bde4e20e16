package machinedeployment

import (
	"fmt"
	"math"
	"math/big"
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/util/intstr"

	v1alpha1 "github.com/machina-io/machina/core/api/v1alpha1"
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
	s, err := scaledValue("maxSurge", surge, desired, true)
	if err != nil {
		return 0, 0, err
	}
	u, err := scaledValue("maxUnavailable", unavailable, desired, false)
	if err != nil {
		return 0, 0, err
	}
	// Checked on the percentage itself, so that the verdict does not depend
	// on the replicas (150% of 0 is still refused).
	if p, ok := new(big.Int).SetString(strings.TrimSuffix(unavailable.StrVal, "%"), 10); ok &&
		unavailable.Type == intstr.String && p.Cmp(big.NewInt(100)) > 0 {
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

// percentRE is the form of a percentage, as Kubernetes validates it for a
// Deployment: digits and a percent sign, nothing else (no sign, no blanks).
var percentRE = regexp.MustCompile(`^[0-9]+%$`)

// scaledValue resolves one bound: a number as it is, a percentage of total
// rounded up or down. The result is exact and at least 0; a percentage that
// cannot give a machine count (at most 2^31-1) is refused.
func scaledValue(name string, v intstr.IntOrString, total int32, roundUp bool) (int64, error) {
	switch v.Type {
	case intstr.Int:
		if v.IntVal < 0 {
			return 0, fmt.Errorf("%s %d must not be negative", name, v.IntVal)
		}
		return int64(v.IntVal), nil
	case intstr.String:
		if !percentRE.MatchString(v.StrVal) {
			return 0, fmt.Errorf("%s %q must be a number or a percentage such as \"25%%\"", name, v.StrVal)
		}
		p, ok := new(big.Int).SetString(strings.TrimSuffix(v.StrVal, "%"), 10)
		if !ok {
			return 0, fmt.Errorf("%s %q must be a number or a percentage such as \"25%%\"", name, v.StrVal)
		}
		// p*total/100, rounded as asked, in exact arithmetic: the percentage
		// may have any number of digits.
		n, rem := new(big.Int).QuoRem(p.Mul(p, big.NewInt(int64(total))), big.NewInt(100), new(big.Int))
		if roundUp && rem.Sign() > 0 {
			n.Add(n, big.NewInt(1))
		}
		if !n.IsInt64() || n.Int64() > math.MaxInt32 {
			return 0, fmt.Errorf("%s %q of %d replicas exceeds the largest machine count, %d", name, v.StrVal, total, math.MaxInt32)
		}
		return n.Int64(), nil
	default:
		return 0, fmt.Errorf("%s is neither a number nor a percentage", name)
	}
}
