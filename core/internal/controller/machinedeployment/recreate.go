package machinedeployment

import (
	"context"

	v1alpha1 "github.com/machina-io/machina/core/api/v1alpha1"
)

// recreate is the Recreate strategy: all old machines go before the first
// new one is created. It has no surge or unavailability bounds.
type recreate struct{}

func (recreate) bounds(*v1alpha1.MachineDeployment) (int32, int32, bool, error) {
	return 0, 0, false, nil
}

func (recreate) rollout(ctx context.Context, r *Reconciler, s *scope) error {
	return r.rolloutRecreate(ctx, s)
}

// rolloutRecreate replaces all machines at once: the old machine sets go to
// zero, and only when not a single old machine is left (terminating ones
// included) is the new set created and scaled to the deployment's replicas
// (planRecreate, plan_recreate.go).
func (r *Reconciler) rolloutRecreate(ctx context.Context, s *scope) error {
	if _, err := r.getNewMachineSet(ctx, s, false); err != nil {
		return err
	}
	plan := planWithBudget(snapshotOf(s), planRecreate, func() budgetRoom { return r.readRolloutBudget(s) })
	return r.applyPlan(ctx, s, plan)
}
