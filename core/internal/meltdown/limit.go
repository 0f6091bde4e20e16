package meltdown

import (
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/machina-io/machina/core/api/v1alpha1"
)

const (
	// FlagName is the manager flag that sets the default limit.
	FlagName = "machine-max-replacements"
	// DefaultMaxReplacements is the flag's default, MCM's fixed limit.
	DefaultMaxReplacements = "1"
	// Annotation on a MachineDeployment overrides the flag for it. Its value
	// has the flag's syntax: "2" or "10%".
	Annotation = "machina.io/max-replacements"
)

// ParseLimit parses a limit: a non-negative integer ("0" means no machine
// of a deployment is ever failed by the health timeout) or a non-negative
// percentage of the deployment's replicas ("25%").
func ParseLimit(s string) (intstr.IntOrString, error) {
	s = strings.TrimSpace(s)
	if pct, ok := strings.CutSuffix(s, "%"); ok {
		n, err := strconv.Atoi(pct)
		if err != nil || n < 0 {
			return intstr.IntOrString{}, fmt.Errorf("max replacements %q: a percentage must be a non-negative integer followed by %%", s)
		}
		return intstr.FromString(strconv.Itoa(n) + "%"), nil
	}
	n, err := strconv.ParseInt(s, 10, 32)
	if err != nil || n < 0 {
		return intstr.IntOrString{}, fmt.Errorf("max replacements %q: want a non-negative integer or a percentage such as 25%%", s)
	}
	return intstr.FromInt32(int32(n)), nil
}

// MustParseLimit is ParseLimit for constants; it panics on a bad value.
func MustParseLimit(s string) intstr.IntOrString {
	v, err := ParseLimit(s)
	if err != nil {
		panic(err)
	}
	return v
}

// resolve turns a limit into a machine count for a deployment of replicas
// machines. A percentage rounds up, so that any positive percentage of a
// non-empty deployment allows at least one replacement: rounding down would
// silently switch health replacement off for small deployments.
//
// The percentage is applied in exact arithmetic: Kubernetes' float helper
// turns a huge percentage of a large deployment into a negative count
// (found by FuzzParseLimit). A count above the replicas allows as much as
// the replicas do (no more machines than that can be replaced), so such a
// count is returned as math.MaxInt32, the largest machine count.
func resolve(limit intstr.IntOrString, replicas int32) (int, error) {
	replicas = max(replicas, 0)
	if limit.Type == intstr.Int {
		if limit.IntVal < 0 {
			return 0, fmt.Errorf("max replacements %s is negative", limit.String())
		}
		return int(limit.IntVal), nil
	}
	pct, ok := new(big.Int).SetString(strings.TrimSuffix(limit.StrVal, "%"), 10)
	if !ok || !strings.HasSuffix(limit.StrVal, "%") {
		return 0, fmt.Errorf("max replacements %q: want a non-negative integer or a percentage such as 25%%", limit.StrVal)
	}
	if pct.Sign() < 0 {
		return 0, fmt.Errorf("max replacements %s is negative", limit.String())
	}
	n, rem := new(big.Int).QuoRem(pct.Mul(pct, big.NewInt(int64(replicas))), big.NewInt(100), new(big.Int))
	if rem.Sign() > 0 {
		n.Add(n, big.NewInt(1))
	}
	if !n.IsInt64() || n.Int64() > math.MaxInt32 {
		return math.MaxInt32, nil
	}
	return int(n.Int64()), nil
}

// AnnotationError reports a malformed Annotation on a MachineDeployment.
// It comes together with a usable limit (the default's), because a typo in
// an annotation must not switch health replacement off.
type AnnotationError struct{ Err error }

func (e *AnnotationError) Error() string {
	return fmt.Sprintf("annotation %s ignored, the default applies: %v", Annotation, e.Err)
}

func (e *AnnotationError) Unwrap() error { return e.Err }

// limitFor is the number of md's machines that may be replaced at the same
// time: md's Annotation when it is set, def otherwise. A malformed annotation
// yields def's limit together with an *AnnotationError, for an event on the
// deployment; any other error means def itself is unusable.
func limitFor(md *v1alpha1.MachineDeployment, def intstr.IntOrString) (int, error) {
	raw, ok := md.Annotations[Annotation]
	if !ok {
		return resolve(def, md.Spec.Replicas)
	}
	v, perr := ParseLimit(raw)
	if perr == nil {
		return resolve(v, md.Spec.Replicas)
	}
	n, err := resolve(def, md.Spec.Replicas)
	if err != nil {
		return 0, err
	}
	return n, &AnnotationError{Err: perr}
}
