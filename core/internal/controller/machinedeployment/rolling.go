package machinedeployment

import (
	"context"
	"fmt"

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
// set within maxSurge, or else shrink the old sets within maxUnavailable.
// Each step is one write; the next step runs when the machine sets report the
// result. Once the rollout is complete, old sets beyond the revision history
// limit are deleted.
func (r *Reconciler) rolloutRolling(ctx context.Context, s *scope) error {
	if _, err := r.getNewMachineSet(ctx, s, true); err != nil {
		return err
	}
	if err := r.syncRolloutNodes(ctx, s); err != nil {
		return err
	}
	scaledUp, err := r.reconcileNewMachineSet(ctx, s)
	if err != nil || scaledUp {
		return err
	}
	scaledDown, err := r.reconcileOldMachineSets(ctx, s)
	if err != nil || scaledDown {
		return err
	}
	if deploymentComplete(s.d, &s.d.Status) {
		return r.cleanupHistory(ctx, s)
	}
	return nil
}

// reconcileNewMachineSet grows the new set as far as maxSurge allows, or
// shrinks it if it has more than the deployment's replicas.
func (r *Reconciler) reconcileNewMachineSet(ctx context.Context, s *scope) (bool, error) {
	d, newMS := s.d, s.new
	switch {
	case newMS.Spec.Replicas == d.Spec.Replicas:
		return false, nil
	case newMS.Spec.Replicas > d.Spec.Replicas:
		return r.scaleMachineSet(ctx, s, newMS, d.Spec.Replicas)
	}
	return r.scaleMachineSet(ctx, s, newMS, newMachineSetReplicas(d, s.all(), newMS))
}

// reconcileOldMachineSets shrinks the old sets as far as maxUnavailable
// allows: first by their unavailable machines (removing those costs no
// availability and keeps a broken old set from blocking the rollout), then
// by available ones while more than replicas-maxUnavailable machines are
// available.
func (r *Reconciler) reconcileOldMachineSets(ctx context.Context, s *scope) (bool, error) {
	d, newMS := s.d, s.new
	old := active(s.old)
	if sumReplicas(old) == 0 {
		return false, nil
	}
	minAvailable := d.Spec.Replicas - maxUnavailable(d)
	newUnavailable := max(newMS.Spec.Replicas-availableOf(newMS), 0)
	// Machines that may go now: all machines above the minimum that must stay
	// available, minus the new machines that are not available yet (they
	// count towards the total but not towards availability).
	maxScaledDown := sumReplicas(s.all()) - minAvailable - newUnavailable
	if maxScaledDown <= 0 {
		return false, nil
	}
	cleaned, err := r.cleanupUnhealthyReplicas(ctx, s, old, maxScaledDown)
	if err != nil {
		return false, err
	}
	scaled, err := r.scaleDownOldForRollingUpdate(ctx, s, old)
	if err != nil {
		return false, err
	}
	return cleaned+scaled > 0, nil
}

// cleanupUnhealthyReplicas shrinks old sets, oldest first, by their machines
// that are not available, at most maxCleanup in all. The MachineSet deletes
// unavailable machines first, so this costs no availability.
func (r *Reconciler) cleanupUnhealthyReplicas(ctx context.Context, s *scope, old []*v1alpha1.MachineSet, maxCleanup int32) (int32, error) {
	sortByCreation(old)
	var total int32
	for _, ms := range old {
		if total >= maxCleanup {
			break
		}
		unhealthy := ms.Spec.Replicas - availableOf(ms)
		if ms.Spec.Replicas == 0 || unhealthy <= 0 {
			continue
		}
		n := min(maxCleanup-total, unhealthy)
		if _, err := r.scaleMachineSet(ctx, s, ms, ms.Spec.Replicas-n); err != nil {
			return total, fmt.Errorf("removing unavailable machines of old machine set: %w", err)
		}
		total += n
	}
	return total, nil
}

// scaleDownOldForRollingUpdate shrinks old sets, oldest first, by as many
// machines as are available above replicas-maxUnavailable, and no more than
// the disruption budgets of reason Rollout leave room for.
func (r *Reconciler) scaleDownOldForRollingUpdate(ctx context.Context, s *scope, old []*v1alpha1.MachineSet) (int32, error) {
	d := s.d
	minAvailable := d.Spec.Replicas - maxUnavailable(d)
	available := sumAvailable(s.all())
	if available <= minAvailable {
		return 0, nil
	}
	budget := available - minAvailable
	// A disruption budget caps the old machines being deleted at once.
	if room, limited := r.room(s, v1alpha1.DisruptionReasonRollout, s.terminatingOld()); limited && room < budget {
		budget = room
	}
	sortByCreation(old)
	var total int32
	for _, ms := range old {
		if total >= budget {
			break
		}
		if ms.Spec.Replicas == 0 {
			continue
		}
		n := min(ms.Spec.Replicas, budget-total)
		if _, err := r.scaleMachineSet(ctx, s, ms, ms.Spec.Replicas-n); err != nil {
			return total, fmt.Errorf("scaling down old machine set: %w", err)
		}
		total += n
	}
	return total, nil
}
