package inplace

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestSelectable(t *testing.T) {
	cases := []struct {
		name string
		b    Budget
		want int32
	}{
		// Start of a rollout of 3 with maxUnavailable 1: one node at a time.
		{"start, maxUnavailable 1", Budget{Desired: 3, Available: 3, MaxUnavailable: 1}, 1},
		// The one selected node is still available (being drained): the
		// budget is used up by it.
		{"one under way, still available", Budget{Desired: 3, Available: 3, Undergoing: 1, MaxUnavailable: 1}, 0},
		{"one under way, unavailable", Budget{Desired: 3, Available: 2, Undergoing: 1, MaxUnavailable: 1}, 0},
		// One moved to the new set and Running again: the next one.
		{"one moved", Budget{Desired: 3, Updated: 1, Available: 3, MaxUnavailable: 1}, 1},
		// Never more than what is left to update.
		{"large maxUnavailable", Budget{Desired: 3, Available: 3, MaxUnavailable: 10}, 3},
		{"large maxUnavailable, two moved", Budget{Desired: 3, Updated: 2, Available: 3, MaxUnavailable: 3}, 1},
		// Undergoing plus updated reach desired: nothing more.
		{"all under way or done", Budget{Desired: 4, Updated: 2, Available: 4, Undergoing: 2, MaxUnavailable: 4}, 0},
		{"all done", Budget{Desired: 4, Updated: 4, Available: 4, MaxUnavailable: 1}, 0},
		// A machine unavailable for another reason takes the budget.
		{"one unhealthy machine", Budget{Desired: 3, Available: 2, MaxUnavailable: 1}, 0},
		{"two unhealthy, negative room", Budget{Desired: 3, Available: 1, MaxUnavailable: 1}, 0},
		// A percentage resolved by the caller: 10% of 20 is 2.
		{"10% of 20", Budget{Desired: 20, Available: 20, MaxUnavailable: 2}, 2},
		{"10% of 20, one failed node under way", Budget{Desired: 20, Available: 19, Undergoing: 1, MaxUnavailable: 2}, 0},
		// maxUnavailable 0 with an extra surge machine available.
		{"surge machine available", Budget{Desired: 3, Updated: 1, Available: 4, MaxUnavailable: 0}, 1},
		{"zero replicas", Budget{Desired: 0, MaxUnavailable: 1}, 0},
		// 20 of 200 selected, 10 of them drained and updating: the 10
		// still available are about to be drained, the 10 updating are
		// out of Available already; the wave's slots are all taken.
		{"wave under way, half updating", Budget{Desired: 200, Available: 190, Undergoing: 10, Updating: 10, MaxUnavailable: 20}, 0},
		// 10 of them moved and Running again: their slots are free while
		// the other 10 still update.
		{"half the wave back", Budget{Desired: 200, Updated: 10, Available: 190, Updating: 10, MaxUnavailable: 20}, 10},
		// Updating nodes are not selected twice: what is left to update
		// is under way already.
		{"the rest updating", Budget{Desired: 4, Updated: 2, Available: 2, Updating: 2, MaxUnavailable: 4}, 0},
		{"maxUnavailable equals desired", Budget{Desired: 2, Available: 2, MaxUnavailable: 2}, 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, c.want, c.b.Selectable(), "%+v", c.b)
		})
	}
}

func TestNewReplicas(t *testing.T) {
	cases := []struct {
		desired, total, current, surge, want int32
	}{
		// Manual (surge 0): the new set starts empty; every machine comes
		// by transfer.
		{3, 3, 0, 0, 0},
		// Auto with surge 1: one fresh machine of the new template.
		{3, 3, 0, 1, 1},
		{3, 4, 1, 1, 1},
		// Machines missing altogether are created fresh.
		{3, 2, 0, 0, 1},
		{5, 3, 1, 0, 3},
		// No old machines left: straight to desired.
		{3, 1, 1, 0, 3},
		// Above desired (scale-down during a rollout): back to desired.
		{2, 4, 3, 1, 2},
		// Surge larger than what is left: capped at desired.
		{3, 3, 0, 10, 3},
		{0, 2, 0, 1, 0},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%+v", c), func(t *testing.T) {
			assert.Equal(t, c.want, NewReplicas(c.desired, c.total, c.current, c.surge))
		})
	}
}

// FuzzSelectable checks the invariants of an Auto step on any counts: it
// never selects a negative number, never more than is left to update,
// nothing once the nodes under way and the updated ones reach desired, and
// never so many that the machines available after the step (the selected
// ones drained) fall below desired − maxUnavailable when they were not
// below it already.
func FuzzSelectable(f *testing.F) {
	f.Add(int32(3), int32(0), int32(3), int32(0), int32(1))
	f.Add(int32(20), int32(5), int32(18), int32(2), int32(2))
	f.Fuzz(func(t *testing.T, desired, updated, available, undergoing, maxUnavailable int32) {
		const limit = 1 << 20
		if desired < 0 || updated < 0 || available < 0 || undergoing < 0 || maxUnavailable < 0 ||
			desired > limit || updated > limit || available > limit || undergoing > limit || maxUnavailable > limit {
			t.Skip()
		}
		b := Budget{Desired: desired, Updated: updated, Available: available, Undergoing: undergoing, MaxUnavailable: maxUnavailable}
		n := b.Selectable()
		if n < 0 {
			t.Fatalf("%+v: negative %d", b, n)
		}
		if n > 0 && n > desired-updated {
			t.Fatalf("%+v: %d exceeds what is left, %d", b, n, desired-updated)
		}
		if undergoing+updated >= desired && n != 0 {
			t.Fatalf("%+v: selected %d with everything under way", b, n)
		}
		if n > 0 && available-undergoing-n < desired-maxUnavailable {
			t.Fatalf("%+v: selecting %d leaves %d available, below %d", b, n, available-undergoing-n, desired-maxUnavailable)
		}
	})
}
