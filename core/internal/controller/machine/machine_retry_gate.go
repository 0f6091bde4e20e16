package machine

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/machina-io/machina/core/api/v1alpha1"
)

// retryGate holds a deletion step that failed until its retry period has
// passed, whatever events arrive meanwhile. Without it any event of the
// machine or its Node (a kubelet heartbeat, the cordon the same deletion
// wrote a moment before) ran the failed step again at once, so a driver
// failing DeleteMachine was called many times a second instead of once per
// period of its code (Driver API §7.3).
//
// The gate lives in memory, keyed by the machine's UID and the step: a
// restarted manager tries the stored step once at once, then keeps the
// period again. It is not kept in the status: lastOperation.lastUpdateTime
// has a resolution of a second, too coarse for the short retry.
type retryGate struct {
	mu    sync.Mutex
	holds map[types.UID]gateHold
}

type gateHold struct {
	step  v1alpha1.DeletionStep
	until time.Time
}

// hold keeps step of machine uid from running again before until.
func (g *retryGate) hold(uid types.UID, step v1alpha1.DeletionStep, until time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.holds == nil {
		g.holds = map[types.UID]gateHold{}
	}
	g.holds[uid] = gateHold{step: step, until: until}
}

// wait says how long step of machine uid must still wait at now; 0 when it
// may run. A hold of another step (the deletion moved on) is dropped.
func (g *retryGate) wait(uid types.UID, step v1alpha1.DeletionStep, now time.Time) time.Duration {
	g.mu.Lock()
	defer g.mu.Unlock()
	h, ok := g.holds[uid]
	if !ok {
		return 0
	}
	if h.step != step || !now.Before(h.until) {
		delete(g.holds, uid)
		return 0
	}
	return h.until.Sub(now)
}

// forget drops the hold of a machine whose deletion is over.
func (g *retryGate) forget(uid types.UID) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.holds, uid)
}
