package mcrender

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	mcfgv1 "github.com/machina-io/machina/core/api/machineconfiguration/v1"
)

// writeStatus sets the pool's RenderDegraded condition, and only it: the
// update controller owns the other conditions and folds RenderDegraded into
// Degraded. The patch (s.patcher) carries the resourceVersion read, so a
// concurrent write of the update controller is not overwritten: the loser
// syncs again (setup.RequeueOnConflict). Unchanged, nothing is written.
func (r *Reconciler) writeStatus(ctx context.Context, s *scope) error {
	cond := metav1.Condition{
		Type:               mcfgv1.PoolRenderDegraded,
		Status:             metav1.ConditionFalse,
		Reason:             reasonRendered,
		ObservedGeneration: s.pool.Generation,
	}
	if s.failure != "" {
		cond.Status, cond.Reason, cond.Message = metav1.ConditionTrue, s.failureReason, s.failure
		if s.pool.Spec.Configuration.Name != "" {
			cond.Message += "; the pool keeps " + s.pool.Spec.Configuration.Name
		}
	}
	before := meta.FindStatusCondition(s.orig.Status.Conditions, mcfgv1.PoolRenderDegraded)
	if s.failure != "" && (before == nil || before.Message != cond.Message) {
		s.log.Info("Cannot render the pool", "reason", cond.Reason, "message", cond.Message)
		r.Recorder.Eventf(s.pool, nil, corev1.EventTypeWarning, ReasonRenderFailed, "Render", "%s", cond.Message)
	}
	meta.SetStatusCondition(&s.pool.Status.Conditions, cond)
	if err := s.patcher.Patch(ctx, s.pool); err != nil {
		return fmt.Errorf("writing the RenderDegraded condition of pool %s: %w", s.pool.Name, err)
	}
	return nil
}
