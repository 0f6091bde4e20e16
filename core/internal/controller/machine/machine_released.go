package machine

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// releasedTTL is how long a released machine is remembered: far longer
// than a cache takes to show a deletion, short enough that the set stays
// small.
const releasedTTL = 5 * time.Minute

// releasedMachines remembers the machines whose finalizer this controller
// removed. The cache may still show such a machine, with the deletion step
// it had when the reconcile that finished it began, and an event of its
// Node (deleted in that reconcile) brings a reconcile of it: run from that
// stale copy, the deletion would start over and call DeleteMachine again.
// A released machine is done; a reconcile of it does nothing.
type releasedMachines struct {
	mu sync.Mutex
	at map[types.UID]time.Time
}

func (r *releasedMachines) add(uid types.UID, now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.at == nil {
		r.at = map[types.UID]time.Time{}
	}
	for u, t := range r.at {
		if now.Sub(t) > releasedTTL {
			delete(r.at, u)
		}
	}
	r.at[uid] = now
}

func (r *releasedMachines) has(uid types.UID) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.at[uid]
	return ok
}
