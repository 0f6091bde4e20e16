package machinedeployment

// planRolling plans one step of a rolling update (rolloutRolling) from a
// snapshot that has the new set. First the new set: down to the replicas if
// it has more, else up as far as maxSurge allows; a step that changes its
// replicas is the whole plan. Otherwise the old sets, oldest first: first by
// their machines that are not available (removing those costs no
// availability and keeps a broken old set from blocking the rollout), then
// by available ones while more than replicas-maxUnavailable machines are
// available, within the disruption budget. A plan that changes nothing
// cleans up the history once the stored status says the rollout is
// complete.
func planRolling(snap rolloutSnapshot) rolloutPlan {
	var p rolloutPlan
	newMS := *snap.New
	old := oldestFirst(snap.Old)

	switch {
	case newMS.Replicas == snap.Replicas:
	case newMS.Replicas > snap.Replicas:
		p.add(newMS.Name, newMS.Replicas, snap.Replicas, reasonNewAboveReplicas)
	default:
		machines := newMS.machines()
		for _, ms := range old {
			machines += ms.machines()
		}
		to := newSetTarget(snap.Replicas, snap.MaxSurge, machines, newMS.Replicas)
		why := reasonNewWithinSurge
		if to == newMS.Replicas {
			why = reasonNewAtSurgeLimit
		}
		p.add(newMS.Name, newMS.Replicas, to, why)
	}
	if p.scales() {
		return p
	}

	planOldRolling(snap, newMS, old, &p)
	if !p.needsBudget && !p.scales() && snap.Complete {
		p.CleanupHistory = true
	}
	return p
}

// planOldRolling adds the old sets' steps of a rolling update to p,
// changing old (oldest first) as it plans.
func planOldRolling(snap rolloutSnapshot, newMS setSnapshot, old []setSnapshot, p *rolloutPlan) {
	var oldReplicas int32
	for _, ms := range old {
		oldReplicas += ms.Replicas
	}
	if oldReplicas == 0 {
		return
	}
	minAvailable := snap.Replicas - snap.MaxUnavailable
	newUnavailable := max(newMS.Replicas-newMS.available(), 0)
	// Machines that may go now: all machines above the minimum that must stay
	// available, minus the new machines that are not available yet (they
	// count towards the total but not towards availability).
	maxScaledDown := oldReplicas + newMS.Replicas - minAvailable - newUnavailable
	if maxScaledDown <= 0 {
		return
	}

	// Unavailable machines first, at most maxScaledDown in all. The
	// MachineSet deletes unavailable machines first, so this costs no
	// availability.
	var cleaned int32
	for i := range old {
		ms := &old[i]
		if cleaned >= maxScaledDown {
			break
		}
		unhealthy := ms.Replicas - ms.available()
		if ms.Replicas == 0 || unhealthy <= 0 {
			continue
		}
		n := min(maxScaledDown-cleaned, unhealthy)
		p.add(ms.Name, ms.Replicas, ms.Replicas-n, reasonOldUnavailable)
		ms.Replicas -= n
		cleaned += n
	}

	// Then available machines above replicas-maxUnavailable, no more than
	// the disruption budgets of reason Rollout leave room for.
	available := newMS.available()
	for _, ms := range old {
		available += ms.available()
	}
	if available <= minAvailable {
		return
	}
	if snap.Budget == nil {
		p.needsBudget = true
		return
	}
	p.BudgetRead = true
	budget := available - minAvailable
	if snap.Budget.Limited && snap.Budget.Room < budget {
		budget = snap.Budget.Room
	}
	var total int32
	for i := range old {
		ms := &old[i]
		if total >= budget {
			break
		}
		if ms.Replicas == 0 {
			continue
		}
		n := min(ms.Replicas, budget-total)
		p.add(ms.Name, ms.Replicas, ms.Replicas-n, reasonOldAvailable)
		ms.Replicas -= n
		total += n
	}
}
