package machineset

import (
	"sort"
	"strconv"
	"time"

	v1alpha1 "github.com/machina-io/machina/core/api/v1alpha1"
)

// defaultPriority is the deletion priority of a machine without a valid
// priority annotation (MCM's default "3").
const defaultPriority = 3

// phaseRank orders phases for scale-down: a machine whose phase ranks lower is
// deleted first, so machines that give the least (terminating, broken, not yet
// joined) go before machines that serve workloads. A phase not listed here
// (the empty phase of a machine being created, in-place update phases) ranks
// with creatingRank.
var phaseRank = map[v1alpha1.MachinePhase]int{
	v1alpha1.MachineTerminating:      0,
	v1alpha1.MachineFailed:           1,
	v1alpha1.MachineCrashLoopBackOff: 2,
	v1alpha1.MachineUnknown:          3,
	v1alpha1.MachinePending:          5,
	v1alpha1.MachineAvailable:        6,
	v1alpha1.MachineRunning:          7,
}

// creatingRank places machines that are still being created between Unknown
// and Pending: they serve nothing yet, but their VM may be on its way.
const creatingRank = 4

// machinePriority reads the machinepriority annotation; lower means deleted
// first. A missing or unparsable value counts as the default.
func machinePriority(m *v1alpha1.Machine) int {
	v, ok := m.Annotations[v1alpha1.MachinePriorityAnnotation]
	if !ok {
		return defaultPriority
	}
	p, err := strconv.Atoi(v)
	if err != nil {
		return defaultPriority
	}
	return p
}

// markedForDeletionTime reads the marked-for-deletion-time annotation; the
// zero time means "not marked".
func markedForDeletionTime(m *v1alpha1.Machine) time.Time {
	v := m.Annotations[v1alpha1.MarkedForDeletionTimeAnnotation]
	if v == "" {
		return time.Time{}
	}
	t, err := time.Parse(time.RFC3339, v)
	if err != nil {
		return time.Time{}
	}
	return t
}

func rankOf(phase v1alpha1.MachinePhase) int {
	if r, ok := phaseRank[phase]; ok {
		return r
	}
	return creatingRank
}

// deleteFirst reports whether machine a should be deleted before machine b on
// scale-down. The keys, in order:
//  1. a machine that is not preserved goes before a preserved one;
//  2. lower machinepriority annotation first (the cluster-autoscaler marks
//     its choices with "1");
//  3. a machine marked for deletion goes before an unmarked one, and the
//     earlier mark first;
//  4. phase: Terminating < Failed < CrashLoopBackOff < Unknown < (creating)
//     < Pending < Available < Running;
//  5. the newer machine first (it has served least);
//  6. the name, so that the order is total and stable.
func deleteFirst(a, b *v1alpha1.Machine, now time.Time) bool {
	if pa, pb := isPreserved(a, now), isPreserved(b, now); pa != pb {
		return !pa
	}
	if pa, pb := machinePriority(a), machinePriority(b); pa != pb {
		return pa < pb
	}
	ta, tb := markedForDeletionTime(a), markedForDeletionTime(b)
	if !ta.Equal(tb) {
		switch {
		case ta.IsZero():
			return false
		case tb.IsZero():
			return true
		default:
			return ta.Before(tb)
		}
	}
	if ra, rb := rankOf(a.Status.CurrentStatus.Phase), rankOf(b.Status.CurrentStatus.Phase); ra != rb {
		return ra < rb
	}
	ca, cb := a.CreationTimestamp.Time, b.CreationTimestamp.Time
	if !ca.Equal(cb) {
		return ca.After(cb)
	}
	return a.Name < b.Name
}

// sortForDeletion sorts machines in place so that the first ones are the
// first to delete on scale-down.
func sortForDeletion(machines []*v1alpha1.Machine, now time.Time) {
	sort.SliceStable(machines, func(i, j int) bool { return deleteFirst(machines[i], machines[j], now) })
}

// pickVictims returns the count machines to delete first, without changing
// the order of the given slice.
func pickVictims(machines []*v1alpha1.Machine, count int, now time.Time) []*v1alpha1.Machine {
	if count <= 0 {
		return nil
	}
	sorted := append([]*v1alpha1.Machine(nil), machines...)
	sortForDeletion(sorted, now)
	if count > len(sorted) {
		count = len(sorted)
	}
	return sorted[:count]
}
