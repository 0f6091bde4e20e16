package main

import (
	"slices"
	"time"
)

// slotUse tells how an in-place rollout used its budget of nodes updating
// at once (maxUnavailable: its slots). A node holds a slot from its
// selection until its machine is Running again, and the rollout's time is
// about waves × that cycle ÷ the share of time the slots are held, plus
// the wait for the first selection: the three figures say which of them
// to work on.
type slotUse struct {
	// Cycles are the nodes' times from selection to their machine
	// Running again, sorted.
	Cycles []time.Duration
	// Use is the slot-seconds held divided by the slot-seconds the
	// rollout had (slots × its duration).
	Use float64
	// FirstSelection is the time from the template change to the first
	// node's selection.
	FirstSelection time.Duration
}

// slotUseOf computes the slot use of a rollout from start to end with
// slots slots, from when each node was seen selected and when its
// machine was seen Running again (a machine Running again before its
// node's selection, or never, holds no slot: it was not updated).
func slotUseOf(selected, runningAgain map[string]time.Time, start, end time.Time, slots int) slotUse {
	var u slotUse
	var held time.Duration
	first := time.Time{}
	for node, sel := range selected {
		if first.IsZero() || sel.Before(first) {
			first = sel
		}
		back, ok := runningAgain[node]
		if !ok || back.Before(sel) {
			continue
		}
		u.Cycles = append(u.Cycles, back.Sub(sel))
		held += back.Sub(sel)
	}
	slices.Sort(u.Cycles)
	if total := end.Sub(start) * time.Duration(slots); total > 0 {
		u.Use = float64(held) / float64(total)
	}
	if !first.IsZero() {
		u.FirstSelection = first.Sub(start)
	}
	return u
}
