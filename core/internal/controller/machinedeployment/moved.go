package machinedeployment

import (
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	v1alpha1 "github.com/machina-io/machina/core/api/v1alpha1"
)

// movedTTL is how long a move is remembered while the cache does not show
// it: far longer than the cache lags, short enough that a machine deleted
// meanwhile is forgotten.
const movedTTL = 5 * time.Minute

// movedMachines remembers the machines an in-place rollout moved to a new
// set until the cache shows them there. A move takes the node's marks off
// in the same sync (clearMoved); a sync right after it may still find the
// machine in its old set in the cache, and would make its clean node a
// candidate again, and select it for a second update.
type movedMachines struct {
	mu sync.Mutex
	// to is the set each machine moved to, and when.
	to map[types.UID]movedTo
}

type movedTo struct {
	set types.UID
	at  time.Time
}

// add records that machine m moved to set.
func (mm *movedMachines) add(m types.UID, set types.UID, now time.Time) {
	mm.mu.Lock()
	defer mm.mu.Unlock()
	if mm.to == nil {
		mm.to = map[types.UID]movedTo{}
	}
	mm.to[m] = movedTo{set: set, at: now}
}

// apply puts the machines the cache still shows in their old set where
// they moved (when that set is the deployment's), and forgets the moves
// the cache shows, and the old ones.
func (mm *movedMachines) apply(s *scope) {
	mm.mu.Lock()
	defer mm.mu.Unlock()
	if len(mm.to) == 0 {
		return
	}
	for uid, mv := range mm.to {
		if s.now.Sub(mv.at) > movedTTL {
			delete(mm.to, uid)
		}
	}
	type shift struct {
		m        *v1alpha1.Machine
		from, to types.UID
	}
	var shifts []shift
	for setUID, machines := range s.machines {
		for _, m := range machines {
			mv, ok := mm.to[m.UID]
			switch {
			case !ok:
			case setUID == mv.set:
				delete(mm.to, m.UID) // the cache has caught up
			case s.hasSet(mv.set):
				shifts = append(shifts, shift{m: m, from: setUID, to: mv.set})
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
