package mcpool

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mcv1 "github.com/machina-io/machina/core/api/machineconfiguration/v1"
	"github.com/machina-io/machina/core/disruption"
	"github.com/machina-io/machina/core/internal/controller/phase"
	"github.com/machina-io/machina/core/internal/controller/setup"
	"github.com/machina-io/machina/core/internal/inplace"
)

// rollout gives the pool's configuration to as many nodes as the pool's
// budget allows. It does nothing while the pool is paused or has no
// configuration yet. A degraded node stops it (a failed update stops the
// rollout until the node is repaired or leaves the pool), with one
// exception: a node degraded on a configuration the pool no longer targets
// is given the target (retarget), so that fixing or reverting a bad
// MachineConfig heals the pool with no manual step.
//
// The budget is the in-place engine's (inplace.Budget): with N members,
// maxUnavailable M, U nodes unavailable (unhealthy, cordoned, or with a
// configuration to reach) and D degraded, at most M − U − D more nodes
// start, as MCO's node controller does. Candidates are members not on the
// target that are healthy and that no MachineDeployment in-place rollout
// holds, zone by zone, oldest first; a candidate that asks not to be
// disrupted (the disruption package) is passed over and keeps no slot.
//
// A Node born after the pool's configuration was rendered, that no
// configuration ever reached (no currentConfig, no desiredConfig), gets the
// configuration at once, outside the budget: a new machine starts from the
// current rendered configuration instead of joining the rollout's queue.
func (r *Reconciler) rollout(ctx context.Context, s *scope) (phase.Result, error) {
	if s.target == "" || s.invalid != "" {
		return phase.Result{}, nil
	}
	m, err := inplace.MaxUnavailable(s.pool.Spec.MaxUnavailable, len(s.members))
	if err != nil {
		s.invalid = err.Error()
		return phase.Result{}, nil
	}
	s.maxUnavailable = m
	if checkBudgets(s); s.invalid != "" {
		return phase.Result{}, nil
	}

	newborn, err := r.newborns(ctx, s)
	if err != nil {
		return phase.Result{}, err
	}
	for _, n := range newborn {
		if err := r.setDesired(ctx, s, n, "a new node starts from the pool's current configuration"); err != nil {
			return phase.Result{}, err
		}
	}
	if s.pool.Spec.Paused {
		return phase.Result{}, nil
	}

	b := inplace.Budget{Desired: int32(len(s.members)), MaxUnavailable: m}
	var candidates, stale []poolNode
	degraded, unavailable, failingTarget := 0, 0, 0
	for _, n := range s.members {
		switch {
		case n.degraded():
			degraded++
			if n.desired == s.target {
				failingTarget++
			} else if !inInPlaceRollout(n.node) {
				stale = append(stale, n)
			}
		case !n.unavailable():
			b.Available++
		default:
			unavailable++
		}
		if n.updated(s.target) {
			b.Updated++
		}
		if n.desired != s.target && n.healthy() && !n.busy() && !n.degraded() && !inInPlaceRollout(n.node) {
			candidates = append(candidates, n)
		}
	}
	if err := r.retarget(ctx, s, stale, int(m)-unavailable-failingTarget); err != nil {
		return phase.Result{}, err
	}
	if degraded > 0 {
		s.log.V(1).Info("Rollout stopped by degraded nodes", "degraded", degraded)
		return phase.Result{}, nil
	}
	sortCandidates(candidates)
	// A node with a pre-update hook, or whose pods (or itself) ask not to be
	// disrupted, is passed over, its slot going to the next candidate; it is
	// looked at again in disruption.Recheck, as pods are not watched.
	n, res := r.budget(s, b.Selectable())
	picked, held, err := disruption.Pick(candidates, func(n poolNode) (string, error) {
		return disruption.UpdateHold(ctx, r.Pods, n.node, nil)
	}, n)
	if err != nil {
		return phase.Result{}, err
	}
	if len(held) > 0 {
		s.held = append(s.held, held...)
		s.log.Info("Nodes wait: hooks or pods hold them", "held", held)
		r.Recorder.Eventf(s.pool, nil, corev1.EventTypeNormal, ReasonDisruptionHeld, "Update",
			"Not updating now: %s", strings.Join(held, "; "))
		res = res.Merge(phase.Result{RequeueAfter: disruption.Recheck})
	}
	for _, n := range picked {
		if err := r.setDesired(ctx, s, n, ""); err != nil {
			return phase.Result{}, err
		}
	}
	if len(picked) > 0 {
		s.log.Info("Started nodes on the pool's configuration", "count", len(picked), "target", s.target, "budget", fmt.Sprintf("%+v", b))
	}
	return res, nil
}

// retarget gives the pool's target to nodes degraded on a configuration
// the pool no longer targets: the user fixed or reverted the MachineConfig
// that broke them, and their agents start again from the new target (MCO's
// node controller re-targets them too). Such a node is already unavailable
// (it is counted as degraded), so the target does not make one more
// unavailable node and takes no slot of the budget for new starts. Yet it
// is drained and updated like any other, so at most room of them start at
// once: room is maxUnavailable less the nodes already under way (busy or
// unhealthy) and those failing on the target itself. With more degraded
// nodes than that, they are re-targeted a few at a time, zone by zone,
// oldest first, as the earlier ones finish.
func (r *Reconciler) retarget(ctx context.Context, s *scope, stale []poolNode, room int) error {
	if len(stale) == 0 {
		return nil
	}
	if room <= 0 {
		s.log.V(1).Info("Degraded nodes on a superseded configuration wait for room", "count", len(stale), "target", s.target)
		return nil
	}
	sortCandidates(stale)
	for _, n := range stale[:min(room, len(stale))] {
		s.log.Info("Re-targeting a node degraded on a configuration the pool no longer targets",
			"node", n.node.Name, "from", n.desired, "to", s.target, "state", n.state, "reason", n.reason)
		why := fmt.Sprintf("it was %s on %s, which the pool no longer targets", n.state, n.desired)
		if err := r.setDesired(ctx, s, n, why); err != nil {
			return err
		}
	}
	return nil
}

// newborns are the members created after the pool's target configuration,
// that no configuration reached yet.
func (r *Reconciler) newborns(ctx context.Context, s *scope) ([]poolNode, error) {
	var fresh []poolNode
	for _, n := range s.members {
		if n.desired == "" && n.current == "" && !inInPlaceRollout(n.node) {
			fresh = append(fresh, n)
		}
	}
	if len(fresh) == 0 {
		return nil, nil
	}
	rendered := &mcv1.MachineConfig{}
	if err := r.Target.Get(ctx, client.ObjectKey{Name: s.target}, rendered); err != nil {
		if client.IgnoreNotFound(err) == nil {
			return nil, nil // not in the cache yet; the rollout takes them as usual
		}
		return nil, fmt.Errorf("reading MachineConfig %s: %w", s.target, err)
	}
	var out []poolNode
	for _, n := range fresh {
		if n.node.CreationTimestamp.After(rendered.CreationTimestamp.Time) {
			out = append(out, n)
		}
	}
	return out, nil
}

// setDesired writes desiredConfig=<target> on the node with a merge patch
// of that one annotation (setup.Patcher), and records an event.
func (r *Reconciler) setDesired(ctx context.Context, s *scope, n poolNode, why string) error {
	patched := n.node.DeepCopy()
	if patched.Annotations == nil {
		patched.Annotations = map[string]string{}
	}
	patched.Annotations[annDesiredConfig] = s.target
	if err := setup.NewPatcher(r.Target, n.node).Patch(ctx, patched); err != nil {
		return fmt.Errorf("setting the desired configuration of node %s: %w", n.node.Name, err)
	}
	note := "Targeted node %s to %s"
	if why != "" {
		note += " (" + why + ")"
	}
	r.Recorder.Eventf(s.pool, nil, corev1.EventTypeNormal, ReasonSetDesiredConfig, "Update", note, n.node.Name, s.target)
	s.log.Info("Set the desired configuration", "node", n.node.Name, "target", s.target, "from", n.current)
	// The scope sees what it wrote: the status counts it as busy.
	for i := range s.members {
		if s.members[i].node.Name == n.node.Name {
			s.members[i] = newPoolNode(patched)
		}
	}
	return nil
}
