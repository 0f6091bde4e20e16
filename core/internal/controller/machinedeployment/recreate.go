package machinedeployment

import (
	"context"
)

// rolloutRecreate replaces all machines at once: the old machine sets go to
// zero, and only when not a single old machine is left (terminating ones
// included) is the new set created and scaled to the deployment's replicas.
func (r *Reconciler) rolloutRecreate(ctx context.Context, s *scope) error {
	if _, err := r.getNewMachineSet(ctx, s, false); err != nil {
		return err
	}
	scaledDown := false
	for _, ms := range active(s.old) {
		scaled, err := r.scaleMachineSet(ctx, s, ms, 0)
		if err != nil {
			return err
		}
		scaledDown = scaledDown || scaled
	}
	if scaledDown || s.oldMachinesLeft() {
		return nil
	}
	if s.new == nil {
		if _, err := r.getNewMachineSet(ctx, s, true); err != nil {
			return err
		}
	}
	if _, err := r.scaleMachineSet(ctx, s, s.new, s.d.Spec.Replicas); err != nil {
		return err
	}
	if deploymentComplete(s.d, &s.d.Status) {
		return r.cleanupHistory(ctx, s)
	}
	return nil
}
