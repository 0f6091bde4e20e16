package machinedeployment

// planRecreate plans one step of a Recreate rollout (rolloutRecreate): the
// old sets go to zero, oldest first, by no more machines than the disruption
// budget leaves room for; only when not a single old machine is left
// (terminating ones included) does the new set, created first if need be,
// get the deployment's replicas. Once there, the history is cleaned up when
// the stored status says the rollout is complete.
func planRecreate(snap rolloutSnapshot) rolloutPlan {
	var p rolloutPlan
	old := oldestFirst(snap.Old)

	var oldReplicas int32
	for _, ms := range old {
		oldReplicas += ms.Replicas
	}
	var budget budgetRoom
	if oldReplicas > 0 {
		if snap.Budget == nil {
			p.needsBudget = true
			return p
		}
		p.BudgetRead = true
		budget = *snap.Budget
	}
	for _, ms := range old {
		if ms.Replicas == 0 {
			continue
		}
		to, why := int32(0), reasonRecreateOld
		if budget.Limited {
			take := min(ms.Replicas, budget.Room)
			budget.Room -= take
			to = ms.Replicas - take
			if to > 0 {
				why = reasonRecreateHeld
			}
		}
		p.add(ms.Name, ms.Replicas, to, why)
	}
	if p.scales() || oldMachinesLeft(old) {
		return p
	}

	if snap.New == nil {
		p.CreateNew = true
		p.add(newSetToCreate, 0, snap.Replicas, reasonRecreateNew)
	} else {
		p.add(snap.New.Name, snap.New.Replicas, snap.Replicas, reasonRecreateNew)
	}
	p.CleanupHistory = snap.Complete
	return p
}

// oldMachinesLeft reports whether an old set still wants or has machines,
// terminating ones included (scope.oldMachinesLeft for a snapshot).
func oldMachinesLeft(old []setSnapshot) bool {
	for _, ms := range old {
		if ms.Replicas > 0 || ms.StatusReplicas > 0 || ms.Machines > 0 {
			return true
		}
	}
	return false
}
