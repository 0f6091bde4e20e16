package mcpool

import (
	"context"
	"fmt"
	"sort"
	"strings"

	mcv1 "github.com/machina-io/machina/core/api/machineconfiguration/v1"
	"github.com/machina-io/machina/core/internal/controller/phase"
	"github.com/machina-io/machina/core/internal/controller/setup"
)

// counts are the machine counts of a pool's status.
type counts struct {
	machines, updated, ready, unavailable, degraded int32
	// degradedNodes name the degraded nodes with their agents' reasons.
	degradedNodes []string
}

func (s *scope) count() counts {
	var c counts
	c.machines = int32(len(s.members))
	for _, n := range s.members {
		if n.updated(s.target) {
			c.updated++
			if n.healthy() {
				c.ready++
			}
		}
		switch {
		case n.degraded():
			c.degraded++
			c.degradedNodes = append(c.degradedNodes, fmt.Sprintf("node %s is reporting %s: %q", n.node.Name, n.state, n.reason))
		case n.unavailable():
			c.unavailable++
		}
	}
	sort.Strings(c.degradedNodes)
	return c
}

// condition is one condition the controller owns, before it is put into
// the pool's list.
type condition struct {
	typ, status, reason, message string
}

// status computes the pool's counts and the conditions Updated, Updating,
// NodeDegraded and Degraded (which also reflects the render controller's
// RenderDegraded, left as it is), and copies the target into
// status.configuration once every node runs it.
func (r *Reconciler) status(_ context.Context, s *scope) (phase.Result, error) {
	c := s.count()
	st := &s.pool.Status
	st.ObservedGeneration = s.pool.Generation
	st.MachineCount, st.UpdatedMachineCount, st.ReadyMachineCount = c.machines, c.updated, c.ready
	st.UnavailableMachineCount, st.DegradedMachineCount = c.unavailable, c.degraded

	allUpdated := s.target != "" && c.updated == c.machines && c.ready == c.machines && c.unavailable == 0
	if allUpdated {
		st.Configuration = s.pool.Spec.Configuration
	}
	var conds []condition
	switch {
	case allUpdated:
		conds = append(conds,
			condition{typeUpdated, "True", "AllNodesUpdated", fmt.Sprintf("All nodes are updated with %s", s.target)},
			condition{typeUpdating, "False", "AllNodesUpdated", ""})
	case s.pool.Spec.Paused:
		conds = append(conds,
			condition{typeUpdated, "False", "Paused", ""},
			condition{typeUpdating, "False", "Paused", fmt.Sprintf("Pool is paused; will not update to %s", s.target)})
	case s.target == "":
		conds = append(conds,
			condition{typeUpdated, "False", "NotRendered", "The pool has no rendered configuration yet"},
			condition{typeUpdating, "False", "NotRendered", ""})
	default:
		conds = append(conds,
			condition{typeUpdated, "False", "NodesUpdating", ""},
			condition{typeUpdating, "True", "NodesUpdating", updatingMessage(s, c)})
	}
	nodeDegraded := condition{typeNodeDegraded, "False", "NoDegradedNodes", ""}
	if c.degraded > 0 {
		nodeDegraded = condition{typeNodeDegraded, "True", "NodesDegraded",
			fmt.Sprintf("%d nodes are reporting degraded status on sync: ", c.degraded) + strings.Join(c.degradedNodes, ", ") + "; the rollout stops until they are repaired or leave the pool"}
	}
	conds = append(conds, nodeDegraded)

	var problems []string
	reason := ""
	if c.degraded > 0 {
		problems, reason = append(problems, nodeDegraded.message), "NodeDegraded"
	}
	if len(s.shared) > 0 {
		problems, reason = append(problems, sharedMessage(s.shared)), ReasonNodeInMultiplePools
	}
	if s.invalid != "" {
		problems, reason = append(problems, s.invalid), ReasonInvalidPool
	}
	if u := unsupportedFields(s.pool); u != "" {
		problems, reason = append(problems, u), ReasonUnsupportedField
	}
	if rd := renderDegraded(s.pool); rd != "" {
		problems, reason = append(problems, rd), typeRenderDegraded
	}
	degraded := condition{typeDegraded, "False", "NotDegraded", ""}
	if len(problems) > 0 {
		if len(problems) > 1 {
			reason = "MultipleProblems"
		}
		degraded = condition{typeDegraded, "True", reason, strings.Join(problems, "; ")}
	}
	conds = append(conds, degraded)
	for _, cd := range conds {
		setCondition(s.pool, cd, s.now)
	}
	return phase.Result{}, nil
}

// unsupportedFields names the fields of the pool's spec that machina
// accepts into its schema (MCO's clients write them) but does not act on:
// the pool is Degraded naming them ("accepted means acted on": never
// silently stored). They change no MachineConfig, so the rollout goes on.
func unsupportedFields(p *mcv1.MachineConfigPool) string {
	var out []string
	if len(p.Spec.PinnedImageSets) > 0 {
		out = append(out, "spec.pinnedImageSets is not supported: machina pins no images (MCO's PinnedImageSets); remove it")
	}
	if p.Spec.OSImageStream != nil {
		out = append(out, fmt.Sprintf("spec.osImageStream (%q) is not supported: machina has no OS image streams; "+
			"set the OS image with a MachineConfig's osImageURL and remove it", p.Spec.OSImageStream.Name))
	}
	return strings.Join(out, "; ")
}

// writeStatus writes the status when it changed (setup.Patcher), with the
// resource version of the read: the render controller writes RenderDegraded
// into the same list, and a conflict is retried on a fresh read
// (setup.RequeueOnConflict). The machine counts are always in the patch: a
// merge patch leaves out what did not change, so a count of 0 on a status
// the render controller created (with conditions only) would never be
// stored, and kubectl get mcp would show blanks.
func (r *Reconciler) writeStatus(ctx context.Context, s *scope) error {
	p := setup.NewPatcher(r.Target, s.orig, setup.LockStatus(), setup.StatusCounts(
		"machineCount", "updatedMachineCount", "readyMachineCount", "unavailableMachineCount", "degradedMachineCount"))
	if err := p.Patch(ctx, s.pool); err != nil {
		return fmt.Errorf("writing the status of pool %s: %w", s.pool.Name, err)
	}
	return nil
}

// updatingMessage is the Updating condition's message during an update; it
// says which nodes wait for a pre-update hook or a do-not-disrupt pod.
func updatingMessage(s *scope, c counts) string {
	msg := fmt.Sprintf("All nodes are updating to %s (%d of %d updated)", s.target, c.updated, c.machines)
	if len(s.held) > 0 {
		msg += "; not started yet: " + strings.Join(s.held, "; ")
	}
	return msg
}
