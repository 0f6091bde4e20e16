package machinedeployment

import (
	"context"
	"fmt"
	"slices"
	"time"

	v1alpha1 "github.com/machina-io/machina/core/api/v1alpha1"
)

// A rollout step of RollingUpdate and Recreate, and the scaling of the sets
// for a scaling event or a paused deployment, are planned, then written: a
// snapshot of the deployment's counts and machine sets (rolloutSnapshot) goes
// into a pure function (planRolling, planRecreate, planScale) that
// returns the scale steps to take (rolloutPlan), and applyPlan writes them in
// order, stopping at the first error. The planners are tested against golden
// plans in testdata/plans (plan_test.go), in the spirit of Cluster API's
// rollout planner tests.

// setSnapshot is what a planner knows of one machine set.
type setSnapshot struct {
	Name    string    `json:"name"`
	Created time.Time `json:"created"`
	// Replicas is spec.replicas; StatusReplicas and Available are
	// status.replicas and status.availableReplicas.
	Replicas       int32 `json:"replicas"`
	StatusReplicas int32 `json:"statusReplicas,omitempty"`
	Available      int32 `json:"available,omitempty"`
	// Machines is how many machines the set has in the cache, terminating
	// ones included (Recreate waits for none to be left).
	Machines int32 `json:"machines,omitempty"`
	// DesiredReplicas and MaxReplicas are the set's desired-replicas and
	// max-replicas annotations, nil when absent or not a count (planScale).
	DesiredReplicas *int32 `json:"desiredReplicas,omitempty"`
	MaxReplicas     *int32 `json:"maxReplicas,omitempty"`
}

// available is availableOf for a snapshot: the available machines that stay
// once the set reaches its replicas.
func (m setSnapshot) available() int32 { return min(m.Available, m.Replicas) }

// machines is machinesOf for a snapshot.
func (m setSnapshot) machines() int32 { return max(m.Replicas, m.StatusReplicas) }

// olderThan orders snapshots as olderThan orders sets: by creation, then name.
func (m setSnapshot) olderThan(o setSnapshot) bool {
	if !m.Created.Equal(o.Created) {
		return m.Created.Before(o.Created)
	}
	return m.Name < o.Name
}

// budgetRoom is what the disruption budgets of reason Rollout allow: Room
// more machines when Limited, any number otherwise.
type budgetRoom struct {
	Limited bool  `json:"limited"`
	Room    int32 `json:"room"`
}

// rolloutSnapshot is what a rollout step is planned from.
type rolloutSnapshot struct {
	// Replicas, MaxSurge and MaxUnavailable are the deployment's, as machine
	// counts (maxSurge and maxUnavailable), MaxUnavailable capped at
	// Replicas; both zero for Recreate.
	Replicas       int32 `json:"replicas"`
	MaxSurge       int32 `json:"maxSurge,omitempty"`
	MaxUnavailable int32 `json:"maxUnavailable,omitempty"`
	// Complete is deploymentComplete of the stored status: a rollout that
	// makes no change then cleans up old sets beyond the history limit.
	Complete bool `json:"complete,omitempty"`
	// Bounded: the strategy has maxSurge and maxUnavailable, and a scaling
	// event is spread proportionally; Observed is the deployment's
	// status.replicas, a set's old size when it has no max-replicas
	// annotation (planScale).
	Bounded  bool  `json:"bounded,omitempty"`
	Observed int32 `json:"observed,omitempty"`
	// New is the machine set of the current template, nil while it does not
	// exist; Old are all other sets, in any order.
	New *setSnapshot  `json:"new,omitempty"`
	Old []setSnapshot `json:"old,omitempty"`
	// Budget is the room the disruption budgets leave, nil until read:
	// reading it records a budget that holds the rollout back (an event, the
	// Progressing message), so it is read only for a plan that would delete
	// old machines (readBudgetIfNeeded).
	Budget *budgetRoom `json:"-"`
}

// stepReason says why a step scales a set. The error of a failed step names
// it the way the code before the planner did.
type stepReason string

const (
	reasonNewAboveReplicas stepReason = "new set above the deployment's replicas"
	reasonNewWithinSurge   stepReason = "new set grows within maxSurge"
	reasonNewAtSurgeLimit  stepReason = "new set held at replicas+maxSurge (replica annotations only)"
	reasonOldUnavailable   stepReason = "old set drops machines that are not available"
	reasonOldAvailable     stepReason = "old set shrinks within maxUnavailable and the budget"
	reasonRecreateOld      stepReason = "old set goes to zero"
	reasonRecreateHeld     stepReason = "old set held by the disruption budget"
	reasonRecreateNew      stepReason = "new set gets all replicas once no old machine is left"
	reasonScaleOnly        stepReason = "the only active set takes the replicas"
	reasonScaleSaturated   stepReason = "the new set serves all replicas: old set goes to zero"
	reasonScaleProportion  stepReason = "proportional share of the new replicas+maxSurge"
)

// newSetToCreate names, in a step, the new machine set the plan creates
// first (its name comes from the template hash when it is created). The
// step goes from 0: the set is created with the replicas the step gives it
// (newMachineSetReplicas), and the step then finds nothing left to write,
// or, if the set existed already (the cache lagged), scales it.
const newSetToCreate = "(new machine set)"

// scaleStep scales one machine set from From to To replicas. A step with
// From equal to To changes no count; it brings the set's replica
// annotations up to date (scaleMachineSet writes only if they differ).
type scaleStep struct {
	Set    string     `json:"set"`
	From   int32      `json:"from"`
	To     int32      `json:"to"`
	Reason stepReason `json:"reason"`
}

// rolloutPlan is one rollout step: create the new set first if CreateNew,
// then the scale steps in order, then the history cleanup if CleanupHistory.
// BudgetRead records that the plan depended on the disruption budgets.
type rolloutPlan struct {
	CreateNew      bool        `json:"createNew,omitempty"`
	Steps          []scaleStep `json:"steps,omitempty"`
	CleanupHistory bool        `json:"cleanupHistory,omitempty"`
	BudgetRead     bool        `json:"budgetRead,omitempty"`
	// needsBudget: the planner stopped where it needs snapshot.Budget.
	needsBudget bool
}

func (p *rolloutPlan) add(set string, from, to int32, why stepReason) {
	p.Steps = append(p.Steps, scaleStep{Set: set, From: from, To: to, Reason: why})
}

// scales reports whether a step changes a set's replicas.
func (p *rolloutPlan) scales() bool {
	for _, st := range p.Steps {
		if st.From != st.To {
			return true
		}
	}
	return false
}

// oldestFirst returns copies of the sets, oldest first, for a planner to
// change as it plans.
func oldestFirst(sets []setSnapshot) []setSnapshot {
	out := slices.Clone(sets)
	slices.SortStableFunc(out, func(a, b setSnapshot) int {
		switch {
		case a.olderThan(b):
			return -1
		case b.olderThan(a):
			return 1
		}
		return 0
	})
	return out
}

// setCounts takes a set's counts and replica annotations.
func setCounts(ms *v1alpha1.MachineSet) setSnapshot {
	snap := setSnapshot{
		Name:           ms.Name,
		Created:        ms.CreationTimestamp.Time,
		Replicas:       ms.Spec.Replicas,
		StatusReplicas: ms.Status.Replicas,
		Available:      ms.Status.AvailableReplicas,
	}
	if n, ok := annotationInt(ms, v1alpha1.DesiredReplicasAnnotation); ok {
		snap.DesiredReplicas = &n
	}
	if n, ok := annotationInt(ms, v1alpha1.MaxReplicasAnnotation); ok {
		snap.MaxReplicas = &n
	}
	return snap
}

// snapshotOfSet takes a set's counts, annotations and machines.
func snapshotOfSet(s *scope, ms *v1alpha1.MachineSet) setSnapshot {
	snap := setCounts(ms)
	snap.Machines = int32(len(s.machines[ms.UID]))
	return snap
}

// snapshotOf takes what a rollout step of the scope's deployment is planned
// from; the budget is read later, if the plan needs it.
func snapshotOf(s *scope) rolloutSnapshot {
	snap := rolloutSnapshot{
		Replicas:       s.d.Spec.Replicas,
		MaxSurge:       maxSurge(s.d),
		MaxUnavailable: maxUnavailable(s.d),
		Complete:       deploymentComplete(s.d, &s.d.Status),
		Bounded:        bounded(s.d),
		Observed:       s.d.Status.Replicas,
	}
	if s.new != nil {
		n := snapshotOfSet(s, s.new)
		snap.New = &n
	}
	for _, ms := range s.old {
		snap.Old = append(snap.Old, snapshotOfSet(s, ms))
	}
	return snap
}

// planWithBudget plans with planner, and if the plan needs the disruption
// budgets, reads them (read) and plans again with them. The budgets are read
// before any step is written: a rolling update that also drops unavailable
// old machines records a budget's hold even if that write then fails (the
// code before the planner read them after it).
func planWithBudget(snap rolloutSnapshot, planner func(rolloutSnapshot) rolloutPlan, read func() budgetRoom) rolloutPlan {
	p := planner(snap)
	if p.needsBudget {
		b := read()
		snap.Budget = &b
		p = planner(snap)
	}
	return p
}

// readRolloutBudget reads the room the budgets of reason Rollout leave for
// the deletion of old machines, recording a budget that holds it back.
func (r *Reconciler) readRolloutBudget(s *scope) budgetRoom {
	room, limited := r.room(s, v1alpha1.DisruptionReasonRollout, s.terminatingOld())
	return budgetRoom{Limited: limited, Room: room}
}

// applyPlan writes a plan in order and stops at the first error.
func (r *Reconciler) applyPlan(ctx context.Context, s *scope, p rolloutPlan) error {
	if p.CreateNew {
		if _, err := r.getNewMachineSet(ctx, s, true); err != nil {
			return err
		}
	}
	if err := r.applySteps(ctx, s, p.Steps, r.scaleMachineSet); err != nil {
		return err
	}
	if p.CleanupHistory {
		return r.cleanupHistory(ctx, s)
	}
	return nil
}

// applySteps writes scale steps in order with write (scaleMachineSet, or
// resizeMachineSet for the in-place sizing) and stops at the first error.
func (r *Reconciler) applySteps(ctx context.Context, s *scope, steps []scaleStep,
	write func(context.Context, *scope, *v1alpha1.MachineSet, int32) error) error {
	for _, st := range steps {
		ms := s.new
		if st.Set != newSetToCreate {
			ms = setNamed(s, st.Set)
		}
		if ms == nil {
			return fmt.Errorf("rollout plan scales machine set %s, which this sync does not have", st.Set)
		}
		// The planner simulates every step; a set that does not have the
		// replicas the plan expects means a planner bug, and the step is
		// not taken. A set the plan created may have been there already
		// (the cache lagged), with any replicas.
		if st.Set != newSetToCreate && ms.Spec.Replicas != st.From {
			return fmt.Errorf("rollout plan expects machine set %s at %d replicas, it has %d", ms.Name, st.From, ms.Spec.Replicas)
		}
		if err := write(ctx, s, ms, st.To); err != nil {
			return wrapStepError(st.Reason, err)
		}
	}
	return nil
}

// wrapStepError names the failed step as the rollout did before it was
// planned.
func wrapStepError(why stepReason, err error) error {
	switch why {
	case reasonOldUnavailable:
		return fmt.Errorf("removing unavailable machines of old machine set: %w", err)
	case reasonOldAvailable:
		return fmt.Errorf("scaling down old machine set: %w", err)
	}
	return err
}

// setNamed returns the scope's machine set of that name, nil if none.
func setNamed(s *scope, name string) *v1alpha1.MachineSet {
	for _, ms := range s.all() {
		if ms.Name == name {
			return ms
		}
	}
	return nil
}
