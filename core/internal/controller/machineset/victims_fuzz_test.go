package machineset

import (
	"slices"
	"testing"
	"time"

	v1alpha1 "github.com/machina-io/machina/core/api/v1alpha1"
)

var fuzzPhases = []v1alpha1.MachinePhase{"", v1alpha1.MachineTerminating, v1alpha1.MachineFailed, v1alpha1.MachineCrashLoopBackOff,
	v1alpha1.MachineUnknown, v1alpha1.MachinePending, v1alpha1.MachineAvailable, v1alpha1.MachineRunning, "InPlaceUpdating"}

// FuzzPickVictims orders machines whose annotations (priority, deletion
// mark, preserve) hold any text users or the autoscaler may write: no panic,
// the order is a strict total order (the same victims whatever the input
// order), victims are distinct machines of the set, and a preserved machine
// is never picked before an unpreserved one.
func FuzzPickVictims(f *testing.F) {
	f.Add("1", "2026-01-01T10:00:00Z", "", uint8(7), int64(0), "3", "", "now", uint8(1), int64(60), 1)
	f.Add("-9223372036854775808", "not a time", "true", uint8(0), int64(-5), "99999999999999999999", "2026-01-01T10:00:00+02:00", "when-failed", uint8(8), int64(5), 2)
	f.Fuzz(func(t *testing.T, prioA, markA, preserveA string, phaseA uint8, ageA int64,
		prioB, markB, preserveB string, phaseB uint8, ageB int64, count int) {
		mk := func(name, prio, mark, preserve string, ph uint8, age int64) *v1alpha1.Machine {
			m := machine(name, inPhase(fuzzPhases[int(ph)%len(fuzzPhases)]), created(t0.Add(time.Duration(age)*time.Second)))
			m.Annotations[v1alpha1.MachinePriorityAnnotation] = prio
			m.Annotations[v1alpha1.MarkedForDeletionTimeAnnotation] = mark
			m.Annotations[v1alpha1.PreserveAnnotation] = preserve
			return m
		}
		a := mk("a", prioA, markA, preserveA, phaseA, ageA)
		b := mk("b", prioB, markB, preserveB, phaseB, ageB)
		c := machine("c")
		now := t0.Add(time.Hour)
		if deleteFirst(a, b, now) == deleteFirst(b, a, now) {
			t.Fatalf("deleteFirst is not a strict order for a and b")
		}
		if deleteFirst(a, a, now) {
			t.Fatalf("deleteFirst(a, a)")
		}
		// Transitivity over three machines: the sort gives one order for
		// every input order.
		var first []string
		for _, perm := range [][]*v1alpha1.Machine{{a, b, c}, {c, b, a}, {b, c, a}} {
			got := names(pickVictims(perm, count, now))
			if first == nil {
				first = got
			} else if !slices.Equal(first, got) {
				t.Fatalf("victims depend on the input order: %v vs %v", first, got)
			}
		}
		if want := min(max(count, 0), 3); len(first) != want {
			t.Fatalf("%d victims for count %d", len(first), count)
		}
		victims := pickVictims([]*v1alpha1.Machine{a, b, c}, 3, now)
		seenPreserved := false
		for _, v := range victims {
			p := isPreserved(v, now)
			if seenPreserved && !p {
				t.Fatalf("an unpreserved machine comes after a preserved one: %v", names(victims))
			}
			seenPreserved = seenPreserved || p
		}
	})
}
