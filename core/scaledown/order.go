package scaledown

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

// Preserved reports whether the machine is preserved: its preservation
// expiry lies in the future, or its preserve annotation asks for it and the
// machine controller has not stamped an expiry yet ("now" in any phase,
// "when-failed" and the controller's "auto-preserved" when the machine is
// Failed). Preserved machines are deleted last on scale-down and a Failed
// preserved machine is not replaced.
func Preserved(m *v1alpha1.Machine, now time.Time) bool {
	if exp := m.Status.CurrentStatus.PreserveExpiryTime; exp != nil {
		return exp.After(now)
	}
	switch m.Annotations[v1alpha1.PreserveAnnotation] {
	case v1alpha1.PreserveValueNow:
		return true
	case v1alpha1.PreserveValueWhenFailed, v1alpha1.PreserveValueAutoPreserved:
		return m.Status.CurrentStatus.Phase == v1alpha1.MachineFailed
	}
	return false
}

func autoPreserved(m *v1alpha1.Machine) bool {
	return m.Annotations[v1alpha1.PreserveAnnotation] == v1alpha1.PreserveValueAutoPreserved
}

// expiry is when the machine's preservation ends; a machine whose expiry is
// not stamped yet counts as preserved for the longest.
func expiry(m *v1alpha1.Machine) time.Time {
	if exp := m.Status.CurrentStatus.PreserveExpiryTime; exp != nil {
		return exp.Time
	}
	return time.Unix(1<<62, 0)
}

// Priority reads the machinepriority annotation; lower means deleted first.
// A missing or unparsable value counts as the default, 3.
func Priority(m *v1alpha1.Machine) int {
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

// MarkedForDeletion reads the marked-for-deletion-time annotation; the zero
// time means "not marked".
func MarkedForDeletion(m *v1alpha1.Machine) time.Time {
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

// Key names the sort key that decides between two machines, in the order
// the keys are compared.
type Key string

// The keys of the scale-down order.
const (
	// KeyPreserved: a machine that is not preserved goes before a preserved
	// one; among preserved machines, an automatically preserved one before
	// one a user preserved, then the earlier expiry first.
	KeyPreserved Key = "preserved"
	// KeyPriority: the lower machinepriority annotation goes first (the
	// cluster-autoscaler marks its choices with "1").
	KeyPriority Key = "priority"
	// KeyMarked: a machine marked for deletion goes before an unmarked one,
	// and the earlier mark first.
	KeyMarked Key = "marked"
	// KeyPhase: Terminating < Failed < CrashLoopBackOff < Unknown <
	// (creating) < Pending < Available < Running.
	KeyPhase Key = "phase"
	// KeyAge: the newer machine goes first (it has served least).
	KeyAge Key = "age"
	// KeyName: the name, so that the order is total and stable.
	KeyName Key = "name"
)

// Decide reports which key orders machines a and b on scale-down and
// whether a goes first. For two machines that are the same object it
// returns KeyName and false.
func Decide(a, b *v1alpha1.Machine, now time.Time) (Key, bool) {
	pa, pb := Preserved(a, now), Preserved(b, now)
	if pa != pb {
		return KeyPreserved, !pa
	}
	if pa {
		// Among preserved machines (MCM's ActiveMachines.Less): the ones
		// the controller preserved before the ones a user asked for, then
		// the earlier expiry first.
		if aa, ab := autoPreserved(a), autoPreserved(b); aa != ab {
			return KeyPreserved, aa
		}
		if ea, eb := expiry(a), expiry(b); !ea.Equal(eb) {
			return KeyPreserved, ea.Before(eb)
		}
	}
	if pa, pb := Priority(a), Priority(b); pa != pb {
		return KeyPriority, pa < pb
	}
	ta, tb := MarkedForDeletion(a), MarkedForDeletion(b)
	if !ta.Equal(tb) {
		switch {
		case ta.IsZero():
			return KeyMarked, false
		case tb.IsZero():
			return KeyMarked, true
		default:
			return KeyMarked, ta.Before(tb)
		}
	}
	if ra, rb := rankOf(a.Status.CurrentStatus.Phase), rankOf(b.Status.CurrentStatus.Phase); ra != rb {
		return KeyPhase, ra < rb
	}
	ca, cb := a.CreationTimestamp.Time, b.CreationTimestamp.Time
	if !ca.Equal(cb) {
		return KeyAge, ca.After(cb)
	}
	return KeyName, a.Name < b.Name
}

// First reports whether machine a should be deleted before machine b on
// scale-down (see the keys above, compared in their order).
func First(a, b *v1alpha1.Machine, now time.Time) bool {
	_, first := Decide(a, b, now)
	return first
}

// Sort sorts machines in place so that the first ones are the first to
// delete on scale-down.
func Sort(machines []*v1alpha1.Machine, now time.Time) {
	sort.SliceStable(machines, func(i, j int) bool { return First(machines[i], machines[j], now) })
}

// Pick returns the count machines to delete first, without changing the
// order of the given slice.
func Pick(machines []*v1alpha1.Machine, count int, now time.Time) []*v1alpha1.Machine {
	if count <= 0 {
		return nil
	}
	sorted := append([]*v1alpha1.Machine(nil), machines...)
	Sort(sorted, now)
	if count > len(sorted) {
		count = len(sorted)
	}
	return sorted[:count]
}
