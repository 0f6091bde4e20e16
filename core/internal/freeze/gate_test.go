package freeze

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestZeroGateIsOpen(t *testing.T) {
	var g Gate
	assert.False(t, g.Frozen())
	assert.Empty(t, g.Reason())
	assert.True(t, g.Since().IsZero())
}

func TestNilGateIsNeverFrozen(t *testing.T) {
	var g *Gate
	assert.False(t, g.Frozen())
	assert.Empty(t, g.Reason())
	assert.True(t, g.Since().IsZero())
	assert.Nil(t, g.Changed())
}

func TestFreezeAndUnfreeze(t *testing.T) {
	var g Gate
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

	require.True(t, g.Freeze("target API server unreachable", t0))
	assert.True(t, g.Frozen())
	assert.Equal(t, "target API server unreachable", g.Reason())
	assert.Equal(t, t0, g.Since())

	// A second freeze updates the reason but keeps the start.
	require.False(t, g.Freeze("control and target API servers unreachable", t0.Add(time.Minute)))
	assert.Equal(t, "control and target API servers unreachable", g.Reason())
	assert.Equal(t, t0, g.Since())

	require.True(t, g.Unfreeze())
	assert.False(t, g.Frozen())
	assert.Empty(t, g.Reason())
	assert.True(t, g.Since().IsZero())
	require.False(t, g.Unfreeze())
}

func TestChangedIsClosedOnEachTransition(t *testing.T) {
	var g Gate
	ch := g.Changed()
	select {
	case <-ch:
		t.Fatal("Changed closed before any change")
	default:
	}
	g.Freeze("x", time.Now())
	select {
	case <-ch:
	default:
		t.Fatal("Changed not closed by Freeze")
	}

	// A repeated freeze is no change.
	ch = g.Changed()
	g.Freeze("y", time.Now())
	select {
	case <-ch:
		t.Fatal("Changed closed by a freeze of a frozen gate")
	default:
	}
	g.Unfreeze()
	select {
	case <-ch:
	default:
		t.Fatal("Changed not closed by Unfreeze")
	}
}

func TestGateConcurrentUse(t *testing.T) {
	var g Gate
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 1000 {
				if i%2 == 0 {
					g.Freeze("r", time.Now())
				} else {
					g.Unfreeze()
				}
				_ = g.Frozen()
				_ = g.Reason()
				_ = g.Changed()
			}
		}()
	}
	wg.Wait()
	// Whatever the interleaving, the state is consistent.
	if g.Frozen() {
		assert.Equal(t, "r", g.Reason())
		assert.False(t, g.Since().IsZero())
	} else {
		assert.Empty(t, g.Reason())
		assert.True(t, g.Since().IsZero())
	}
}

func TestFreezeKeepsTheEarliestStart(t *testing.T) {
	var g Gate
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	g.Freeze("lost the lease", t0.Add(10*time.Second))
	g.Freeze("control API server unreachable", t0)
	assert.Equal(t, t0, g.Since(), "a later freeze for an outage that began earlier moves the start back")
	g.Freeze("control API server unreachable", t0.Add(time.Minute))
	assert.Equal(t, t0, g.Since())
}

func TestUnfreezeWithGraceHoldsTimeoutsAsLongAsTheOutage(t *testing.T) {
	var g Gate
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	assert.False(t, g.HoldsTimeouts(t0), "an open gate without a past outage holds nothing")

	g.Freeze("x", t0)
	assert.True(t, g.HoldsTimeouts(t0.Add(time.Hour)), "a frozen gate holds timeouts")

	up := t0.Add(90 * time.Second)
	opened, grace := g.UnfreezeWithGrace(up)
	require.True(t, opened)
	assert.Equal(t, 90*time.Second, grace)
	assert.False(t, g.Frozen())
	assert.Equal(t, up.Add(90*time.Second), g.GraceUntil())
	assert.True(t, g.HoldsTimeouts(up.Add(89*time.Second)), "within the grace period")
	assert.False(t, g.HoldsTimeouts(up.Add(90*time.Second)), "after the grace period")

	// A short second outage does not cut the first one's grace short.
	g.Freeze("y", up.Add(time.Second))
	opened, grace = g.UnfreezeWithGrace(up.Add(3 * time.Second))
	require.True(t, opened)
	assert.Equal(t, 2*time.Second, grace)
	assert.Equal(t, up.Add(90*time.Second), g.GraceUntil())

	// Opening an open gate starts no grace.
	opened, grace = g.UnfreezeWithGrace(up.Add(time.Hour))
	assert.False(t, opened)
	assert.Zero(t, grace)
	assert.Equal(t, up.Add(90*time.Second), g.GraceUntil())
}

func TestNilGateHoldsNoTimeouts(t *testing.T) {
	var g *Gate
	assert.False(t, g.HoldsTimeouts(time.Now()))
	assert.True(t, g.GraceUntil().IsZero())
}
