package inplace

// Budget is what one Auto step of an in-place rollout knows about the
// machines it rolls. All counts are machines (or nodes).
type Budget struct {
	// Desired is the number of machines the rollout must keep: the
	// MachineDeployment's replicas (or the pool's size).
	Desired int32
	// Updated is the number of machines already on the target: the new
	// MachineSet's replicas (or the pool's updated nodes).
	Updated int32
	// Available is the number of machines, old and new, that are
	// available now: phase Running or Available. A machine in any of the
	// in-place phases is unavailable.
	Available int32
	// Undergoing is the number of old nodes labelled selected-for-update
	// (selected earlier and not yet moved to the target) whose machines
	// still count as available: they are about to be drained.
	Undergoing int32
	// Updating is the number of selected nodes whose machines no longer
	// count as available (drained, updating, updated and not yet moved):
	// they are out of Available already, so they take no slot again, but
	// they are not to be selected twice either. Zero where the caller
	// counts every selected node in Undergoing (the pool does).
	Updating int32
	// MaxUnavailable is how many of Desired may be unavailable at once,
	// already resolved from a number or a percentage.
	MaxUnavailable int32
}

// Selectable is how many more nodes the step may select: none while the
// nodes under way together with the updated ones already reach Desired,
// otherwise min(available − undergoing − (desired − maxUnavailable),
// desired − updated), never below zero. Nodes under way that are still
// available are subtracted from the available ones because such a node is
// about to be drained; an updating one is not in Available, and is not
// subtracted again.
func (b Budget) Selectable() int32 {
	if b.Undergoing+b.Updating+b.Updated >= b.Desired {
		return 0
	}
	n := b.Available - b.Undergoing - (b.Desired - b.MaxUnavailable)
	n = min(n, b.Desired-b.Updated)
	return max(n, 0)
}

// NewReplicas is the size of the new MachineSet in the next step: Desired
// at most; otherwise grown by what maxSurge leaves above Desired once
// every existing machine is counted (total, old and new), but not beyond
// Desired. With maxSurge 0 (always in Manual) the new set grows only to
// make up for machines that are missing altogether (old + new < desired):
// those are created fresh; every other machine reaches the new set by a
// transfer after its update.
func NewReplicas(desired, total, current, maxSurge int32) int32 {
	if current >= desired {
		return desired
	}
	room := desired + maxSurge - total
	if room <= 0 {
		return current
	}
	return current + min(room, desired-current)
}
