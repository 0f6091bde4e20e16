// Package freeze holds the process-wide safety gate that the API server
// checker (and the manager, when it loses its lease to an outage) closes
// while the control or target API server is unreachable.
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
	mu     sync.RWMutex
	frozen bool
	reason string
	since  time.Time
	// graceUntil ends the grace period after the last unfreeze: until
	// then timeouts still fail no machine.
	graceUntil time.Time
	changed    chan struct{} // closed and replaced on every state change
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

// Since is when the outage that froze the gate began (the time given to
// the first Freeze); the zero time while it is open.
func (g *Gate) Since() time.Time {
	if g == nil {
		return time.Time{}
	}
	g.mu.RLock()
	defer g.mu.RUnlock()
	return g.since
}

// Freeze closes the gate with reason, for an outage that began at since.
// Freezing a frozen gate updates the reason and keeps the earlier of the
// two times. It reports whether the gate was open before.
func (g *Gate) Freeze(reason string, since time.Time) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.reason = reason
	if g.frozen {
		if since.Before(g.since) {
			g.since = since
		}
		return false
	}
	g.frozen = true
	g.since = since
	g.notifyLocked()
	return true
}

// Unfreeze opens the gate without a grace period. It reports whether the
// gate was frozen before.
func (g *Gate) Unfreeze() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.unfreezeLocked()
}

// UnfreezeWithGrace opens the gate at now and starts a grace period as long
// as the outage was (now minus Since): until it ends, HoldsTimeouts stays
// true. What a Node went through while nobody could see it (it lost its
// heartbeat, its kubelet restarted) takes about as long to settle as the
// outage lasted; a machine must not be failed for that. It reports whether
// the gate was frozen before, and the grace period.
func (g *Gate) UnfreezeWithGrace(now time.Time) (bool, time.Duration) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.frozen {
		return false, 0
	}
	grace := max(now.Sub(g.since), 0)
	if until := now.Add(grace); until.After(g.graceUntil) {
		g.graceUntil = until
	}
	return g.unfreezeLocked(), grace
}

func (g *Gate) unfreezeLocked() bool {
	if !g.frozen {
		return false
	}
	g.frozen = false
	g.reason = ""
	g.since = time.Time{}
	g.notifyLocked()
	return true
}

// HoldsTimeouts reports whether, at now, a machine's health or creation
// timeout must not fail it: while the gate is frozen and during the grace
// period after UnfreezeWithGrace.
func (g *Gate) HoldsTimeouts(now time.Time) bool {
	if g == nil {
		return false
	}
	g.mu.RLock()
	defer g.mu.RUnlock()
	return g.frozen || now.Before(g.graceUntil)
}

// GraceUntil is when the grace period after the last UnfreezeWithGrace ends
// (the zero time if there was none).
func (g *Gate) GraceUntil() time.Time {
	if g == nil {
		return time.Time{}
	}
	g.mu.RLock()
	defer g.mu.RUnlock()
	return g.graceUntil
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
