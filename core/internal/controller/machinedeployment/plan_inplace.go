package machinedeployment

import (
	"github.com/machina-io/machina/core/internal/inplace"
)

// The in-place rollout's set sizes are planned like the other strategies'
// steps: a snapshot of the sets' replicas and machines (inPlaceSnapshot)
// goes into a pure function that returns the scale steps, and applySteps
// writes them. Two moments of a sync size the sets: before anything else
// (planInPlaceSizes: every set follows the machines it has) and after the
// moves of updated machines (planInPlaceMoves: the old sets shrink and the
// new one grows by what moved). Unlike the other strategies' steps these
// decide from the deployment's machines, not from the sets' status, so they
// are written with resizeMachineSet (a write refused only when the set's
// replicas changed since the read). Golden plans: testdata/plans/inplace.

// inPlaceSetSnapshot is what the in-place sizing knows of one machine set.
type inPlaceSetSnapshot struct {
	Name     string `json:"name"`
	Replicas int32  `json:"replicas"`
	// Machines counts the set's machines that are not being deleted.
	Machines int32 `json:"machines"`
	// Marked counts those that carry the transfer marker: machines moved
	// into the set whose scaling may not have been written before the set
	// became old (a rollback or a newer template right after a move).
	Marked int32 `json:"marked,omitempty"`
	// Moved counts the machines this sync moved out of the set to the new
	// one (planInPlaceMoves).
	Moved int32 `json:"moved,omitempty"`
}

// inPlaceSnapshot is what the in-place sizing is planned from: the
// deployment's replicas and maxSurge, its new set and its old ones, in the
// order the scope holds them.
type inPlaceSnapshot struct {
	Replicas int32                `json:"replicas"`
	MaxSurge int32                `json:"maxSurge,omitempty"`
	New      inPlaceSetSnapshot   `json:"new"`
	Old      []inPlaceSetSnapshot `json:"old,omitempty"`
}

const (
	reasonInPlaceOldFollows stepReason = "old set follows the machines it has, and those moved into it"
	reasonInPlaceNewSize    stepReason = "new set counts its machines, grown by the surge or by machines missing"
	reasonInPlaceMovedOut   stepReason = "old set shrinks by the machines moved out"
	reasonInPlaceMovedIn    stepReason = "new set grows by the machines moved in"
)

// planInPlaceSizes brings the sets' replicas in line with their machines
// and the engine's sizing: an old set never waits for machines it cannot
// create (it is scale-up-disabled), nor drops a machine moved into it; the
// new set is sized from the machines it has, not from its replicas
// (replicas above what the sizing allows, after a rollback made an old set
// new again, would create machines the rollout does not need; replicas
// below would let the set delete a machine just moved into it once its
// marker is gone), and grows by the surge or by machines missing
// altogether (inplace.NewReplicas). The new set always has a step: its
// replica annotations follow the deployment even when its count does not
// change.
func planInPlaceSizes(snap inPlaceSnapshot) rolloutPlan {
	var p rolloutPlan
	var total int32
	for _, ms := range snap.Old {
		if want := max(min(ms.Replicas, ms.Machines), ms.Marked); want != ms.Replicas {
			p.add(ms.Name, ms.Replicas, want, reasonInPlaceOldFollows)
		}
		total += ms.Machines
	}
	n := snap.New
	p.add(n.Name, n.Replicas, inplace.NewReplicas(snap.Replicas, total+n.Machines, n.Machines, snap.MaxSurge), reasonInPlaceNewSize)
	return p
}

// planInPlaceMoves scales the sets for the machines a sync moved: each old
// set down by the machines that left it, the new set up by all of them,
// never beyond the deployment's replicas. Nothing moved, nothing to write.
func planInPlaceMoves(snap inPlaceSnapshot) rolloutPlan {
	var p rolloutPlan
	var moved int32
	for _, ms := range snap.Old {
		if ms.Moved > 0 {
			p.add(ms.Name, ms.Replicas, max(ms.Replicas-ms.Moved, 0), reasonInPlaceMovedOut)
			moved += ms.Moved
		}
	}
	if moved == 0 {
		return rolloutPlan{}
	}
	n := snap.New
	p.add(n.Name, n.Replicas, min(n.Replicas+moved, snap.Replicas), reasonInPlaceMovedIn)
	return p
}
