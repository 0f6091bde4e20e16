package machinedeployment

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/internal/inplace"
)

// The first sync of an in-place rollout has every node of the old sets to
// mark as a candidate, one write each, and only then selects the first
// wave. With hundreds of nodes the writes take seconds on a busy API
// server (each candidate's machine records the mark at the same time),
// and the first go signal waited for all of them. So the first wave goes
// first: the nodes the selection can take in this sync are marked before
// it, the other untouched nodes after it (markDeferred), still in the same
// sync.

// deferredCandidates returns the nodes of old machines whose candidate
// marks wait until after this sync's selection: untouched nodes (no mark
// of an in-place rollout yet) beyond the first the selection could take,
// in its order (inSelectionOrder). A node with any mark of a rollout is never
// deferred: a new target must reach it before the selection counts it,
// and its result before a move. An untouched node that is not marked yet
// is no candidate to the rest of the sync: it is neither selected, moved
// nor counted. Only Auto selects; a Manual rollout defers nothing.
func (r *Reconciler) deferredCandidates(ctx context.Context, s *scope) (map[string]bool, error) {
	ip := s.d.Spec.Strategy.InPlaceUpdate
	if ip == nil || ip.OrchestrationType != v1alpha1.OrchestrationTypeAuto {
		return nil, nil
	}
	// The most one selection can take: the budget's unavailable machines,
	// and the surge's machines above replicas that keep it available.
	lead := max(int(maxUnavailable(s.d)+maxSurge(s.d)), 1)
	var deferred map[string]bool
	for _, sm := range inSelectionOrder(s, s.old) {
		name := sm.m.Labels[v1alpha1.NodeLabelKey]
		if name == "" {
			continue
		}
		untouched, err := r.untouchedNode(ctx, s, name)
		if err != nil {
			return nil, err
		}
		switch {
		case !untouched:
		case lead > 0:
			lead--
		default:
			if deferred == nil {
				deferred = map[string]bool{}
			}
			deferred[name] = true
		}
	}
	return deferred, nil
}

// untouchedNode reports whether the node carries no mark of an in-place
// rollout: no candidate, selection or result label and no target. It
// reads the cache without a copy; a missing node is not untouched (there
// is nothing to defer).
func (r *Reconciler) untouchedNode(ctx context.Context, s *scope, name string) (bool, error) {
	n := s.writtenNode(name)
	if n == nil {
		n = &corev1.Node{}
		if err := r.Target.Get(ctx, client.ObjectKey{Name: name}, n, client.UnsafeDisableDeepCopy); err != nil {
			if apierrors.IsNotFound(err) {
				return false, nil
			}
			return false, fmt.Errorf("reading node %s: %w", name, err)
		}
	}
	_, hasTarget := n.Annotations[inplace.DesiredAnnotation]
	return !hasTarget && !inplace.IsCandidate(n) && !inplace.IsSelected(n) && inplace.Result(n) == "", nil
}

// markDeferred marks the deferred candidates after the selection, with the
// rollout's other marks in the same write, and counts them in the status.
func (r *Reconciler) markDeferred(ctx context.Context, s *scope, target string, deferred map[string]bool) error {
	if len(deferred) == 0 {
		return nil
	}
	if err := r.syncRolloutNodesWith(ctx, s, candidateMark(s, target), nil); err != nil {
		return err
	}
	for name := range deferred {
		if n := s.writtenNode(name); n != nil && inplace.IsCandidate(n) {
			s.inPlace.counts.Candidates++
		}
	}
	return nil
}
