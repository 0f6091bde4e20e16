package machinedeployment

import (
	"github.com/machina-io/machina/core/internal/inplace"
)

// The selection of a wave of an in-place rollout (selectForUpdate) is
// planned too: which candidate nodes may be selected, and how many of them
// at most, is a pure function of a snapshot (planWave); which of those
// hooks or pods hold back needs live pod lists and stays in
// selectForUpdate. The golden waves are in testdata/plans/wave.

// waveCandidate is what planning a wave knows of one candidate machine and
// its node.
type waveCandidate struct {
	// Node is the node's name, "" when the machine has none (it is skipped).
	Node string `json:"node,omitempty"`
	// Selected and Candidate: the node is labelled selected-for-update, or
	// candidate-for-update; ConfigUpdating: a machine configuration pool is
	// updating it.
	Selected       bool `json:"selected,omitempty"`
	Candidate      bool `json:"candidate,omitempty"`
	ConfigUpdating bool `json:"configUpdating,omitempty"`
	// Available: the machine's phase counts as available (isAvailablePhase).
	Available bool `json:"available,omitempty"`
}

// waveSnapshot is what a wave is planned from.
type waveSnapshot struct {
	// Replicas and MaxUnavailable are the deployment's; NewReplicas the new
	// set's replicas, Stale how many of its machines are not on its
	// template yet; Available how many machines of all sets, not being
	// deleted, are in an available phase.
	Replicas       int32 `json:"replicas"`
	MaxUnavailable int32 `json:"maxUnavailable,omitempty"`
	NewReplicas    int32 `json:"newReplicas"`
	Stale          int32 `json:"stale,omitempty"`
	Available      int32 `json:"available"`
	// Candidates are the machines that may be updated, in the rollout's
	// order (loadMachines).
	Candidates []waveCandidate `json:"candidates,omitempty"`
	// Budget is the room the disruption budgets of reason InPlace leave,
	// nil until read: reading records a hold, so it is read only when the
	// in-place budget allows a selection.
	Budget *budgetRoom `json:"-"`
}

// wavePlan is a wave: Counts are the in-place budget's counts, Selectable
// the nodes that may be selected, in order, and Select how many of them at
// most (hooks or pods may hold some back, their slots going to the next).
type wavePlan struct {
	Counts     inplace.Budget `json:"counts"`
	Selectable []string       `json:"selectable,omitempty"`
	Select     int32          `json:"select"`
	BudgetRead bool           `json:"budgetRead,omitempty"`
	// selectable are the indexes of Selectable in the snapshot's
	// candidates; needsBudget: the planner stopped where it needs
	// snapshot.Budget.
	selectable  []int
	needsBudget bool
}

// planWave plans a wave. A selected node takes a slot of the budget while
// its machine still counts as available (it is about to be drained); one
// being drained or updated has left Available already and is counted as
// updating. A candidate node may be selected when its machine is available
// and no machine configuration pool is updating it. The number to select
// is what the in-place budget allows (inplace.Budget), capped by the
// disruption budgets.
func planWave(snap waveSnapshot) wavePlan {
	p := wavePlan{Counts: inplace.Budget{
		Desired:        snap.Replicas,
		Updated:        max(snap.NewReplicas-snap.Stale, 0),
		MaxUnavailable: snap.MaxUnavailable,
		Available:      snap.Available,
	}}
	for i, c := range snap.Candidates {
		if c.Node == "" {
			continue
		}
		if c.Selected {
			if c.Available {
				p.Counts.Undergoing++
			} else {
				p.Counts.Updating++
			}
			continue
		}
		if c.Candidate && c.Available && !c.ConfigUpdating {
			p.Selectable = append(p.Selectable, c.Node)
			p.selectable = append(p.selectable, i)
		}
	}
	n := p.Counts.Selectable()
	if n > 0 {
		if snap.Budget == nil {
			p.needsBudget = true
			return p
		}
		p.BudgetRead = true
		if snap.Budget.Limited && snap.Budget.Room < n {
			n = snap.Budget.Room
		}
	}
	p.Select = n
	return p
}

// planWaveWithBudget plans a wave, and if it may select any node, reads the
// disruption budgets (read, given the nodes under way) and plans again with
// them.
func planWaveWithBudget(snap waveSnapshot, read func(underway int32) budgetRoom) wavePlan {
	p := planWave(snap)
	if p.needsBudget {
		b := read(p.Counts.Undergoing + p.Counts.Updating)
		snap.Budget = &b
		p = planWave(snap)
	}
	return p
}

// waveSnapshotOf takes what a wave of the scope's in-place rollout is
// planned from.
func waveSnapshotOf(s *scope, candidates []machineNode, stale int32) waveSnapshot {
	snap := waveSnapshot{
		Replicas:       s.d.Spec.Replicas,
		MaxUnavailable: maxUnavailable(s.d),
		NewReplicas:    s.new.Spec.Replicas,
		Stale:          stale,
	}
	for _, ms := range s.all() {
		for _, m := range s.machines[ms.UID] {
			if m.DeletionTimestamp == nil && isAvailablePhase(m.Status.CurrentStatus.Phase) {
				snap.Available++
			}
		}
	}
	for _, om := range candidates {
		var c waveCandidate
		if om.node != nil {
			c = waveCandidate{
				Node:           om.node.Name,
				Selected:       inplace.IsSelected(om.node),
				Candidate:      inplace.IsCandidate(om.node),
				ConfigUpdating: inplace.ConfigUpdating(om.node),
				Available:      isAvailablePhase(om.m.Status.CurrentStatus.Phase),
			}
		}
		snap.Candidates = append(snap.Candidates, c)
	}
	return snap
}
