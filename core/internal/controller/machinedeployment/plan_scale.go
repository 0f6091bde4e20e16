package machinedeployment

// planScale plans the scaling of the sets for a scaling event or a paused
// deployment (scaleOnly): the only active set (or, with none active, the new
// set or else the newest old one) takes all replicas; a saturated new set
// lets the active old ones go to zero; otherwise the active sets of a
// deployment with bounds get their proportional share of replicas+maxSurge
// (proportionalSizesOf), old sets oldest first, then the new one. Every
// set it names is written, so that its replica annotations follow the
// deployment even where the count stays.
func planScale(snap rolloutSnapshot) rolloutPlan {
	var p rolloutPlan
	old := oldestFirst(snap.Old)
	if only := activeOrLatest(snap.New, old); only != nil {
		p.add(only.Name, only.Replicas, snap.Replicas, reasonScaleOnly)
		return p
	}
	if isSaturated(snap.Replicas, snap.New) {
		for _, ms := range old {
			if ms.Replicas > 0 {
				p.add(ms.Name, ms.Replicas, 0, reasonScaleSaturated)
			}
		}
		return p
	}
	if !snap.Bounded {
		return p
	}
	all := old
	if snap.New != nil {
		all = append(all, *snap.New)
	}
	sizes := proportionalSizesOf(snap.Replicas, snap.MaxSurge, snap.Observed, all)
	for _, ms := range all {
		if ms.Replicas > 0 {
			p.add(ms.Name, ms.Replicas, sizes[ms.Name], reasonScaleProportion)
		}
	}
	return p
}

// isSaturated reports whether the new set alone serves the deployment: it
// has all replicas, was scaled for this replica count, and all its machines
// are available.
func isSaturated(replicas int32, ms *setSnapshot) bool {
	return ms != nil && ms.DesiredReplicas != nil && ms.Replicas == replicas &&
		*ms.DesiredReplicas == replicas && ms.Available == replicas
}

// activeOrLatest returns the only active set, or the new set if none is
// active, or else the newest old set; nil when several are active (they
// are scaled proportionally) or there is no set at all. old is oldest
// first.
func activeOrLatest(newMS *setSnapshot, old []setSnapshot) *setSnapshot {
	var act []setSnapshot
	for _, ms := range old {
		if ms.Replicas > 0 {
			act = append(act, ms)
		}
	}
	if newMS != nil && newMS.Replicas > 0 {
		act = append(act, *newMS)
	}
	switch {
	case len(act) == 1:
		return &act[0]
	case len(act) > 1:
		return nil
	case newMS != nil:
		return newMS
	case len(old) > 0:
		return &old[len(old)-1]
	}
	return nil
}
