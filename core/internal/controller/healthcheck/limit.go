package healthcheck

import (
	"fmt"
	"regexp"
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"

	machinaio "github.com/machina-io/machina/core/api/machina/v1alpha1"
)

// limit is the short-circuit of a check: whether its unhealthy machines may
// be remediated.
type limit struct {
	// allowed: remediate the unhealthy machines.
	allowed bool
	// remaining is status.remediationsAllowed.
	remaining int
	// describe says the limit, for messages: "maxUnhealthy 40% (2)".
	describe string
}

var rangePattern = regexp.MustCompile(`^\[([0-9]{1,9})-([0-9]{1,9})\]$`)

// shortCircuit applies maxUnhealthy (rounded down against expected, as
// Cluster API does) or unhealthyRange to the number of unhealthy machines.
func shortCircuit(spec *machinaio.MachineHealthCheckSpec, expected, unhealthy int) (limit, error) {
	if spec.UnhealthyRange != "" {
		lo, hi, err := parseRange(spec.UnhealthyRange)
		if err != nil {
			return limit{}, err
		}
		l := limit{allowed: lo <= unhealthy && unhealthy <= hi, describe: "unhealthyRange " + spec.UnhealthyRange}
		if l.allowed {
			l.remaining = hi - unhealthy
		}
		return l, nil
	}
	mu := machinaio.DefaultMaxUnhealthy
	if spec.MaxUnhealthy != nil {
		mu = *spec.MaxUnhealthy
	}
	most, err := intstr.GetScaledValueFromIntOrPercent(&mu, expected, false)
	if err != nil || most < 0 {
		return limit{}, fmt.Errorf("spec.maxUnhealthy %q is not a non-negative number or percentage", mu.String())
	}
	return limit{allowed: unhealthy <= most, remaining: max(0, most-unhealthy), describe: fmt.Sprintf("maxUnhealthy %s (%d)", mu.String(), most)}, nil
}

// parseRange reads "[min-max]".
func parseRange(s string) (int, int, error) {
	m := rangePattern.FindStringSubmatch(s)
	if m == nil {
		return 0, 0, fmt.Errorf("spec.unhealthyRange %q is not of the form [min-max]", s)
	}
	lo, _ := strconv.Atoi(m[1])
	hi, _ := strconv.Atoi(m[2])
	if lo > hi {
		return 0, 0, fmt.Errorf("spec.unhealthyRange %q has its minimum above its maximum", s)
	}
	return lo, hi, nil
}

// parseSpec returns the check's selector, or why its spec cannot be acted
// on, naming the field: for what the schema lets through (or let through
// when the check was stored).
func parseSpec(spec *machinaio.MachineHealthCheckSpec) (labels.Selector, error) {
	sel, err := metav1.LabelSelectorAsSelector(&spec.Selector)
	if err != nil {
		return nil, fmt.Errorf("spec.selector: %w", err)
	}
	if sel.Empty() {
		return nil, fmt.Errorf("spec.selector is empty; a check of every machine must say so with a selector")
	}
	if err := spec.NodeStartupTimeout.Err(); err != nil {
		return nil, fmt.Errorf("spec.nodeStartupTimeout: %w", err)
	}
	for i := range spec.UnhealthyNodeConditions {
		if err := spec.UnhealthyNodeConditions[i].Timeout.Err(); err != nil {
			return nil, fmt.Errorf("spec.unhealthyNodeConditions[%d].timeout: %w", i, err)
		}
	}
	return sel, nil
}
