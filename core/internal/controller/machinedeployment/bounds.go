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

// isRollingUpdate reports whether the deployment rolls gradually. An unset
// strategy type means RollingUpdate, the Kubernetes Deployment default.
func isRollingUpdate(d *v1alpha1.MachineDeployment) bool {
	t := d.Spec.Strategy.Type
	return t == v1alpha1.RollingUpdateMachineDeploymentStrategyType || t == ""
}

// rollingParameters returns the deployment's maxSurge and maxUnavailable with
// the defaults filled in.
func rollingParameters(d *v1alpha1.MachineDeployment) (surge, unavailable intstr.IntOrString) {
	surge, unavailable = defaultMaxSurge, defaultMaxUnavailable
	if ru := d.Spec.Strategy.RollingUpdate; ru != nil {
		if ru.MaxSurge != nil {
			surge = *ru.MaxSurge
		}
		if ru.MaxUnavailable != nil {
			unavailable = *ru.MaxUnavailable
		}
	}
	return surge, unavailable
}

// resolveFenceposts turns maxSurge and maxUnavailable into machine counts for
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
func resolveFenceposts(surge, unavailable intstr.IntOrString, desired int32) (int32, int32, error) {
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

// validateStrategy reports a strategy the controller cannot act on.
func validateStrategy(d *v1alpha1.MachineDeployment) error {
	switch {
	case isRollingUpdate(d):
		surge, unavailable := rollingParameters(d)
		_, _, err := resolveFenceposts(surge, unavailable, d.Spec.Replicas)
		return err
	case d.Spec.Strategy.Type == v1alpha1.RecreateMachineDeploymentStrategyType:
		return nil
	default:
		return fmt.Errorf("strategy type %q is not supported (supported: RollingUpdate, Recreate)", d.Spec.Strategy.Type)
	}
}

// maxSurge is how many machines a rolling deployment may have above its
// replicas; zero for other strategies. The sync validates the strategy
// first (validateStrategy), so a refused value never gets here; it would
// give zero, and replicas+maxSurge cannot wrap around.
func maxSurge(d *v1alpha1.MachineDeployment) int32 {
	if !isRollingUpdate(d) {
		return 0
	}
	surge, unavailable := rollingParameters(d)
	s, _, _ := resolveFenceposts(surge, unavailable, d.Spec.Replicas)
	return s
}

// maxUnavailable is how many machines a rolling deployment may lack below its
// replicas, never more than the replicas; zero for other strategies.
func maxUnavailable(d *v1alpha1.MachineDeployment) int32 {
	if !isRollingUpdate(d) || d.Spec.Replicas == 0 {
		return 0
	}
	surge, unavailable := rollingParameters(d)
	_, u, _ := resolveFenceposts(surge, unavailable, d.Spec.Replicas)
	return min(u, d.Spec.Replicas)
}
