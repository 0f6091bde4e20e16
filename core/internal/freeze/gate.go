// Package freeze holds the process-wide safety gate that the API server
// checker closes while the control or target API server is unreachable.
//
// The gate is deliberately tiny and has no dependencies: the controllers
// that must stand still during an outage (the Machine controller's health
// decisions, the MachineSet and MachineDeployment controllers' creations and
// deletions) read it with Frozen on every reconcile; only the checker in
// core/internal/controller/safety/apiserver writes it.
package freeze

import (
	"sync"
	"time"
)

// Gate says whether the controllers are frozen, and why. The zero value is
// an open (unfrozen) gate ready for use; a nil *Gate is a gate that is never
// frozen, so a controller may hold an optional *Gate field. All methods are
// safe for concurrent use.
type Gate struct {
	mu      sync.RWMutex
	frozen  bool
	reason  string
	since   time.Time
	changed chan struct{} // closed and replaced on every state change
}

// Frozen reports whether the gate is frozen.
func (g *Gate) Frozen() bool {
	if g == nil {
		return false
	}
	g.mu.RLock()
	defer g.mu.RUnlock()
	return g.frozen
}

// Reason is why the gate is frozen (for logs, events and lastOperation
// texts); empty while it is open.
func (g *Gate) Reason() string {
	if g == nil {
		return ""
	}
	g.mu.RLock()
	defer g.mu.RUnlock()
	return g.reason
}

// Since is when the gate was frozen; the zero time while it is open.
func (g *Gate) Since() time.Time {
	if g == nil {
		return time.Time{}
	}
	g.mu.RLock()
	defer g.mu.RUnlock()
	return g.since
}

// Freeze closes the gate with reason, at time now. Freezing a frozen gate
// only updates the reason (the time it was frozen stays). It reports whether
// the gate was open before.
func (g *Gate) Freeze(reason string, now time.Time) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.reason = reason
	if g.frozen {
		return false
	}
	g.frozen = true
	g.since = now
	g.notifyLocked()
	return true
}

// Unfreeze opens the gate. It reports whether the gate was frozen before.
func (g *Gate) Unfreeze() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.frozen {
		return false
	}
	g.frozen = false
	g.reason = ""
	g.since = time.Time{}
	g.notifyLocked()
	return true
}

// Changed returns a channel that is closed at the next change of the gate
// (freeze or unfreeze). A controller that parked work while frozen can
// wait on it to re-enqueue that work as soon as the gate opens, instead of
// polling.
func (g *Gate) Changed() <-chan struct{} {
	if g == nil {
		return nil // a nil gate never changes: receiving blocks forever
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.changed == nil {
		g.changed = make(chan struct{})
	}
	return g.changed
}

func (g *Gate) notifyLocked() {
	if g.changed != nil {
		close(g.changed)
		g.changed = nil
	}
}
