package meltdown

import (
	"slices"
	"sync"
	"time"
)

// defaultPermitTTL is how long a permit counts without an explicit Release.
// It only has to outlast the delay between the Machine controller's status
// write and its cache showing the machine as Failed (after which the
// machine counts through inProgress); it also bounds a permit leaked by a
// caller that never releases.
const defaultPermitTTL = 5 * time.Minute

// permitSet hands out replacement permits per MachineDeployment. A permit is
// held by one machine; acquiring it again for the same machine succeeds
// without taking a second one, so a reconcile that repeats after a failed
// write cannot leak permits. It is safe for concurrent use.
//
// Permits cover the gap a cache leaves: when two workers decide about two
// machines of one deployment at the same moment, both read a cache that
// shows neither as Failed yet. The permit of the first is what the second
// sees.
type permitSet struct {
	ttl time.Duration
	now func() time.Time

	mu   sync.Mutex
	held map[string]map[string]time.Time // deployment -> machine -> granted at
}

// newPermitSet returns an empty set of permits whose grants count for ttl
// (defaultPermitTTL when ttl <= 0) unless released earlier.
func newPermitSet(ttl time.Duration) *permitSet {
	if ttl <= 0 {
		ttl = defaultPermitTTL
	}
	return &permitSet{ttl: ttl, now: time.Now, held: map[string]map[string]time.Time{}}
}

// listing is the caller's read of one deployment's machines, the only
// thing a permit is measured against. The zero value says nothing.
type listing struct {
	// at is when the read was taken (before the List call).
	at time.Time
	// names are all machines of the deployment the read shows.
	names []string
	// inProgress are those being replaced (the function inProgress).
	inProgress []string
}

// TryAcquire grants machine a permit to be replaced, as one of the machines
// of deployment, if fewer than limit machines of that deployment are
// being replaced: those the listing shows in progress together with those
// holding a permit. A machine that already holds a permit, or is itself
// in progress, is granted at once.
//
// A permit is dropped only when a read shows what it stood for: the
// machine in progress (the read counts it from here on) or gone (a permit
// granted before the read was taken, for a machine the read no longer
// lists; its holder read it from the same cache before asking). Dropping
// it on the strength of a fresher read than the cache, such as a live Get,
// would let a machine the cache does not yet show as Failed go uncounted.
func (p *permitSet) TryAcquire(deployment, machine string, limit int, seen listing) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	held := p.held[deployment]
	inProgress := seen.inProgress
	for name, at := range held {
		expired := now.Sub(at) >= p.ttl
		observed := name != machine && slices.Contains(inProgress, name)
		gone := at.Before(seen.at) && !slices.Contains(seen.names, name)
		if expired || observed || gone {
			delete(held, name)
		}
	}
	if _, ok := held[machine]; ok || slices.Contains(inProgress, machine) {
		return true
	}
	busy := len(held)
	for _, name := range inProgress {
		if _, dup := held[name]; !dup {
			busy++
		}
	}
	if busy >= limit {
		return false
	}
	if held == nil {
		held = map[string]time.Time{}
		p.held[deployment] = held
	}
	held[machine] = now
	return true
}

// Release gives machine's permit back: after its replacement was decided
// but failed to be recorded, or when the machine recovered.
// Releasing a permit that is not held does nothing.
func (p *permitSet) Release(deployment, machine string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	held := p.held[deployment]
	delete(held, machine)
	if len(held) == 0 {
		delete(p.held, deployment)
	}
}

// Held is the number of unexpired permits of deployment.
func (p *permitSet) Held(deployment string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	now := p.now()
	for _, at := range p.held[deployment] {
		if now.Sub(at) < p.ttl {
			n++
		}
	}
	return n
}
