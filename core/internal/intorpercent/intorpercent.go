// Package intorpercent resolves a count given as a number or a percentage
// (maxSurge, maxUnavailable) in exact arithmetic: a percentage of any
// length is refused or resolved, never wrapped around int32 into a negative
// count that stalls a rollout without a word. MachineDeployment rollouts and
// machine configuration pools share it.
package intorpercent

import (
	"fmt"
	"math"
	"math/big"
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/util/intstr"
)

// percentRE is the form of a percentage, as Kubernetes validates it for a
// Deployment: digits and a percent sign, nothing else (no sign, no blanks).
var percentRE = regexp.MustCompile(`^[0-9]+%$`)

// Scaled resolves a bound: a number as it is, a percentage of total
// rounded up or down. The result is exact and at least 0; a percentage that
// cannot give a machine count (at most 2^31-1) is refused.
func Scaled(name string, v intstr.IntOrString, total int32, roundUp bool) (int64, error) {
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

// Above100 tells whether v is a percentage above 100%, whatever its length.
// It looks at the percentage itself, so the verdict does not depend on the
// total it would be taken of (150% of 0 is still above 100%).
func Above100(v intstr.IntOrString) bool {
	if v.Type != intstr.String {
		return false
	}
	p, ok := new(big.Int).SetString(strings.TrimSuffix(v.StrVal, "%"), 10)
	return ok && p.Cmp(big.NewInt(100)) > 0
}
