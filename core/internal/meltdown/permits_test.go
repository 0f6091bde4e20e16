package meltdown

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// manualClock is a clock a test moves by hand.
type manualClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *manualClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *manualClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func newTestPermits(ttl time.Duration) (*permitSet, *manualClock) {
	clock := &manualClock{t: time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)}
	p := newPermitSet(ttl)
	p.now = clock.now
	return p, clock
}

func TestPermitsLimit(t *testing.T) {
	p, _ := newTestPermits(time.Hour)
	const dep = "ns/workers"

	assert.True(t, p.TryAcquire(dep, "m1", 2, listing{}))
	assert.True(t, p.TryAcquire(dep, "m2", 2, listing{}))
	assert.False(t, p.TryAcquire(dep, "m3", 2, listing{}), "a third machine exceeds the limit of 2")
	assert.Equal(t, 2, p.Held(dep))

	// Asking again for a machine that holds a permit is no second permit.
	assert.True(t, p.TryAcquire(dep, "m1", 2, listing{}))
	assert.Equal(t, 2, p.Held(dep))

	// Other deployments have their own budget.
	assert.True(t, p.TryAcquire("ns/other", "m3", 1, listing{}))

	p.Release(dep, "m1")
	assert.Equal(t, 1, p.Held(dep))
	assert.True(t, p.TryAcquire(dep, "m3", 2, listing{}))
	assert.False(t, p.TryAcquire(dep, "m4", 2, listing{}))

	// Releasing what is not held is harmless.
	p.Release(dep, "nobody")
	p.Release("ns/none", "m1")
	assert.Equal(t, 2, p.Held(dep))
}

func TestPermitsCountObservedReplacements(t *testing.T) {
	p, _ := newTestPermits(time.Hour)
	const dep = "ns/workers"

	// One machine of the deployment is already Failed in the cache.
	assert.True(t, p.TryAcquire(dep, "m1", 2, listing{inProgress: []string{"old-failed"}}))
	assert.False(t, p.TryAcquire(dep, "m2", 2, listing{inProgress: []string{"old-failed"}}))

	// The cache now shows m1 as Failed too: it is counted once, not twice.
	assert.False(t, p.TryAcquire(dep, "m2", 2, listing{inProgress: []string{"old-failed", "m1"}}))
	assert.Equal(t, 0, p.Held(dep), "a permit the observed state covers is dropped")
	// Once the old machine is gone, there is room again.
	assert.True(t, p.TryAcquire(dep, "m2", 2, listing{inProgress: []string{"m1"}}))

	// A machine already being replaced is allowed whatever the count.
	assert.True(t, p.TryAcquire(dep, "m1", 0, listing{inProgress: []string{"m1"}}))

	// Limit 0: nobody new.
	assert.False(t, p.TryAcquire("ns/frozen", "x", 0, listing{}))
}

// A permit is dropped when a read taken after it was granted no longer
// lists its machine (the machine is gone), and only then: a read taken
// before the grant, or one that still lists the machine, keeps it.
func TestPermitsDroppedWhenGone(t *testing.T) {
	p, clock := newTestPermits(time.Hour)
	const dep = "ns/workers"
	before := clock.now()
	clock.advance(time.Second)
	require.True(t, p.TryAcquire(dep, "m1", 1, listing{at: before, names: []string{"m1", "m2"}}))

	// An older read that does not list m1 says nothing about it.
	assert.False(t, p.TryAcquire(dep, "m2", 1, listing{at: before, names: []string{"m2"}}))
	// A newer read that still lists m1, not yet Failed there: m1 counts.
	clock.advance(time.Second)
	assert.False(t, p.TryAcquire(dep, "m2", 1, listing{at: clock.now(), names: []string{"m1", "m2"}}))
	assert.Equal(t, 1, p.Held(dep))
	// A newer read without m1: it is gone, its permit with it.
	assert.True(t, p.TryAcquire(dep, "m2", 1, listing{at: clock.now(), names: []string{"m2", "m3"}}))
	assert.Equal(t, 1, p.Held(dep), "m2 holds the only permit")
}

func TestPermitsExpire(t *testing.T) {
	p, clock := newTestPermits(time.Minute)
	const dep = "ns/workers"
	require.True(t, p.TryAcquire(dep, "m1", 1, listing{}))
	require.False(t, p.TryAcquire(dep, "m2", 1, listing{}))
	clock.advance(59 * time.Second)
	require.False(t, p.TryAcquire(dep, "m2", 1, listing{}))
	assert.Equal(t, 1, p.Held(dep))
	clock.advance(time.Second)
	assert.Equal(t, 0, p.Held(dep))
	assert.True(t, p.TryAcquire(dep, "m2", 1, listing{}), "an expired permit no longer counts")
}

// TestPermitsConcurrency lets ten machines of one deployment race for a
// limit of two, each holding its permit for a moment and giving it back,
// and checks that never more than two hold one at a time.
func TestPermitsConcurrency(t *testing.T) {
	p := newPermitSet(time.Hour)
	const (
		dep    = "ns/workers"
		limit  = 2
		rounds = 200
	)
	var holding, maxHolding, grants atomic.Int64
	var wg sync.WaitGroup
	for i := range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			name := fmt.Sprintf("m%d", i)
			for range rounds {
				if !p.TryAcquire(dep, name, limit, listing{}) {
					continue
				}
				grants.Add(1)
				n := holding.Add(1)
				for {
					old := maxHolding.Load()
					if n <= old || maxHolding.CompareAndSwap(old, n) {
						break
					}
				}
				// Yield while holding, so that others try in the meantime.
				time.Sleep(10 * time.Microsecond)
				holding.Add(-1)
				p.Release(dep, name)
			}
		}()
	}
	wg.Wait()
	assert.LessOrEqual(t, maxHolding.Load(), int64(limit), "more permits than the limit at one time")
	assert.Equal(t, int64(limit), maxHolding.Load(), "the limit was never reached: the test did not race")
	assert.Positive(t, grants.Load())
	assert.Equal(t, 0, p.Held(dep))
}
