package machinedeployment

import (
	"context"

	v1alpha1 "github.com/machina-io/machina/core/api/v1alpha1"
)

// rollingUpdate is the RollingUpdate strategy: machines are replaced
// gradually, within spec.strategy.rollingUpdate's maxSurge and
// maxUnavailable.
type rollingUpdate struct{}

func (rollingUpdate) bounds(d *v1alpha1.MachineDeployment) (int32, int32, bool, error) {
	var cfg *v1alpha1.UpdateConfiguration
	if ru := d.Spec.Strategy.RollingUpdate; ru != nil {
		cfg = &ru.UpdateConfiguration
	}
	s, u, err := updateBounds(cfg, d.Spec.Replicas)
	return s, u, true, err
}

func (rollingUpdate) rollout(ctx context.Context, r *Reconciler, s *scope) error {
	return r.rolloutRolling(ctx, s)
}

// rolloutRolling takes one step of a rolling update: grow the new machine
// set within maxSurge, or else shrink the old sets within maxUnavailable
// (planRolling, plan_rolling.go). Each step is one write; the next step runs
// when the machine sets report the result. Once the rollout is complete, old
// sets beyond the revision history limit are deleted.
func (r *Reconciler) rolloutRolling(ctx context.Context, s *scope) error {
	if _, err := r.getNewMachineSet(ctx, s, true); err != nil {
		return err
	}
	if err := r.syncRolloutNodes(ctx, s); err != nil {
		return err
	}
	plan := planWithBudget(snapshotOf(s), planRolling, func() budgetRoom { return r.readRolloutBudget(s) })
	return r.applyPlan(ctx, s, plan)
}
