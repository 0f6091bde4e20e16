package machinedeployment

import (
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/types"

	v1alpha1 "github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/internal/controller/setup"
)

// movedTTL is how long a move is remembered while the cache does not show
// it: far longer than the cache lags, short enough that a machine deleted
// meanwhile is forgotten (setup.Written's default).
const movedTTL = setup.DefaultWrittenTTL

// movedMachines remembers the machines an in-place rollout moved to a new
// set until the cache shows them there. A move takes the node's marks off
// in the same sync (clearMoved); a sync right after it may still find the
// machine in its old set in the cache, and would make its clean node a
// candidate again, and select it for a second update.
//
// Each move is a setup.Written write whose value is the set the machine
// moved to. The write is recorded without its resourceVersion (moveMachine
// keeps only whether it succeeded): the cache shows it when it shows the
// machine in that set.
type movedMachines struct {
	to setup.Written[types.UID]
}

// add records that machine m moved to set.
func (mm *movedMachines) add(m types.UID, set types.UID, now time.Time) {
	mm.to.Record(m, "", set, now)
}

// apply puts the machines the cache still shows in their old set where
// they moved (when that set is the deployment's), and forgets the moves
// the cache shows, and the old ones.
func (mm *movedMachines) apply(s *scope) {
	type shift struct {
		m        *v1alpha1.Machine
		from, to types.UID
	}
	var shifts []shift
	for setUID, machines := range s.machines {
		for _, m := range machines {
			mv, ok := mm.to.Get(m.UID, s.now)
			switch {
			case !ok:
			case setUID == mv.Value:
				mm.to.Forget(m.UID) // the cache has caught up
			case s.hasSet(mv.Value):
				shifts = append(shifts, shift{m: m, from: setUID, to: mv.Value})
			}
		}
	}
	for _, sh := range shifts {
		s.machines[sh.from] = slices.DeleteFunc(s.machines[sh.from], func(x *v1alpha1.Machine) bool { return x == sh.m })
		s.machines[sh.to] = append(s.machines[sh.to], sh.m)
	}
}

// hasSet reports whether uid is one of the deployment's sets.
func (s *scope) hasSet(uid types.UID) bool {
	return slices.ContainsFunc(s.sets, func(ms *v1alpha1.MachineSet) bool { return ms.UID == uid })
}
