package node

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// addedGrace is how long the controller trusts its own finalizer write over
// a cache that does not show it yet.
const addedGrace = 5 * time.Second

// added remembers the Nodes the controller gave its finalizer a moment ago.
// A Node's creation and its Machine's label arrive as two events close
// together; the second sync would otherwise read the Node from a cache that
// does not yet hold the first sync's write and patch it again. Past
// addedGrace the cache is believed again, so a finalizer someone removed
// meanwhile is added back.
type added struct {
	mu sync.Mutex
	at map[types.UID]time.Time
}

// pending returns how much longer the cache is not to be believed about
// the Node's finalizer (zero: believe it).
func (a *added) pending(uid types.UID, now time.Time) time.Duration {
	a.mu.Lock()
	defer a.mu.Unlock()
	t, ok := a.at[uid]
	if !ok {
		return 0
	}
	if left := addedGrace - now.Sub(t); left > 0 {
		return left
	}
	delete(a.at, uid)
	return 0
}

func (a *added) record(uid types.UID, now time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.at == nil {
		a.at = map[types.UID]time.Time{}
	}
	a.at[uid] = now
}

// seen forgets the Node once the cache shows its finalizer.
func (a *added) seen(uid types.UID) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.at, uid)
}
