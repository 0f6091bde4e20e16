package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// TestSlotUseOf: two slots over 10 s; node a held one for 3 s, node b for
// 5 s; c was selected but is not back since (its Running is from before),
// d is back but was never selected: 8 of 20 slot-seconds, the first
// selection 1 s in.
func TestSlotUseOf(t *testing.T) {
	start := time.Unix(1000, 0)
	at := func(s float64) time.Time { return start.Add(time.Duration(s * float64(time.Second))) }
	selected := map[string]time.Time{"a": at(1), "b": at(2), "c": at(8)}
	back := map[string]time.Time{"a": at(4), "b": at(7), "c": at(5), "d": at(3)}
	u := slotUseOf(selected, back, start, at(10), 2)
	assert.Equal(t, []time.Duration{3 * time.Second, 5 * time.Second}, u.Cycles)
	assert.InDelta(t, 0.4, u.Use, 1e-9)
	assert.Equal(t, time.Second, u.FirstSelection)
	assert.Zero(t, slotUseOf(nil, back, start, at(10), 2).FirstSelection, "nothing selected")
}
