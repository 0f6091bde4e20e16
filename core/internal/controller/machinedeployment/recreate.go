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
// included) is the new set created and scaled to the deployment's replicas.
func (r *Reconciler) rolloutRecreate(ctx context.Context, s *scope) error {
	if _, err := r.getNewMachineSet(ctx, s, false); err != nil {
		return err
	}
	scaledDown := false
	// A disruption budget of reason Rollout caps the old machines being
	// deleted at once: the old sets shrink by what it leaves room for,
	// oldest first.
	old := active(s.old)
	var room int32
	var limited bool
	if sumReplicas(old) > 0 {
		room, limited = r.room(s, v1alpha1.DisruptionReasonRollout, s.terminatingOld())
	}
	sortByCreation(old)
	for _, ms := range old {
		to := int32(0)
		if limited {
			take := min(ms.Spec.Replicas, room)
			room -= take
			to = ms.Spec.Replicas - take
		}
		scaled, err := r.scaleMachineSet(ctx, s, ms, to)
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
