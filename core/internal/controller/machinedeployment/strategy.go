package machinedeployment

import (
	"context"
	"fmt"
	"slices"
	"strings"

	v1alpha1 "github.com/machina-io/machina/core/api/v1alpha1"
)

// rolloutStrategy is one type of spec.strategy: how the machines of a
// deployment move to its current template. The rollout phase runs the
// deployment's strategy; the bounds decide how far the sets of a deployment
// may grow and shrink during a rollout and when its replicas change.
type rolloutStrategy interface {
	// bounds returns maxSurge and maxUnavailable of d as machine counts
	// (maxUnavailable not yet capped at the replicas), and bounded false for
	// a strategy that replaces all machines at once and so has neither
	// (Recreate). err reports a value the controller refuses (validate).
	bounds(d *v1alpha1.MachineDeployment) (surge, unavailable int32, bounded bool, err error)
	// rollout takes one step of the rollout: it may create the new machine
	// set and scale sets, one write at a time; the next step runs when the
	// sets report the result. The rollout phase computes the status after it.
	rollout(ctx context.Context, r *Reconciler, s *scope) error
}

// strategies are the strategy types the controller acts on. A new strategy
// is a file with its rolloutStrategy and one entry here; a type without an
// entry is refused by validate with InvalidStrategy.
var strategies = map[v1alpha1.MachineDeploymentStrategyType]rolloutStrategy{
	v1alpha1.RollingUpdateMachineDeploymentStrategyType: rollingUpdate{}, // rolling.go
	v1alpha1.RecreateMachineDeploymentStrategyType:      recreate{},      // recreate.go
	v1alpha1.InPlaceUpdateMachineDeploymentStrategyType: inPlaceUpdate{}, // inplace.go
}

// statusAdjuster is a strategy that adds to the rollout's status once it is
// computed (the in-place counts in the Progressing message).
type statusAdjuster interface {
	afterStatus(r *Reconciler, s *scope)
}

// strategyOf returns the deployment's strategy; false for a type the
// controller does not support. An unset type means RollingUpdate, the
// Kubernetes Deployment default.
func strategyOf(d *v1alpha1.MachineDeployment) (rolloutStrategy, bool) {
	t := d.Spec.Strategy.Type
	if t == "" {
		t = v1alpha1.RollingUpdateMachineDeploymentStrategyType
	}
	st, ok := strategies[t]
	return st, ok
}

// validateStrategy reports a strategy the controller cannot act on: an
// unsupported type, or bounds out of range.
func validateStrategy(d *v1alpha1.MachineDeployment) error {
	st, ok := strategyOf(d)
	if !ok {
		return fmt.Errorf("strategy type %q is not supported (supported: %s)", d.Spec.Strategy.Type, supportedStrategies())
	}
	_, _, _, err := st.bounds(d)
	return err
}

// supportedStrategies names the supported types, for the refusal message.
func supportedStrategies() string {
	var names []string
	for t := range strategies {
		names = append(names, string(t))
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}

// bounded reports whether the deployment rolls within maxSurge and
// maxUnavailable (a scaling event is then spread proportionally over its
// active sets), rather than replacing all machines at once.
func bounded(d *v1alpha1.MachineDeployment) bool {
	st, ok := strategyOf(d)
	if !ok {
		return false
	}
	_, _, b, _ := st.bounds(d)
	return b
}

// maxSurge is how many machines a deployment may have above its replicas
// during a rollout; zero for a strategy without bounds. The sync validates
// the strategy first (validateStrategy), so a refused value never gets here;
// it would give zero, and replicas+maxSurge cannot wrap around.
func maxSurge(d *v1alpha1.MachineDeployment) int32 {
	st, ok := strategyOf(d)
	if !ok {
		return 0
	}
	s, _, _, err := st.bounds(d)
	if err != nil {
		return 0
	}
	return s
}

// maxUnavailable is how many machines a deployment may lack below its
// replicas during a rollout, never more than the replicas; zero for a
// strategy without bounds.
func maxUnavailable(d *v1alpha1.MachineDeployment) int32 {
	st, ok := strategyOf(d)
	if !ok || d.Spec.Replicas == 0 {
		return 0
	}
	_, u, _, err := st.bounds(d)
	if err != nil {
		return 0
	}
	return min(u, d.Spec.Replicas)
}
